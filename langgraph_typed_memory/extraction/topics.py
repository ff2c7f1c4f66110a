"""A new value for the same thing, said without a marker: two of the speaker's statements
about one possessed thing ("I drink my coffee black." ... "I take my coffee with a splash of
cream.") where what is said of it differs.

The thing is a content word both statements name after a determiner ("my coffee", "our
tasks", "the house"); what is said of it is the noun phrase or complement that follows it
(or, when nothing new follows, the modifiers before it: "a cheap membrane keyboard" /
"my keyboard is a mechanical one"). Both must be the speaker's own present-tense statements
(the caller checks the tense and who they are about); this module reads only their words.
Pure functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from langgraph_typed_memory.extraction.values import CONTENT_STOP

__all__ = ["topic_change"]

_TOKEN = re.compile(r"[£$€]?\d[\d,.:]*\w*|[A-Za-z][\w'-]*|[,;:!?.()—–]")
_DETERMINERS = frozenset("my our the a an".split())
_POSSESSIVES = frozenset("my our".split())
_FIRST_PERSON = frozenset("i i'm i've i'd me my mine we we're we've our ours us".split())
_SECOND_PERSON = frozenset("you you're your yours you've".split())
_HEDGES = frozenset("may might maybe perhaps probably possibly think guess hope".split())
_LINKS = frozenset("at in on to from into onto with by for via under a an the my our your of"
                   .split())
_GENERIC = frozenset("""time day days week weeks month months year years morning evening night
people person one ones something everything anything nothing kind sort part end moment
couple few""".split())
_MAX_WORDS = 4


def _stem(word: str) -> str:
    word = word.lower().removesuffix("'s")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _content(token: str) -> bool:
    return token[0].isalpha() and token.lower() not in CONTENT_STOP and len(token) > 1


def _first_clause(tokens: list[str]) -> list[str]:
    for i, token in enumerate(tokens):
        if token in ",;:!?.()—–" or token.lower() in ("and", "but", "so", "because", "which",
                                                      "who", "that", "since", "while"):
            return tokens[:i]
    return tokens


def _topics(tokens: list[str]) -> dict[str, tuple[int, bool]]:
    """Content words within three words after a determiner: their stem, where they first
    stand, and whether the determiner is the speaker's ("my", "our")."""
    out: dict[str, tuple[int, bool]] = {}
    for i, token in enumerate(tokens):
        if token.lower() not in _DETERMINERS:
            continue
        for j in range(i + 1, min(i + 4, len(tokens))):
            word = tokens[j]
            if not word[0].isalpha():
                break
            if _content(word) and word.lower() not in _GENERIC:
                out.setdefault(_stem(word), (j, token.lower() in _POSSESSIVES))
    return out


_PREPOSITIONS = frozenset("at in on to from into onto with by for via under".split())


def _phrase(tokens: list[str], start: int, other: frozenset[str]) -> tuple[str, bool] | None:
    """What follows the topic word: the first noun phrase (a run of content words, "of"
    joining two, led by a determiner or a preposition) that `other` does not hold, else the
    first such run however led ("my coffee black"); at most four words. With it, whether a
    preposition stands between the topic and it ("our tasks live in a shared board")."""
    runs: list[tuple[list[str], bool, bool]] = []
    run: list[str] = []
    led = through = False
    previous = ""
    for i, token in enumerate(tokens[start:] + ["."]):
        joined = token.lower() == "of" and run and i + 1 < len(tokens) - start and _content(
            tokens[start + i + 1])
        if token[0].isalpha() and _content(token) and _stem(token) not in other:
            if not run:
                led = previous.lower() in _LINKS
            run.append(token)
        elif joined:
            run.append(token)
        else:
            if run:
                runs.append((run[:_MAX_WORDS], led, through))
                run = []
            if not token[0].isalpha():
                break
            through = through or token.lower() in _PREPOSITIONS
        previous = token
    best = next((r for r in runs if r[1]), runs[0] if runs else None)
    return (" ".join(best[0]), best[2]) if best else None


def _before(tokens: list[str], at: int, other: frozenset[str]) -> str | None:
    """The modifiers right before the topic word that `other` does not hold ("a cheap
    membrane keyboard": "cheap membrane")."""
    run: list[str] = []
    for token in reversed(tokens[max(0, at - 3):at]):
        if not _content(token) or _stem(token) in other:
            break
        run.insert(0, token)
    return " ".join(run) or None


@dataclass(frozen=True, slots=True)
class _Statement:
    tokens: list[str]
    """The words of its first clause."""
    topics: dict[str, tuple[int, bool]]
    words: frozenset[str]
    """Its content words, stemmed."""

    @staticmethod
    @lru_cache(maxsize=16384)  # the statements retrieved for a turn come back turn after turn
    def of(text: str) -> _Statement | None:
        """The statement's first clause, or None when the speaker does not speak of their own
        ("I", "my", "we", "our"...) anywhere in it. Read only: it is remembered."""
        tokens = _TOKEN.findall(text)
        first = _first_clause(tokens)
        said = {t.lower() for t in first}
        if not _FIRST_PERSON & {t.lower() for t in tokens} or said & _SECOND_PERSON or (
                said & _HEDGES):
            return None  # not the speaker's own, or not said for sure
        return _Statement(first, _topics(first),
                          frozenset(_stem(t) for t in first if _content(t)))


def topic_change(clause: str, statement: str) -> tuple[str, str] | None:
    """What `clause` says of a thing `statement` also names, in place of what `statement`
    said of it: the (old, new) pair, or None.

    Example:
        >>> topic_change("Our tasks live in a shared board.", "We track our tasks on a whiteboard.")
        ('whiteboard', 'shared board')
        >>> topic_change("As a lead designer I run two squads.", "I'm a junior designer.")
        ('junior', 'lead')
        >>> topic_change("My kids love the beach.", "My kids go to Oakwood school.") is None
        True
    """
    new, old = _Statement.of(clause), _Statement.of(statement)
    if new is None or old is None:
        return None
    for topic in (w for w in old.topics if w in new.topics):
        if found := _said_of(topic, old, new):
            return found
    return None


def _said_of(topic: str, old: _Statement, new: _Statement) -> tuple[str, str] | None:
    """What each statement says of `topic`: the words before it when both have other ones,
    else, for the speaker's own thing ("my", "our"), what follows it; the (old, new) pair."""
    (old_at, old_mine), (new_at, new_mine) = old.topics[topic], new.topics[topic]
    was = _before(old.tokens, old_at, new.words)
    now = _before(new.tokens, new_at, old.words)
    if not was or not now:  # not both modified in place: what follows the speaker's thing
        if not (old_mine and new_mine):
            return None
        after_old = _phrase(old.tokens, old_at + 1, new.words)
        after_new = _phrase(new.tokens, new_at + 1, old.words)
        if after_old is None or after_new is None or after_old[1] != after_new[1]:
            return None  # "my kids go to Oakwood" / "my kids love the beach": two facts
        was, now = after_old[0], after_new[0]
    if not was or not now or was.lower() == now.lower():
        return None
    return was, now
