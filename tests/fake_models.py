"""Fake chat models built on langchain_core's fakes, with structured output through tool calls."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field


def usage(inp: int = 0, out: int = 0) -> dict[str, int]:
    return {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}


def tool_reply(name: str, args: dict[str, Any], *, inp: int = 30, out: int = 12) -> AIMessage:
    """What a model returns for `with_structured_output(Schema)`: one tool call."""
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": "call-1"}],
                     usage_metadata=usage(inp, out))


class ScriptedChatModel(GenericFakeChatModel):
    """Answers with scripted messages in order (cycling), and supports structured output."""

    prompts: list[Sequence[BaseMessage]] = []

    @classmethod
    def of(cls, *replies: AIMessage | str) -> ScriptedChatModel:
        messages = [r if isinstance(r, AIMessage) else AIMessage(r, usage_metadata=usage(20, 5))
                    for r in replies]
        return cls(messages=itertools.cycle(messages), prompts=[])

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.prompts.append(messages)
        return super()._generate(messages, *args, **kwargs)


class FailingChatModel(GenericFakeChatModel):
    """Raises on every call, like a provider outage."""

    def __init__(self) -> None:
        super().__init__(messages=iter(()))

    def bind_tools(self, tools: Any, **kwargs: Any) -> FailingChatModel:  # type: ignore[override]
        return self

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("model provider unavailable")

    async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("model provider unavailable")


def no_more() -> Iterator[AIMessage]:
    return iter(())


class ProviderRejected(ValueError):
    """What a strict provider's 400 looks like: the request's messages are out of order."""


def provider_rejects(messages: Sequence[BaseMessage]) -> str | None:
    """Why a strict provider (Anthropic, Gemini; OpenAI for tool calls) refuses `messages`,
    else None: a system message after the conversation started, a first non-system message
    that is not the user's, a tool call not directly followed by a result for each of its
    calls, or a tool result without its call."""
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

    rest = list(messages)
    while rest and isinstance(rest[0], SystemMessage):
        rest.pop(0)
    if not rest:
        return "messages: at least one user message is required"
    if not isinstance(rest[0], HumanMessage):
        return f"messages.0: the first message must use the user role, got {rest[0].type}"
    pending: set[str] = set()
    for at, message in enumerate(rest):
        if isinstance(message, SystemMessage):
            return f"messages.{at}: a system message must come first"
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in pending:
                return f"messages.{at}: tool result {message.tool_call_id} has no call before it"
            pending.discard(message.tool_call_id)
            continue
        if pending:
            return f"messages.{at}: tool calls {sorted(pending)} have no result"
        if isinstance(message, AIMessage) and message.tool_calls:
            pending = {str(c["id"]) for c in message.tool_calls}
    if pending:
        return f"messages: tool calls {sorted(pending)} have no result"
    return None


class StrictChatModel(BaseChatModel):
    """A tool-calling chat model that refuses what strict providers refuse (`provider_rejects`
    raises `ProviderRejected`, as a 400 would) and otherwise answers like a small agent:

    - the running summary request: a one-line summary;
    - an extraction request (`with_structured_output(ExtractionResult)`): what the offline
      rules find in the message, as the schema's tool call (and a combined respond call's
      `ReplyWithMemories`: a short reply and those candidates);
    - a user message that names an order, with the `order_status` tool bound: a call to it;
    - anything else: a short text reply that repeats the system prompt's memory lines.

    `calls` (shared by the copies `bind_tools` makes) records every request it accepted."""

    calls: list[list[BaseMessage]] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "strict-fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> StrictChatModel:  # type: ignore[override]
        from langchain_core.utils.function_calling import convert_to_openai_tool

        names = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self.model_copy(update={"tools": names})

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        why = provider_rejects(messages)
        if why is not None:
            raise ProviderRejected(f"Error code: 400 - invalid_request_error: {why}")
        self.calls.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

        from langgraph_typed_memory.extraction import extract_rules

        system = str(messages[0].content) if isinstance(messages[0], SystemMessage) else ""
        last = messages[-1]
        n = len(self.calls)
        if system.startswith("You maintain a running summary"):
            return AIMessage(f"Summary {n}: the user asked about their orders.",
                             usage_metadata=usage(40, 8))
        if "ExtractionResult" in self.tools:
            said = str(last.content).rsplit("Message", 1)[-1].split(":\n", 1)[-1]
            found = [c.model_dump(mode="json", exclude_defaults=True, exclude={"rule"})
                     for c in extract_rules(said)]
            return AIMessage("", tool_calls=[{"name": "ExtractionResult", "id": f"x{n}",
                                              "args": {"candidates": found}}],
                             usage_metadata=usage(60, 20))
        if "ReplyWithMemories" in self.tools:  # a combined respond call
            asked = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
            found = [c.model_dump(mode="json", exclude_defaults=True, exclude={"rule"})
                     for c in extract_rules(str(asked.content))]
            return AIMessage("", tool_calls=[{"name": "ReplyWithMemories", "id": f"r{n}",
                                              "args": {"reply": "Noted.", "candidates": found}}],
                             usage_metadata=usage(60, 20))
        if isinstance(last, HumanMessage) and "order_status" in self.tools and (
                order := re.search(r"order (\d+)", str(last.content))):
            return AIMessage("", tool_calls=[{"name": "order_status", "id": f"c{n}",
                                              "args": {"order_id": int(order.group(1))}}],
                             usage_metadata=usage(50, 10))
        if isinstance(last, ToolMessage):
            return AIMessage(f"Here is what I found: {last.content}", usage_metadata=usage(50, 9))
        remembered = [line[2:] for line in system.splitlines() if line.startswith("- ")]
        return AIMessage("Noted." + "".join(f" I remember: {m}" for m in remembered),
                         usage_metadata=usage(50, 12))
