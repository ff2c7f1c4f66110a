"""Compaction of episodes, as pure decisions: which episodes form a group, and its text.

Episodes are never deleted by decay. Three passes, in order:

1. **Session summaries**: the raw episodes of one finished session (same `source_run_id`, or
   `metadata.session_id` / `metadata.thread_id` when the writer set one; finished once the
   newest is `session_idle_minutes` old; at least two) become one tier-0 episode with
   `task_type="session_summary"`.
2. **Tier 1**: tier-0 episodes older than `tier1_after_days`, grouped per scope by ISO week.
3. **Tier 2**: tier-1 episodes older than `tier2_after_days`, grouped per scope by month.

The sources stay (status `compacted`, pointing at the group, embeddings dropped, readable
with `get` and `history`); the group is a new, searchable episode listing them.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain
from typing import Any, Literal

from langgraph_typed_memory.assembly import count_tokens
from langgraph_typed_memory.gate import TURN
from langgraph_typed_memory.maintenance.records import MemoryRow
from langgraph_typed_memory.maintenance.settings import MaintenanceConfig

__all__ = [
    "CompactionGroup",
    "SESSION_SUMMARY",
    "session_key",
    "session_groups",
    "weekly_groups",
    "monthly_groups",
    "extractive_group_summary",
    "compacted_value",
]

SESSION_SUMMARY = "session_summary"
"""`task_type` of a session summary episode."""
PERIOD_SUMMARY = "period_summary"
"""`task_type` of a weekly or monthly episode."""
MAX_KEY_STEPS = 20
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORDS = 25

GroupSummarizer = Callable[["CompactionGroup"], str]
"""Writes a group's summary text (a chat model, or `extractive_group_summary`)."""


@dataclass(frozen=True, slots=True)
class CompactionGroup:
    """Episodes of one scope that become one compacted episode."""

    ns: str
    tier: Literal[0, 1, 2]
    label: str
    """`session:<id>`, `week:2025-W48` or `month:2025-11`."""
    sources: tuple[MemoryRow, ...]

    @property
    def key(self) -> str:
        """The compacted episode's key: the label and a digest of its sources."""
        digest = hashlib.sha256("\x1f".join(sorted(r.id for r in self.sources)).encode())
        return f"compact:{self.label}:{digest.hexdigest()[:12]}"


def session_key(row: MemoryRow) -> str | None:
    """The session an episode belongs to: `metadata.session_id`, `metadata.thread_id`, else
    its run (`source_run_id`); None when it names none.

    Example:
        >>> session_key(MemoryRow(1, "a", "ns", "k", "episode", "t", None, None, "active",
        ...                       {"metadata": {"thread_id": "th-1"}}, 1.0, 0.0, 0.0, "run-9"))
        'th-1'
    """
    meta = row.value.get("metadata") or {}
    for name in ("session_id", "thread_id"):
        if isinstance(meta.get(name), str) and meta[name]:
            return str(meta[name])
    return row.source_run_id


def _is_raw(row: MemoryRow) -> bool:
    return row.tier == 0 and row.value.get("task_type") != SESSION_SUMMARY


def _groups(rows: Iterable[MemoryRow], tier: Literal[0, 1, 2],
            label: Callable[[MemoryRow], str | None], minimum: int) -> list[CompactionGroup]:
    buckets: dict[tuple[str, str], list[MemoryRow]] = defaultdict(list)
    for row in rows:
        name = label(row)
        if name is not None:
            buckets[(row.ns, name)].append(row)
    return [
        CompactionGroup(ns, tier, name, tuple(sorted(members, key=lambda r: (r.time, r.seq))))
        for (ns, name), members in sorted(buckets.items())
        if len(members) >= minimum
    ]


def session_groups(
    rows: Sequence[MemoryRow], now: float, settings: MaintenanceConfig
) -> list[CompactionGroup]:
    """Finished sessions with at least two raw episodes, one group each.

    Example:
        >>> from langgraph_typed_memory.maintenance.settings import MaintenanceConfig
        >>> def ep(i, run, t):
        ...     return MemoryRow(i, f"e{i}", "ns", f"k{i}", "episode", "t", "u", None,
        ...                      "active", {"title": "x", "summary": "y"}, 1.0, t, t, run)
        >>> rows = [ep(1, "r1", 0), ep(2, "r1", 60), ep(3, "r2", 7000), ep(4, "r2", 7100)]
        >>> [(g.label, len(g.sources)) for g in session_groups(rows, 7200, MaintenanceConfig())]
        [('session:r1', 2)]
    """
    idle = settings.session_idle_minutes * 60.0
    raw = [r for r in rows if _is_raw(r) and session_key(r) is not None]
    newest: dict[tuple[str, str | None], float] = defaultdict(float)
    for r in raw:
        newest[(r.ns, session_key(r))] = max(newest[(r.ns, session_key(r))], r.time,
                                             r.created_at)
    finished = [r for r in raw if now - newest[(r.ns, session_key(r))] >= idle]
    return _groups(finished, 0, lambda r: f"session:{session_key(r)}", 2)


def _iso_week(row: MemoryRow) -> str:
    year, week, _ = row.when.isocalendar()
    return f"week:{year}-W{week:02d}"


