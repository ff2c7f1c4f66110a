"""The pre-filter: most chat turns (greetings, thanks, questions, repeats) stop here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langgraph_typed_memory.extraction.text import (
    FIRST_PERSON,
    REQUEST,
    is_question,
    normalize,
    sentences,
    statement_parts,
)

__all__ = ["FilterDecision", "FilterReason", "prefilter"]

FilterReason = Literal["role", "too_short", "too_long", "chit_chat", "question", "duplicate",
                       "kept"]
_CHIT_CHAT = re.compile(r"\b(?:" + "|".join(sorted((  # whole turns made of these are chit-chat
    "hi|hello|hey|yo|whats up|good morning|good afternoon|good evening|good night|morning|evening|"
    "how are you|how are you doing|hows it going|how is it going|hope youre well|im good|im fine|"
    "im ok|im great|not bad|doing well|thanks|thank you|thx|ty|cheers|much appreciated|"
    "appreciate it|ok|okay|k|yes|yeah|yep|yup|no|nope|nah|sure|cool|great|nice|awesome|perfect|"
    "excellent|good|fine|alright|all right|got it|understood|sounds good|makes sense|i see|"
    "fair enough|right|true|exactly|correct|agreed|i agree|of course|no problem|no worries|"
    "youre welcome|never mind|wow|lol|haha|hehe|hmm|oh|ah|oops|my bad|me too|you too|done|noted|"
    "will do|bye|goodbye|see you|later|take care|have a nice day|have a good day|love it|"
    "well done|good job|great job|thats it|thats all|that works|works for me|i dont know|idk|"
    "absolutely|definitely|youre right").split("|"), key=len, reverse=True)) + r")\b")
_FILLER = frozenset("so very much thing a lot the there again all everyone guys man dude buddy "
                    "friend mate for that this it is its thats really too just well then now "
                    "you your and but super totally help to me".split())


def _states(part: str) -> bool:
    """Whether part of a turn states something: in the first person, or a plain statement
    of three words or more ("oops, it's 10mg")."""
    return bool(FIRST_PERSON.search(part)) or (
        not is_question(part) and len(normalize(part).split()) >= 3)


@dataclass(frozen=True, slots=True)
class FilterDecision:
    """Whether a turn goes on to extraction, and why (a short, stable reason string).

    Example:
        >>> FilterDecision(keep=False, reason="chit_chat").keep
        False
    """

    keep: bool
    reason: FilterReason


def prefilter(text: str, *, role: str, recent: Sequence[tuple[str, float]] = (), now: float,
              min_words: int = 2, max_words: int = 400, duplicate_window_s: float = 60.0
              ) -> FilterDecision:
    """Decide whether a turn is worth extracting from; most turns stop here.

    Gates, in order: `role` (only "human"/"user"), `too_short`/`too_long` (alphanumeric words),
    `chit_chat` (only greetings, thanks, acknowledgements, emoji), `question` (questions that
    state nothing: no first-person part, no plain statement of three words or more),
    `duplicate` (same normalized text as, or token Jaccard >= 0.9 with, a `recent`
    `(text, timestamp)` at most `duplicate_window_s` before `now`); else `kept`.

    Example:
        >>> prefilter("Thanks a lot, that's great!", role="human", now=0.0)
        FilterDecision(keep=False, reason='chit_chat')
    """
    normalized = normalize(text)
    tokens, n_words = set(normalized.split()), len(normalized.split())
    if role.lower() not in ("human", "user"):
        return FilterDecision(False, "role")
    if n_words < min_words or n_words > max_words:
        return FilterDecision(False, "too_short" if n_words < min_words else "too_long")
    if all(w in _FILLER for w in _CHIT_CHAT.sub(" ", normalized).split()):
        return FilterDecision(False, "chit_chat")
    parts = sentences(text)
    if any(is_question(s) for s in parts) and not any(
            REQUEST.match(s) or any(_states(p) for p in statement_parts(s)) for s in parts):
        return FilterDecision(False, "question")
    for seen, at in recent:  # equal normalized texts have Jaccard 1
        other = set(normalize(seen).split())
        if now - at <= duplicate_window_s and len(tokens & other) >= 0.9 * len(tokens | other) > 0:
            return FilterDecision(False, "duplicate")
    return FilterDecision(True, "kept")
