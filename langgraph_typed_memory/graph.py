"""The memory chat graph: retrieve -> assemble -> respond -> extract -> promote."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from langgraph_typed_memory.assembly import PREAMBLE, AssemblyConfig, Summarizer
from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.nodes import (
    create_assemble_node,
    create_extract_node,
    create_promote_node,
    create_respond_node,
    create_retrieve_node,
)
from langgraph_typed_memory.nodes._common import OnModelError, check_gate_store
from langgraph_typed_memory.nodes.assemble import Summary
from langgraph_typed_memory.nodes.extract import Extraction
from langgraph_typed_memory.state import MemoryState

__all__ = ["build_memory_chat_graph", "create_memory_chat_graph"]


def build_memory_chat_graph(
    model: BaseChatModel | str | None = None,
    /,
    *,
    combined: bool = False,
    extraction: Extraction = "auto",
    assembly: AssemblyConfig | Mapping[str, Any] | None = None,
    summarizer: Summarizer | None = None,
    trim_absorbed: bool = True,
    preamble: str = PREAMBLE,
    summary: Summary = "auto",
    on_model_error: OnModelError = "degrade",
) -> StateGraph:
    """The uncompiled chat graph, for adding nodes or compiling it your way.

    Nodes read the store from the graph's runtime (`graph.compile(store=...)`): compiled
    without one (and not run by a LangGraph server that supplies one), the first turn raises
    `ConfigurationError`, as it does with a store that has no promotion gate. To add your own
    keys to the state, extend `MemoryState`: a state without its keys fails the same way.
    Arguments as for `create_memory_chat_graph`.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> graph = build_memory_chat_graph(trim_absorbed=False).compile(
        ...     checkpointer=InMemorySaver())
        >>> sorted(graph.nodes)[:3]
        ['__start__', 'assemble', 'extract']
    """
    builder = StateGraph(MemoryState)
    builder.add_node("retrieve", create_retrieve_node())
    builder.add_node("assemble", create_assemble_node(
        assembly, summarizer=summarizer, model=model, trim_absorbed=trim_absorbed,
        preamble=preamble, summary=summary, on_model_error=on_model_error))
    builder.add_node("respond", create_respond_node(model, combined=combined,
                                                    on_model_error=on_model_error))
    builder.add_node("extract", create_extract_node(model, extraction=extraction,
                                                    on_model_error=on_model_error))
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
    extraction: Extraction = "auto",
    assembly: AssemblyConfig | Mapping[str, Any] | None = None,
    summarizer: Summarizer | None = None,
    trim_absorbed: bool = True,
    preamble: str = PREAMBLE,
    summary: Summary = "auto",
    on_model_error: OnModelError = "degrade",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled memory chat graph (graph id `memory_chat`).

    Input `{"messages": [...]}`; scope from `configurable` (`tenant_id`, `user_id`,
    `agent_id`); the checkpointer keeps the trace (`memory_trace` per turn, replayable with
    `get_state_history`), the store keeps durable memory.

    The state's `messages` hold only what the running summary has not absorbed (the verbatim
    window and at least the last four user turns), so a turn's cost does not grow with the
    thread: the checkpointer does not reload and rewrite the whole transcript at every step.
    Every earlier state stays in the checkpointer's history (`get_state_history`), and the
    user's statements in the store's turn log. Pass `trim_absorbed=False` to keep every
    message in the state (an app that renders the thread from `messages`), at the price of
    turns that slow down as the thread grows.

    With a chat model, a turn makes up to three model calls:

    - the reply, every turn;
    - extraction (one structured-output call), on each turn the pre-filter keeps (not
      questions, chit-chat or very short messages): `extraction="rules"` uses the offline
      rules instead, and `combined=True` asks for the reply and the candidates in one call;
    - the running summary, on each turn once the thread is longer than the verbatim window
      (`recent_turns`, 4 messages): `summary="extractive"` uses the offline summary instead.

    So `create_memory_chat_graph(model)` makes 1 call on a short question and up to 3 on a
    statement late in a thread; with `extraction="rules", summary="extractive"` exactly one.
    A model that fails or cannot be built degrades each of these calls to its offline path
    (recorded in `memory_trace["degraded"]` and logged) with the default
    `on_model_error="degrade"`; `"raise"` lets the exception through (a missing API key or a
    provider's 400 fails the turn, and nothing of it is checkpointed or stored).

    Args:
        model: A chat model or `init_chat_model` string; None: configuration, environment
            (`TYPED_MEMORY_MODEL`) or the offline extractive responder.
        store: The memory store (a `SqliteMemoryStore` or `PostgresMemoryStore`, sync or
            async); None: the runtime's (a LangGraph server's). Without either, the first
            turn raises `ConfigurationError`.
        checkpointer: LangGraph checkpointer, ideally on the same database.
        combined: One structured model call for the reply and the extraction candidates.
        extraction: Who reads each kept turn for memories: "auto" (the chat model, in one
            structured-output call, when one is configured; else the offline rules),
            "model" (a run without a model raises `ConfigurationError`) or "rules".
        assembly: Prompt budget settings (`AssemblyConfig`).
        summarizer: Running-summary function (default extractive).
        trim_absorbed: Remove the messages the running summary absorbed from the state
            (default True; see `create_assemble_node`).
        preamble: The text that opens the system prompt, before the memory (default
            `PREAMBLE`; see `create_assemble_node`).
        summary: Who writes the running summary: "auto" (the chat model when one is
            configured, else the extractive summary), "model" or "extractive".
        on_model_error: "degrade" (default) or "raise", for the reply, extraction and
            summary calls.

    Raises:
        ConfigurationError: `store` has no promotion gate (LangGraph's `InMemoryStore`, for
            instance): the graph would store nothing; or the checkpointer shares the store's
            connection (its commits would end the store's transactions half done): give it
            its own connection to the same database.

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
        >>> {p["outcome"] for p in out["memory_trace"]["promotions"]}
        {'written'}
    """
    if store is not None:
        check_gate_store(store)
        _check_own_connections(store, checkpointer)
    builder = build_memory_chat_graph(
        model, combined=combined, extraction=extraction, assembly=assembly,
        summarizer=summarizer, trim_absorbed=trim_absorbed, preamble=preamble,
        summary=summary, on_model_error=on_model_error,
    )
    return builder.compile(checkpointer=checkpointer, store=store, name="memory_chat")


def _check_own_connections(store: BaseStore, checkpointer: Any) -> None:
    """Refuse a checkpointer on the store's own connection object: the checkpointer commits
    when it saves, in the middle of the store's transaction (a promotion's writes would be
    committed in part, and the store would report the turn failed)."""
    shared = getattr(store, "conn", None)
    if shared is not None and getattr(checkpointer, "conn", None) is shared:
        raise ConfigurationError(
            f"The checkpointer ({type(checkpointer).__name__}) uses the store's own "
            "connection; its commits would end the store's transactions half done. Give it "
            "a connection of its own to the same database, e.g. "
            "SqliteSaver(sqlite3.connect(path, check_same_thread=False)).")
