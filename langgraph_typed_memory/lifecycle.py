"""Lifecycle rules as pure functions: statuses are computed, never accepted.

States: ``active``, ``provisional``, ``superseded``, ``expired``, ``revoked``, ``forgotten``.
A new record of a user- or agent-scoped kind enters ``active``; a tenant-scoped fact enters
``provisional`` and stays invisible to semantic discovery until confirmed. A new value for
the same key supersedes the old record (kept, pointing at its replacement). A typed delete
revokes. ``expired`` and ``forgotten`` are set by maintenance: the freshness sweep, garbage
collection and retention (docs/lifecycle.md). The rules are the pure functions below;
`store/governance/sweeps.py` runs them over the database.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from langgraph_typed_memory.config import LifecycleConfig
from langgraph_typed_memory.errors import InvalidQuery, InvalidRecord
from langgraph_typed_memory.namespaces import Scope

__all__ = [
    "Status",
    "STATUSES",
    "EXPIRING_KINDS",
    "HISTORY_KEY",
    "HISTORY_STATUSES",
    "NEWEST_KEY",
    "split_newest",
    "DURING_KEY",
    "split_during",
    "IF_CHANGED_KEY",
    "ADDITIONS_KEY",
    "split_if_changed",
    "split_additions",
    "initial_status",
    "access_boost",
    "decay_freshness",
    "days_until_expiry_possible",
    "next_status",
    "on_access",
    "gc_due",
    "retention_of",
    "check_retention_class",
    "split_history",
]

Status = Literal["active", "provisional", "superseded", "expired", "revoked", "forgotten"]
STATUSES: tuple[Status, ...] = (
    "active", "provisional", "superseded", "expired", "revoked", "forgotten"
)


def initial_status(kind: str, scope: Scope) -> Status:
    """The status a newly written record of `kind` in `scope` enters.

    Example:
        >>> initial_status("fact", Scope("acme"))
        'provisional'
        >>> initial_status("fact", Scope("acme", user_id="alice"))
        'active'
    """
    if kind == "fact" and scope.level == "tenant":
        return "provisional"
    return "active"


EXPIRING_KINDS: frozenset[str] = frozenset({"fact", "observation"})
"""Kinds whose active records expire when their freshness falls below the floor.
Episodes are compacted instead; policies, preferences and procedures are read by
exhaustive lookup and never expire by decay."""
HISTORY_KEY = "$history"
"""The reserved search-filter key that turns on history mode."""
NEWEST_KEY = "$newest"
"""The reserved search-filter key that lists a namespace's own records newest first."""
DURING_KEY = "$during"
"""The reserved search-filter key that lists the records of a span of time, latest first."""
IF_CHANGED_KEY = "$if_changed"
"""The reserved search-filter key that makes a `$newest` listing conditional: given the
`version` of an earlier listing, it returns nothing (mode ``unchanged``) while the namespace's
records are as they were then."""
ADDITIONS_KEY = "$additions"
"""The reserved search-filter key that, with `$if_changed`, lists only the records added since
that version (mode ``added``) when the namespace changed in no other way."""
HISTORY_STATUSES: tuple[Status, ...] = ("active", "expired", "superseded")
"""What history-mode search returns; normal search returns only ``active`` records."""


def access_boost(access_count: int, settings: LifecycleConfig) -> float:
    """The freshness multiplier earned by retrievals: ``min(1 + step x count, cap)``.

    Example:
        >>> s = LifecycleConfig()
        >>> access_boost(0, s), access_boost(3, s), access_boost(50, s)
        (1.0, 1.3, 1.5)
    """
    return min(1.0 + settings.access_boost_step * max(access_count, 0), settings.access_boost_cap)


def decay_freshness(
    days_since_use: float,
    half_life_days: float | None,
    access_count: int,
    settings: LifecycleConfig,
) -> float:
    """Freshness for expiry: ``min(1, 2^(-days/half-life) x access boost)``.

    `days_since_use` counts from the record's last use: the later of its last write (put,
    re-statement, confirmation) and its last retrieval. Kinds without a half-life stay 1.

    Example:
        >>> s = LifecycleConfig()
        >>> round(decay_freshness(180, 180, 0, s), 3), round(decay_freshness(180, 180, 2, s), 3)
        (0.5, 0.6)
        >>> decay_freshness(10_000, None, 0, s)
        1.0
    """
    if half_life_days is None:
        return 1.0
    decay = 2.0 ** (-max(days_since_use, 0.0) / half_life_days)
    return min(1.0, decay * access_boost(access_count, settings))


