"""Text helpers extraction shares: normalizing, sentences, questions."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["normalize", "sentences", "is_question", "statement_parts", "FIRST_PERSON", "REQUEST",
           "quoted", "HYPOTHETICAL"]

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
