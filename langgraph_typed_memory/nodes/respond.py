"""The respond node: any LangChain chat model, or the offline extractive responder."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from pydantic import BaseModel, Field

from langgraph_typed_memory.assembly import item_id
from langgraph_typed_memory.extraction import EXTRACTION_PROMPT, Candidate
from langgraph_typed_memory.nodes._common import (
    OnModelError,
    check_on_model_error,
    last_human,
    model_for,
    model_name,
    trace_of,
)
from langgraph_typed_memory.nodes.running import Call, Plan, arun, run
from langgraph_typed_memory.state import MemoryTrace
from langgraph_typed_memory.turns import message_text

__all__ = ["create_respond_node", "ReplyWithMemories", "extractive_reply", "OFFLINE_NOTICE"]

logger = logging.getLogger(__name__)

OFFLINE_NOTICE = "(Offline extractive responder, not a language model: I repeat what I remember.)"
RECITED_CHARS = 200
"""The most characters of one memory the offline responder repeats (a longer one is cut at a
word, with an ellipsis): a reply stays a few lines, as a model's would, however long the
turns it remembers."""


def _recited(text: Any) -> str:
    """One memory as the offline responder repeats it: one line, at most `RECITED_CHARS`.

    Example:
        >>> _recited("I live in Lyon.")
        'I live in Lyon.'
        >>> len(_recited("word " * 100)) <= RECITED_CHARS
        True
    """
    line = " ".join(str(text).split())
    if len(line) <= RECITED_CHARS:
        return line
    return line[:RECITED_CHARS - 1].rsplit(" ", 1)[0] + "\u2026"


class ReplyWithMemories(BaseModel):
    """One combined call: the reply to the user and the memories worth keeping from their turn.

    Example:
        >>> ReplyWithMemories(reply="Noted: answers in French.").candidates
        []
    """

    reply: str = Field(description="Your reply to the user's last message.")
    candidates: list[Candidate] = Field(
        default_factory=list,
        description="Durable preferences and facts the user stated in their last message.",
    )


def extractive_reply(context: dict[str, list[dict[str, Any]]], question: str) -> str:
    """Answer with the memory retrieved for this turn, saying it is not a language model.

    Example:
        >>> ctx = {"facts": [{"value": {"content": "Alice lives in Lyon."}}]}
        >>> print(extractive_reply(ctx, "Where do I live?"))
        (Offline extractive responder, not a language model: I repeat what I remember.)
        Relevant facts:
        - Alice lives in Lyon.
    """
    lines = [OFFLINE_NOTICE]
    prefs = context.get("preferences") or []
    if prefs:
        lines.append("Your preferences: " + "; ".join(
            f"{p['value'].get('key', p.get('key'))} = {p['value'].get('value')}" for p in prefs))
    episodes = context.get("episodes") or []
    turns = [e for e in episodes if e["value"].get("task_type") == "turn"]
    work = [e for e in episodes if e["value"].get("task_type") != "turn"]
    for title, items, field in (("Relevant facts:", context.get("facts") or [], "content"),
                                ("What you told me before:", turns, "summary"),
                                ("Related past work:", work, "summary")):
        if items:
            lines.append(title)
            lines.extend(f"- {_recited(item['value'].get(field))}" for item in items[:5])
    if len(lines) == 1:
        lines.append("I have nothing in memory about this yet." if question else "Hello.")
    return "\n".join(lines)


def _shown(context: dict[str, list[dict[str, Any]]], trace: MemoryTrace
           ) -> dict[str, list[dict[str, Any]]]:
    """The retrieved items the assembled prompt shows (`memory_trace["assembled"]`, ids per
    slot), so the offline reply recites what a model would have read; all of them when no
    assemble node ran.

    Example:
        >>> ctx = {"facts": [{"key": "a", "memory": {"id": "1"}},
        ...                  {"key": "b", "memory": {"id": "2"}}]}
        >>> _shown(ctx, {"assembled": {"facts": ["2"]}})["facts"]
        [{'key': 'b', 'memory': {'id': '2'}}]
    """
    assembled = trace.get("assembled")
    if not isinstance(assembled, dict):
        return context
    shown = {slot: set(ids or ()) for slot, ids in assembled.items()}
    return {slot: [item for item in items if item_id(item) in shown.get(slot, ())]
            for slot, items in context.items()}


COMBINED_INSTRUCTIONS = "Also list memories worth keeping.\n" + EXTRACTION_PROMPT
"""What a combined respond call adds to the system message."""


def with_system_text(prompt: list[BaseMessage], text: str) -> list[BaseMessage]:
    """`prompt` with `text` appended to its leading system message (one is put first when it
    has none): providers such as Anthropic refuse a system message after the conversation.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> [m.content for m in with_system_text([SystemMessage("Memory."), HumanMessage("Hi")],
        ...                                      "Be brief.")]
        ['Memory.\\nBe brief.', 'Hi']
        >>> [m.type for m in with_system_text([HumanMessage("Hi")], "Be brief.")]
        ['system', 'human']
    """
    if prompt and isinstance(prompt[0], SystemMessage):
        head = message_text(prompt[0])
        joined = head + ("" if not head or head.endswith("\n") else "\n") + text
        return [SystemMessage(joined, id=prompt[0].id), *prompt[1:]]
    return [SystemMessage(text), *prompt]


def _usage(message: Any) -> tuple[int, int]:
    usage = getattr(message, "usage_metadata", None) or {}
    return int(usage.get("input_tokens", 0) or 0), int(usage.get("output_tokens", 0) or 0)


def create_respond_node(
    model: BaseChatModel | str | None = None,
    /,
    *,
    combined: bool = False,
    messages_key: str = "messages",
    prompt_key: str = "memory_prompt",
    on_model_error: OnModelError = "degrade",
) -> RunnableLambda:
    """Build the respond node.

    The model comes from the argument, else `configurable["memory_model"]`, else the
    environment variable `TYPED_MEMORY_MODEL` (strings go through `init_chat_model`); with
    none, the offline extractive responder answers from the retrieved memory. With
    `combined=True`, one structured call returns the reply and the extraction candidates
    (`memory_candidates`), saving the extract node's model call. By default a model that
    fails, or cannot be built, never fails the turn: the extractive reply is used and the
    failure recorded in `memory_trace["degraded"]` and logged; with `on_model_error="raise"`
    the exception reaches the caller (a missing API key, a provider's 400).

    Args:
        model: A chat model or an `init_chat_model` string; None: configuration or offline.
        combined: Ask for reply and candidates in one structured call.
        messages_key: The state key holding the conversation (the reply is appended).
        prompt_key: The state key holding the assembled prompt (default: the messages).
        on_model_error: "degrade" (default: the offline reply, recorded and logged) or
            "raise" (the model's exception propagates).

    Raises:
        ConfigurationError: `on_model_error` is neither "degrade" nor "raise".

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> node = create_respond_node()
        >>> out = node.invoke({"messages": [HumanMessage("hi")], "memory_context": {}})
        >>> out["messages"][0].content.startswith("(Offline extractive responder")
        True
    """

    on_error = check_on_model_error(on_model_error, "create_respond_node")

    def prepare(state: dict[str, Any], config: RunnableConfig | None) -> tuple[Any, ...]:
        prompt: list[BaseMessage] = list(state.get(prompt_key) or state.get(messages_key) or [])
        chat, why = model_for(model, config, on_error)
        return chat, why, prompt, trace_of(state)

    def offline(state: dict[str, Any], trace: MemoryTrace, why: str | None) -> dict[str, Any]:
        question = message_text(last_human(state.get(messages_key) or []))
        text = extractive_reply(_shown(state.get("memory_context") or {}, trace), question)
        trace["model_call"] = {"model": model_name(None), "input_tokens": 0, "output_tokens": 0}
        if why:
            trace["degraded"].append(why)
            trace["model_call"]["error"] = why
        return {messages_key: [AIMessage(text)], "memory_trace": trace}

    def finish(answer: Any, chat: BaseChatModel, trace: MemoryTrace) -> dict[str, Any]:
        out: dict[str, Any] = {"memory_trace": trace}
        if combined:
            parsed, raw = answer.get("parsed"), answer.get("raw")
            if parsed is None:
                raise ValueError(f"malformed structured reply: {answer.get('parsing_error')!r}")
            reply = AIMessage(parsed.reply)
            out["memory_candidates"] = [c.model_dump(mode="json") for c in parsed.candidates]
            trace.setdefault("extraction", {})["method"] = "combined"
        else:
            raw = reply = answer
        inp, outp = _usage(raw)
        trace["model_call"] = {"model": model_name(chat), "input_tokens": inp,
                               "output_tokens": outp}
        out[messages_key] = [reply]
        return out

    def bound(chat: BaseChatModel) -> Any:
        return chat.with_structured_output(ReplyWithMemories, include_raw=True) if combined \
            else chat

    def with_instructions(prompt: list[BaseMessage]) -> list[BaseMessage]:
        if not combined:
            return prompt
        return with_system_text(prompt, COMBINED_INSTRUCTIONS)

    def failed(exc: Exception) -> str:
        why = f"model failed: {exc!r:.200}"
        logger.warning("respond: %s", why)
        return why

    def plan(state: dict[str, Any], config: RunnableConfig) -> Plan[dict[str, Any]]:
        chat, why, prompt, trace = prepare(state, config)
        if chat is None:
            return offline(state, trace, why)
        try:
            caller = bound(chat)
            answer = yield Call(caller.invoke, caller.ainvoke, (with_instructions(prompt),))
            return finish(answer, chat, trace)
        except Exception as exc:  # the turn completes, degraded and recorded
            if on_error == "raise":
                raise
            return offline(state, trace, failed(exc))

    def respond(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return run(plan(state, config))

    async def arespond(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return await arun(plan(state, config))

    return RunnableLambda(respond, afunc=arespond, name="respond")
