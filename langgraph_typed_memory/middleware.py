"""Typed memory for LangChain v1 agents: `MemoryMiddleware` for `langchain.agents.create_agent`.

Needs the `agents` extra (`pip install 'langgraph-typed-memory[agents]'`, LangChain 1.0 or
later). The middleware runs the memory nodes around the agent's loop: retrieve and assemble
once when a turn starts, the memory in the system message of every model call, extract and
promote once the agent has answered.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage
from langgraph.channels import UntrackedValue
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ModelRequest,
        ModelResponse,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "MemoryMiddleware needs LangChain v1's agents (langchain>=1.0): "
        "pip install 'langgraph-typed-memory[agents]'"
    ) from exc

from langgraph_typed_memory.assembly import AssemblyConfig
from langgraph_typed_memory.nodes._common import OnModelError, check_gate_store, last_human_at
from langgraph_typed_memory.nodes.assemble import (
    BLOCK_KEY,
    Summary,
    create_assemble_node,
    memory_turn,
)
from langgraph_typed_memory.nodes.extract import Extraction, create_extract_node
from langgraph_typed_memory.nodes.promote import create_promote_node
from langgraph_typed_memory.nodes.retrieve import create_retrieve_node
from langgraph_typed_memory.nodes.running import Call, Plan, arun, run

__all__ = ["MemoryMiddleware", "MemoryAgentState"]

logger = logging.getLogger(__name__)


class MemoryAgentState(AgentState[Any]):
    """The agent's state with the memory keys (as in `MemoryState`): what the middleware
    keeps between its hooks, and the turn's trace (`memory_trace`) in what the agent returns
    and in the checkpointer's history."""

    memory_context: NotRequired[Annotated[dict[str, list[dict[str, Any]]],
                                          UntrackedValue(dict)]]
    memory_prompt: NotRequired[list[AnyMessage]]
    memory_block: NotRequired[str]
    memory_summary: NotRequired[str]
    memory_summarized: NotRequired[int]
    memory_turns: NotRequired[int]
    memory_candidates: NotRequired[list[dict[str, Any]]]
    memory_recent: NotRequired[list[tuple[str, float]]]
    memory_entities: NotRequired[dict[str, list[str]]]
    memory_trace: NotRequired[dict[str, Any]]


_Handler = Callable[[ModelRequest], ModelResponse]
_AsyncHandler = Callable[[ModelRequest], Awaitable[ModelResponse]]


