"""Corrections: which earlier value a turn replaces, with or without a marker.

People correct themselves in many ways: with the old value ("not German anymore", "I left
Deloitte", "a Prius, not a Corolla", "switched from vim to helix"), with only the new one
("switched to helix", "my team moved me to the Austin office", "the new coach is Ms
Achterberg", "these days it's rooibos"), or with no marker at all ("My manager is Priya." ...
"My manager is Tomasz."). `find_changes` reads a turn against the speaker's earlier
statements (the thread's previous messages, what memory returned for the turn) and returns
each `Change`: the old value, the new one, and the earlier statement that held the old
value. The gate then supersedes whatever holds the old value. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from langgraph_typed_memory.extraction.markers import (
    ACQUIRED,
    BOTH,
    CORRECTIVE,
    CUE,
    NEW,
    OLD,
    REPLACING,
)
from langgraph_typed_memory.extraction.olds import (
    clean,
    copula_change,
    copula_value,
    framed,
    holds,
    modifier_change,
    named,
    placed,
    refine,
    shortened,
    stem,
    type_of,
    used,
    widen,
)
from langgraph_typed_memory.extraction.subjects import same_subject
from langgraph_typed_memory.extraction.text import FIRST_PERSON, is_question, sentences
from langgraph_typed_memory.extraction.values import (
    ARTICLE_LEAD,
    CONTENT_STOP,
    STRONG_TYPES,
    VALUE_TOKEN,
    Span,
    typed_spans,
)

__all__ = ["Change", "find_changes"]

_PAST_EVENT = re.compile(
    r"\b(?:i|we|she|he|they|it)\s+(?:just\s+|finally\s+|also\s+|recently\s+)?(?:went|saw|did|"
    r"had|made|took|met|visited|watched|read|ate|bought|found|tried|started|finished|lost|"
    r"got|gave|left|won|ran|wrote|sent|spent|paid|kept|brought|told|felt|came|began|sold|"
    r"[a-z]+ed)\b|\b(?:was|were|yesterday|last\s+(?:week|night|month|year|weekend)|ago)\b",
    re.I)
_CAPTION = re.compile(r"\[[^\]]*\]")  # an image's caption, a template's "[name]"
_SUBORDINATE = re.compile(r"^\W*(?:when|whenever|if|as|while|since|because|for|before|after)\b",
                          re.I)


@dataclass(frozen=True, slots=True)
class Change:
    """One value a turn replaces.

    Example:
        >>> Change("Denver", "Austin", "I work in the Denver office.").old
        'Denver'
    """

    old: str
    """The old value, as written where it was said."""
    new: str | None
    """The new value, as written in the turn (None: the turn only withdraws the old one,
    "stop with the tables")."""
    statement: str | None
    """The earlier statement that holds the old value (None: not among those given)."""


_NOW_AT_END = re.compile(r"\bnow\W*$", re.I)  # "primary is db-prod-07 now": a changed value


def _core(value: str) -> str:
    """The value a captured phrase names: the typed value it starts with ("Grant Thornton",
    "£23,500", "6 February"), the single typed value inside it ("the Austin office" ->
    "Austin"), else the phrase itself when it has at most four words."""
    phrase = ARTICLE_LEAD.sub("", value.strip())
    found = typed_spans(phrase, fragment=True)
    spans = [s for s in found if s.type != "number" or len(found) == 1]
    if spans and spans[0].start == 0:
        counted = re.match(rf"{re.escape(spans[0].text)}\s+([a-z][\w-]+)", phrase)
        if spans[0].type == "number" and counted and counted.group(1) not in CONTENT_STOP:
            return counted.group()  # "one cup a day": "one cup"
        return spans[0].text
    if len(spans) == 1:
        return spans[0].text
    words = phrase.split()
    return " ".join(words) if 0 < len(words) <= 4 else ""


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    """Content words, lower-cased, a plural 's' dropped: what two statements share on a topic
    (remembered: the same retrieved statements come back turn after turn)."""
    out = set()
    for token in VALUE_TOKEN.findall(text.lower()):
        token = token.strip("'")
        if token and token[0].isalpha() and token not in CONTENT_STOP:
            out.add(stem(token))
    return frozenset(out)


def _clauses(sentence: str) -> list[str]:
    return [c for c in re.split(r"[,;:]\s+|\s[-–—]\s", sentence) if c.strip()]


@lru_cache(maxsize=16384)
def _state(text: str) -> bool:
    """A present-tense statement of how things are (not a past event, not a question)."""
    return not is_question(text) and not _PAST_EVENT.search(text)


def _old_like(new: str, statement: str, turn: str, near: bool, guess: bool = True
              ) -> str | None:
    """The value of `statement` that `new` replaces: one of the same type that the turn does
    not repeat (the first, or the one after the same word); for a plain word, one in the
    same place (`olds`), else, when `guess`, the last content word of the statement's first
    clause, only for the statement right before (`near`) or one that shares a topic word
    with the turn."""
    want = _kin(type_of(new))
    spans = [s for s in _values(statement) if _kin(s.type) == want and not holds(turn, s.text)]
    if want == "name":
        spans = [s for s in spans if not holds(turn, s.text.split()[-1])]
    on_topic = bool(_words(statement) & _words(turn))
    if spans and not on_topic and not near:
        return None
    if spans and want == "name":  # a name replaces one in the same place, or by a swap
        spans = spans if REPLACING.search(turn) else [
            v for v in spans if _slot(statement, v.text) == _slot(turn, new)]
        if not spans:
            return None
    if len(spans) == 1:
        return spans[0].text
    if len(spans) > 1:
        return _closest(spans, turn, new, statement).text
    if (near or on_topic) and (after_same := framed(new, statement, turn)):
        return after_same
    if where := placed(new, statement, turn):
        return where
    if want == "word" and (swapped := modifier_change(new, statement, turn)):
        return swapped
    if want != "word" or not (near or on_topic) or not CUE.search(turn) or not guess:
        return None
    if said := copula_value(statement, turn):
        return said
    kinds = {_kin(v.type) for v in _values(turn)}
    alike = [s for s in _values(statement) if _kin(s.type) in kinds and not holds(turn, s.text)]
    if len(alike) == 1:  # "switched to evenings, around 7pm" after "i lift at 6am"
        return alike[0].text
    clauses = _clauses(re.split(r"\s(?:and|but|because|since|so|which|who|like)\s",
                                statement, maxsplit=1)[0])
    main = [c for c in clauses if not _SUBORDINATE.match(c)] or clauses
    first = main[0]
    if object_ := used(first, turn):
        return object_
    typed = {w.lower() for v in _values(first) for w in v.text.split()}
    tokens = [t for t in VALUE_TOKEN.findall(first) if t[0].isalpha() and t.lower() not in typed
              and t.lower() not in CONTENT_STOP and not holds(turn, t)]
    return widen(first, tokens[-1]) if tokens else None


_PREPOSITIONS = frozenset("at in on to from into".split())
_ALL_PREPOSITIONS = frozenset("at in on to from into with by for via under".split())
_COPULAS = frozenset("is are was were 's 're 'm am called named be".split())


def _slot(text: str, value: str) -> str:
    """Where a value sits: after a preposition ("on Jenkins"), after "is"/"called" ("is
    Rex"), or elsewhere; articles and possessives before it are skipped."""
    m = re.search(rf"([\w']+)\W+(?:(?:a|an|the|my|our|his|her|their)\s+)?{re.escape(value)}",
                  text, re.I)
    if not m:
        return "start"
    word = m.group(1).lower()
    if word in _ALL_PREPOSITIONS:
        return "preposition"
    if word in _COPULAS or word.endswith(("'s", "'re", "'m")) or word in ("it's", "its"):
        return "copula"
    return "other"


def _closest(spans: Sequence[Span], turn: str, new: str, statement: str) -> Span:
    """Of several values of an earlier statement, the one in the new value's place: after
    the same word, attached to the same noun ("colorway Azul Profundo" / "the colorway is
    Teal Feather"), after a preposition like the new one, else the first."""
    left, role = _left_word(turn, new), _role_word(turn, new)
    for same in (lambda v: left is not None and _left_word(statement, v.text) == left,
                 lambda v: role is not None and _role_word(statement, v.text) == role,
                 lambda v: _left_word(statement, v.text) in _PREPOSITIONS):
        found = [v for v in spans if same(v)]
        if len(found) == 1:
            return found[0]
    return spans[0]


def _left_word(text: str, value: str) -> str | None:
    m = re.search(rf"(\w+)\W+{re.escape(value)}", text, re.I)
    return m.group(1).lower() if m else None


def _explicit(sentence: str, cued: bool = True
              ) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(old, new) pairs, lone old values and lone new values a sentence states; a new value
    after "joined", "bought", "became"... counts only in a turn with a cue (`cued`)."""
    pairs: list[tuple[str, str]] = []
    olds: list[str] = []
    news: list[str] = []
    for pattern in BOTH:
        for m in pattern.finditer(sentence):
            old, new = _core(clean(m["old"])), _core(clean(m["new"]))
            if old and new and old.lower() != new.lower():
                pairs.append((old, new))
    if pairs:
        return pairs, olds, news
    for pattern in OLD:
        olds += [v for m in pattern.finditer(sentence) if (v := _core(clean(m["old"])))]
    for pattern in (*NEW, *(ACQUIRED if cued else ())):
        news += [_whole(sentence, m.start("new"), v) for m in pattern.finditer(sentence)
                 if (v := _core(clean(m["new"])))]
    return pairs, olds, news


_WHOLE_TYPES = ("email", "url", "phone", "money", "version", "time", "date")


def _whole(sentence: str, at: int, value: str) -> str:
    """The whole typed value a captured one begins ("rentals@kestrelproperties" of
    "rentals@kestrelproperties.com": the capture stops at a dot).

    Example:
        >>> _whole("it's rentals@kestrel.com now", 5, "rentals@kestrel")
        'rentals@kestrel.com'
    """
    for span in typed_spans(sentence):
        if span.type in _WHOLE_TYPES and span.start <= at < span.end and (
                len(span.text) > len(value)):
            return span.text
    return value


_KIN = {"version": "number", "number": "number", "code": "name"}


def _kin(kind: str) -> str:
    """Types a value may change between ("React 17" -> "18.3": a number becomes a version)."""
    return _KIN.get(kind, kind)


def _values(text: str) -> list[Span]:
    """The typed values of a text, a name ending in a number also as that number ("Node 18")."""
    out = []
    for span in typed_spans(text):
        out.append(span)
        if span.type == "name" and (m := re.search(r"\s(v?\d[\w.]*)$", span.text)):
            at = span.start + m.start(1)
            out.append(Span(m.group(1), at, at + len(m.group(1)), "number"))
    return out


def _typed_change(clause: str, statement: str, near: bool, cued: bool) -> tuple[str, str] | None:
    """One value of a type in each, different, on a shared topic ("My thesis draft is due on
    20 February" / "My supervisor wants the thesis draft by 6 February"). A turn with a change
    or correction cue needs less shared topic than one without."""
    shared = _words(clause) & _words(statement)
    mine = [v for v in _values(clause) if not holds(statement, v.text)]
    theirs = [v for v in _values(statement) if not holds(clause, v.text)]
    for kind in ("email", "url", "phone", "code", "time", "date", "money", "duration", "number",
                 "weekday", "frequency", "name"):
        a = [v for v in theirs if _kin(v.type) == kind]
        b = [v for v in mine if _kin(v.type) == kind]
        if not a or not b:
            continue
        if len(b) > 1 and len(a) == 1:  # "ask for 160k instead + 10% bonus": after "for"
            left = _left_word(statement, a[0].text)
            b = [v for v in b if left is not None and _left_word(clause, v.text) == left]
            if len(b) != 1:
                continue
        if len(a) > 1 or len(b) > 1:
            if not cued or len(b) > 1:
                continue
            a = [_closest(a, clause, b[0].text, statement)]
        old, new = a[0].text, b[0].text
        unit = _right_word(clause, new)
        same_unit = unit is not None and stem(unit) == stem(_right_word(statement, old) or "")
        role = _role_word(clause, new)
        same_role = role is not None and role == _role_word(statement, old)
        same_slot = _slot(statement, old) == _slot(clause, new)
        if cued and ((shared and (kind != "name" or same_slot or same_role or len(shared) >= 2
                                  or REPLACING.search(clause))) or (near and (
                kind != "name" or REPLACING.search(clause) or (
                    (CORRECTIVE.search(clause) or _NOW_AT_END.search(clause)) and same_slot)))):
            return old, new
        if kind == "name" and not same_role and (len(shared) < 2 or not (
                FIRST_PERSON.search(clause) and FIRST_PERSON.search(statement))):
            continue  # without a cue, a name is swapped for one in its role or the speaker's
        if len(shared) >= 2 or (kind != "name" and len(shared) >= 1 and (
                same_unit or kind in STRONG_TYPES)):
            return old, new
        if kind == "number" and _SPEAKER_IS.search(_before_value(clause, new)) and (
                _SPEAKER_IS.search(_before_value(statement, old))):
            return old, new  # "we're 23 people total" / "so we're 31 now"
        if kind in ("number", "duration", "money") and _same_lead(clause, new, statement, old):
            return old, new  # "a team of five engineers" / "running a team of eight"
    return None


_SPEAKER_IS = re.compile(r"(?:^|\s)(?:i'm|i\s+am|we're|we\s+are)\s*$", re.I)


def _same_lead(clause: str, new: str, statement: str, old: str) -> bool:
    """Whether two values follow the same two words, not both small ones ("team of")."""
    lead = re.findall(r"[\w'-]+", _before_value(clause, new).lower())[-2:]
    return len(lead) == 2 and any(w not in CONTENT_STOP for w in lead) and (
        re.findall(r"[\w'-]+", _before_value(statement, old).lower())[-2:] == lead)


def _before_value(text: str, value: str) -> str:
    """The words right before a value (up to 20 characters)."""
    at = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.I)
    return text[max(0, at.start() - 20):at.start()] if at else ""


_LINKS = frozenset("is are was were 's called named be".split())


def _role_word(text: str, value: str) -> str | None:
    """The content word a value is attached to ("my manager Tomasz", "my manager is Priya":
    "manager")."""
    m = re.search(rf"((?:[\w']+\W+){{1,3}}){re.escape(value)}", text, re.I)
    if not m:
        return None
    for word in reversed(re.findall(r"[\w']+", m.group(1).lower())):
        if word in _LINKS:
            continue
        return None if word in CONTENT_STOP else word
    return None


def _right_word(text: str, value: str) -> str | None:
    m = re.search(rf"{re.escape(value)}\W+(\w+)", text, re.I)
    return m.group(1).lower() if m else None


def find_changes(turn: str, earlier: Sequence[str]) -> list[Change]:
    """The values a turn replaces, read against the speaker's earlier statements (newest
    first): named old values, new values after a change marker matched to a same-typed value
    of an earlier statement, and, failing those, a value of the turn that takes the place of
    one of the same type in an earlier statement on the same topic (needing less shared topic
    when the turn has a change or correction cue: "typo", "now", "moved", "new").

    Example:
        >>> [(c.old, c.new) for c in find_changes(
        ...     "Small update: my team moved me to the Austin office.",
        ...     ["I work in the Denver office, mostly on the payments team."])]
        [('Denver', 'Austin')]
        >>> find_changes("honestly my favourite food is ramen",  # a keyed fact supersedes
        ...              ["My favourite food is lasagne, no contest."])
        []
        >>> [(c.old, c.new) for c in find_changes("ugh, wrong number, it's 555-0199",
        ...     ["The plumber is Dale, his number is 555-0142."])]
        [('555-0142', '555-0199')]
        >>> find_changes("I went to the park today.", ["I went to the beach yesterday."])
        []
    """
    turn = _CAPTION.sub(" ", turn)
    statements = [s for t in earlier for s in sentences(_CAPTION.sub(" ", t))  # newest first
                  if not is_question(s) and len(s.split()) >= 3]
    changes: list[Change] = []
    lone_olds: list[str] = []
    lone_news: list[str] = []
    parts = [s for s in sentences(turn) if not is_question(s) or "," in s]
    cued = bool(CUE.search(turn))
    for sentence in parts:
        pairs, olds, news = _explicit(sentence, cued)
        for old, new in pairs:  # a plain word no statement holds is no value: "not bad, but"
            change = _change(old, new, statements)
            if change.statement or type_of(change.old) != "word" or change.old[:1].isupper():
                changes.append(change)
        lone_olds += olds
        lone_news += [n for n in news if n not in olds]
    for old in lone_olds:  # "I left Deloitte in June. I'm at Grant Thornton now."
        old = named(old, statements)  # "that school": "local public school"
        statement = next((s for s in statements if holds(s, old)), None)
        if statement is None and (found := shortened(old, statements)):
            statement, old = found
        if statement is None:  # said in another session: the gate finds what holds it
            mate = next((n for n in lone_news if _kin(type_of(n)) == _kin(type_of(old))),
                        None)
            if mate is not None:
                lone_news = [n for n in lone_news if n != mate]
                changes.append(Change(old, mate, None))
            continue
        wide = refine(statement, old, None)
        want = _kin(type_of(wide))
        mate = next((n for n in lone_news if _kin(type_of(n)) == want), None) or next(
            (v.text for v in _values(turn) if _kin(v.type) == want and want != "word"
             and not holds(statement, v.text) and v.text.lower() not in wide.lower()), None)
        if mate is not None:
            lone_news = [n for n in lone_news if n != mate]
        changes.append(Change(wide, mate, statement))
    for new in lone_news:  # "switched to helix a few weeks ago"
        if type_of(new) == "word":  # "I meant the blue one, Marseille": the name
            after = re.search(rf"{re.escape(new)}\W{{1,3}}((?:\S+\s*){{1,3}})", turn)
            typed = [v for v in typed_spans(after.group(1), fragment=True)] if after else []
            new = typed[0].text if len(typed) == 1 and typed[0].start == 0 else new
        # the one right before may share no word ("switched to helix" after "I use vim")
        if found := _replaced_by(new, turn, statements):
            statement, replaced = found
            changes.append(Change(replaced, new, statement))
    if changes:
        return _distinct(changes)
    clauses = [c for s in parts for c in ([s] if cued else _clauses(s)) if cued or _state(c)]
    for clause in clauses:  # a value in place of one of the same type, on one topic
        for i, statement in enumerate(s for s in statements if cued or _state(s)):
            if not same_subject(clause, statement):
                continue
            found = _typed_change(clause, statement, near=i < 3, cued=cued or bool(
                _NOW_AT_END.search(clause))) or (copula_change(clause, statement) if cued else None)
            if found and not cued and not _state(statement):
                found = None
            if found and not holds(turn, found[0]):
                changes.append(Change(*found, statement))
                break
    return _distinct(changes)


def _replaced_by(new: str, turn: str, statements: Sequence[str]) -> tuple[str, str] | None:
    """The earlier statement and the value of it that a lone new value replaces: statements
    on the turn's topic first, then the one right before; a value in the same place in any
    of them before a guess at one's last word."""
    tries = [(s, False) for s in statements] + [(s, True) for s in statements[:1]]
    for guess in (False, True):
        for statement, near in tries:
            if same_subject(turn, statement) and (
                    old := _old_like(new, statement, turn, near=near, guess=guess)):
                return statement, old
    return None


def _change(old: str, new: str, statements: Sequence[str]) -> Change:
    old = named(old, statements)
    statement = next((s for s in statements if holds(s, old)), None)
    if statement is None:
        return Change(old, new, None)
    old = refine(statement, old, type_of(new))
    return Change(old, new, statement)


def _distinct(changes: list[Change]) -> list[Change]:
    seen: set[str] = set()
    out = []
    for change in changes:
        if change.old.lower() not in seen and change.old.lower() != (change.new or "").lower():
            seen.add(change.old.lower())
            out.append(change)
    return out
