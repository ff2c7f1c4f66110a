"""Query understanding: the time window a question names ("last week", "in May 2023", "two
days ago", "since March"), resolved against a clock. Pure functions.

Day boundaries are UTC (the store knows no user's time zone). Weeks start on Monday. A bare
month or weekday means the most recent one not after today ("in May" asked in March 2026 is
May 2025). Vague words ("recently", "a while ago") name no window: a window that is a guess
would hide what the user meant.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from langgraph_typed_memory.scoring import STOP_WORDS

__all__ = ["TimeWindow", "time_window", "only_time"]


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A span of time a question names: `start` inclusive, `end` exclusive, both UTC;
    `phrase` is the words that named it.

    Example:
        >>> w = time_window("what did I say yesterday?", datetime(2026, 3, 4, 15, tzinfo=UTC))
        >>> w.start.isoformat(), w.end.isoformat(), w.phrase
        ('2026-03-03T00:00:00+00:00', '2026-03-04T00:00:00+00:00', 'yesterday')
    """

    start: datetime
    end: datetime
    phrase: str

    def holds(self, when: datetime) -> bool:
        """Whether a moment falls in the window.

        Example:
            >>> time_window("last week", datetime(2026, 3, 4, tzinfo=UTC)).holds(
            ...     datetime(2026, 2, 25, tzinfo=UTC))
            True
        """
        return self.start <= when < self.end


