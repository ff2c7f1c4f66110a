"""LangChain tools over typed memory, for tool-calling agents without the prebuilt graph.

The caller's scope comes from the run's `configurable` (`tenant_id`, `user_id`, `agent_id`),
never from the model: a tool call cannot read or write outside it, and proposals go through
the promotion gate, which computes status and scope itself. Errors come back as text written
for the model that reads them.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.store.base import BaseStore, SearchOp
from pydantic import BaseModel, ConfigDict, Field

from langgraph_typed_memory.errors import TypedMemoryError
from langgraph_typed_memory.nodes._common import resolve_store, scope_from_config

__all__ = ["create_search_memory_tool", "create_propose_memory_tool"]

SearchKind = Literal["fact", "episode", "preference", "policy", "procedure"]


class SearchMemoryInput(BaseModel):
    """Arguments of the search tool."""

    query: str = Field(description="What to look for, in plain words.")
    kind: SearchKind = Field(
        default="fact",
        description="fact or episode: ranked search; preference, policy, procedure: all of them.",
    )
    limit: int = Field(default=5, ge=1, le=20, description="How many results (ranked kinds).")


class ProposeMemoryInput(BaseModel):
    """Arguments of the propose tool (status and scope are decided by the gate)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["preference", "fact"] = Field(description="preference or fact.")
    content: str = Field(description="One standalone sentence, e.g. 'The user lives in Lyon.'")
    key: str | None = Field(default=None, description="Preference key, e.g. 'output_format'.")
    subject: str | None = Field(default=None, description="Fact subject, e.g. 'user'.")
    predicate: str | None = Field(default=None, description="Fact predicate, e.g. 'home_city'.")
    value: Any = Field(default=None, description="The structured value, e.g. 'Lyon'.")
    confidence: float = Field(default=0.8, ge=0, le=1, description="How sure you are, 0..1.")
    grounding: str | None = Field(default=None, description="The user's words it comes from.")


def _render(item: Any) -> str:
    value, memory = item.value, getattr(item, "memory", {}) or {}
    text = value.get("content") or value.get("summary") or value.get("rule") or value.get("value")
    tier = memory.get("tier")
    return f"- [{memory.get('kind', '?')}{', ' + tier if tier else ''}] {item.key}: {text}"


def _results(found: Any) -> str:
    if not found:
        return "No memory found."
    mode = getattr(found, "retrieval_mode", "?")
    return f"Found {len(found)} (mode: {mode}):\n" + "\n".join(_render(i) for i in found)


def create_search_memory_tool(
    store: BaseStore | None = None, /, *, name: str = "search_memory"
) -> BaseTool:
    """A tool that searches the caller's typed memory.

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> store.put(("tenant:acme", "user:alice", "fact"), "city", {
        ...     "subject": "user", "predicate": "home_city", "content": "The user lives in Lyon."})
        >>> tool = create_search_memory_tool(store)
        >>> print(tool.invoke({"query": "where does the user live"},
        ...                   {"configurable": {"tenant_id": "acme", "user_id": "alice"}}))
        Found 1 (mode: lexical):
        - [fact, high] city: The user lives in Lyon.
    """

    def op(query: str, config: RunnableConfig, kind: SearchKind, limit: int) -> SearchOp:
        scope = scope_from_config(config)
        return SearchOp((*scope.labels(), kind), None, limit, 0, query or None)

    def search(query: str, config: RunnableConfig, kind: SearchKind = "fact",
               limit: int = 5) -> str:
        try:
            [found] = resolve_store(store).batch([op(query, config, kind, limit)])
        except TypedMemoryError as exc:
            return f"Search failed: {exc}"
        return _results(found)

    async def asearch(query: str, config: RunnableConfig, kind: SearchKind = "fact",
                      limit: int = 5) -> str:
        try:
            [found] = await resolve_store(store).abatch([op(query, config, kind, limit)])
        except TypedMemoryError as exc:
            return f"Search failed: {exc}"
        return _results(found)

    return StructuredTool.from_function(
        func=search, coroutine=asearch, name=name, args_schema=SearchMemoryInput,
        description="Search long-term memory about the current user: facts and past episodes "
        "ranked by relevance, or every preference, policy or procedure that applies.",
    )


def create_propose_memory_tool(
    store: BaseStore | None = None, /, *, name: str = "propose_memory"
) -> BaseTool:
    """A tool that proposes a memory to the promotion gate, in the caller's scope.

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> tool = create_propose_memory_tool(store)
        >>> print(tool.invoke({"kind": "preference", "key": "tone", "value": "terse",
        ...                    "content": "The user wants terse answers.", "confidence": 0.9},
        ...                   {"configurable": {"tenant_id": "acme", "user_id": "alice",
        ...                                     "run_id": "run-1"}}))
        written: preference 'tone' (new memory)
    """

    def arguments(config: RunnableConfig, fields: dict[str, Any]) -> dict[str, Any]:
        scope = scope_from_config(config)
        configurable = config.get("configurable") or {}
        return {
            "proposals": [{k: v for k, v in fields.items() if v is not None}],
            "tenant_id": scope.tenant_id, "user_id": scope.user_id, "agent_id": scope.agent_id,
            "run_id": config.get("run_id") and str(config.get("run_id"))
            or configurable.get("run_id") or "tool-call",
            "source": f"tool:{name}",
        }

    def said(outcomes: list[Any]) -> str:
        o = outcomes[0]
        return f"{o.outcome}: {o.kind} {o.key!r} ({o.reason})"

    def propose(config: RunnableConfig, **fields: Any) -> str:
        try:
            return said(resolve_store(store).promote(**arguments(config, fields)))  # type: ignore[attr-defined]
        except TypedMemoryError as exc:
            return f"Not saved: {exc}"

    async def apropose(config: RunnableConfig, **fields: Any) -> str:
        try:
            return said(await resolve_store(store).apromote(**arguments(config, fields)))  # type: ignore[attr-defined]
        except TypedMemoryError as exc:
            return f"Not saved: {exc}"

    return StructuredTool.from_function(
        func=propose, coroutine=apropose, name=name, args_schema=ProposeMemoryInput,
        description="Propose a durable preference or fact about the current user for long-term "
        "memory. The memory gate verifies, deduplicates and may reject it; the reply says what "
        "happened.",
    )
