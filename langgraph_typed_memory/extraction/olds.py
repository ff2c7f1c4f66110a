"""Where the old value sits in an earlier statement, when a turn names only the new one,
or names the old one shortly: the whole value its words belong to ("outlook" ->
"mara.lindqvist@outlook.com"), its modifiers ("junior data analyst"), what the speaker said
they use ("i use doom emacs for everything": "doom emacs"), the value after the same words
("i'm on ubuntu 22.04"), the full word of a short name ("mongo": "mongodb"), what "that
heater" points at. And two statements that say one thing with one value swapped:
`copula_change`, the same noun said to be something else ("breakfast is eggs on toast these
days"); `modifier_change`, the same noun with other words before it ("the night shift" / "the
day shift"); `copula_value`, what an earlier statement said a thing named again is. `clean`
trims a captured value to the value. Pure functions; `corrections.find_changes` uses them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langgraph_typed_memory.extraction.values import (
    ARTICLE_LEAD,
    CONTENT_STOP,
    VALUE_TOKEN,
    typed_spans,
)

__all__ = ["clean", "copula_change", "copula_value", "framed", "holds", "modifier_change",
           "named", "placed", "refine", "shortened", "stem", "type_of", "used", "widen"]


def holds(text: str, value: str) -> bool:
    """Whether `text` says `value` as whole words, in any case.

    Example:
        >>> holds("We're on Node 18.", "node 18"), holds("We're on Node 180.", "Node 18")
        (True, False)
    """
    return re.search(rf"(?<!\w){re.escape(value.strip())}(?!\w)", text, re.I) is not None


def type_of(value: str) -> str:
    """The type of a value that is one typed span ("555-0199": "phone"), else "word"."""
    spans = typed_spans(value, fragment=True)
    return spans[0].type if len(spans) == 1 and spans[0].text == value.strip() else "word"


def widen(statement: str, old: str) -> str:
    """A plain-word old value with the modifiers before it ("analyst" in "a junior data
    analyst" -> "junior data analyst")."""
    if type_of(old) != "word":
        return old
    m = re.search(rf"\b(?:a|an|the|my|our|his|her|their)\s+((?:[A-Za-z][\w-]*\s+){{1,3}})"
                  rf"{re.escape(old)}(?!\w)", statement, re.I)
    if not m or any(w.lower() in CONTENT_STOP for w in m.group(1).split()):
        return old
    return f"{' '.join(m.group(1).split())} {statement[m.end() - len(old):m.end()]}"


def refine(statement: str, old: str, want: str | None) -> str:
    """The whole value the old words belong to in the statement ("outlook" ->
    "mara.lindqvist@outlook.com"), of type `want` when given."""
    for span in typed_spans(statement):
        if (want is None or span.type == want) and span.type != "number" and (
                old.lower() in span.text.lower()) and span.text.lower() != old.lower():
            return span.text
    return widen(statement, old)


def framed(new: str, statement: str, turn: str) -> str | None:
    """The value an earlier statement gives after the same two words as the new one ("i'm on
    ubuntu 22.04 on an old thinkpad" / "so i'm on macos now": "ubuntu 22.04").

    Example:
        >>> framed("macos", "i'm on ubuntu 22.04 on an old thinkpad", "so i'm on macos now")
        'ubuntu 22.04'
    """
    lead = re.search(rf"((?:[\w']+\s+){{2}}){re.escape(new)}", turn, re.I)
    if lead is None:
        return None
    said = re.search(rf"(?<!\w){re.escape(lead.group(1))}(?P<v>(?:[^,.;:!?()]|(?<=\d)[.,](?=\d))+)",
                     statement, re.I)
    return _value(said["v"], turn) if said else None


def _value(said: str, turn: str) -> str | None:
    """The value a captured phrase of an earlier statement gives: without what follows it
    ("for", "at"...) or an article, at most four words, not one the turn says again."""
    value = ARTICLE_LEAD.sub("", _ADJUNCT.sub("", said)).strip()
    words = value.split()
    if not words or len(words) > 4 or words[0].lower() in CONTENT_STOP or holds(turn, value):
        return None
    return value


_USING = re.compile(
    r"^\W*(?:\w+\s+){0,2}?(?:i|we|(?:my|our)(?:\s+[\w'-]+){1,3}?)\s+(?:\w+ly\s+)?(?:use|run|"
    r"drive|ride|play|wear|take|drink|eat|read|watch|write|code|work|cook|type|edit|manage|"
    r"track|keep|log|store|host|deploy|have|own|rent)s?\s+(?P<rest>.+)", re.I)
_POSSESSED = re.compile(r"^(?:all\s+)?(?:my|our|the)\s+(?:[\w'-]+\s+){0,3}?(?:in|on|at|with|"
                        r"via|through|using)\s+(?P<value>.+)", re.I)
_EVERYTHING = re.compile(r"^(?:everything|all|it\s+all|stuff|things)\s+(?:in|on|with|via|"
                         r"through|using)\s+(?P<value>.+)", re.I)
_ADJUNCT = re.compile(r"\s+(?:for|incl|including|to|with|because|when|while|at|in|on|every|"
                      r"since|from)\b.*$", re.I)


def used(clause: str, turn: str) -> str | None:
    """What a statement says the speaker uses, keeps or does things in: the object of its
    verb ("i use doom emacs for everything": "doom emacs"), or, when the object is the
    speaker's own ("I log all my runs in miles"), what it is in ("miles")."""
    m = _USING.match(clause)
    if m is None:
        return None
    rest = m["rest"].strip()
    if (owned := _POSSESSED.match(rest) or _EVERYTHING.match(rest)) is not None:
        rest = owned["value"]
    elif re.match(r"(?:all\s+)?(?:my|our)\b", rest, re.I):
        return None
    value = ARTICLE_LEAD.sub("", _ADJUNCT.sub("", rest)).strip(" .,;:!?")
    words = value.split()
    if not words or len(words) > 3 or any(w.lower() in CONTENT_STOP for w in words) or (
            holds(turn, words[-1])):
        return None
    return value


_POINTING = re.compile(r"^(?:that|this|those|these|the|my|our)\s+(?:old\s+|previous\s+)?"
                       r"(?P<head>[A-Za-z][\w-]*)$", re.I)


def shortened(old: str, statements: Sequence[str]) -> tuple[str, str] | None:
    """The earlier statement naming in full what a turn names shortly ("migrated off mongo"
    after "everything is in mongodb atlas"): the statement and the full word.

    Example:
        >>> shortened("mongo", ["our backend stores everything in mongodb atlas"])
        ('our backend stores everything in mongodb atlas', 'mongodb')
    """
    if len(old) < 4 or " " in old:
        return None
    for statement in statements:
        m = re.search(rf"(?<!\w){re.escape(old)}\w+", statement, re.I)
        if m:
            return statement, m.group()
    return None


def named(old: str, statements: Sequence[str]) -> str:
    """What "that heater" points at: the statement's phrase ending with the same noun
    ("a paraffin heater": "paraffin heater"); `old` itself when none says it.

    Example:
        >>> named("that heater", ["We heat the greenhouse with a paraffin heater."])
        'paraffin heater'
    """
    m = _POINTING.match(old.strip())
    if m is None:
        return old
    head = re.escape(m["head"])
    for statement in statements:
        found = re.search(rf"\b(?:a|an|the|my|our)\s+((?:[A-Za-z][\w-]*\s+){{1,2}}{head})\b",
                          statement, re.I)
        if found and not any(w.lower() in CONTENT_STOP for w in found.group(1).split()[:-1]):
            return found.group(1)
    return old


_PLACING = r"(?:into|onto|to|in|on|at|under|with)"


def placed(new: str, statement: str, turn: str) -> str | None:
    """Where an earlier statement put the thing a turn moves ("moved the thesis into a
    typesetting system" / "I'm writing my thesis in a word processor": "word processor").

    Example:
        >>> placed("typesetting system", "I'm writing my thesis in a word processor.",
        ...        "Finally moved the thesis into a typesetting system.")
        'word processor'
    """
    moved = re.search(rf"([A-Za-z][\w'-]+)\s+{_PLACING}\s+(?:(?:a|an|the|my|our)\s+)?"
                      rf"{re.escape(new)}", turn, re.I)
    if moved is None or moved.group(1).lower() in CONTENT_STOP:
        return None
    said = re.search(rf"(?<!\w){re.escape(moved.group(1))}\s+{_PLACING}\s+(?P<v>[^,.;:!?()]+)",
                     statement, re.I)
    return _value(said["v"], turn) if said else None


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
    words = VALUE_TOKEN.findall(new)
    if len(words) < 2 or not words[-1][0].isalpha():
        return None
    noun = stem(words[-1].lower())
    tokens = VALUE_TOKEN.findall(statement)
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
    value = clean(ARTICLE_LEAD.sub("", _VALUE_END.sub("", said["value"]).strip(" '\"")))
    if not value or len(value.split()) > 5 or holds(turn, value):
        return None
    return value


def stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word
