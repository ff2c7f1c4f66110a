"""LangChain tools over typed memory, for tool-calling agents without the prebuilt graph.

The caller's scope comes from the run's `configurable` (`tenant_id`, `user_id`, `agent_id`),
never from the model: a tool call cannot read or write outside it, and proposals go through
the promotion gate, which computes status and scope itself. Errors come back as text written
for the model that reads them.

Proposals have one tool per kind (`propose_fact`, `propose_preference`): each tool's JSON
schema requires exactly what the gate needs for its kind, so a model that follows the schema
is not sent back for a missing subject or key. `create_memory_tools` returns the search tool
and both. `create_propose_memory_tool` is the single tool for both kinds (one tool definition
fewer in every request, but its schema cannot require a fact's subject and predicate).
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.store.base import BaseStore, SearchOp
from pydantic import BaseModel, ConfigDict, Field

from langgraph_typed_memory.errors import TypedMemoryError
from langgraph_typed_memory.namespaces import scope_from_config
from langgraph_typed_memory.nodes._common import (
    check_gate_store,
    resolve_store,
    writable_scope,
)

__all__ = [
    "create_memory_tools", "create_search_memory_tool", "create_propose_fact_tool",
    "create_propose_preference_tool", "create_propose_memory_tool",
    "ProposeFactInput", "ProposePreferenceInput", "ProposeMemoryInput", "SearchMemoryInput",
]  # fmt: skip

SearchKind = Literal["fact", "episode", "preference", "policy", "procedure"]


class SearchMemoryInput(BaseModel):
    """Arguments of the search tool."""

    query: str = Field(description="What to look for, in plain words.")
    kind: SearchKind = Field(
        default="fact",
        description="fact or episode: ranked search; preference, policy, procedure: all of them.",
    )
    limit: int = Field(default=5, ge=1, le=20, description="How many results (ranked kinds).")


_CONTENT = "One standalone sentence, e.g. 'The user lives in Lyon.'"
_CONFIDENCE = "How sure you are, 0..1."
_GROUNDING = "The user's words it comes from."


class ProposeMemoryInput(BaseModel):
    """Arguments of the two-kind propose tool (status and scope are decided by the gate)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["preference", "fact"] = Field(description="preference or fact.")
    content: str = Field(description=_CONTENT)
    key: str | None = Field(
        default=None,
        description="Preference key, e.g. 'output_format'. Required for a preference.")
    subject: str | None = Field(
        default=None, description="Fact subject, e.g. 'user'. Required for a fact.")
    predicate: str | None = Field(
        default=None, description="Fact predicate, e.g. 'home_city'. Required for a fact.")
    value: Any = Field(
        default=None,
        description="The structured value, e.g. 'Lyon'. Required for a preference.")
    confidence: float = Field(default=0.8, ge=0, le=1, description=_CONFIDENCE)
    grounding: str | None = Field(default=None, description=_GROUNDING)


class ProposeFactInput(BaseModel):
    """Arguments of the fact tool: subject, predicate and content required, as the gate needs.

    Example:
        >>> ProposeFactInput.model_json_schema()["required"]
        ['subject', 'predicate', 'content']
    """

    model_config = ConfigDict(extra="forbid")

    subject: str = Field(min_length=1, description="Who or what the fact is about, e.g. 'user'.")
    predicate: str = Field(
        min_length=1, description="What is stated about it, snake_case, e.g. 'home_city'.")
    content: str = Field(min_length=1, description=_CONTENT)
    value: Any = Field(default=None, description="The structured value, e.g. 'Lyon'.")
    confidence: float = Field(default=0.8, ge=0, le=1, description=_CONFIDENCE)
    grounding: str | None = Field(default=None, description=_GROUNDING)


class ProposePreferenceInput(BaseModel):
    """Arguments of the preference tool: key, value and content required, as the gate needs.

    Example:
        >>> ProposePreferenceInput.model_json_schema()["required"]
        ['key', 'value', 'content']
    """

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1, description="The setting, snake_case, e.g. 'output_format'.")
    value: Any = Field(description="The setting's value, e.g. 'bullet points'.")
    content: str = Field(
        min_length=1, description="One standalone sentence, e.g. 'The user wants bullet points.'")
    confidence: float = Field(default=0.8, ge=0, le=1, description=_CONFIDENCE)
    grounding: str | None = Field(default=None, description=_GROUNDING)


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
        # a misconfiguration (no store, bad ids) raises; a failing search is told to the model
        found_in, request = resolve_store(store), op(query, config, kind, limit)
        try:
            [found] = found_in.batch([request])
        except TypedMemoryError as exc:
            return f"Search failed: {exc}"
        return _results(found)

    async def asearch(query: str, config: RunnableConfig, kind: SearchKind = "fact",
                      limit: int = 5) -> str:
        found_in, request = resolve_store(store), op(query, config, kind, limit)
        try:
            [found] = await found_in.abatch([request])
        except TypedMemoryError as exc:
            return f"Search failed: {exc}"
        return _results(found)

    return StructuredTool.from_function(
        func=search, coroutine=asearch, name=name, args_schema=SearchMemoryInput,
        description="Search long-term memory about the current user: facts and past episodes "
        "ranked by relevance, or every preference, policy or procedure that applies.",
    )