class MemoryMiddleware(AgentMiddleware[MemoryAgentState, Any]):
    """Typed, scoped long-term memory for an agent built with `langchain.agents.create_agent`.

    Once per turn, before the agent's first model call, it runs the retrieve and assemble
    nodes: every policy, procedure and preference in the caller's scope, the facts and
    episodes the user's message finds, rendered within the token budget (`assembly`). On
    every model call of the turn's tool loop the model gets the agent's system prompt with
    the memory after it, then the verbatim window the assemble node chose (opening on a user
    message) and the turn's tool calls and results. After the agent's final answer it runs
    the extract and promote nodes: what the user stated goes through the store's promotion
    gate, and the turn is logged. The turn's trace (`memory_trace`: what was retrieved and
    shown, the token report, the promotions, any degradation) is in the agent's state.

    The store is the one given here, else the agent's (`create_agent(..., store=...)`);
    it must be this package's store (the promotion gate). The scope comes from the run's
    `configurable` keys, as for the nodes: `tenant_id`, `user_id`, `agent_id` (the
    authenticated user under a LangGraph server; the thread, `thread-<thread_id>`, without a
    user). The thread is recorded for its scope, so erasing the user deletes it from the
    checkpointer.

    Model calls: none of its own by default. With a chat model (`model=`,
    `configurable["memory_model"]` or `TYPED_MEMORY_MODEL`), extraction makes one
    structured-output call on each turn the pre-filter keeps (`extraction="rules"` never
    does) and the running summary one call on each turn once the thread outgrows the
    verbatim window (`summary="extractive"` never does). The agent's own model is never used
    for memory. Retrieve and assemble cost one store batch and the tokenizer once per turn;
    the model-call hook only splices lists.

    Args:
        store: The memory store; default: the agent's runtime store.
        model: The chat model (or `init_chat_model` string) for extraction and the running
            summary; None: `configurable["memory_model"]`, `TYPED_MEMORY_MODEL`, else offline.
        extraction: "auto" (the model when one is configured, else the rules), "model" or
            "rules".
        summary: "auto" (the model when one is configured, else the extractive summary),
            "model" or "extractive".
        assembly: The prompt budget (`AssemblyConfig`). The budget counts the memory and the
            verbatim window, not the agent's system prompt nor the turn's tool traffic.
        trim_absorbed: Remove from the state's messages those the running summary absorbed
            (see `create_assemble_node`); off by default, since an app may render the thread
            from the agent's messages.
        on_model_error: "degrade" (default: rules and extractive summary, recorded in the
            trace and logged) or "raise", for the extraction and summary calls.

    Raises:
        ConfigurationError: `store` has no promotion gate, or a switch has an unknown value;
            on the first turn, no store at all or a run that names no user, agent or thread.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> from langgraph_typed_memory import MemoryMiddleware, SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> model = GenericFakeChatModel(messages=iter([AIMessage("Noted."), AIMessage("Lyon.")]))
        >>> agent = create_agent(model, middleware=[MemoryMiddleware()], store=store)
        >>> alice = {"configurable": {"user_id": "alice", "thread_id": "t1"}}
        >>> out = agent.invoke({"messages": [HumanMessage("I live in Lyon.")]}, alice)
        >>> sorted((p["kind"], p["outcome"]) for p in out["memory_trace"]["promotions"])[-2:]
        [('episode', 'written'), ('fact', 'written')]
        >>> later = {"configurable": {"user_id": "alice", "thread_id": "t2"}}
        >>> out = agent.invoke({"messages": [HumanMessage("Where do I live?")]}, later)
        >>> "lives in Lyon" in out["memory_prompt"][0].content
        True
    """

    state_schema = MemoryAgentState

    def __init__(
        self,
        store: BaseStore | None = None,
        /,
        *,
        model: BaseChatModel | str | None = None,
        extraction: Extraction = "auto",
        summary: Summary = "auto",
        assembly: AssemblyConfig | Mapping[str, Any] | None = None,
        trim_absorbed: bool = False,
        on_model_error: OnModelError = "degrade",
    ) -> None:
        super().__init__()
        if store is not None:
            check_gate_store(store)
        self.store = store
        self.tools = []
        self._retrieve = create_retrieve_node(store)
        self._assemble = create_assemble_node(
            assembly, model=model, trim_absorbed=trim_absorbed, preamble="", summary=summary,
            on_model_error=on_model_error)
        self._extract = create_extract_node(model, extraction=extraction, store=store,
                                            on_model_error=on_model_error)
        self._promote = create_promote_node(store)

    # Before the turn: retrieve and assemble, once.

    def before_agent(self, state: MemoryAgentState, runtime: Runtime[Any]
                     ) -> dict[str, Any] | None:
        """Retrieve the caller's memory and assemble this turn's prompt (`memory_prompt`,
        `memory_block`, the trace's `retrieval`, `tokens` and `assembled`).

        Example:
            >>> from langchain.agents import create_agent
            >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
            >>> from langchain_core.messages import AIMessage, HumanMessage
            >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
            >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
            >>> store.setup()
            >>> store.put(("tenant:default", "user:alice", "preference"), "tone",
            ...           {"value": "terse"})
            >>> model = GenericFakeChatModel(messages=iter([AIMessage("Hi.")]))
            >>> agent = create_agent(model, middleware=[MemoryMiddleware()], store=store)
            >>> out = agent.invoke({"messages": [HumanMessage("hi")]},
            ...                    {"configurable": {"user_id": "alice"}})
            >>> out["memory_block"]
            '## User preferences\\n- tone: terse\\n'
        """
        return run(self._before(state))

    async def abefore_agent(self, state: MemoryAgentState, runtime: Runtime[Any]
                            ) -> dict[str, Any] | None:
        """Async `before_agent`."""
        return await arun(self._before(state))

    def _before(self, state: MemoryAgentState) -> Plan[dict[str, Any]]:
        config = get_config()
        found = yield Call(self._retrieve.invoke, self._retrieve.ainvoke, (state, config))
        built = yield Call(self._assemble.invoke, self._assemble.ainvoke,
                           ({**state, **found}, config))
        return {**found, **built}

    # Every model call: the memory in the system message, the window and the turn.

    def wrap_model_call(self, request: ModelRequest, handler: _Handler) -> ModelResponse:
        """Call the model with the memory after the agent's system prompt, and the assembled
        window followed by the turn's messages.

        Example:
            >>> from langchain.agents.middleware import ModelRequest
            >>> from langchain_core.messages import HumanMessage
            >>> ask = HumanMessage("Where is order 42?", id="h1")
            >>> memory = {"messages": [ask], "memory_prompt": [ask],
            ...           "memory_block": "## User preferences\\n- tone: terse\\n"}
            >>> request = ModelRequest(model=None, messages=[ask], state=memory,
            ...                        system_message=SystemMessage("You are Acme's agent."))
            >>> sent = MemoryMiddleware().wrap_model_call(request, lambda r: r)
            >>> print(sent.system_message.content, end="")
            You are Acme's agent.
            ## User preferences
            - tone: terse
        """
        return handler(_with_memory(request))

    async def awrap_model_call(self, request: ModelRequest, handler: _AsyncHandler
                               ) -> ModelResponse:
        """Async `wrap_model_call`."""
        return await handler(_with_memory(request))

    # After the turn: extract and promote, once.

    def after_agent(self, state: MemoryAgentState, runtime: Runtime[Any]
                    ) -> dict[str, Any] | None:
        """Offer what the user stated this turn, and the turn itself, to the gate (the
        trace's `extraction`, `promotions` and the turn's `model_call`s).

        Example:
            >>> from langchain.agents import create_agent
            >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
            >>> from langchain_core.messages import AIMessage, HumanMessage
            >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
            >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
            >>> store.setup()
            >>> model = GenericFakeChatModel(messages=iter([AIMessage("Noted.")]))
            >>> agent = create_agent(model, middleware=[MemoryMiddleware()], store=store)
            >>> out = agent.invoke({"messages": [HumanMessage("Please answer in French.")]},
            ...                    {"configurable": {"user_id": "alice"}})
            >>> [(p["kind"], p["key"]) for p in out["memory_trace"]["promotions"]][:1]
            [('preference', 'language')]
            >>> out["memory_trace"]["model_call"]["calls"]
            1
        """
        return run(self._after(state))

    async def aafter_agent(self, state: MemoryAgentState, runtime: Runtime[Any]
                           ) -> dict[str, Any] | None:
        """Async `after_agent`."""
        return await arun(self._after(state))

    def _after(self, state: MemoryAgentState) -> Plan[dict[str, Any]]:
        config = get_config()
        turn = _with_model_calls(state)
        extracted = yield Call(self._extract.invoke, self._extract.ainvoke, (turn, config))
        promoted = yield Call(self._promote.invoke, self._promote.ainvoke,
                              ({**turn, **extracted}, config))
        return {**extracted, **promoted}