_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "a couple of": 2, "couple of": 2, "a few": 3, "few": 3}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = r"(?P<weekday>" + "|".join(_WEEKDAYS) + r")"
_COUNT = r"(?P<count>\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year|fortnight)s?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _next_month(start: datetime) -> datetime:
    return _month_start(start.year + start.month // 12, start.month % 12 + 1)


def _months_back(today: datetime, months: int) -> datetime:
    index = today.year * 12 + today.month - 1 - months
    return _month_start(index // 12, index % 12 + 1)


def _amount(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _span(unit: str, count: int) -> timedelta:
    days = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}[unit]
    return timedelta(days=days * count)


def _ago(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """"two weeks ago": around that time, as wide as the unit's uncertainty."""
    unit, count = m["unit"], _amount(m["count"])
    at = now - _span(unit, count)
    if unit == "day":
        return _day(at), _day(at) + timedelta(days=1)
    half = {"week": 4, "fortnight": 7, "month": 15, "year": 183}[unit]
    return _day(at) - timedelta(days=half), min(_day(at) + timedelta(days=half + 1), now)


def _last_n(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    count = _amount(m["count"]) if m["count"] else 1
    return _day(now - _span(m["unit"], count)), now


def _calendar(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """"last week", "this month", "earlier this year", "last weekend", "this weekend"."""
    which, unit, today = m["which"].lower(), m["unit"].lower(), _day(now)
    if unit == "weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7)
        if which == "last" and today.weekday() >= 5:
            saturday -= timedelta(days=7)
        return saturday, min(saturday + timedelta(days=2), now)
    if unit == "week":
        start = today - timedelta(days=today.weekday())
        return (start - timedelta(days=7), start) if which == "last" else (start, now)
    if unit == "month":
        start = _month_start(today.year, today.month)
        return (_months_back(today, 1), start) if which == "last" else (start, now)
    start = _month_start(today.year, 1)
    return (_month_start(today.year - 1, 1), start) if which == "last" else (start, now)


def _weekday(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """"on Tuesday", "last Tuesday": the most recent one (today's counts unless "last")."""
    today = _day(now)
    back = (today.weekday() - _WEEKDAYS[m["weekday"].lower()]) % 7
    if back == 0 and (m["last"] or "").strip():
        back = 7
    start = today - timedelta(days=back)
    return start, min(start + timedelta(days=1), now) if back == 0 else start + timedelta(days=1)


def _month(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """"in May", "May 2023", "on 12 March", "March 12th, 2023"."""
    found = m.groupdict()
    month = _MONTHS[found["month"].lower()]
    year = int(found["year"]) if found.get("year") else (
        now.year if month <= now.month else now.year - 1)
    if found.get("day"):
        day = int(found["day"])
        if not 1 <= day <= calendar.monthrange(year, month)[1]:
            raise ValueError("no such day")
        start = datetime(year, month, day, tzinfo=UTC)
        if not found.get("year") and start > now:
            start = start.replace(year=year - 1)
        return start, start + timedelta(days=1)
    start = _month_start(year, month)
    return start, _next_month(start)


def _year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    year = int(m["year"])
    return _month_start(year, 1), _month_start(year + 1, 1)


def _iso(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    start = datetime(int(m["y"]), int(m["mo"]), int(m["d"]), tzinfo=UTC)
    return start, start + timedelta(days=1)


def _relative_day(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    word, today = m["word"].lower(), _day(now)
    if word == "yesterday":
        return today - timedelta(days=1), today
    if word == "last night":
        return today - timedelta(hours=6), today + timedelta(hours=6)
    return today, now  # today, this morning, earlier today, tonight


_B = r"(?<![\w-])"
_E = r"(?![\w-])"
_RULES = (  # the first that matches wins; more specific phrasings first
    (re.compile(_B + r"(?P<y>(?:19|20)\d\d)-(?P<mo>[01]\d)-(?P<d>[0-3]\d)" + _E), _iso),
    (re.compile(_B + r"(?:on\s+|the\s+)?" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r"(?:,?\s+"
                + _YEAR + r")?" + _E, re.I), _month),
    (re.compile(_B + _MONTH + r"\s+" + _DAY + r"(?:,?\s+" + _YEAR + r")?" + _E, re.I), _month),
    (re.compile(_B + _COUNT + r"\s+" + _UNIT + r"\s+(?:ago|back)" + _E, re.I), _ago),
    (re.compile(_B + r"(?:in\s+|over\s+|during\s+)?(?:the\s+)?(?P<which>last|past|previous)\s+"
                + r"(?:" + _COUNT + r"\s+)?" + _UNIT + _E + r"(?!\s+(?:ago|back))", re.I),
     None),  # "the last three days", "the past month"; "last week" is the calendar's
    (re.compile(_B + r"(?:earlier\s+)?(?P<which>this|last)\s+(?P<unit>week|month|year|weekend)"
                + _E, re.I), _calendar),
    (re.compile(_B + r"over\s+the\s+(?P<unit>weekend)" + _E + r"(?P<which>)", re.I), _calendar),
    (re.compile(_B + r"(?P<word>yesterday|last\s+night|earlier\s+today|this\s+morning|"
                r"this\s+afternoon|this\s+evening|today|tonight)" + _E, re.I), _relative_day),
    (re.compile(_B + r"(?<!every\s)(?<!each\s)(?:on\s+)?(?P<last>last\s+|this\s+past\s+|"
                r"this\s+)?" + _WEEKDAY + _E, re.I), _weekday),  # not "every Monday"
    (re.compile(_B + r"(?:in|during|since|from|throughout)\s+" + _MONTH + r"(?:\s+" + _YEAR
                + r")?" + _E, re.I), _month),
    (re.compile(_B + _MONTH + r"\s+" + _YEAR + _E, re.I), _month),
    (re.compile(_B + r"(?:in|during|since|throughout)\s+" + _YEAR + _E, re.I), _year),
)
_SINCE = re.compile(_B + r"since\s+", re.I)


def time_window(text: str, now: datetime) -> TimeWindow | None:
    """The time window a question names, resolved against `now`; None when it names none.

    "since X" runs from X to now; "the last N days" from N days ago to now; "last week" is
    the calendar week before this one.

    Example:
        >>> now = datetime(2026, 3, 4, 15, 30, tzinfo=UTC)  # a Wednesday
        >>> def show(text):
        ...     w = time_window(text, now)
        ...     return w and (f"{w.start:%Y-%m-%d %H:%M}", f"{w.end:%Y-%m-%d %H:%M}", w.phrase)
        >>> show("What did we decide last week?")
        ('2026-02-23 00:00', '2026-03-02 00:00', 'last week')
        >>> show("what did I tell you on Monday about the budget")
        ('2026-03-02 00:00', '2026-03-03 00:00', 'on Monday')
        >>> show("Anything about Lena since February?")
        ('2026-02-01 00:00', '2026-03-04 15:30', 'since February')
        >>> show("What did I say about the flat in May 2025?")
        ('2025-05-01 00:00', '2025-06-01 00:00', 'in May 2025')
        >>> show("the plumber came two weeks ago")
        ('2026-02-14 00:00', '2026-02-23 00:00', 'two weeks ago')
        >>> show("in the last 3 days")
        ('2026-03-01 00:00', '2026-03-04 15:30', 'in the last 3 days')
        >>> show("What's my favourite colour?") is None
        True
    """
    for pattern, rule in _RULES:
        for m in pattern.finditer(text):
            try:
                if rule is None:  # "the last N units" runs to now; "last week" is calendar
                    if (m["count"] or m["which"].lower() != "last"
                            or m["unit"].lower().startswith(("day", "fortnight"))):
                        start, end = _last_n(m, now)
                    else:
                        continue
                else:
                    start, end = rule(m, now)
            except (ValueError, KeyError, OverflowError):
                continue  # "February 30th", a year out of range: no window
            phrase = m.group(0).strip()
            before = text[: m.start()]
            if _SINCE.search(before[-7:]) or phrase.lower().startswith("since"):
                end = now
                phrase = phrase if phrase.lower().startswith("since") else f"since {phrase}"
            if start < end:
                return TimeWindow(start, min(end, now) if start < now else end, phrase)
    return None


_ABOUT_NOTHING = frozenset("""
tell told say said says mention mentioned mentions talk talked talking discuss discussed
discussing speak spoke chat chatted ask asked share shared write wrote note noted bring brought
remind remember recall go went happen happened anything something everything thing things
stuff us again back please can could would remind exactly
""".split())
_WORDS = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def only_time(text: str, window: TimeWindow) -> bool:
    """Whether a question asks about nothing but its span of time ("what did I tell you
    yesterday?"), or names something within it too ("the budget I mentioned last week").

    Example:
        >>> now = datetime(2026, 3, 4, tzinfo=UTC)
        >>> only_time("What did I tell you yesterday?", time_window("yesterday", now))
        True
        >>> only_time("the budget I mentioned last week", time_window("last week", now))
        False
    """
    rest = re.sub(re.escape(window.phrase), " ", text, flags=re.I).lower()
    return all(w in STOP_WORDS or w in _ABOUT_NOTHING for w in _WORDS.findall(rest))