def weekly_groups(
    rows: Sequence[MemoryRow], now: float, settings: MaintenanceConfig
) -> list[CompactionGroup]:
    """Tier-0 episodes older than `tier1_after_days`, per scope and ISO week."""
    cutoff = now - settings.tier1_after_days * 86400.0
    return _groups((r for r in rows if r.tier == 0 and r.time < cutoff), 1, _iso_week, 1)


def monthly_groups(
    rows: Sequence[MemoryRow], now: float, settings: MaintenanceConfig
) -> list[CompactionGroup]:
    """Tier-1 episodes older than `tier2_after_days`, per scope and month."""
    cutoff = now - settings.tier2_after_days * 86400.0
    return _groups((r for r in rows if r.tier == 1 and r.time < cutoff), 2,
                   lambda r: f"month:{r.when.year}-{r.when.month:02d}", 1)


def _first_sentence(text: str) -> str:
    first = _SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0]
    words = first.split()
    return " ".join(words[:_WORDS]) + ("…" if len(words) > _WORDS else "")


def _lines(row: MemoryRow) -> list[str]:
    """What a source gives its group's summary: a summary's own lines (a session's, a
    week's), a logged turn's first sentence (its summary names the speaker; its day is in
    its title, which the group's title lists), else its title and first sentence.

    Example:
        >>> row = lambda value: MemoryRow(1, "e1", "ns", "k1", "episode", "t", None, None,
        ...                               "active", value, 1.0, 0.0)
        >>> _lines(row({"task_type": "turn", "title": "user (2 March 2026)",
        ...             "summary": "user: I live in Lyon. It is lovely."}))
        ['user: I live in Lyon.']
        >>> _lines(row({"task_type": "session_summary", "title": "Session summary (2 ...)",
        ...             "summary": "user: I live in Lyon.\\nuser: I work at Acme."}))
        ['user: I live in Lyon.', 'user: I work at Acme.']
    """
    title = " ".join(str(row.value.get("title") or "").split())
    text = str(row.value.get("summary") or "")
    task = row.value.get("task_type")
    if task in (SESSION_SUMMARY, PERIOD_SUMMARY):
        return [line for line in (" ".join(t.split()) for t in text.splitlines()) if line]
    summary = _first_sentence(text)
    if task == TURN or not title or summary.lower().startswith(title.lower()):
        return [summary or title]
    return [f"{title}: {summary}"]


def extractive_group_summary(group: CompactionGroup, max_tokens: int = 300) -> str:
    """The sources' lines (`_lines`), oldest first, within `max_tokens`; what does not fit is
    counted on a last line. Deterministic.

    Example:
        >>> rows = tuple(MemoryRow(i, f"e{i}", "ns", f"k{i}", "episode", "t", None, None,
        ...              "active", {"title": f"Ticket {i}", "summary": "Refunded. Closed."},
        ...              1.0, float(i)) for i in (1, 2))
        >>> print(extractive_group_summary(CompactionGroup("ns", 1, "week:1970-W01", rows)))
        Ticket 1: Refunded.
        Ticket 2: Refunded.
    """
    lines = [line for line in dict.fromkeys(chain.from_iterable(_lines(r) for r in
                                                                group.sources)) if line]
    kept: list[str] = []
    for i, line in enumerate(lines):
        rest = len(lines) - i - 1
        tail = [f"(and {rest} more episode(s))"] if rest else []
        if count_tokens("\n".join([*kept, line, *tail])) > max_tokens:
            kept.append(f"(and {len(lines) - i} more episode(s))")
            break
        kept.append(line)
    return "\n".join(kept) or "(empty)"


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


def compacted_value(group: CompactionGroup, summary: str) -> dict[str, Any]:
    """The value of the episode that replaces a group (validated later by the store).

    It names its sources in `metadata.compacted_from` (keys) and `metadata.source_ids`, and
    their titles in `key_steps`; `occurred_at` is the newest source's time.
    """
    first, last = group.sources[0], group.sources[-1]
    titles = [str(r.value.get("title") or "") for r in group.sources]
    kind = "Session" if group.tier == 0 else ("Week" if group.tier == 1 else "Month")
    period = group.label.split(":", 1)[1]
    head = f"{kind} {period}" if group.tier else f"{kind} summary"
    title = f"{head} ({len(group.sources)} episode(s)): " + "; ".join(dict.fromkeys(titles))
    sessions = {session_key(r) for r in group.sources}
    return {
        "task_type": SESSION_SUMMARY if group.tier == 0 else PERIOD_SUMMARY,
        "title": title[:509] + "..." if len(title) > 512 else title,
        "summary": summary[:32_000],
        "key_steps": list(dict.fromkeys(t for t in titles if t))[:MAX_KEY_STEPS],
        "compaction_tier": group.tier,
        "compact_group": group.label,
        "confidence": max(r.confidence for r in group.sources),
        "occurred_at": _iso(max(r.time for r in group.sources)),
        "source_run_id": sessions.pop() if len(sessions) == 1 else None,
        "metadata": {
            "compacted_from": [r.key for r in group.sources],
            "source_ids": [r.id for r in group.sources],
            "period_start": _iso(first.time),
            "period_end": _iso(last.time),
        },
    }