def days_until_expiry_possible(half_life_days: float, settings: LifecycleConfig) -> float:
    """Days of disuse before which no record of this half-life can expire (an access boost
    only delays expiry): the sweep's SQL pre-filter.

    Example:
        >>> round(days_until_expiry_possible(180, LifecycleConfig()), 1)
        777.9
    """
    if settings.expiry_floor <= 0:
        return math.inf
    return half_life_days * math.log2(1.0 / settings.expiry_floor)


def next_status(kind: str, status: str, freshness: float, settings: LifecycleConfig) -> str:
    """The status a sweep gives a record: active facts and observations below the floor
    expire; every other record keeps its status.

    Example:
        >>> s = LifecycleConfig()
        >>> next_status("fact", "active", 0.01, s), next_status("episode", "active", 0.01, s)
        ('expired', 'active')
    """
    if status == "active" and kind in EXPIRING_KINDS and freshness < settings.expiry_floor:
        return "expired"
    return status


def on_access(status: str) -> str:
    """The status after a read (`get`, history-mode search): expiry is reversed on access.

    Example:
        >>> on_access("expired"), on_access("superseded")
        ('active', 'superseded')
    """
    return "active" if status == "expired" else status


def gc_due(days_expired: float, confidence: float | None, settings: LifecycleConfig) -> bool:
    """Garbage collection forgets only long-expired AND low-confidence records.

    Example:
        >>> s = LifecycleConfig()
        >>> gc_due(200, 0.3, s), gc_due(200, 0.9, s), gc_due(20, 0.3, s)
        (True, False, False)
    """
    return (
        days_expired >= settings.gc_after_days
        and (confidence if confidence is not None else 1.0) < settings.gc_below_confidence
    )


def retention_of(
    value: Mapping[str, Any], settings: LifecycleConfig
) -> tuple[str | None, float | None]:
    """A typed record's retention class (``metadata["retention"]``) and its maximum age in
    days (None: no limit). A class the configuration does not know has no limit here; the
    store refuses such a class when the record is written.

    Example:
        >>> from langgraph_typed_memory.config import normalize_lifecycle
        >>> s = normalize_lifecycle({"retention": {"classes": {"short": 30}, "default": 365}})
        >>> retention_of({"metadata": {"retention": "short"}}, s), retention_of({}, s)
        (('short', 30.0), (None, 365.0))
    """
    metadata = value.get("metadata")
    name = metadata.get("retention") if isinstance(metadata, Mapping) else None
    if name is None:
        return None, settings.retention.default
    if not isinstance(name, str) or name not in settings.retention.classes:
        return (name if isinstance(name, str) else repr(name)), None
    return name, settings.retention.classes[name]


def check_retention_class(
    value: Mapping[str, Any], settings: LifecycleConfig, where: str
) -> None:
    """Refuse a record whose ``metadata["retention"]`` names no configured class.

    Raises:
        InvalidRecord: naming the class and the configured ones.

    Example:
        >>> from langgraph_typed_memory.config import normalize_lifecycle
        >>> s = normalize_lifecycle({"retention": {"classes": {"short": 30}}})
        >>> check_retention_class({"metadata": {"retention": "short"}}, s, "fact 'k'")
    """
    metadata = value.get("metadata")
    if not isinstance(metadata, Mapping) or "retention" not in metadata:
        return
    name = metadata["retention"]
    if name is None or (isinstance(name, str) and name in settings.retention.classes):
        return
    known = sorted(settings.retention.classes)
    raise InvalidRecord(
        f"{where}: metadata.retention={name!r:.80} is not a configured retention class; "
        + (f"use one of {known}" if known else "configure classes with "
           "lifecycle={'retention': {'classes': {...}}}")
        + " or drop the key."
    )


def _split_switch(filter: Mapping[str, Any] | None, key: str, use: str
                  ) -> tuple[bool, dict[str, Any] | None]:
    """Take a reserved boolean `key` out of a filter: (its value, the rest or None)."""
    if not filter or key not in filter:
        return False, dict(filter) if filter else None
    flag = filter[key]
    if not isinstance(flag, bool):
        raise InvalidQuery(
            f"filter {key}={flag!r:.80}: use True to {use}, or False; {key} is reserved for "
            "this switch."
        )
    rest = {k: v for k, v in filter.items() if k != key}
    return flag, rest or None


