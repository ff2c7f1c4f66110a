"""The retrieve node: known-scope lookup (D1) and semantic discovery (D2) in one fan-out."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.store.base import BaseStore, SearchOp

from langgraph_typed_memory.namespaces import Scope
from langgraph_typed_memory.nodes._common import (
    last_human,
    message_text,
    resolve_store,
    run_id_from_config,
    scope_from_config,
)
from langgraph_typed_memory.state import new_trace

__all__ = ["create_retrieve_node", "SLOT_KINDS"]

SLOT_KINDS = {
    "policies": "policy",
    "procedures": "procedure",
    "preferences": "preference",
    "facts": "fact",
    "episodes": "episode",
}
_TRACE_FIELDS = {
    "policies": "policies_applied",
    "procedures": "procedures_applied",
    "preferences": "preferences_applied",
    "facts": "facts_returned",
    "episodes": "episodes_returned",
}


def _ops(scope: Scope, query: str, facts: int, episodes: int) -> list[SearchOp]:
    labels = scope.labels()
    limits = {"facts": facts, "episodes": episodes}
    return [
        SearchOp(
            (*labels, kind),
            None,
            limits.get(slot, 10),
            0,
            query if slot in limits and query else None,
            refresh_ttl=False,
        )
        for slot, kind in SLOT_KINDS.items()
    ]


def _finish(
    state: dict[str, Any], config: RunnableConfig | None, results: list[Any] | None,
    error: BaseException | None, messages_key: str,
) -> dict[str, Any]:
    scope = scope_from_config(config)
    messages = state.get(messages_key) or []
    trace = new_trace(
        run_id=run_id_from_config(config),
        turn_index=sum(1 for m in messages if m.type == "human"),
        tenant_id=scope.tenant_id, user_id=scope.user_id, agent_id=scope.agent_id,
    )
    context: dict[str, list[dict[str, Any]]] = {slot: [] for slot in SLOT_KINDS}
    retrieval = trace["retrieval"]
    if error is not None:
        trace["degraded"].append(f"retrieve failed: {error!r:.200}")
        retrieval["retrieval_mode"] = "failed"
        return {"memory_context": context, "memory_trace": trace}
    assert results is not None
    for slot, found in zip(SLOT_KINDS, results, strict=True):
        context[slot] = [item.dict() for item in found]
        ids = [(item.dict().get("memory") or {}).get("id", item.key) for item in found]
        retrieval[_TRACE_FIELDS[slot]] = ids
        retrieval["modes"][slot] = getattr(found, "retrieval_mode", None)
        trace["degraded"].extend(getattr(found, "degraded", []))
    retrieval["retrieval_mode"] = retrieval["modes"].get("facts")
    return {"memory_context": context, "memory_trace": trace}


def create_retrieve_node(
    store: BaseStore | None = None,
    /,
    *,
    facts: int = 8,
    episodes: int = 4,
    messages_key: str = "messages",
) -> RunnableLambda:
    """Build the retrieve node.

    Every turn it loads, for the caller's scope (`configurable` keys `tenant_id`, `user_id`,
    `agent_id`), every active policy, procedure and preference (exhaustive, D1), and the top
    facts and episodes for the newest user message (hybrid, D2), in one store batch. It writes
    `memory_context` and starts the turn's `memory_trace`. A failing store degrades the turn
    (recorded), it never raises.

    Args:
        store: The memory store; default: the graph's runtime store.
        facts: How many facts to retrieve.
        episodes: How many episodes to retrieve.
        messages_key: The state key holding the conversation.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> store.put(("tenant:acme", "user:alice", "preference"), "tone", {"value": "terse"})
        >>> node = create_retrieve_node(store)
        >>> out = node.invoke({"messages": [HumanMessage("hi")]},
        ...                   {"configurable": {"tenant_id": "acme", "user_id": "alice"}})
        >>> [p["value"]["value"] for p in out["memory_context"]["preferences"]]
        ['terse']
    """

    def retrieve(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        query = message_text(last_human(state.get(messages_key) or []))
        ops = _ops(scope_from_config(config), query, facts, episodes)
        try:
            results = resolve_store(store).batch(ops)
        except Exception as exc:  # D3: no exception reaches the graph
            return _finish(state, config, None, exc, messages_key)
        return _finish(state, config, results, None, messages_key)

    async def aretrieve(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        query = message_text(last_human(state.get(messages_key) or []))
        ops = _ops(scope_from_config(config), query, facts, episodes)
        try:
            results = await resolve_store(store).abatch(ops)
        except Exception as exc:
            return _finish(state, config, None, exc, messages_key)
        return _finish(state, config, results, None, messages_key)

    return RunnableLambda(retrieve, afunc=aretrieve, name="retrieve")
