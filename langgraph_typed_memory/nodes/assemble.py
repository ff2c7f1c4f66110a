"""The assemble node: this turn's bounded prompt, rebuilt from memory (E1-E3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda

from langgraph_typed_memory.assembly import AssemblyConfig, Summarizer, assemble
from langgraph_typed_memory.nodes._common import trace_of

__all__ = ["create_assemble_node"]


def create_assemble_node(
    settings: AssemblyConfig | Mapping[str, Any] | None = None,
    /,
    *,
    summarizer: Summarizer | None = None,
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
        summarizer: Folds older turns into the running summary; default extractive. A model
            can do it: any `(previous_summary, messages) -> str` callable.
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

    def run(state: dict[str, Any], config: RunnableConfig | None = None) -> dict[str, Any]:
        context = state.get("memory_context") or {}
        built = assemble(
            messages=state.get(messages_key) or [],
            policies=context.get("policies", ()),
            procedures=context.get("procedures", ()),
            preferences=context.get("preferences", ()),
            facts=context.get("facts", ()),
            episodes=context.get("episodes", ()),
            summary=state.get("memory_summary") or None,
            summarized_count=int(state.get("memory_summarized") or 0),
            summarizer=summarizer,
            config=settings,
        )
        trace = trace_of(state)
        trace["tokens"] = {**built.tokens, "over_budget": built.over_budget,
                           "dropped": list(built.dropped)}
        return {
            "memory_prompt": built.messages,
            "memory_summary": built.summary or "",
            "memory_summarized": built.summarized_count,
            "memory_trace": trace,
        }

    async def arun(state: dict[str, Any], config: RunnableConfig | None = None) -> dict[str, Any]:
        return run(state, config)  # pure CPU work, no I/O: nothing to await

    return RunnableLambda(run, afunc=arun, name="assemble")
