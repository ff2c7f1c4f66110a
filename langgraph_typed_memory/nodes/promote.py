"""The promote node: the turn's candidates through the promotion gate, outcomes into the trace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.store.base import BaseStore

from langgraph_typed_memory.nodes._common import (
    message_text,
    resolve_store,
    run_id_from_config,
    scope_from_config,
    trace_of,
)

__all__ = ["create_promote_node"]


def create_promote_node(
    store: BaseStore | None = None,
    /,
    *,
    candidates_key: str = "memory_candidates",
    messages_key: str = "messages",
) -> RunnableLambda:
    """Build the promote node.

    It offers `memory_candidates` to the store's promotion gate (`store.promote`) in one
    transaction, for the caller's scope, with the run id and turn as provenance, and records
    each outcome (written, deduplicated, superseded, contradicted, rejected with the reason)
    in `memory_trace["promotions"]`. A failing store degrades the turn, recorded. An episode
    gets the two messages before the newest user message as its `context` (indexed for
    full-text search, so a later question that echoes them finds the episode), and the
    thread id (`configurable["thread_id"]`) as its `session_id` (compaction groups by it).

    Args:
        store: The memory store; default: the graph's runtime store.
        candidates_key: The state key holding the candidates.
        messages_key: The state key holding the conversation.

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

    def prepare(state: dict[str, Any], config: RunnableConfig | None) -> dict[str, Any]:
        scope = scope_from_config(config)
        trace = trace_of(state)
        episode: dict[str, Any] = {"context": _preceding_turns(state.get(messages_key) or [])}
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        if thread:
            episode["session_id"] = str(thread)
        return {
            "proposals": [
                {**episode, **c}
                if isinstance(c, Mapping) and c.get("kind") == "episode" else c
                for c in state.get(candidates_key) or []
            ],
            "tenant_id": scope.tenant_id,
            "user_id": scope.user_id,
            "agent_id": scope.agent_id,
            "run_id": trace.get("run_id") or run_id_from_config(config),
            "turn": trace.get("turn_index"),
            "trace": trace,
        }

    def finish(trace: dict[str, Any], outcomes: list[Any] | None,
               error: BaseException | None) -> dict[str, Any]:
        if error is not None:
            trace["degraded"].append(f"promotion failed: {error!r:.200}")
            trace["promotions"] = []
        else:
            trace["promotions"] = [o.dict() for o in outcomes or []]
        return {"memory_trace": trace, candidates_key: []}

    def promote(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        args = prepare(state, config)
        trace = args.pop("trace")
        if not args["proposals"]:
            return finish(trace, [], None)
        try:
            return finish(trace, resolve_store(store).promote(**args), None)  # type: ignore[attr-defined]
        except Exception as exc:
            return finish(trace, None, exc)

    async def apromote(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        args = prepare(state, config)
        trace = args.pop("trace")
        if not args["proposals"]:
            return finish(trace, [], None)
        try:
            return finish(trace, await resolve_store(store).apromote(**args), None)  # type: ignore[attr-defined]
        except Exception as exc:
            return finish(trace, None, exc)

    return RunnableLambda(promote, afunc=apromote, name="promote")


def _preceding_turns(messages: list[Any], n: int = 2) -> list[str]:
    """The texts of up to `n` messages before the newest user message, oldest first."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return [t for m in messages[max(0, i - n):i] if (t := message_text(m).strip())]
    return []
