"""Graph `memory_chat` for LangGraph's server (`langgraph dev`, see langgraph.json).

The server supplies the checkpointer and, through langgraph.json's `store.path`, this
package's store (graphs/store.py). The model comes from `configurable["memory_model"]` or
the `TYPED_MEMORY_MODEL` environment variable; with neither, the offline extractive
responder. (`configurable["model"]`, which LangGraph's templates set for their own model, is
not read.)
"""

from langgraph_typed_memory.graph import build_memory_chat_graph

graph = build_memory_chat_graph().compile(name="memory_chat")
