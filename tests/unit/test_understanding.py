"""The time window a question names, by category of phrasing, and the phrasings that name
none (habits, modal 'may', vague words)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from langgraph_typed_memory.understanding import time_window

NOW = datetime(2026, 3, 4, 15, 30, tzinfo=UTC)  # a Wednesday


def _days(text: str) -> tuple[str, str] | None:
    w = time_window(text, NOW)
    return None if w is None else (f"{w.start:%Y-%m-%d %H:%M}", f"{w.end:%Y-%m-%d %H:%M}")


@pytest.mark.parametrize(("text", "start", "end"), [
    # a day relative to today
    ("What did I tell you yesterday?", "2026-03-03 00:00", "2026-03-04 00:00"),
    ("what did we talk about earlier today", "2026-03-04 00:00", "2026-03-04 15:30"),
    ("the thing I mentioned this morning", "2026-03-04 00:00", "2026-03-04 15:30"),
    ("what was that film I mentioned last night", "2026-03-03 18:00", "2026-03-04 06:00"),
    # so long ago
    ("I told you about a recipe 3 days ago", "2026-03-01 00:00", "2026-03-02 00:00"),
    ("the plumber came a week ago", "2026-02-21 00:00", "2026-03-02 00:00"),
    ("we spoke about it a couple of months ago", "2025-12-19 00:00", "2026-01-19 00:00"),
    ("that was a few days back", "2026-03-01 00:00", "2026-03-02 00:00"),
    # rolling spans to now
    ("anything new in the last 10 days?", "2026-02-22 00:00", "2026-03-04 15:30"),
    ("what did I ask in the past month", "2026-02-02 00:00", "2026-03-04 15:30"),
    ("over the past two weeks", "2026-02-18 00:00", "2026-03-04 15:30"),
    ("the last few days", "2026-03-01 00:00", "2026-03-04 15:30"),
    # calendar units
    ("What did we decide last week?", "2026-02-23 00:00", "2026-03-02 00:00"),
    ("anything about the budget this week", "2026-03-02 00:00", "2026-03-04 15:30"),
    ("what did I buy last month", "2026-02-01 00:00", "2026-03-01 00:00"),
    ("earlier this month I said something about it", "2026-03-01 00:00", "2026-03-04 15:30"),
    ("my goals from last year", "2025-01-01 00:00", "2026-01-01 00:00"),
    ("what did I do over the weekend", "2026-02-28 00:00", "2026-03-02 00:00"),
    ("last weekend's hike", "2026-02-28 00:00", "2026-03-02 00:00"),
    # weekdays: the most recent one
    ("what did I tell you on Monday", "2026-03-02 00:00", "2026-03-03 00:00"),
    ("last Wednesday we discussed the launch", "2026-02-25 00:00", "2026-02-26 00:00"),
    ("the call on Friday", "2026-02-27 00:00", "2026-02-28 00:00"),
    # months, days and years
    ("what did I say in May?", "2025-05-01 00:00", "2025-06-01 00:00"),
    ("In February we moved", "2026-02-01 00:00", "2026-03-01 00:00"),
    ("during May 2023", "2023-05-01 00:00", "2023-06-01 00:00"),
    ("on 12 March", "2025-03-12 00:00", "2025-03-13 00:00"),
    ("on the 2nd of March", "2026-03-02 00:00", "2026-03-03 00:00"),
    ("March 3rd, 2024", "2024-03-03 00:00", "2024-03-04 00:00"),
    ("Sept 14 2025", "2025-09-14 00:00", "2025-09-15 00:00"),
    ("in 2024", "2024-01-01 00:00", "2025-01-01 00:00"),
    ("the note from 2025-11-30", "2025-11-30 00:00", "2025-12-01 00:00"),
    # since: from then to now
    ("everything since February", "2026-02-01 00:00", "2026-03-04 15:30"),
    ("since last week", "2026-02-23 00:00", "2026-03-04 15:30"),
    ("since Monday", "2026-03-02 00:00", "2026-03-04 15:30"),
    ("since 2025", "2025-01-01 00:00", "2026-03-04 15:30"),
])
def test_windows(text: str, start: str, end: str) -> None:
    assert _days(text) == (start, end)


@pytest.mark.parametrize("text", [
    "What's my favourite colour?",
    "What do I usually do on Mondays?",  # a habit, not a day
    "remind me what I do every Friday",
    "May I ask what my dog is called?",  # the modal, not the month
    "I may have mentioned my sister",
    "what did I say recently about Lena",  # vague: no window is better than a guess
    "a while ago I told you my address",
    "February 30th",  # no such day
    "my flight number is 2024",
    "the 4-day week at work",
])
def test_no_window(text: str) -> None:
    assert time_window(text, NOW) is None, _days(text)


def test_the_phrase_that_named_it() -> None:
    w = time_window("Anything about Lena since last week?", NOW)
    assert w is not None and w.phrase == "since last week"
    assert w.holds(datetime(2026, 3, 1, tzinfo=UTC)) and not w.holds(NOW)
