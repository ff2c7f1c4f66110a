"""The memory chat graph: retrieve -> assemble -> respond -> extract -> promote."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from langgraph_typed_memory.assembly import AssemblyConfig, Summarizer
from langgraph_typed_memory.nodes import (
    create_assemble_node,
    create_extract_node,
    create_promote_node,
    create_respond_node,
    create_retrieve_node,
)
from langgraph_typed_memory.state import MemoryState

__all__ = ["build_memory_chat_graph", "create_memory_chat_graph"]


def build_memory_chat_graph(
    model: BaseChatModel | str | None = None,
    /,
    *,
    combined: bool = False,
    assembly: AssemblyConfig | Mapping[str, Any] | None = None,
    summarizer: Summarizer | None = None,
) -> StateGraph:
    """The uncompiled chat graph, for adding nodes or compiling it your way.

    Nodes read the store from the graph's runtime (`graph.compile(store=...)`).
    """
    builder = StateGraph(MemoryState)
    builder.add_node("retrieve", create_retrieve_node())
    builder.add_node("assemble", create_assemble_node(assembly, summarizer=summarizer,
                                                      model=model))
    builder.add_node("respond", create_respond_node(model, combined=combined))
    builder.add_node("extract", create_extract_node(model))
    builder.add_node("promote", create_promote_node())
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "assemble")
    builder.add_edge("assemble", "respond")
    builder.add_edge("respond", "extract")
    builder.add_edge("extract", "promote")
    builder.add_edge("promote", END)
    return builder


def create_memory_chat_graph(
    model: BaseChatModel | str | None = None,
    /,
    *,
    store: BaseStore | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    combined: bool = False,
    assembly: AssemblyConfig | Mapping[str, Any] | None = None,
    summarizer: Summarizer | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled memory chat graph (graph id `memory_chat`).

    Input `{"messages": [...]}`; scope from `configurable` (`tenant_id`, `user_id`,
    `agent_id`); the checkpointer keeps the trace (`memory_trace` per turn, replayable with
    `get_state_history`), the store keeps durable memory.

    Args:
        model: A chat model or `init_chat_model` string; None: configuration, environment
            (`TYPED_MEMORY_MODEL`) or the offline extractive responder.
        store: The memory store (a `SqliteMemoryStore` or `PostgresMemoryStore`).
        checkpointer: LangGraph checkpointer, ideally on the same database.
        combined: One structured model call for the reply and the extraction candidates.
        assembly: Prompt budget settings (`AssemblyConfig`).
        summarizer: Running-summary function (default extractive).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
        >>> config = {"configurable": {"thread_id": "1", "tenant_id": "acme",
        ...                            "user_id": "alice"}}
        >>> out = graph.invoke({"messages": [HumanMessage("I live in Lyon.")]}, config)
        >>> [p["outcome"] for p in out["memory_trace"]["promotions"]]
        ['written']
    """
    builder = build_memory_chat_graph(
        model, combined=combined, assembly=assembly, summarizer=summarizer
    )
    return builder.compile(checkpointer=checkpointer, store=store, name="memory_chat")