def _propose_tool(
    store: BaseStore | None, *, name: str, args_schema: type[BaseModel],
    kind: str | None, description: str,
) -> BaseTool:
    """A propose tool: its arguments (plus `kind` when the tool has one) go to the gate."""

    def arguments(config: RunnableConfig, fields: dict[str, Any]) -> dict[str, Any]:
        scope = writable_scope(scope_from_config(config), f"The {name} tool")
        configurable = config.get("configurable") or {}
        proposal = {k: v for k, v in fields.items() if v is not None}
        if kind is not None:
            proposal["kind"] = kind
        return {
            "proposals": [proposal],
            "tenant_id": scope.tenant_id, "user_id": scope.user_id, "agent_id": scope.agent_id,
            "run_id": config.get("run_id") and str(config.get("run_id"))
            or configurable.get("run_id") or "tool-call",
            "source": f"tool:{name}",
        }

    def said(outcomes: list[Any]) -> str:
        o = outcomes[0]
        return f"{o.outcome}: {o.kind} {o.key!r} ({o.reason})"

    def propose(config: RunnableConfig, **fields: Any) -> str:
        # a misconfiguration (no store, no gate, bad ids) raises; a refusal is told to the model
        gate, request = check_gate_store(resolve_store(store)), arguments(config, fields)
        try:
            return said(gate.promote(**request))  # type: ignore[attr-defined]
        except TypedMemoryError as exc:
            return f"Not saved: {exc}"

    async def apropose(config: RunnableConfig, **fields: Any) -> str:
        gate, request = check_gate_store(resolve_store(store)), arguments(config, fields)
        try:
            return said(await gate.apromote(**request))  # type: ignore[attr-defined]
        except TypedMemoryError as exc:
            return f"Not saved: {exc}"

    return StructuredTool.from_function(
        func=propose, coroutine=apropose, name=name, args_schema=args_schema,
        description=description,
    )


_GATE = ("The memory gate verifies, deduplicates and may reject it; the reply says what "
         "happened.")


def create_propose_fact_tool(
    store: BaseStore | None = None, /, *, name: str = "propose_fact"
) -> BaseTool:
    """A tool that proposes a fact to the promotion gate, in the caller's scope.

    Its JSON schema requires `subject`, `predicate` and `content`, which the gate needs for
    every fact (`ProposeFactInput`).

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> tool = create_propose_fact_tool(store)
        >>> print(tool.invoke({"subject": "user", "predicate": "home_city", "value": "Lyon",
        ...                    "content": "The user lives in Lyon.", "confidence": 0.9},
        ...                   {"configurable": {"tenant_id": "acme", "user_id": "alice",
        ...                                     "run_id": "run-1"}}))
        written: fact 'fact:user:home_city' (new memory)
    """
    return _propose_tool(
        store, name=name, args_schema=ProposeFactInput, kind="fact",
        description="Propose a durable fact about the current user (or what they told you "
        "about their world) for long-term memory: who or what it is about (subject), what is "
        "stated (predicate) and one standalone sentence. " + _GATE,
    )


def create_propose_preference_tool(
    store: BaseStore | None = None, /, *, name: str = "propose_preference"
) -> BaseTool:
    """A tool that proposes a user preference to the promotion gate, in the caller's scope.

    Its JSON schema requires `key`, `value` and `content`, which the gate needs for every
    preference (`ProposePreferenceInput`).

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> tool = create_propose_preference_tool(store)
        >>> print(tool.invoke({"key": "tone", "value": "terse", "confidence": 0.9,
        ...                    "content": "The user wants terse answers."},
        ...                   {"configurable": {"tenant_id": "acme", "user_id": "alice"}}))
        written: preference 'tone' (new memory)
    """
    return _propose_tool(
        store, name=name, args_schema=ProposePreferenceInput, kind="preference",
        description="Propose a durable preference of the current user (how they want to be "
        "answered or served: format, tone, language...) for long-term memory: a key, its value "
        "and one standalone sentence. " + _GATE,
    )


def create_propose_memory_tool(
    store: BaseStore | None = None, /, *, name: str = "propose_memory"
) -> BaseTool:
    """One tool that proposes a preference or a fact to the promotion gate, in the caller's scope.

    One tool definition instead of two, but its schema cannot require a fact's subject and
    predicate or a preference's key (the field descriptions say so, and the gate rejects what
    lacks them, saying why): prefer `create_propose_fact_tool` and
    `create_propose_preference_tool`, or `create_memory_tools`.

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
    return _propose_tool(
        store, name=name, args_schema=ProposeMemoryInput, kind=None,
        description="Propose a durable preference or fact about the current user for long-term "
        "memory (a fact needs subject and predicate, a preference key and value). " + _GATE,
    )


def create_memory_tools(store: BaseStore | None = None, /) -> list[BaseTool]:
    """The memory tools for a tool-calling agent: `search_memory`, `propose_preference` and
    `propose_fact`.

    Without `store`, each tool finds the graph's runtime store when it runs (a `ToolNode` in a
    graph compiled with `store=`, as a prebuilt ReAct agent is).

    Example:
        >>> [tool.name for tool in create_memory_tools()]
        ['search_memory', 'propose_preference', 'propose_fact']
    """
    return [create_search_memory_tool(store), create_propose_preference_tool(store),
            create_propose_fact_tool(store)]
