"""Two statements that say one thing with one value swapped, and what counts as a value.

`frame_change`: the same subject and verb, another value at the end ("My favourite food is
lasagne" / "honestly my favourite food is ramen"); `copula_change`: the same noun said to be
something else ("breakfast is eggs on toast these days"); `noun_change` and
`modifier_change`: the same noun with other words before it ("the night shift" / "the day
shift"); `copula_value`: what an earlier statement said a thing named again is. `clean`
trims a captured value to the value. Pure functions; `corrections.find_changes` uses them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langgraph_typed_memory.extraction.olds import holds
from langgraph_typed_memory.extraction.values import CONTENT_STOP

__all__ = ["clean", "copula_change", "copula_value", "frame_change", "modifier_change",
           "noun_change", "stem"]

_TOKEN = re.compile(r"[£$€]\s?\d[\d,.]*\w*|[\w'@.+-]*\w|[,;:!?]")
_ARTICLE_LEAD = re.compile(r"^(?:a|an|the|my|our|his|her|their)\s+", re.I)
_LINK_LEAD = re.compile(r"^(?:(?:at|on|in)\s+)?(?:(?:a|an|the|my|our|his|her|their)\s+)?", re.I)


_VALUE_FILLER = re.compile(
    r"^(?:a|an|the|my|our|mostly|just|now|actually|really|definitely|some)\s+|"
    r"\s+(?:now|too|instead|again|then|please|anymore|any more|these days|nowadays|"
    r"for good|at all|a few \w+ ago|last \w+|this \w+)$", re.I)

_CLAUSE = re.compile(r"^(?:i|we|you|they|he|she|i'm|we're|you're|they're|he's|she's)\s+\w",
                     re.I)
_PRONOUN = frozenset("it him her them that this those these one something anything".split())


def clean(value: str) -> str:
    value = value.strip(" \t\"'`-.,;:")
    for _ in range(3):
        value = _VALUE_FILLER.sub("", value).strip(" \t\"'`-.,;:")
    lowered = value.lower()
    if lowered in _PRONOUN or lowered in CONTENT_STOP or lowered.startswith(("anymore",
                                                                              "any more")):
        return ""
    if _CLAUSE.match(value):  # "correction: we moved off that": a clause, not a value
        return ""
    return value


def modifier_change(new: str, statement: str, turn: str) -> str | None:
    """The earlier phrase a new "<modifier> <noun>" replaces: the same noun with other
    modifiers ("soy milk" for "oat milk", "night shift" for "day shift")."""
    words = _TOKEN.findall(new)
    if len(words) < 2 or not words[-1][0].isalpha():
        return None
    noun = stem(words[-1].lower())
    tokens = _TOKEN.findall(statement)
    for i, token in enumerate(tokens):
        if i == 0 or stem(token.lower()) != noun:
            continue
        lead: list[str] = []  # as many modifiers as the new value has ("oat" for "soy")
        for word in reversed(tokens[max(0, i - (len(words) - 1)):i]):
            if not word[0].isalnum() or word.lower() in CONTENT_STOP or holds(new, word):
                break
            lead.insert(0, word)
            if word[0].isdigit():  # "25 days": the count is the whole modifier
                break
        if lead:
            return " ".join([*lead, token])
    return None


_COPULA = re.compile(r"\b(?P<head>[A-Za-z][\w-]*)\s+(?:is|are|'s)\s+"
                     r"(?P<value>(?:[^,.;:!?()]|(?<=\d)[.:,](?=\d))+)", re.I)
_VALUE_END = re.compile(r"\s+(?:these\s+days|nowadays|now|lately|anymore|instead|for\s+now|"
                        r"at\s+the\s+moment|though)\b.*$", re.I)


def copula_change(clause: str, statement: str) -> tuple[str, str] | None:
    """One thing said to be something else ("my go-to breakfast is granola" / "breakfast is
    eggs on toast these days"): the same noun before "is", another value after it; the
    (old, new) pair. For a turn with a change cue only.

    Example:
        >>> copula_change("breakfast is eggs on toast these days",
        ...                "my go-to breakfast is granola w yogurt")
        ('granola w yogurt', 'eggs on toast')
    """
    turn, said = _COPULA.search(clause), _COPULA.search(statement)
    if turn is None or said is None or turn["head"].lower() != said["head"].lower() or (
            turn["head"].lower() in CONTENT_STOP):
        return None
    new = _LINK_LEAD.sub("", _VALUE_END.sub("", turn["value"]).strip(" '\""))
    old = _LINK_LEAD.sub("", _VALUE_END.sub("", said["value"]).strip(" '\""))
    if not new or not old or old.lower() == new.lower() or len(new.split()) > 5 or (
            len(old.split()) > 5):
        return None
    return old, new


def copula_value(statement: str, turn: str | None) -> str | None:
    """What an earlier statement says a thing the turn names again is ("Our standup is
    first thing in the morning" / "Standup got pushed to late afternoon"); with no turn,
    what it says the thing is ("Our backyard is mostly lawn": "lawn").

    Example:
        >>> copula_value("Our team standup is first thing in the morning.",
        ...               "Standup got pushed to late afternoon.")
        'first thing in the morning'
        >>> copula_value("Our backyard is mostly lawn.", None)
        'lawn'
    """
    said = _COPULA.search(statement)
    if said is None or said["head"].lower() in CONTENT_STOP or (
            turn is not None and not holds(turn, said["head"])) or (
            re.match(r"\s*(?:my|our|your)\b", said["value"], re.I)):  # "Dance is my passion"
        return None
    value = clean(_ARTICLE_LEAD.sub("", _VALUE_END.sub("", said["value"]).strip(" '\"")))
    if not value or len(value.split()) > 5 or (turn is not None and holds(turn, value)):
        return None
    return value


def noun_change(clause: str, statement: str) -> tuple[str, str] | None:
    """A noun both say, with other modifiers before it ("I'm on night shift" / "I work the
    day shift"): the (old, new) phrases."""
    tokens = _TOKEN.findall(clause)
    for j, token in enumerate(tokens):
        if j == 0 or not token[0].isalpha() or token.lower() in CONTENT_STOP or len(token) < 3:
            continue
        lead: list[str] = []
        for word in reversed(tokens[max(0, j - 2):j]):
            if not word[0].isalpha() or word.lower() in CONTENT_STOP:
                break
            lead.insert(0, word)
        if not lead or any(holds(statement, w) for w in lead):
            continue
        new = " ".join([*lead, token])
        old = modifier_change(new, statement, clause)
        if old and not any(holds(clause, w) for w in old.split()[:-1]):
            return old, new
    return None


def stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


_SUBJECT = re.compile(r"^(?:\w+\W+){0,2}?(?:(?:my|our|the|his|her|their)\s+(?:[\w'-]+\s+){0,3}?"
                      r"(?:is|are|'s|'re|runs?|uses?|targets?|lives?|works?|keeps?|sits?|"
                      r"stays?|ships?|leaves?|starts?|gives?)|(?:i|we)\s+(?:\w+\s+)?(?:keep|use|"
                      r"live|work|drive|run|target|prefer|take|own|rent|bank|host|deploy))\b",
                      re.I)


def frame_change(clause: str, statement: str) -> tuple[str, str] | None:
    """Two statements of one frame with one value swapped at its end ("My favourite food is
    lasagne" / "honestly my favourite food is ramen"): both start, past any filler, with the
    same subject and verb (at least three words, "my"/"our"/"the"/"I"...), then differ in
    one value; the (old, new) pair."""
    a, b = _frame_words(statement), _frame_words(clause)
    if a is None or b is None:
        return None
    common = 0
    while common < min(len(a), len(b)) and a[common].lower() == b[common].lower():
        common += 1
    rest_a, rest_b = _until_punctuation(a[common:]), _until_punctuation(b[common:])
    if common < 3 or not rest_a or not rest_b or len(rest_a) > 4 or len(rest_b) > 4:
        return None
    old, new = clean(" ".join(rest_a)), clean(" ".join(rest_b))
    if not old or not new or old.lower() == new.lower():
        return None
    return old, new


def _frame_words(text: str) -> list[str] | None:
    """A statement's words from its subject on ("honestly my favourite food is ramen" ->
    my favourite food is ramen); None when it has no subject."""
    m = _SUBJECT.search(text)
    if m is None:
        return None
    return _TOKEN.findall(text[_subject_start(text, m):])


def _subject_start(text: str, m: re.Match[str]) -> int:
    """Where the subject ("my", "our", "the"...) of a matched statement begins."""
    found = re.search(r"\b(?:my|our|the|his|her|their|i|we)\b", m.group(), re.I)
    return m.start() + (found.start() if found else 0)


def _until_punctuation(tokens: Sequence[str]) -> list[str]:
    out: list[str] = []
    for token in tokens:
        if not token[0].isalnum() and token[0] not in "£$€":
            break
        out.append(token)
    return out
