"""The assemble node: this turn's bounded prompt, rebuilt from memory; and the prompt
function that puts it in front of a tool-calling agent's every model call."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    convert_to_messages,
)
from langchain_core.runnables import RunnableConfig, RunnableLambda

from langgraph_typed_memory.assembly import (
    PREAMBLE,
    AssemblyConfig,
    Summarizer,
    assemble,
    chat_window,
    extractive_summary,
    normalize_assembly,
)
from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.nodes._common import (
    OnModelError,
    check_on_model_error,
    model_configured,
    model_for,
    trace_of,
)
from langgraph_typed_memory.turns import message_text

__all__ = [
    "create_assemble_node", "create_memory_prompt", "memory_system_message", "model_summarizer",
    "absorbed_prefix", "KEPT_USER_TURNS", "BLOCK_KEY", "Summary", "SUMMARY_MODES", "memory_turn",
]  # fmt: skip

logger = logging.getLogger(__name__)

Summary = Literal["auto", "model", "extractive"]
"""Who writes the running summary once the conversation outgrows the verbatim window: the
chat model when one is configured, else the extractive summary ("auto"); the model, one call
per turn from then on ("model"); the extractive summary, no model call ("extractive")."""
SUMMARY_MODES: tuple[Summary, ...] = ("auto", "model", "extractive")

BLOCK_KEY = "memory_block"
"""The state key where the assemble node writes the memory block: the rendered memory
without the preamble, a string ("" when there is nothing to show)."""

KEPT_USER_TURNS = 4
"""User turns a trimmed conversation always keeps, the current one included: the extract node
reads the three user messages before the newest, the promote node the two messages before it."""

SUMMARY_PROMPT = (
    "You maintain a running summary of a conversation. Merge the earlier summary and the new "
    "turns into short, factual sentences, oldest first: what the user asked, stated or decided "
    "and what was answered. No preamble."
)


def model_summarizer(chat: BaseChatModel, *, max_tokens: int = 200,
                     failures: list[str] | None = None,
                     on_model_error: OnModelError = "degrade") -> Summarizer:
    """A running summarizer backed by a chat model, extractive when the model fails (the
    failure is logged, and appended to `failures` when given: the assemble node records it
    in the trace); with `on_model_error="raise"` the model's exception propagates.

    The model gets one system message and one user message (the earlier summary and the new
    turns as a transcript), which every provider accepts. The assembler still bounds its
    output to `summary_tokens` (newest sentences kept).

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> fold = model_summarizer(FakeListChatModel(responses=["The user greeted."]))
        >>> fold(None, [HumanMessage("Hi"), AIMessage("Hello!")])
        'The user greeted.'
    """
    check_on_model_error(on_model_error, "model_summarizer")

    def summarize(previous: str | None, turns: list[BaseMessage]) -> str:
        transcript = "\n".join(f"{m.type}: {message_text(m)}" for m in turns)
        try:
            reply = chat.invoke([
                SystemMessage(SUMMARY_PROMPT),
                HumanMessage(f"Earlier summary:\n{previous or '(none)'}\n\nNew turns:\n"
                             f"{transcript}"),
            ])
            text = message_text(reply).strip()
            if text:
                return text
            why = "the summary model answered nothing"
        except Exception as exc:  # degrade: fall back, the turn goes on
            if on_model_error == "raise":
                raise
            why = f"the summary model failed: {exc!r:.200}"
        logger.warning("assemble: %s; the extractive summary is used", why)
        if failures is not None:
            failures.append(f"assemble: {why}; extractive summary used")
        return extractive_summary(previous, turns, max_tokens)

    return summarize


def absorbed_prefix(
    messages: Sequence[BaseMessage],
    absorbed: int,
    *,
    keep_user_turns: int = KEPT_USER_TURNS,
) -> int:
    """How many leading messages can leave the conversation: the summary holds them.

    At most the `absorbed` leading messages the running summary covers (never one of the
    verbatim window, which follows them), never the last `keep_user_turns` user turns (a user
    message and everything after it up to the next one), and only whole turns: the kept
    conversation opens on a user message, so a tool call never leaves without its results
    nor a result without its call. A message without an id cannot be removed (LangGraph's
    `RemoveMessage` names ids), so the prefix stops before the first one.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> chat = [m for i in range(6) for m in (HumanMessage(f"q{i}", id=f"h{i}"),
        ...                                       AIMessage(f"a{i}", id=f"a{i}"))]
        >>> absorbed_prefix(chat, 9)  # four user turns stay: q2 onwards
        4
        >>> absorbed_prefix(chat, 3)  # the summary covers q1, not a1: the turn stays whole
        2
    """
    if keep_user_turns < 1:
        raise ValueError(f"absorbed_prefix: keep_user_turns={keep_user_turns}; use 1 or more.")
    limit = min(max(absorbed, 0), len(messages))
    users = 0
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            users += 1
            if users == keep_user_turns:
                limit = min(limit, i)
                break
    else:
        return 0  # fewer user turns than kept: nothing leaves
    cut = next((i for i, m in enumerate(messages[:limit]) if not m.id), limit)
    while cut > 0 and not isinstance(messages[cut], HumanMessage):
        cut -= 1
    return cut


def create_assemble_node(
    settings: AssemblyConfig | Mapping[str, Any] | None = None,
    /,
    *,
    summarizer: Summarizer | None = None,
    model: BaseChatModel | str | None = None,
    messages_key: str = "messages",
    trim_absorbed: bool = False,
    preamble: str = PREAMBLE,
    summary: Summary = "auto",
    on_model_error: OnModelError = "degrade",
) -> RunnableLambda:
    """Build the assemble node.

    It renders the retrieved memory (`memory_context`) into a system prompt with reserved
    slots (policies, procedures, preferences) and ranked slots (facts, episodes), folds turns
    that leave the verbatim window into the running summary (`memory_summary`), and writes the
    model input to `memory_prompt`, the token report to `memory_trace["tokens"]` and the ids
    of the records the prompt shows, per slot, to `memory_trace["assembled"]`. The
    prompt stays within `budget_tokens` however long the conversation runs.

    It also writes the rendered memory alone, without the preamble, to `memory_block` (a
    string, "" when there is nothing to show), for an app that places it in its own system
    prompt: `memory_system_message` joins it to the app's prompt, and `create_memory_prompt`
    gives a prebuilt ReAct agent the app's prompt, the memory and the turn's running messages
    on every model call. LangGraph keeps only the keys a state declares: declare
    `memory_block: str` in the graph's state to keep it.

    With `trim_absorbed=True` the state's conversation stays short too: the messages the
    running summary absorbed leave `messages` (`RemoveMessage` updates, whole user turns,
    oldest first; see `absorbed_prefix`), keeping the verbatim window and at least the last
    `KEPT_USER_TURNS` user turns, and `memory_summarized` is lowered by as many. A long
    thread then costs a turn no more than a short one: the checkpointer no longer loads and
    writes the whole transcript at every step. The removed messages stay in the
    checkpointer's history (`graph.get_state_history`), and the user's statements in the
    store's turn log (the promote node's); an app that shows the thread from `messages` shows
    only the recent turns. The conversation key must use LangGraph's `add_messages` reducer (as
    `MessagesState` does), and the turn index must come from the state's `memory_turns`
    counter (the retrieve node keeps it), not from counting user messages.

    Args:
        settings: An `AssemblyConfig` (budget, per-item cap, verbatim window...).
        summarizer: Folds older turns into the running summary: any
            `(previous_summary, messages) -> str` callable (then `summary` must stay "auto").
            Default: as `summary` says.
        model: The chat model that writes the running summary.
        summary: "auto" (default: the chat model when one is configured, `model`,
            `configurable["memory_model"]` or `TYPED_MEMORY_MODEL`, else the extractive
            summary, also when the model cannot be built: recorded in
            `memory_trace["degraded"]`), "model" (a run without a model raises
            `ConfigurationError`) or "extractive" (never a model call). With a model, the
            summary costs one call on each turn that pushes messages out of the verbatim
            window: every turn, once the thread is longer than the window.
        on_model_error: "degrade" (default: the extractive summary, recorded and logged) or
            "raise" (the summary model's exception propagates).
        messages_key: The state key holding the conversation.
        trim_absorbed: Remove the messages the running summary absorbed from the state.
            Off by default here, because this node does not know who else reads the
            conversation in your graph; the prebuilt chat graph turns it on.
        preamble: The opening text of `memory_prompt`'s system message, counted in the
            budget (default `PREAMBLE`, "You are an assistant with long-term memory..."). Put
            your app's system prompt here to send one system message, or "" to keep only the
            memory.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> node = create_assemble_node({"budget_tokens": 800})
        >>> out = node.invoke({"messages": [HumanMessage("Where is my order?")],
        ...                    "memory_context": {"preferences": [
        ...                        {"key": "tone", "value": {"value": "terse"},
        ...                         "memory": {"id": "p1", "scope": {}}}]}})
        >>> out["memory_trace"]["tokens"]["budget"], len(out["memory_prompt"])
        (800, 2)
        >>> out["memory_block"]
        '## User preferences\\n- tone: terse\\n'
    """

    limits = normalize_assembly(settings)
    if not isinstance(preamble, str):
        raise ConfigurationError(
            f"create_assemble_node: preamble={preamble!r:.80} is not text; pass a str "
            "(\"\" for none).")
    if summary not in SUMMARY_MODES:
        raise ConfigurationError(
            f"create_assemble_node(summary={summary!r}): use \"auto\" (the model when one is "
            "configured, else the extractive summary), \"model\" or \"extractive\".")
    if summarizer is not None and summary != "auto":
        raise ConfigurationError(
            f"create_assemble_node: summarizer= and summary={summary!r} both say who writes "
            "the running summary; pass one of them.")
    on_error = check_on_model_error(on_model_error, "create_assemble_node")

    def fold(config: RunnableConfig | None, failures: list[str]
             ) -> tuple[Summarizer | None, str | None]:
        """The summarizer (its failures go to `failures`), and why the configured model
        could not be built (if so)."""
        if summarizer is not None:
            return summarizer, None
        if summary == "extractive":
            return None, None
        if summary == "model" and not model_configured(model, config):
            raise ConfigurationError(
                "summary=\"model\" but this run names no chat model: pass one to the "
                "factory (or to create_memory_chat_graph), or set "
                "configurable['memory_model'] or TYPED_MEMORY_MODEL; summary=\"auto\" falls "
                "back to the extractive summary instead.")
        chat, why = model_for(model, config, on_error)
        return (model_summarizer(chat, max_tokens=limits.summary_tokens, failures=failures,
                                 on_model_error=on_error) if chat else None), why

    def run(state: dict[str, Any], config: RunnableConfig | None = None) -> dict[str, Any]:
        context = state.get("memory_context") or {}
        failures: list[str] = []
        summarize, why = fold(config, failures)
        messages = list(state.get(messages_key) or [])
        built = assemble(
            messages=messages,
            policies=context.get("policies", ()),
            procedures=context.get("procedures", ()),
            preferences=context.get("preferences", ()),
            facts=context.get("facts", ()),
            episodes=context.get("episodes", ()),
            summary=state.get("memory_summary") or None,
            summarized_count=int(state.get("memory_summarized") or 0),
            summarizer=summarize,
            config=limits,
            preamble=preamble,
        )
        trace = trace_of(state)
        if why:
            trace["degraded"].append(f"assemble: {why}")
        trace["degraded"].extend(failures)
        trace["tokens"] = {**built.tokens, "over_budget": built.over_budget,
                           "dropped": list(built.dropped)}
        trace["assembled"] = {slot: list(ids) for slot, ids in built.included.items()}
        update: dict[str, Any] = {
            "memory_prompt": built.messages,
            BLOCK_KEY: built.memory_block,
            "memory_summary": built.summary or "",
            "memory_summarized": built.summarized_count,
            "memory_trace": trace,
        }
        if trim_absorbed:
            absorbed = min(built.summarized_count, len(built.older))
            if cut := absorbed_prefix(messages, absorbed):
                update[messages_key] = [RemoveMessage(id=str(m.id)) for m in messages[:cut]]
                update["memory_summarized"] = built.summarized_count - cut
        return update

    async def arun(state: dict[str, Any], config: RunnableConfig | None = None) -> dict[str, Any]:
        # Tokenizing (and, the first time, loading the encoding file; with a model, the
        # summary call) must not block the event loop: `langgraph dev` rejects that.
        return await asyncio.to_thread(run, state, config)

    return RunnableLambda(run, afunc=arun, name="assemble")


def _field(state: Any, key: str) -> Any:
    """A state value, whether the state is a dict or a pydantic model."""
    return state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)


def _has(state: Any, key: str) -> bool:
    return key in state if isinstance(state, Mapping) else hasattr(state, key)


def memory_system_message(
    state: Any,
    system_prompt: str | SystemMessage | None = None,
    /,
    *,
    block_key: str = BLOCK_KEY,
) -> SystemMessage | None:
    """The app's system prompt and this turn's memory block as one `SystemMessage`.

    The block is what the assemble node wrote to `memory_block`; the app's prompt comes
    first, the memory after it. None when both are empty.

    Raises:
        ConfigurationError: the state has no `memory_block` (the assemble node did not run
            before, or the state does not declare the key).

    Example:
        >>> state = {"memory_block": "## User preferences\\n- tone: terse\\n"}
        >>> print(memory_system_message(state, "You are Acme's support agent.").content, end="")
        You are Acme's support agent.
        ## User preferences
        - tone: terse
    """
    if not _has(state, block_key):
        raise ConfigurationError(
            f"The state has no {block_key!r}: run the assemble node (create_assemble_node) "
            f"before the model, and declare `{block_key}: str` in the graph's state schema "
            "(LangGraph drops the keys a state does not declare)."
        )
    block = str(_field(state, block_key) or "")
    own = system_prompt.content if isinstance(system_prompt, SystemMessage) else system_prompt
    if own is not None and not isinstance(own, str):
        raise ConfigurationError(
            f"memory_system_message: system_prompt={own!r:.80} is not text; pass a str or a "
            "SystemMessage with text content.")
    own = own or ""
    text = own + ("\n" if own and block and not own.endswith("\n") else "") + block
    return SystemMessage(text) if text else None


def _running(window: Sequence[BaseMessage], messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages added after the assembled window: the turn's AI and tool messages.

    The window's last message (the user's current one) is found newest first, by id (in a
    graph every message has one), else by equality. Raises `LookupError` when it is not in
    the conversation.
    """
    if not window:
        return list(messages)
    last = window[-1]
    for i in range(len(messages) - 1, -1, -1):
        if (messages[i].id == last.id) if last.id else (messages[i] == last):
            return list(messages[i + 1:])
    raise LookupError(last.id or "(no id)")


def memory_turn(
    assembled: Sequence[BaseMessage], messages: Sequence[BaseMessage]
) -> tuple[SystemMessage | None, list[BaseMessage]]:
    """What one model call of the turn gets: the assembled system message (None when the
    assemble node built none) and the messages after it, which are the verbatim window the
    assemble node chose followed by every message added to the conversation since (the
    turn's tool calls, tool results and replies), opening on a user message with each tool
    call beside its results (`chat_window`).

    When the window's last message (the user's current one) is no longer in `messages`, the
    conversation from its newest user message on is sent instead (logged).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> ask = HumanMessage("Where is order 42?", id="h1")
        >>> call = AIMessage("", id="a1", tool_calls=[{"name": "s", "args": {}, "id": "c1"}])
        >>> system, turn = memory_turn([SystemMessage("memory"), ask],
        ...                            [ask, call, ToolMessage("shipped", tool_call_id="c1")])
        >>> system.content, [m.type for m in turn]
        ('memory', ['human', 'ai', 'tool'])
    """
    head = assembled[0] if assembled and isinstance(assembled[0], SystemMessage) else None
    window = list(assembled[1:] if head is not None else assembled)
    try:
        turn = [*window, *_running(window, messages)]
    except LookupError as missing:
        logger.warning("memory prompt: the current message %s is not in the conversation; "
                       "sending the conversation from its newest user message on after the "
                       "memory", missing)
        turn = chat_window(messages, len(messages))[1]
    return head, chat_window(turn)[1]  # user first, tool calls with their results


def create_memory_prompt(
    system_prompt: str | SystemMessage | None = None,
    /,
    *,
    messages_key: str = "messages",
    prompt_key: str = "memory_prompt",
    block_key: str = BLOCK_KEY,
) -> Callable[[Any], list[BaseMessage]]:
    """A `prompt=` for LangGraph's prebuilt `create_react_agent`: memory on every model call.

    The agent calls it before each model call of its tool loop. It returns one system
    message (your `system_prompt`, then the memory block the assemble node rendered this
    turn), the verbatim window the assemble node chose (the budgeted recent turns, the
    user's current message last), then every message added since: the turn's tool calls,
    tool results and replies, so the model sees them on its next call. Run the retrieve and
    assemble nodes before the agent (see docs/agents.md, "The memory nodes around your own
    tool loop").

    With `system_prompt=None` the system message is the assemble node's own (its `preamble`
    and the memory), so an app that passes its system prompt to the node as `preamble` gets
    it counted in the budget. With a `system_prompt`, the memory block comes from the state's
    `memory_block` (declare it in the state schema); the budget then counts the memory and
    the window, not your prompt. The turn's tool traffic is never counted by the budget: it
    grows with the tool loop.

    Args:
        system_prompt: Your app's system prompt; None: the assemble node's system message.
        messages_key: The state key holding the conversation.
        prompt_key: The state key holding the assembled prompt.
        block_key: The state key holding the memory block.

    Raises:
        ConfigurationError: (when called) the assemble node has not run this turn.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> ask = HumanMessage("Where is order 42?", id="h1")
        >>> call = AIMessage("", id="a1", tool_calls=[
        ...     {"name": "order_status", "args": {"order": 42}, "id": "c1"}])
        >>> state = {"messages": [ask, call, ToolMessage("shipped", tool_call_id="c1", id="t1")],
        ...          "memory_prompt": [SystemMessage("...memory..."), ask],
        ...          "memory_block": "## User preferences\\n- tone: terse\\n"}
        >>> prompt = create_memory_prompt("You are Acme's support agent.")
        >>> [type(m).__name__ for m in prompt(state)]
        ['SystemMessage', 'HumanMessage', 'AIMessage', 'ToolMessage']
        >>> print(prompt(state)[0].content, end="")
        You are Acme's support agent.
        ## User preferences
        - tone: terse
    """

    def prompt(state: Any) -> list[BaseMessage]:
        assembled = convert_to_messages(_field(state, prompt_key) or [])  # dicts too
        if not assembled:
            raise ConfigurationError(
                f"The state has no {prompt_key!r}: run the retrieve and assemble nodes "
                "(create_retrieve_node, create_assemble_node) before the agent, in a graph "
                "whose state declares the memory keys (MemoryState)."
            )
        messages = convert_to_messages(_field(state, messages_key) or [])
        head, turn = memory_turn(assembled, messages)
        if system_prompt is None:
            system = head
        else:
            system = memory_system_message(state, system_prompt, block_key=block_key)
        return [system, *turn] if system is not None else turn

    return prompt