def _with_memory(request: ModelRequest) -> ModelRequest:
    """The model request with the memory block after the agent's system prompt and the
    assembled window in front of the turn's messages; unchanged when no memory was
    assembled this turn."""
    state: Mapping[str, Any] = request.state
    assembled = state.get("memory_prompt")
    if not assembled:
        return request
    _, turn = memory_turn(assembled, request.messages)
    system = _system_with(request.system_message, str(state.get(BLOCK_KEY) or ""))
    return request.override(system_message=system, messages=cast("list[AnyMessage]", turn))


def _system_with(system: SystemMessage | None, block: str) -> SystemMessage | None:
    """The agent's system message with the memory block after it (a text block of its own
    when the message holds content blocks, as one with cache markers does).

    Example:
        >>> _system_with(SystemMessage("You are Acme's agent."), "## Facts\\n- x\\n").content
        "You are Acme's agent.\\n## Facts\\n- x\\n"
        >>> _system_with(None, "") is None
        True
    """
    if not block:
        return system
    if system is None:
        return SystemMessage(block)
    if isinstance(system.content, str):
        own = system.content
        joiner = "\n" if own and not own.endswith("\n") else ""
        return SystemMessage(own + joiner + block, id=system.id)
    return SystemMessage([*system.content, {"type": "text", "text": block}], id=system.id)


def _with_model_calls(state: Mapping[str, Any]) -> dict[str, Any]:
    """`state` with the trace's `model_call` summing the agent's model calls of this turn
    (the AI messages after the newest user message): their number and token usage."""
    messages: Sequence[BaseMessage] = state.get("messages") or []
    at = last_human_at(messages)
    replies = [m for m in messages[(at or 0) + 1:] if isinstance(m, AIMessage)]
    usage: list[Mapping[str, Any]] = [m.usage_metadata or {} for m in replies]
    names = {str(m.response_metadata.get("model_name") or m.response_metadata.get("model"))
             for m in replies if m.response_metadata.get("model_name")
             or m.response_metadata.get("model")}
    trace = dict(state.get("memory_trace") or {})
    trace["model_call"] = {
        "model": ", ".join(sorted(names)) or "the agent's model",
        "calls": len(replies),
        "input_tokens": sum(int(u.get("input_tokens", 0) or 0) for u in usage),
        "output_tokens": sum(int(u.get("output_tokens", 0) or 0) for u in usage),
    }
    return {**state, "memory_trace": trace}

