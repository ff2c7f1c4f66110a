"""The prebuilt memory nodes: retrieve -> assemble -> respond -> extract -> promote.

Each factory returns a runnable node (sync and async) for any `StateGraph` whose state has the
`MemoryState` keys; each works alone and can be tested by invoking it with a state dict.
"""

from langgraph_typed_memory.nodes.assemble import (
    create_assemble_node,
    create_memory_prompt,
    memory_system_message,
)
from langgraph_typed_memory.nodes.extract import create_extract_node
from langgraph_typed_memory.nodes.promote import create_promote_node
from langgraph_typed_memory.nodes.respond import (
    ReplyWithMemories,
    create_respond_node,
    extractive_reply,
)
from langgraph_typed_memory.nodes.retrieve import create_retrieve_node

__all__ = [
    "create_retrieve_node",
    "create_assemble_node",
    "create_respond_node",
    "create_extract_node",
    "create_promote_node",
    "create_memory_prompt",
    "memory_system_message",
    "ReplyWithMemories",
    "extractive_reply",
]
