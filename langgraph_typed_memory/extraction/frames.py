"""Two statements that say one thing with one value swapped, and what counts as a value.

`copula_change`: the same noun said to be something else ("breakfast is eggs on toast these
days"); `modifier_change`: the same noun with other words before it ("the night shift" / "the
day shift"); `copula_value`: what an earlier statement said a thing named again is. `clean`
trims a captured value to the value. Pure functions; `corrections.find_changes` uses them.
"""

from __future__ import annotations

import re

from langgraph_typed_memory.extraction.olds import holds
from langgraph_typed_memory.extraction.values import CONTENT_STOP

__all__ = ["clean", "copula_change", "copula_value", "modifier_change", "stem"]

_TOKEN = re.compile(r"[£$€]\s?\d[\d,.]*\w*|[\w'@.+-]*\w|[,;:!?]")
_ARTICLE_LEAD = re.compile(r"^(?:a|an|the|my|our|his|her|their)\s+", re.I)
_LINK_LEAD = re.compile(r"^(?:(?:at|on|in)\s+)?(?:(?:a|an|the|my|our|his|her|their)\s+)?", re.I)


_VALUE_FILLER = re.compile(
    r"^(?:a|an|the|my|our|mostly|just|now|actually|really|definitely|some)\s+|"
    r"\s+(?:now|too|instead|again|then|please|anymore|any more|these days|nowadays|"
    r"for good|at all|a few \w+ ago|last \w+|this \w+)$", re.I)

_CLAUSE = re.compile(r"^(?:i|we|you|they|he|she|it|i'm|we're|you're|they're|he's|she's|it's|"
                     r"that's|there's)\s+\w", re.I)
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


def copula_value(statement: str, turn: str) -> str | None:
    """What an earlier statement says a thing the turn names again is ("Our standup is
    first thing in the morning" / "Standup got pushed to late afternoon").

    Example:
        >>> copula_value("Our team standup is first thing in the morning.",
        ...               "Standup got pushed to late afternoon.")
        'first thing in the morning'
    """
    said = _COPULA.search(statement)
    if said is None or said["head"].lower() in CONTENT_STOP or not holds(turn, said["head"]) or (
            re.match(r"\s*(?:my|our|your)\b", said["value"], re.I)):  # "Dance is my passion"
        return None
    value = clean(_ARTICLE_LEAD.sub("", _VALUE_END.sub("", said["value"]).strip(" '\"")))
    if not value or len(value.split()) > 5 or holds(turn, value):
        return None
    return value


def stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word
