"""Feedback on observations and procedures, as pure decisions.

- ``correct``: the observation's confidence rises by `feedback_boost`; at high confidence it
  becomes a promotion candidate and is promoted by the same call; a procedure already promoted
  from it counts one more confirmation.
- ``wrong``: the observation is rejected (kept as the counter-signal that stops the detector
  from finding the pattern again; its embedding and full-text entry dropped) and every active
  procedure promoted from it is revoked.
- ``dismissed``: the observation stays, but is never promoted.

Feedback on a procedure acts on the procedure and its source observation alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph_typed_memory.errors import InvalidVerdict, UnknownMemory
from langgraph_typed_memory.maintenance.patterns import level_of

__all__ = ["Verdict", "VERDICTS", "InvalidVerdict", "UnknownMemory", "FeedbackResult",
           "check_verdict", "observation_after"]
# InvalidVerdict and UnknownMemory live in errors.py; re-exported here for the store plans.

Verdict = Literal["correct", "wrong", "dismissed"]
VERDICTS: tuple[Verdict, ...] = ("correct", "wrong", "dismissed")


@dataclass(slots=True)
class FeedbackResult:
    """What one feedback call changed.

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore
        >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
        ...     store.setup()
        ...     ns = ("tenant:acme", "user:alice", "observation")
        ...     store.put(ns, "dates", {"category": "format", "quote": "Rewrites dates as ISO."})
        ...     result = store.feedback(ns, "dates", "wrong")
        >>> result.verdict, result.status, result.revoked
        ('wrong', 'rejected', [])
    """

    memory_id: str
    kind: str
    verdict: Verdict
    status: str
    """The record's status afterwards."""
    confidence: float
    promoted: list[str] = field(default_factory=list)
    """Procedures written by this feedback ("correct" at high confidence)."""
    revoked: list[str] = field(default_factory=list)
    """Procedures revoked by this feedback ("wrong")."""
    changed: bool = True
    """False when the record already carried this verdict (nothing written)."""


def check_verdict(verdict: Any) -> Verdict:
    """Validate a verdict before any I/O.

    Example:
        >>> check_verdict("wrong")
        'wrong'
        >>> check_verdict("meh")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidVerdict: feedback verdict 'meh' \
is not one of 'correct', 'wrong', 'dismissed'.
    """
    if verdict not in VERDICTS or not isinstance(verdict, str):
        raise InvalidVerdict(
            f"feedback verdict {verdict!r:.80} is not one of 'correct', 'wrong', 'dismissed'.")
    return verdict  # type: ignore[return-value]


def observation_after(
    value: dict[str, Any], confidence: float, verdict: Verdict, *, boost: float = 0.2,
    high: float = 0.8,
) -> tuple[dict[str, Any], float, str]:
    """(new value, new confidence, new status) of an observation after a verdict.

    Example:
        >>> v = {"confidence": 0.6, "confidence_level": "medium", "promotion_candidate": False}
        >>> new, conf, status = observation_after(v, 0.6, "correct")
        >>> conf, new["confidence_level"], new["promotion_candidate"], status
        (0.8, 'high', True, 'active')
        >>> observation_after(v, 0.6, "wrong")[2]
        'rejected'
    """
    new = {**value, "feedback": verdict}
    status = "active"
    if verdict == "correct":
        confidence = round(min(1.0, confidence + boost), 4)
        new["promotion_candidate"] = confidence >= high
    elif verdict == "wrong":
        status = "rejected"
        new["promotion_candidate"] = False
    else:
        new["promotion_candidate"] = False
    new["confidence"] = confidence
    new["confidence_level"] = level_of(confidence, high)
    return new, confidence, status
