"""Graph `memory_maintenance` for LangGraph's server (`langgraph dev`, see langgraph.json).

The server supplies the store (graphs/store.py). Input `{"tenant_id": "acme"}` (or none: every
tenant); schedule it with LangGraph cron (docs/maintenance.md).
"""

from langgraph_typed_memory.maintenance import create_memory_maintenance_graph

graph = create_memory_maintenance_graph()
