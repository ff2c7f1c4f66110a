"""Graph `memory_chat` for LangGraph's server (`langgraph dev`, see langgraph.json).

The server supplies the checkpointer and, through langgraph.json's `store.path`, this
package's store (graphs/store.py). The model comes from `configurable["model"]` or the
`TYPED_MEMORY_MODEL` environment variable; with neither, the offline extractive responder.
"""

from langgraph_typed_memory.graph import build_memory_chat_graph

graph = build_memory_chat_graph().compile(name="memory_chat")
