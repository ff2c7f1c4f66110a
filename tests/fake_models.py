"""Fake chat models built on langchain_core's fakes, with structured output through tool calls."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage


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