def split_history(filter: Mapping[str, Any] | None) -> tuple[bool, dict[str, Any] | None]:
    """Take the reserved ``$history`` key out of a typed search's filter.

    Raises:
        InvalidQuery: ``$history`` is not a boolean.

    Example:
        >>> split_history({"$history": True, "metadata": {"project": "x"}})
        (True, {'metadata': {'project': 'x'}})
        >>> split_history(None)
        (False, None)
    """
    return _split_switch(filter, HISTORY_KEY,
                         "include superseded and expired records (history mode)")


def split_newest(filter: Mapping[str, Any] | None) -> tuple[bool, dict[str, Any] | None]:
    """Take the reserved ``$newest`` key out of a typed search's filter: a search without a
    query then lists the namespace's own current records, newest first.

    Raises:
        InvalidQuery: ``$newest`` is not a boolean.

    Example:
        >>> split_newest({"$newest": True})
        (True, None)
    """
    return _split_switch(filter, NEWEST_KEY, "list the namespace's records newest first")


def split_additions(filter: Mapping[str, Any] | None) -> tuple[bool, dict[str, Any] | None]:
    """Take the reserved ``$additions`` key out of a typed search's filter: with
    ``$if_changed``, a namespace that only gained records lists those alone.

    Raises:
        InvalidQuery: ``$additions`` is not a boolean.

    Example:
        >>> split_additions({"$newest": True, "$additions": True})
        (True, {'$newest': True})
    """
    return _split_switch(filter, ADDITIONS_KEY, "list only the records added since the "
                         f"{IF_CHANGED_KEY} version when nothing else changed")


def split_if_changed(filter: Mapping[str, Any] | None
                     ) -> tuple[str | None, dict[str, Any] | None]:
    """Take the reserved ``$if_changed`` key out of a typed search's filter: the `version` a
    `$newest` listing returned.

    Raises:
        InvalidQuery: ``$if_changed`` is not such a version (a text).

    Example:
        >>> split_if_changed({"$newest": True, "$if_changed": "v1"})
        ('v1', {'$newest': True})
        >>> split_if_changed({"$newest": True})
        (None, {'$newest': True})
    """
    if not filter or IF_CHANGED_KEY not in filter:
        return None, dict(filter) if filter else None
    version = filter[IF_CHANGED_KEY]
    if not isinstance(version, str):
        raise InvalidQuery(
            f"filter {IF_CHANGED_KEY}={version!r:.80}: pass the `version` of an earlier "
            f"{NEWEST_KEY} listing of the same namespace (a text), or leave the key out."
        )
    rest = {k: v for k, v in filter.items() if k != IF_CHANGED_KEY}
    return version, rest or None


def _moment(value: Any) -> float | None:
    """A bound of `$during` as a POSIX timestamp: a timezone-aware datetime, an ISO 8601
    text with its offset, or a number of seconds; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.timestamp()
    return None


def split_during(filter: Mapping[str, Any] | None
                 ) -> tuple[tuple[float, float] | None, dict[str, Any] | None]:
    """Take the reserved ``$during`` key out of a typed search's filter: ``[start, end]``
    (start included, end not), each a timezone-aware datetime, an ISO 8601 text with its
    offset or POSIX seconds. A search without a query then lists the namespace's records
    whose time of occurrence falls in the span, latest first.

    Raises:
        InvalidQuery: ``$during`` is not two such bounds, or ends before it starts.

    Example:
        >>> split_during({"$during": ["2026-03-01T00:00:00+00:00", 1772582400], "a": 1})
        ((1772323200.0, 1772582400.0), {'a': 1})
        >>> split_during({"a": 1})
        (None, {'a': 1})
    """
    if not filter or DURING_KEY not in filter:
        return None, dict(filter) if filter else None
    span = filter[DURING_KEY]
    bounds = [_moment(v) for v in span] if isinstance(span, list | tuple) else []
    if len(bounds) != 2 or None in bounds:
        raise InvalidQuery(
            f"filter {DURING_KEY}={span!r:.80}: use [start, end], each a timezone-aware "
            "datetime, an ISO 8601 text with its offset (2026-03-01T00:00:00+00:00) or POSIX "
            f"seconds; {DURING_KEY} is reserved for this span."
        )
    start, end = bounds
    assert start is not None and end is not None
    if end < start:
        raise InvalidQuery(f"filter {DURING_KEY}={span!r:.80}: the end comes before the start.")
    rest = {k: v for k, v in filter.items() if k != DURING_KEY}
    return (start, end), rest or None
