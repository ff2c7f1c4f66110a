"""The lifecycle sweeps as plans: freshness expiry, garbage collection,
retention classes and LangGraph's TTL.

The decisions are the pure functions of `lifecycle.py`; these plans only read candidates,
apply those rules and write the transitions, each sweep in one transaction, each transition
with its audit row (actor ``maintenance``). A forgotten record is deleted with its vectors
and full-text entry, and its older versions go with it (a superseded row never points at a
missing one); its audit trail stays and ends in ``forgotten``, so "why did the agent forget
that?" keeps an answer. `store.sweep()` runs the three sweeps in order; the maintenance graph
composes the plans itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langgraph_typed_memory.lifecycle import (
    EXPIRING_KINDS,
    days_until_expiry_possible,
    decay_freshness,
    gc_due,
    next_status,
    retention_of,
)
from langgraph_typed_memory.namespaces import decode_namespace, parse_namespace
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Plan, Sql
from langgraph_typed_memory.store.index import TRIM_CHANGES

if TYPE_CHECKING:
    from langgraph_typed_memory.store.core.records import Records

__all__ = [
    "FreshnessReport",
    "GcReport",
    "RetentionReport",
    "SweepReport",
    "freshness_plan",
    "gc_plan",
    "retention_plan",
    "sweep_plan",
    "ttl_plan",
    "forget_plan",
]

ACTOR = "maintenance"
DAY = 86_400.0

SQL_EXPIRY_CANDIDATES = (
    f"SELECT m.seq, m.id, m.ns, m.key, m.updated_at, {q.LAST_ACCESS}, {q.ACCESS_COUNT} "
    f"FROM memories m {q.ACCESS_JOIN} WHERE m.kind = ? AND m.status = 'active' "
    f"AND m.updated_at <= ? AND ({q.LAST_ACCESS} IS NULL OR {q.LAST_ACCESS} <= ?)"
)
SQL_EXPIRE = (
    "UPDATE memories SET status = 'expired', updated_at = ? WHERE seq = ? AND status = 'active' "
    "RETURNING seq"
)
SQL_GC_CANDIDATES = (
    "SELECT m.seq, m.id, m.ns, m.key, m.status, m.confidence, "
    "COALESCE((SELECT max(a.at) FROM memory_audit a WHERE a.memory_id = m.id "
    "AND a.to_status = 'expired'), m.updated_at) FROM memories m "
    "WHERE m.kind IS NOT NULL AND m.status = 'expired' AND m.confidence < ?"
)
SQL_RETENTION_CANDIDATES = (
    "SELECT m.seq, m.id, m.ns, m.key, m.status, m.created_at, m.value FROM memories m "
    "WHERE m.kind IS NOT NULL AND m.created_at <= ?"
)
RETENTION_HINT = " AND CAST(m.value AS TEXT) LIKE ?"
"""A cheap pre-filter when only records naming a class can be due (no default limit)."""
SQL_TTL_TYPED = (
    "SELECT m.seq, m.id, m.ns, m.key, m.status FROM memories m "
    "WHERE m.kind IS NOT NULL AND m.expires_at IS NOT NULL AND m.expires_at <= ?"
)
SQL_TTL_UNTYPED_COUNT = (
    "SELECT count(*) FROM memories WHERE kind IS NULL AND expires_at IS NOT NULL "
    "AND expires_at <= ?"
)
SQL_TTL_UNTYPED = (
    "DELETE FROM memories WHERE kind IS NULL AND expires_at IS NOT NULL AND expires_at <= ?"
)


CHANGES_KEPT = 100_000
"""Changes the log keeps: a cached scope that has not been read for this many changes (of
any scope) reloads, where it would have read as many rows of the log (a judgment)."""


@dataclass(slots=True)
class FreshnessReport:
    """What the freshness sweep did: records examined and records expired, per kind.

    Example:
        >>> FreshnessReport(scanned=3, expired={"fact": 2}).total
        2
    """

    scanned: int = 0
    """Active facts and observations old enough to be at risk (the rest cannot expire)."""
    expired: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.expired.values())


@dataclass(slots=True)
class GcReport:
    """What garbage collection forgot.

    Example:
        >>> GcReport(forgotten=1, older_versions=2).total
        3
    """

    forgotten: int = 0
    """Long-expired, low-confidence records deleted."""
    older_versions: int = 0
    """Their superseded versions, deleted with them."""

    @property
    def total(self) -> int:
        return self.forgotten + self.older_versions


@dataclass(slots=True)
class RetentionReport:
    """What the retention sweep forgot, per class (``(default)`` for records naming none).

    Example:
        >>> RetentionReport(forgotten={"short": 2}).total
        2
    """

    forgotten: dict[str, int] = field(default_factory=dict)
    older_versions: int = 0
    unknown_classes: dict[str, int] = field(default_factory=dict)
    """Records naming a class the configuration no longer has: kept, counted here."""

    @property
    def total(self) -> int:
        return sum(self.forgotten.values()) + self.older_versions


@dataclass(slots=True)
class SweepReport:
    """The three lifecycle sweeps of `store.sweep()`, in the order they ran.

    Example:
        >>> SweepReport().forgotten
        0
    """

    freshness: FreshnessReport = field(default_factory=FreshnessReport)
    gc: GcReport = field(default_factory=GcReport)
    retention: RetentionReport = field(default_factory=RetentionReport)

    @property
    def expired(self) -> int:
        return self.freshness.total

    @property
    def forgotten(self) -> int:
        return self.gc.total + self.retention.total


def _days(seconds: float) -> float:
    return seconds / DAY


def freshness_plan(records: Records) -> Plan[FreshnessReport]:
    """Expire active facts and observations whose freshness fell below the floor.

    Freshness is `decay_freshness` over the days since the record's last use (its last
    write or retrieval); pending access counts are written, and the access log folded,
    first so they count.
    """
    settings, report = records.lifecycle, FreshnessReport()
    now = records.clock().timestamp()
    yield Begin()
    yield from records.access.flush()
    yield from records.access.fold()
    for kind in sorted(EXPIRING_KINDS):
        half_life = records.retrieval.half_lives_days.get(kind)
        if half_life is None:
            continue
        cutoff = now - days_until_expiry_possible(half_life, settings) * DAY
        rows = yield Sql(SQL_EXPIRY_CANDIDATES, [kind, cutoff, cutoff])
        report.scanned += len(rows)
        for seq, ident, ns, key, updated, accessed, count in rows:
            idle = _days(now - max(updated, accessed or 0.0))
            fresh = decay_freshness(idle, half_life, int(count or 0), settings)
            if next_status(kind, "active", fresh, settings) != "expired":
                continue
            if not (yield Sql(SQL_EXPIRE, [now, seq])):
                continue  # changed since it was read
            typed = parse_namespace(decode_namespace(ns))
            yield from records.transition(
                ident, typed, key, "active", "expired",
                f"freshness {fresh:.4f} < floor {settings.expiry_floor:g} ({kind} half-life "
                f"{half_life:g} d, {idle:.0f} d since last use, {int(count or 0)} accesses)",
                actor=ACTOR,
            )
            report.expired[kind] = report.expired.get(kind, 0) + 1
    yield Commit()
    return report


def gc_plan(records: Records) -> Plan[GcReport]:
    """Forget records expired for `gc_after_days` AND below `gc_below_confidence`, and
    trim the log of changed records (`index/scopes`) to its newest `CHANGES_KEPT` ids."""
    settings, report = records.lifecycle, GcReport()
    now = records.clock().timestamp()
    yield Begin()
    yield Sql(TRIM_CHANGES, [CHANGES_KEPT])
    doomed: list[tuple[Any, ...]] = []
    reasons: dict[str, str] = {}
    for seq, ident, ns, key, status, confidence, since in (
        yield Sql(SQL_GC_CANDIDATES, [settings.gc_below_confidence])
    ):
        days = _days(now - since)
        if gc_due(days, confidence, settings):
            doomed.append((seq, ident, ns, key, status))
            reasons[ident] = (
                f"garbage collected: expired {days:.0f} d (>= {settings.gc_after_days:g}) "
                f"with confidence {float(confidence):g} < {settings.gc_below_confidence:g}"
            )
    report.forgotten = len(doomed)
    report.older_versions = (yield from forget_plan(records, doomed, reasons)) - len(doomed)
    yield Commit()
    return report


def retention_plan(records: Records) -> Plan[RetentionReport]:
    """Forget typed records older than their retention class allows, counted from
    when they were written; classes without a limit (None) are kept."""
    settings, report = records.lifecycle, RetentionReport()
    limits = [d for d in (*settings.retention.classes.values(), settings.retention.default)
              if d is not None]
    if not limits:
        return report
    now = records.clock().timestamp()
    sql = SQL_RETENTION_CANDIDATES
    params: list[Any] = [now - min(limits) * DAY]
    if settings.retention.default is None:
        sql, params = sql + RETENTION_HINT, [*params, '%"retention"%']
    yield Begin()
    doomed: list[tuple[Any, ...]] = []
    reasons: dict[str, str] = {}
    for seq, ident, ns, key, status, created, value in (yield Sql(sql, params)):
        name, days = retention_of(records.dialect.load_json(value), settings)
        if name is not None and name not in settings.retention.classes:
            report.unknown_classes[name] = report.unknown_classes.get(name, 0) + 1
            continue
        if days is None or _days(now - created) <= days:
            continue
        label = name if name is not None else "(default)"
        doomed.append((seq, ident, ns, key, status))
        reasons[ident] = (f"retention class {name}: older than {days:g} days" if name
                          else f"retention default: older than {days:g} days")
        report.forgotten[label] = report.forgotten.get(label, 0) + 1
    report.older_versions = (yield from forget_plan(records, doomed, reasons)) - len(doomed)
    yield Commit()
    return report


def sweep_plan(
    records: Records, *, freshness: bool = True, gc: bool = True, retention: bool = True
) -> Plan[SweepReport]:
    """The lifecycle sweeps in order: freshness expiry, garbage collection, retention."""
    report = SweepReport()
    if freshness:
        report.freshness = yield from freshness_plan(records)
    if gc:
        report.gc = yield from gc_plan(records)
    if retention:
        report.retention = yield from retention_plan(records)
    return report


def ttl_plan(records: Records) -> Plan[int]:
    """LangGraph's TTL sweep: delete every row whose TTL passed. Typed records are forgotten
    like the other sweeps' (audited, older versions with them); returns rows deleted."""
    now = records.clock().timestamp()
    yield Begin()
    typed = yield Sql(SQL_TTL_TYPED, [now])
    deleted = yield from forget_plan(
        records, typed, dict.fromkeys((r[1] for r in typed), "TTL passed"), actor="store.sweep_ttl"
    )
    deleted += int((yield Sql(SQL_TTL_UNTYPED_COUNT, [now]))[0][0])
    yield Sql(SQL_TTL_UNTYPED, [now])
    yield Commit()
    return deleted


