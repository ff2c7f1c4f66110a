"""The assemble node: this turn's bounded prompt, rebuilt from memory (E1-E3)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from langgraph_typed_memory.assembly import (
    AssemblyConfig,
    Summarizer,
    assemble,
    extractive_summary,
    normalize_assembly,
)
from langgraph_typed_memory.nodes._common import message_text, trace_of, try_resolve_model

__all__ = ["create_assemble_node", "model_summarizer"]

SUMMARY_PROMPT = (
    "You maintain a running summary of a conversation. Merge the earlier summary and the new "
    "turns into short, factual sentences, oldest first: what the user asked, stated or decided "
    "and what was answered. No preamble."
)


def model_summarizer(chat: BaseChatModel, *, max_tokens: int = 200) -> Summarizer:
    """A running summarizer backed by a chat model, extractive when the model fails.

    The assembler still bounds its output to `summary_tokens` (newest sentences kept).
    """

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
        except Exception:  # noqa: S110 - I5: fall back, the turn goes on
            pass
        return extractive_summary(previous, turns, max_tokens)

    return summarize


def create_assemble_node(
    settings: AssemblyConfig | Mapping[str, Any] | None = None,
    /,
    *,
    summarizer: Summarizer | None = None,
    model: BaseChatModel | str | None = None,
    messages_key: str = "messages",
) -> RunnableLambda:
    """Build the assemble node.

    It renders the retrieved memory (`memory_context`) into a system prompt with reserved
    slots (policies, procedures, preferences) and ranked slots (facts, episodes), folds turns
    that leave the verbatim window into the running summary (`memory_summary`), and writes the
    model input to `memory_prompt` and the token report to `memory_trace["tokens"]`. The
    prompt stays within `budget_tokens` however long the conversation runs.

    Args:
        settings: An `AssemblyConfig` (budget, per-item cap, verbatim window...).
        summarizer: Folds older turns into the running summary: any
            `(previous_summary, messages) -> str` callable. Default: the chat model when one is
            configured (`model`, `configurable["memory_model"]` or `TYPED_MEMORY_MODEL`), else
            the extractive summary (also when the model cannot be built: recorded in
            `memory_trace["degraded"]`).
        model: The chat model that writes the running summary.
        messages_key: The state key holding the conversation.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> node = create_assemble_node({"budget_tokens": 800})
        >>> out = node.invoke({"messages": [HumanMessage("Where is my order?")],
        ...                    "memory_context": {"preferences": [
        ...                        {"key": "tone", "value": {"value": "terse"},
        ...                         "memory": {"id": "p1", "scope": {}}}]}})
        >>> out["memory_trace"]["tokens"]["budget"], len(out["memory_prompt"])
        (800, 2)
    """

    limits = normalize_assembly(settings)

    def fold(config: RunnableConfig | None) -> tuple[Summarizer | None, str | None]:
        """The summarizer, and why the configured model could not be built (if so)."""
        if summarizer is not None:
            return summarizer, None
        chat, why = try_resolve_model(model, config)
        return (model_summarizer(chat, max_tokens=limits.summary_tokens) if chat else None), why

    def run(state: dict[str, Any], config: RunnableConfig | None = None) -> dict[str, Any]:
        context = state.get("memory_context") or {}
        summarize, why = fold(config)
        built = assemble(
            messages=state.get(messages_key) or [],
            policies=context.get("policies", ()),
            procedures=context.get("procedures", ()),
            preferences=context.get("preferences", ()),
            facts=context.get("facts", ()),
            episodes=context.get("episodes", ()),
            summary=state.get("memory_summary") or None,
            summarized_count=int(state.get("memory_summarized") or 0),
            summarizer=summarize,
            config=limits,
        )
        trace = trace_of(state)
        if why:
            trace["degraded"].append(f"assemble: {why}")
        trace["tokens"] = {**built.tokens, "over_budget": built.over_budget,
                           "dropped": list(built.dropped)}
        return {
            "memory_prompt": built.messages,
            "memory_summary": built.summary or "",
            "memory_summarized": built.summarized_count,
            "memory_trace": trace,
        }

    async def arun(state: dict[str, Any], config: RunnableConfig | None = None) -> dict[str, Any]:
        # Tokenizing (and, the first time, loading the encoding file; with a model, the
        # summary call) must not block the event loop: `langgraph dev` rejects that.
        return await asyncio.to_thread(run, state, config)

    return RunnableLambda(run, afunc=arun, name="assemble")
