"""The graph state the memory nodes share, and the per-turn trace envelope.

`MemoryState` extends LangGraph's `MessagesState`. The checkpointer persists it, so the trace
of every turn is replayable with `graph.get_state_history(config)`; durable memory lives in
the store. Every key is JSON-serializable. The retrieved candidates (`memory_context`) live
for the turn only: LangGraph's `UntrackedValue` channel, never checkpointed.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.channels import UntrackedValue
from langgraph.graph import MessagesState

__all__ = ["MemoryState", "MemoryTrace", "new_trace", "TRACE_KEYS"]

TRACE_KEYS = (
    "run_id", "turn_index", "tenant_id", "user_id", "agent_id", "retrieval", "tokens",
    "model_call", "promotions", "degraded",
)


class MemoryTrace(TypedDict, total=False):
    """The trace envelope of one turn: who asked, and what each memory node did.

    Example:
        >>> trace: MemoryTrace = new_trace(run_id="r", turn_index=1, tenant_id="t",
        ...                                user_id="u", agent_id=None)
        >>> trace["degraded"], trace["promotions"]
        ([], [])
    """

    run_id: str
    """The run that took the turn."""
    turn_index: int
    """The user turn's index in its thread, from 1."""
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    retrieval: dict[str, Any]
    """What `retrieve` returned, ids by slot (`facts_returned`, `episodes_returned`, ...),
    its `retrieval_mode` and `modes`, the question's `time_window` and `entities`."""
    tokens: dict[str, Any]
    """`assemble`'s token report: the budget, each section's tokens, `over_budget`."""
    assembled: dict[str, list[str]]
    """The ids of the records the prompt shows, by section."""
    model_call: dict[str, Any]
    """The reply's model, its input and output tokens (and an `error` when it degraded)."""
    extraction: dict[str, Any]
    """`extract`'s `prefilter` decision, its `method` (rules, model, combined) and counts."""
    promotions: list[dict[str, Any]]
    """The gate's outcome for each proposal (`Outcome.dict()`)."""
    degraded: list[str]
    """What went wrong and was degraded around, one line each (also logged)."""


class MemoryState(MessagesState, total=False):
    """State of the memory chat graph (and of any graph that adds the memory nodes).

    Attributes:
        messages: The conversation (LangGraph's `add_messages` reducer).
        memory_context: What `retrieve` found this turn, per slot (policies, procedures,
            preferences, facts, episodes), as JSON-ready item dicts: read by the turn's
            nodes and in what `invoke` returns, never checkpointed (a checkpointer saves the
            state at every step: dozens of candidates, tens of kilobytes, each time). What
            the turn retrieved stays in the trace (`memory_trace.retrieval`, ids by slot),
            what the model was shown in `memory_prompt`; a turn resumed after its retrieve
            node reads none.
        memory_prompt: The messages `assemble` built for the model this turn.
        memory_block: The same memory as one block of text without the preamble, for an app
            that writes its own system prompt (`memory_system_message`).
        memory_summary: Running summary of the turns that left the verbatim window.
        memory_summarized: How many leading messages of `messages` the running summary
            already covers.
        memory_turns: User turns taken in this thread, the current one included: the turn
            index, counted by `retrieve` (so it keeps counting when `assemble` trims the
            messages the summary absorbed).
        memory_candidates: Candidate memories `extract` (or a combined `respond`) proposed.
        memory_recent: Recent user turns with their times, for the duplicate pre-filter.
        memory_entities: `extract`'s reading of the newest user turn for entities:
            `mentioned`, the ids of the entities it mentions (what `promote` stamps on its
            logged turn), and `recent`, the thread's latest entity ids, newest first (who a
            pronoun of the next turn means).
        memory_trace: The trace envelope of the current turn (see `new_trace`).
    """

    memory_context: Annotated[dict[str, list[dict[str, Any]]], UntrackedValue(dict)]
    memory_prompt: list[AnyMessage]
    memory_block: str
    memory_summary: str
    memory_summarized: int
    memory_turns: int
    memory_candidates: list[dict[str, Any]]
    memory_recent: list[tuple[str, float]]
    memory_entities: dict[str, list[str]]
    memory_trace: MemoryTrace


def new_trace(
    *, run_id: str, turn_index: int, tenant_id: str, user_id: str | None, agent_id: str | None
) -> MemoryTrace:
    """An empty trace envelope for one turn; each node fills its part.

    Example:
        >>> sorted(new_trace(run_id="r", turn_index=1, tenant_id="t", user_id="u",
        ...                  agent_id=None)["retrieval"])[:3]
        ['entities', 'episodes_returned', 'facts_returned']
    """
    return {
        "run_id": run_id,
        "turn_index": turn_index,
        "tenant_id": tenant_id,
        "user_id": user_id,
        "agent_id": agent_id,
        "retrieval": {
            "facts_returned": [],
            "episodes_returned": [],
            "preferences_applied": [],
            "policies_applied": [],
            "procedures_applied": [],
            "retrieval_mode": None,
            "modes": {},
            "time_window": None,
            "entities": None,
        },
        "tokens": {},
        "model_call": {"model": None, "input_tokens": 0, "output_tokens": 0},
        "extraction": {"prefilter": None, "candidates": 0, "method": None},
        "promotions": [],
        "degraded": [],
    }
