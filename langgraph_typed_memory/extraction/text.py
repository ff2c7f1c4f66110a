"""Text helpers extraction shares (normalizing, sentences, questions, quotations), and the
pre-filter made of them: most chat turns (greetings, thanks, questions, repeats) stop at
`prefilter`."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

__all__ = ["normalize", "sentences", "is_question", "statement_parts", "FIRST_PERSON", "REQUEST",
           "quoted", "HYPOTHETICAL", "FilterDecision", "FilterReason", "prefilter"]

_TOKEN = re.compile(r"[^\W_]+")
_SENTENCE_BREAK = re.compile(r"(?<!\b(?:Dr|Mr|Ms|Mx|St|Jr|Sr)\.)(?<!\b(?:Mrs|Rev)\.)(?<!\bProf\.)"
                             r"(?<!\b[A-Z]\.)"
                             r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s+|(?<=[.!?]['\"\u201d\u2019])\s+|"
                             r"\n+")
FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|im|ive)\b", re.I)
_AUX = (r"(?:is|are|am|was|were|do|does|did|can|could|would|will|should|shall|have|has|isnt|"
        r"arent|dont|doesnt|didnt|cant|couldnt|wouldnt|wont|shouldnt)")
_QUESTION_START = re.compile(  # on normalized text: "whats ...", "where is ...", "do i ..."
    rf"^(?:(?:what|where|when|who|why|how)s|(?:what|where|when|who|why|how|which|whose)\s+{_AUX}"
    rf"|{_AUX}\s+(?:i|you|we|it|he|she|they|there|this|that|my|your|our|the))\b")
REQUEST = re.compile(  # "Could you answer in French?" is a setting, not a question
    r"^(?:(?:from\s+now\s+on|going\s+forward|in\s+the\s+future),?\s+)?"
    r"(?:can|could|would|will)\s+you\s+(?:please\s+)?(?=(?:(?:always|from\s+now\s+on|"
    r"going\s+forward)\s+(?:\w+)|(?:answer|respond|reply|write|talk|speak|use|call|be|keep|"
    r"switch|stop|format))\b)", re.I)

HYPOTHETICAL = re.compile(r"^\W*(?:if|say|suppose|supposing|imagine|what\s+if|in\s+case|unless|"
                          r"assuming|hypothetically)\b", re.I)
"""A sentence that opens with a supposition ("If I moved to Canada, ...", "Say I lived in
Toronto"): nothing in it is so."""
_QUOTE_CLOSE = {"'": "'", '"': '"', "\u201c": "\u201d", "\u2018": "\u2019"}


def quoted(text: str, at: int) -> bool:
    """Whether the words at `at` in `text` are inside a quotation of four words or more:
    text pasted to proofread or translate ("'I am a teacher and I have three cats.'"), not
    the speaker's own statement. A short quotation (a title: "The Alchemist") is not.

    Example:
        >>> text = "Translate this: 'I am a teacher and I have three cats.' I'm a nurse."
        >>> quoted(text, text.index("I am")), quoted(text, text.index("I'm"))
        (True, False)
    """
    return any(start <= at < end and len(text[start:end].split()) >= 4
               for start, end in _quotations(text))


@lru_cache(maxsize=4096)
def _quotations(text: str) -> tuple[tuple[int, int], ...]:
    """Where each quotation of a text stands (its words, without the quote marks)."""
    out: list[tuple[int, int]] = []
    for opening in re.finditer(r"(?:^|(?<=[\s:(]))(['\"\u201c\u2018])(?=\S)", text):
        mark = opening.group(1)
        close = re.compile(rf"(?<=\S){re.escape(_QUOTE_CLOSE[mark])}(?=[\s.,;:!?)]|$)")
        if out and opening.start() < out[-1][1]:
            continue
        if end := close.search(text, opening.end()):
            out.append((opening.end(), end.start()))
    return tuple(out)


# The helpers below are remembered: a turn is read against the statements retrieved for it,
# and the same statements come back turn after turn.
@lru_cache(maxsize=16384)
def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold().replace("'", "").replace("\u2019", "")
    return " ".join(_TOKEN.findall(text))


def sentences(text: str) -> list[str]:
    """Sentences, each an exact substring of `text`."""
    return list(_sentences(text))


@lru_cache(maxsize=16384)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in _SENTENCE_BREAK.split(text) if s.strip())


@lru_cache(maxsize=16384)
def is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or bool(_QUESTION_START.match(normalize(sentence)))


def statement_parts(sentence: str) -> list[str]:
    """What a sentence states: all of it, a polite request's body, or a question's lead-ins."""
    if request := REQUEST.match(sentence):
        return [sentence[request.end():]]
    if not is_question(sentence):
        return [sentence]
    parts = sentence.split(",")[:-1] if sentence.endswith("?") else []  # "I'm in Lyon, tips?"
    return [p for p in parts if p.strip() and not is_question(p)]


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
