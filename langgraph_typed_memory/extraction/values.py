"""Values in text, by type: emails, times, dates, amounts, versions, numbers, names.

A correction swaps one value for another of the same type ("port 3000" -> "5173", "Priya" ->
"Tomasz"), so finding the old value in an earlier statement starts with finding the values of
the new one's type. Pure functions over English text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, cast

from langgraph_typed_memory.extraction.lexicon import MONTHS, WEEKDAYS

__all__ = ["Span", "SpanType", "typed_spans", "STRONG_TYPES", "CONTENT_STOP", "ARTICLE_LEAD",
           "VALUE_TOKEN"]

SpanType = Literal["email", "url", "phone", "time", "date", "money", "version", "weekday",
                   "frequency", "code", "duration", "number", "name"]
STRONG_TYPES: frozenset[str] = frozenset({"email", "url", "phone", "time", "date", "money",
                                          "version", "weekday", "frequency", "code",
                                          "duration"})
"""Types whose values are unambiguous wherever they occur (a name or a bare number is not)."""
VALUE_TOKEN = re.compile(r"[£$€]\s?\d[\d,.]*\w*|[\w'@.+-]*\w|[,;:!?]")
"""A word, an amount ("£23,500") or a punctuation mark, as statements are compared."""
ARTICLE_LEAD = re.compile(r"^(?:a|an|the|my|our|his|her|their)\s+", re.I)
"""An article or possessive before a value ("the Austin office", "my old car")."""

_MONTHS = "|".join(MONTHS) + r"|(?:jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?"
_DAYS = "|".join(WEEKDAYS)
_NUMBER_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
                 "fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|"
                 "fifty|sixty|seventy|eighty|ninety|hundred|a\\s+dozen|a\\s+couple\\s+of")
_COUNT = rf"(?:\d+|(?:{_NUMBER_WORDS})(?:-(?:{_NUMBER_WORDS}))?)"
_UNIT = r"(?:days?|weeks?|months?|years?|hours?|minutes?|nights?|mornings?|evenings?)"
_PATTERNS: tuple[tuple[SpanType, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.I)) for kind, pattern in cast(
        tuple[tuple[SpanType, str], ...], (
        ("email", r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
        ("url", r"https?://\S+[\w/]|www\.\S+[\w/]"),
        ("phone", r"(?<![\w.])(?=(?:[^\d\n]{0,3}\d){7})\+?\d[\d ()-]{5,}\d(?!\w|\.\d)"),
        ("time", r"\b\d{1,2}:\d{2}(?:\s*[ap]\.?m\.?)?(?![\w:])|\b\d{1,2}\s*[ap]\.?m\b\.?"),
        ("date", rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})(?!\w)(?:,?\s+\d{{4}})?"
                 rf"|\b(?:{_MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?"
                 r"|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b"
                 rf"|(?-i:\b(?:{'|'.join(m.capitalize() for m in MONTHS)})\b)(?:\s+\d{{4}})?"
                 r"|\b\d{1,2}(?:st|nd|rd|th)\b"),
        ("money", r"[$£€]\s?\d[\d,]*(?:\.\d+)?(?:\s?[kKmM]\b)?"
                  r"|\b\d[\d,]*(?:\.\d+)?\s?(?:usd|eur|gbp|dollars|euros|pounds|quid)\b"),
        ("version", r"\b[vV]?\d+\.\d+(?:\.\d+)*\b"),
        ("weekday", rf"\b(?:{_DAYS})s?\b"),
        ("frequency", rf"\b(?:daily|nightly|weekly|fortnightly|biweekly|bi-weekly|monthly|"
                      rf"bimonthly|quarterly|yearly|annually|every\s+(?:other\s+)?(?:{_COUNT}\s+)?"
                      rf"{_UNIT}|(?:once|twice|thrice|{_COUNT}\s+times)\s+(?:a|an|per|each|every)\s+"
                      rf"{_UNIT}|(?:once|twice)\b)"),
        ("code", r"\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b"
                 r"|(?-i:\b[A-Z]{1,4}\d{2,}[A-Za-z]?\b)"),
        ("duration", rf"\b(?:{_COUNT}|an?)\s+(?:(?:more|extra|full|whole)\s+)?"
                     r"(?:minutes?|hours?|days?|weeks?|months?|years?)\b(?!\s+ago\b)"),
        ("number", r"\b\d[\d,]*(?:\.\d+)?(?:\s?%|k|mg|kg|km|ml|gb|mb)?(?!\w)"
                   rf"|(?<=\bof\s)(?:{_NUMBER_WORDS})\b(?=\s*[.,;!?]|\s*$)"
                   rf"|\b(?:{_NUMBER_WORDS})(?:-(?:{_NUMBER_WORDS}))?\b(?=\s+(?!(?:of|the|a|an|"
                   r"and|or|to|in|on|at|for|with|is|are|was|were|more|less|thing|day\b|time\b)"
                   r"\b)[a-z]{3,})"),
    )))

CONTENT_STOP = frozenset("""
a about above actually after again against all also am an and any anyway are aren't around as
at be because been before being below between both btw but by can could did do does doing done
don't down during each else even every few for from fyi further get gets got had has have having
he her here hers herself him himself his how i i'd i'll i'm i've if in into is isn't it it's its
itself just like lol me mean mine more most much must my myself no nor not now of off oh ok okay
on once only or other our ours ourselves out over own please pretty quite rather really same she
should so some still such than that that's the their theirs them themselves then there these
they this those though through to too under until up us very was we we're we've were what when
where which while who whom why will with would yeah yes yet you your yours yourself honestly
mostly usually often
basically literally kinda sorta gonna wanna tbh fwiw imo update correction scratch sorry wait
quick one thing things lot bit way
""".split())
"""Words that carry no value or topic ("the", "actually", "btw")."""

_CAPITALIZED_FUNCTION_WORDS = CONTENT_STOP | frozenset("""
hey hi hello hmm big small new old good great sure thanks thank ugh wow omg give gave started
start didn't can't won't went made make took take let let's keep kept use used try tried tell
told ask asked see saw say said call called think thought know knew need want wanted plan
planning going remember remind reminder note noted switch switched change changed moved move
replaced finally well today tomorrow yesterday tonight morning evening since although however
already never always sometimes maybe perhaps probably definitely seriously funny weird sad
happy glad excited news heads reply answer write respond show send stop drop dropped leadership
airline turns nothing everything something someone everyone nobody what's there's here's we'd
we'll you'd you'll how's where's who's closed opened sold bought forget whoops oops typo wrong
mixed you've you're they're they've
""".split())
_CHAT_OPENERS = frozenset("""
congrats congratulations nah nope yep yup yea woah whoa woohoo aw aww ah ahh ooh oof haha hehe
bye goodbye cheers absolutely agreed cool awesome perfect totally exactly indeed right alright
plus lately recently thankfully hopefully unfortunately fortunately luckily sadly gotcha dear
yikes phew yay last
""".split())
"""Words that open a chat sentence ("Congrats Caroline!", "Bye Caroline", "Last Fri") and
are names elsewhere ("I work at Indeed", "Cool Runnings"): dropped at a sentence's start
only."""
_NAME = re.compile(
    r"(?<![\w@.])(?:(?:Mr|Mrs|Ms|Dr|Prof|St)\.?\s+)?(?:[A-Z][\w'&+.-]*[\w+]|[A-Z]|[a-z]+[A-Z][\w-]*)"
    r"(?:\s+(?:[A-Z][\w'&+.-]*[\w+]|[a-z]+[A-Z][\w-]*|\d[\w.]*|(?:of|de|da|van|von|del|la|le)"
    r"(?=\s+[A-Z])))*")
_TITLES = frozenset("mr mrs ms miss dr prof sir".split())
_I_WORDS = frozenset(("I", "I'm", "I've", "I'd", "I'll"))


_CAMEL = re.compile(r"[A-Za-z][a-z]*[A-Z]|[A-Z]{2,}|\w*\d")


def _sentence_start(text: str, at: int) -> bool:
    before = text[:at].rstrip(" \t\"'([")
    return not before or before[-1] in ".!?:;\n—–-"


@dataclass(frozen=True, slots=True)
class Span:
    """A typed value at `start:end` of a text."""

    text: str
    start: int
    end: int
    type: SpanType


def _names(text: str, taken: list[tuple[int, int]], fragment: bool) -> list[Span]:
    out = []
    for m in _NAME.finditer(text):
        words = m.group().split()
        opens = _sentence_start(text, m.start())
        while words and (words[0].lower().strip(".") in _CAPITALIZED_FUNCTION_WORDS or (
                opens and words[0].lower().strip(".,") in _CHAT_OPENERS)) and not (
                words[0].lower().strip(".") in _TITLES and len(words) > 1):
            words = words[1:]  # "Actually Tomasz" -> "Tomasz", "The Corolla" -> "Corolla"
        if (cut := next((i for i, w in enumerate(words) if w in _I_WORDS), None)) is not None:
            words = words[:cut]  # "Knowing I'm": a name ends before "I"
        if not words:
            continue
        start = m.start() + m.group().index(words[0])
        if (not fragment and len(words) == 1 and _sentence_start(text, start)
                and not _CAMEL.match(words[0])):
            continue  # "Hope your injury...": a capital that only starts the sentence
        phrase = " ".join(words)
        end = start + len(phrase) if text[start:start + len(phrase)] == phrase else m.end()
        for a, _ in sorted(taken):  # "Galaxy S23": the name stops where the code starts
            if start < a < end:
                end = start + len(text[start:a].rstrip())
        if text[start:end].endswith(("'s", "\u2019s")):
            end -= 2  # "Rocco's grooming": Rocco
        if end > start and not any(a < end and start < b for a, b in taken):
            out.append(Span(text[start:end], start, end, "name"))
    return out


def typed_spans(text: str, *, fragment: bool = False) -> list[Span]:
    """The values of a text, left to right, each of one type (the first that fits).

    A capitalized word alone at the start of a sentence is not taken for a name ("Hope your
    knee is better"), unless the text is a `fragment` (a value cut out of a sentence).
    Remembered: the extractor reads each turn against the memories retrieved for it, which
    repeat from turn to turn (`SPAN_CACHE` texts).

    Example:
        >>> [(s.text, s.type) for s in typed_spans(
        ...     "email Ana at ana@x.io by 6 February: the budget is £23,500 on Node 22 at 11:15.")]
        ... # doctest: +NORMALIZE_WHITESPACE
        [('Ana', 'name'), ('ana@x.io', 'email'), ('6 February', 'date'), ('£23,500', 'money'),
         ('Node 22', 'name'), ('11:15', 'time')]
    """
    return list(_spans(text, fragment))


SPAN_CACHE = 4096
"""Texts whose values `typed_spans` remembers."""


@lru_cache(maxsize=SPAN_CACHE)
def _spans(text: str, fragment: bool) -> tuple[Span, ...]:
    spans: list[Span] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            if kind == "number" and _NAME_NUMBER.search(text[:m.start()]):
                continue  # "Node 22" is one name
            spans.append(Span(m.group().strip(), m.start(), m.start() + len(m.group().strip()),
                              kind))
            taken.append((m.start(), m.end()))
    spans = sorted([*spans, *_names(text, taken, fragment)], key=lambda s: s.start)
    merged: list[Span] = []
    for span in spans:  # "Galaxy S23": a name and the code after it are one name
        last = merged[-1] if merged else None
        if (last is not None and last.type == "name" and span.type in ("code", "number", "version")
                and text[last.end:span.start] == " "):
            merged[-1] = Span(text[last.start:span.end], last.start, span.end, "name")
        else:
            merged.append(span)
    return tuple(merged)


_NAME_NUMBER = re.compile(r"(?:[A-Z][\w-]*|[a-z]+[A-Z][\w-]*)\s+$")
