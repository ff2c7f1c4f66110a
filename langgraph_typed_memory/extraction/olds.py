"""Where the old value sits in an earlier statement, when a turn names only the new one,
or names the old one shortly: the whole value its words belong to ("outlook" ->
"mara.lindqvist@outlook.com"), its modifiers ("junior data analyst"), what the speaker said
they use ("i use doom emacs for everything": "doom emacs"), the value after the same words
("i'm on ubuntu 22.04"), the full word of a short name ("mongo": "mongodb"), what "that
heater" points at. Pure functions; `corrections.find_changes` uses them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langgraph_typed_memory.extraction.values import CONTENT_STOP, typed_spans

__all__ = ["framed", "holds", "named", "placed", "refine", "shortened", "type_of", "used",
           "widen"]

_ARTICLE_LEAD = re.compile(r"^(?:a|an|the|my|our|his|her|their)\s+", re.I)


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
    value = _ARTICLE_LEAD.sub("", _ADJUNCT.sub("", said)).strip()
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
    value = _ARTICLE_LEAD.sub("", _ADJUNCT.sub("", rest)).strip(" .,;:!?")
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