def forget_plan(
    records: Records,
    doomed: Sequence[Sequence[Any]],
    reasons: dict[str, str],
    *,
    actor: str = ACTOR,
) -> Plan[int]:
    """Delete typed records (rows of seq, id, ns, key, status) and, transitively, the older
    versions superseded by them, with their vectors and full-text entries; audit each as
    ``forgotten``. Runs inside the caller's transaction; returns how many rows went."""
    rows = {r[1]: tuple(r) for r in doomed}
    why = dict(reasons)
    frontier = list(rows)
    while frontier:
        clause, params = records.dialect.in_list("m.superseded_by", frontier)
        older = yield Sql(
            f"SELECT m.seq, m.id, m.ns, m.key, m.status, m.superseded_by FROM memories m "
            f"WHERE {clause}",
            params,
        )
        frontier = []
        for seq, ident, ns, key, status, successor in older:
            if ident not in rows:
                rows[ident] = (seq, ident, ns, key, status)
                why[ident] = f"older version of {successor}, forgotten with it"
                frontier.append(ident)
    if not rows:
        return 0
    for _seq, ident, ns, key, status in rows.values():
        yield from records.transition(ident, parse_namespace(decode_namespace(ns)), key, status,
                                     "forgotten", why.get(ident, "forgotten"), actor=actor)
    seqs = [r[0] for r in rows.values()]
    clause, params = records.dialect.in_list("seq", seqs)
    if records.has_vector_table:
        yield Sql(f"DELETE FROM memory_vectors WHERE {clause}", params)
    yield Sql(f"DELETE FROM memories WHERE {clause}", params)
    return len(rows)
