"""The extract node: pre-filter (C8), then a model's structured output or the rule extractor."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from langgraph_typed_memory.extraction import (
    EXTRACTION_PROMPT,
    ExtractionResult,
    candidates_from_model_output,
    extract_rules,
    prefilter,
)
from langgraph_typed_memory.nodes._common import (
    last_human,
    message_text,
    trace_of,
    try_resolve_model,
)

__all__ = ["create_extract_node"]

RECENT_WINDOW_S = 300.0


def create_extract_node(
    model: BaseChatModel | str | None = None,
    /,
    *,
    use_model: bool = True,
    messages_key: str = "messages",
    clock: Callable[[], float] = time.time,
) -> RunnableLambda:
    """Build the extract node.

    The newest user message first meets the pre-filter (role, word count, chit-chat,
    questions, near-duplicates of the last minute): most turns stop there. A kept turn goes to
    the chat model's structured output (`ExtractionResult`) when one is configured (argument,
    `configurable["memory_model"]` or `TYPED_MEMORY_MODEL`) and `use_model` is true, else to the
    rule-based extractor. Model output is validated (ungrounded candidates dropped); a failing
    model falls back to the rules, recorded. If a combined respond call already produced
    candidates this turn, the node keeps them. Candidates go to `memory_candidates`.

    In the chat graph it runs after `respond`, so the reply is in the state (and streamed)
    before extraction starts.

    Args:
        model: A chat model or an `init_chat_model` string; None: configuration or rules.
        use_model: Set False to always use the rule-based extractor.
        messages_key: The state key holding the conversation.
        clock: Seconds since the epoch (inject one in tests).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> node = create_extract_node(use_model=False)
        >>> out = node.invoke({"messages": [HumanMessage("I live in Lyon now.")]})
        >>> [(c["kind"], c["predicate"], c["value"]) for c in out["memory_candidates"]]
        [('fact', 'home_city', 'Lyon')]
    """

    def prepare(state: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
        trace = trace_of(state)
        extraction = dict(trace.get("extraction") or {})
        trace["extraction"] = extraction
        text = message_text(last_human(state.get(messages_key) or []))
        now = clock()
        recent = [(t, ts) for t, ts in (state.get("memory_recent") or [])
                  if now - ts <= RECENT_WINDOW_S]
        decision = prefilter(text, role="human", recent=recent, now=now)
        extraction["prefilter"] = decision.reason
        update = {"memory_recent": [*recent, (text, now)][-20:], "memory_trace": trace}
        if extraction.get("method") == "combined":
            extraction["candidates"] = len(state.get("memory_candidates") or [])
            return text, update, None
        if not decision.keep:
            extraction.update(method="prefiltered", candidates=0)
            return text, {**update, "memory_candidates": []}, None
        return text, update, extraction

    def rules(text: str, update: dict[str, Any], extraction: dict[str, Any],
              why: str | None = None) -> dict[str, Any]:
        found = [c.model_dump(mode="json") for c in extract_rules(text)]
        extraction.update(method="rules", candidates=len(found))
        if why:
            update["memory_trace"]["degraded"].append(why)
        return {**update, "memory_candidates": found}

    def from_model(answer: Any, text: str, update: dict[str, Any],
                   extraction: dict[str, Any]) -> dict[str, Any]:
        checked = candidates_from_model_output(answer, text)
        if any(r.startswith("output:") for r in checked.reasons):  # I5: not structured at all
            return rules(text, update, extraction,
                         f"extraction model output unusable ({checked.reasons[0]})")
        extraction.update(method="model", candidates=len(checked.candidates),
                          dropped=checked.dropped)
        return {**update,
                "memory_candidates": [c.model_dump(mode="json") for c in checked.candidates]}

    def request(text: str) -> list[Any]:
        return [SystemMessage(EXTRACTION_PROMPT), HumanMessage(text)]

    def extract(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        text, update, extraction = prepare(state)
        if extraction is None:
            return update
        chat, why = try_resolve_model(model, config) if use_model else (None, None)
        if chat is None:
            return rules(text, update, extraction, why and f"extract: {why}")
        try:
            answer = chat.with_structured_output(ExtractionResult).invoke(request(text))
        except Exception as exc:  # I5: degrade to the rules, recorded
            return rules(text, update, extraction, f"extraction model failed: {exc!r:.200}")
        return from_model(answer, text, update, extraction)

    async def aextract(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        text, update, extraction = prepare(state)
        if extraction is None:
            return update
        chat, why = try_resolve_model(model, config) if use_model else (None, None)
        if chat is None:
            return rules(text, update, extraction, why and f"extract: {why}")
        try:
            answer = await chat.with_structured_output(ExtractionResult).ainvoke(request(text))
        except Exception as exc:
            return rules(text, update, extraction, f"extraction model failed: {exc!r:.200}")
        return from_model(answer, text, update, extraction)

    return RunnableLambda(extract, afunc=aextract, name="extract")
