"""The promote node: the turn's candidates and its turn log entry through the promotion gate."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.store.base import BaseStore

from langgraph_typed_memory.errors import StoreUnusable
from langgraph_typed_memory.extraction import prefilter
from langgraph_typed_memory.extraction.text import sentences
from langgraph_typed_memory.namespaces import Scope, scope_from_config
from langgraph_typed_memory.nodes._common import (
    arecord_thread,
    check_gate_store,
    check_memory_state,
    last_human_at,
    noting,
    record_thread,
    resolve_store,
    run_id_from_config,
    trace_of,
    writable_scope,
)
from langgraph_typed_memory.nodes.running import Call, Plan, arun, run
from langgraph_typed_memory.state import MemoryTrace
from langgraph_typed_memory.turns import Turn, message_text, turn_proposals

__all__ = ["create_promote_node", "turn_from_messages", "LOGGED_TURNS"]

logger = logging.getLogger(__name__)

LOGGED_TURNS = frozenset({"kept", "too_long"})
"""Pre-filter outcomes whose turn the turn log keeps (a long turn is not chit-chat)."""


def create_promote_node(
    store: BaseStore | None = None,
    /,
    *,
    candidates_key: str = "memory_candidates",
    messages_key: str = "messages",
    log_turns: bool = True,
    clock: Callable[[], datetime] | None = None,
) -> RunnableLambda:
    """Build the promote node.

    It offers `memory_candidates` and the turn log's entry for the newest user message (see
    `langgraph_typed_memory.turns`) to the store's promotion gate (`store.promote`) in one
    transaction, for the caller's scope, with the run id and turn as provenance, and records
    each outcome (written, deduplicated, superseded, contradicted, rejected with the reason)
    in `memory_trace["promotions"]`. A store that fails at run time degrades the turn: the
    reason goes to `memory_trace["degraded"]` and the log. A misconfiguration raises
    `ConfigurationError` instead, at the factory or on the first call: no store, a store
    without the promotion gate (LangGraph's `InMemoryStore`), a scope id that cannot be one
    (see `scope_from_config`), a run that names no user, agent or thread (what it wrote
    would land tenant-wide, shown to every user of the tenant), or, inside a graph, a state
    without the memory keys (a `StateGraph(MessagesState)`: LangGraph would drop the
    candidates; use `MemoryState`).
    The turn is logged when the extract node's pre-filter kept it (or, without an extract
    node, when the pre-filter keeps it here). An episode candidate gets the two messages
    before the newest user message as its `context` (of an assistant's reply, only its
    questions; indexed for full-text search, so a later question that echoes them finds the
    episode), and the thread id
    (`configurable["thread_id"]`) as its `session_id` (compaction groups by it); the logged
    turn carries the ids of the entities the extract node found it mentions
    (`memory_entities`, in `metadata.entities`).

    Args:
        store: The memory store; default: the graph's runtime store.
        candidates_key: The state key holding the candidates.
        messages_key: The state key holding the conversation.
        log_turns: Set False to write only the extracted candidates (no turn log).
        clock: When the turn happened; default: the store's clock (`store.clock`).

    Raises:
        ConfigurationError: `store` has no promotion gate (at once), or one of the
            misconfigurations above (on the call).

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> node = create_promote_node(store)
        >>> out = node.invoke(
        ...     {"memory_candidates": [{"kind": "preference", "key": "tone", "value": "terse",
        ...                             "content": "Prefers terse answers.",
        ...                             "confidence": 0.9, "grounding": "be terse"}],
        ...      "memory_trace": {"turn_index": 1}},
        ...     {"configurable": {"tenant_id": "acme", "user_id": "alice"}})
        >>> [(p["kind"], p["outcome"]) for p in out["memory_trace"]["promotions"]]
        [('preference', 'written')]
    """

    if store is not None:
        check_gate_store(store)

    def checked(state: dict[str, Any], config: RunnableConfig | None,
                method: str) -> tuple[BaseStore, Scope]:
        """The store and scope, once the configuration is known to be sound."""
        target = check_gate_store(resolve_store(store), method)
        check_memory_state(state, config, node="promote",
                           keys=("memory_trace", candidates_key))
        return target, writable_scope(scope_from_config(config), "The promote node")

    def prepare(state: dict[str, Any], config: RunnableConfig | None,
                target: BaseStore, scope: Scope) -> dict[str, Any]:
        trace = trace_of(state)
        messages = state.get(messages_key) or []
        episode: dict[str, Any] = {"context": _preceding_turns(messages)}
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        if thread:
            episode["session_id"] = str(thread)
        proposals = [
            {**episode, **c} if isinstance(c, Mapping) and c.get("kind") == "episode" else c
            for c in state.get(candidates_key) or []
        ]
        turn = _turn_to_log(trace, messages, thread, target) if log_turns else None
        if turn is not None:
            mentioned = (state.get("memory_entities") or {}).get("mentioned") or []
            proposals = turn_proposals(turn, [p for p in proposals if isinstance(p, Mapping)],
                                       entities=mentioned) \
                if all(isinstance(p, Mapping) for p in proposals) else [
                    *proposals, *turn_proposals(turn, entities=mentioned)]
        return {
            "proposals": proposals,
            "tenant_id": scope.tenant_id,
            "user_id": scope.user_id,
            "agent_id": scope.agent_id,
            "run_id": trace.get("run_id") or run_id_from_config(config),
            "turn": trace.get("turn_index"),
            "trace": trace,
        }

    def finish(trace: MemoryTrace, outcomes: list[Any] | None,
               error: BaseException | None) -> dict[str, Any]:
        if error is not None:
            why = f"promotion failed: {error!r:.200}"
            trace["degraded"].append(why)
            logger.warning("promote: %s", why)
            trace["promotions"] = []
        else:
            trace["promotions"] = [o.dict() for o in outcomes or []]
        return {"memory_trace": trace, candidates_key: []}

    def when(target: BaseStore) -> datetime:
        chosen = clock or getattr(target, "clock", None)
        return chosen() if callable(chosen) else datetime.now(UTC)

    def _turn_to_log(trace: MemoryTrace, messages: Sequence[BaseMessage],
                     thread: Any, target: BaseStore) -> Turn | None:
        decided = (trace.get("extraction") or {}).get("prefilter")
        if decided is None:  # no extract node ran: decide here (no recent turns to compare)
            human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
            decided = prefilter(message_text(human), role="human", now=0.0).reason
        if decided not in LOGGED_TURNS:
            return None
        return turn_from_messages(messages, at=when(target),
                                  session_id=str(thread) if thread else None)

    def plan(state: dict[str, Any], config: RunnableConfig, method: str
             ) -> Plan[dict[str, Any]]:
        target, scope = checked(state, config, method)
        unrecorded = yield Call(record_thread, arecord_thread, (target, config))
        try:
            args = prepare(state, config, target, scope)
        except StoreUnusable:  # a misconfiguration: fails loudly
            raise
        except Exception as exc:
            return noting(finish(trace_of(state), None, exc), unrecorded)
        trace = args.pop("trace")
        if not args["proposals"]:
            return noting(finish(trace, [], None), unrecorded)
        try:
            written = yield Call(target.promote, target.apromote,  # type: ignore[attr-defined]
                                 kwargs=args)
        except StoreUnusable:  # a misconfiguration: fails loudly
            raise
        except Exception as exc:
            return noting(finish(trace, None, exc), unrecorded)
        return noting(finish(trace, written, None), unrecorded)

    def promote(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return run(plan(state, config, "promote"))

    async def apromote(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return await arun(plan(state, config, "apromote"))

    return RunnableLambda(promote, afunc=apromote, name="promote")


def _speaker(message: BaseMessage) -> str:
    if message.name:
        return str(message.name)
    return "user" if isinstance(message, HumanMessage) else (
        "assistant" if isinstance(message, AIMessage) else message.type)


def turn_from_messages(messages: Sequence[BaseMessage], *, at: datetime,
                       session_id: str | None = None) -> Turn | None:
    """The newest user turn of a conversation as the turn log keeps it: its text and speaker
    (the message's `name`, else "user"), the reply after it, the two messages before it (of
    an assistant's reply, only its questions: `_context_text`).

    Example:
        >>> from datetime import UTC, datetime
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> turn = turn_from_messages([HumanMessage("Hi"), AIMessage("Hello!"),
        ...                            HumanMessage("I live in Lyon.", name="Ana"),
        ...                            AIMessage("Noted.")], at=datetime(2026, 1, 5, tzinfo=UTC))
        >>> turn.line, turn.reply, turn.context
        ('Ana: I live in Lyon.', 'Noted.', ('user: Hi',))
    """
    i = last_human_at(messages)
    if i is None:
        return None
    human = messages[i]
    text = message_text(human).strip()
    if not text:
        return None
    reply = next((message_text(m) for m in messages[i + 1:] if isinstance(m, AIMessage)
                  and message_text(m).strip()), None)
    context = tuple(f"{_speaker(m)}: {' '.join(t.split())}" for m in messages[max(0, i - 2):i]
                    if (t := _context_text(m)).strip())
    return Turn(text, at, _speaker(human), reply, session_id, context,
                str(human.id) if human.id else None)


def _preceding_turns(messages: list[Any], n: int = 2) -> list[str]:
    """The texts of up to `n` messages before the newest user message, oldest first
    (`_context_text`)."""
    i = last_human_at(messages)
    if i is None:
        return []
    return [t for m in messages[max(0, i - n):i] if (t := _context_text(m).strip())]


def _context_text(message: BaseMessage) -> str:
    """What a message before a user turn adds to the turn's searchable context: its text,
    or of an assistant's reply only the questions it asked (what a short answer answers). The
    rest of a reply often repeats what memory holds, and would make the turn match words
    that were never said with it.

    Example:
        >>> _context_text(AIMessage("Noted: Lena lives in Vienna. Where does she work?"))
        'Where does she work?'
        >>> _context_text(AIMessage("Noted: Lena lives in Vienna.")), _context_text(
        ...     HumanMessage("Lena lives in Vienna."))
        ('', 'Lena lives in Vienna.')
    """
    text = message_text(message)
    if not isinstance(message, AIMessage):
        return text
    return " ".join(s for s in sentences(text) if s.rstrip().endswith("?"))
