"""The invariant checker: what must hold in a memory database, whatever happened to it.

Each check is one SQL query returning the offending rows (none when the invariant holds), plus
the row checks that compare each typed record's columns with its namespace. Run it after a
crash, a restore or a migration: `store.check_invariants()`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from langgraph_typed_memory.errors import TypedMemoryError
from langgraph_typed_memory.lifecycle import STATUSES
from langgraph_typed_memory.namespaces import TENANT, decode_namespace, parse_namespace
from langgraph_typed_memory.store.core.ops import MAX_KEY_BYTES, check_key
from langgraph_typed_memory.store.core.protocol import Plan, Sql

__all__ = ["InvariantReport", "check_plan", "CHECKS", "MAINTENANCE_CHECKS",
           "maintenance_checks_plan", "WRITTEN_STATUSES"]

GONE = "('superseded', 'revoked', 'forgotten', 'merged')"
WRITTEN_STATUSES: tuple[str, ...] = (*STATUSES, "compacted", "merged", "rejected")
"""Every status the store writes: the lifecycle's, and maintenance's (compaction, entity
merges, rejected observations)."""

CHECKS: dict[str, str] = {
    "one current version per key": (
        "SELECT ns, key, count(*) FROM memories WHERE status NOT IN ('superseded', 'revoked') "
        "GROUP BY ns, key HAVING count(*) > 1"
    ),
    "superseded rows point at an existing row": (
        "SELECT m.id FROM memories m WHERE m.status = 'superseded' AND (m.superseded_by IS NULL "
        "OR NOT EXISTS (SELECT 1 FROM memories n WHERE n.id = m.superseded_by))"
    ),
    "no full-text entry for superseded, revoked, forgotten or merged records": (
        f"SELECT id FROM memories WHERE status IN {GONE} AND search_text IS NOT NULL"
    ),
    "typed records have a tenant and untyped records no scope": (
        "SELECT id FROM memories WHERE (kind IS NOT NULL AND tenant_id IS NULL) OR "
        "(kind IS NULL AND (tenant_id IS NOT NULL OR user_id IS NOT NULL "
        "OR agent_id IS NOT NULL))"
    ),
    "untyped records lie outside the typed namespaces (none under 'tenant:')": (
        "SELECT id, ns FROM memories WHERE kind IS NULL "
        f"AND substr(ns, 1, {len(TENANT)}) = '{TENANT}'"
    ),
    "every status is one the store writes": (
        "SELECT id, status FROM memories WHERE status NOT IN ("
        + ", ".join(f"'{s}'" for s in WRITTEN_STATUSES) + ")"
    ),
    "every typed record's status is the last one its audit log records": (
        "SELECT m.id, m.status FROM memories m WHERE m.kind IS NOT NULL AND "
        "m.status <> COALESCE((SELECT a.to_status FROM memory_audit a "
        "WHERE a.memory_id = m.id ORDER BY a.seq DESC LIMIT 1), '')"
    ),
    "a typed record that is gone was forgotten: its audit trail ends in 'forgotten'": (
        "SELECT a.memory_id, a.to_status FROM memory_audit a WHERE a.seq = "
        "(SELECT max(b.seq) FROM memory_audit b WHERE b.memory_id = a.memory_id) "
        "AND a.to_status <> 'forgotten' "
        "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = a.memory_id)"
    ),
}
VECTOR_CHECK = (
    "no vector for superseded, revoked, forgotten or merged records",
    f"SELECT m.id FROM memory_vectors v JOIN memories m ON m.seq = v.seq WHERE m.status IN {GONE}",
)
MAINTENANCE_CHECKS: dict[str, str] = {
    "compacted and merged records point at an existing record": (
        "SELECT m.id, m.status FROM memories m WHERE m.status IN ('compacted', 'merged') AND "
        "(m.superseded_by IS NULL OR NOT EXISTS "
        "(SELECT 1 FROM memories n WHERE n.id = m.superseded_by))"
    ),
    "no full-text entry for rejected observations": (
        "SELECT id FROM memories WHERE status = 'rejected' AND search_text IS NOT NULL"
    ),
}
"""What maintenance (compaction, observations, feedback) must leave true; see
`maintenance_checks_plan` for the rest."""
MAINTENANCE_VECTOR_CHECK = (
    "no vector for compacted or rejected records (their embeddings are dropped)",
    "SELECT m.id FROM memory_vectors v JOIN memories m ON m.seq = v.seq "
    "WHERE m.status IN ('compacted', 'rejected')",
)
SCOPE_ROWS = (
    "SELECT id, ns, kind, tenant_id, user_id, agent_id FROM memories WHERE kind IS NOT NULL"
)
LONG_KEYS = (
    "SELECT id, ns, key FROM memories "
    f"WHERE length(key) > {MAX_KEY_BYTES // 4} OR key = ''"
)
"""The keys that may break the write path's limit: a UTF-8 character is at most 4 bytes."""


@dataclass(slots=True)
class InvariantReport:
    """The result of `check_invariants`: `ok` when no check found a violation."""

    checked: list[str] = field(default_factory=list)
    violations: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations

    def __str__(self) -> str:
        if self.ok:
            return f"all {len(self.checked)} invariants hold"
        return "; ".join(f"{name}: {len(rows)} violation(s), e.g. {rows[:3]!r}"
                         for name, rows in self.violations.items())


def check_plan(has_vectors: bool) -> Plan[InvariantReport]:
    """Run every check; the vector check only where the vector table exists."""
    report = InvariantReport()
    checks = dict(CHECKS)
    checks.update(MAINTENANCE_CHECKS)
    if has_vectors:
        checks[VECTOR_CHECK[0]] = VECTOR_CHECK[1]
        checks[MAINTENANCE_VECTOR_CHECK[0]] = MAINTENANCE_VECTOR_CHECK[1]
    for name, sql in checks.items():
        rows = yield Sql(sql)
        report.checked.append(name)
        if rows:
            report.violations[name] = [tuple(r) for r in rows]
    name = "scope columns match the namespace"
    report.checked.append(name)
    bad = []
    for ident, ns, kind, tenant, user, agent in (yield Sql(SCOPE_ROWS)):
        try:
            parsed = parse_namespace(decode_namespace(ns))
        except TypedMemoryError:
            bad.append((ident, ns))
            continue
        scope = parsed.scope
        if (parsed.kind, scope.tenant_id, scope.user_id, scope.agent_id) != (
            kind, tenant, user, agent
        ):
            bad.append((ident, ns))
    if bad:
        report.violations[name] = bad
    name = "keys are what a write accepts (at most the key limit)"
    report.checked.append(name)
    bad = []
    for ident, ns, key in (yield Sql(LONG_KEYS)):
        try:
            check_key(key, decode_namespace(ns))
        except TypedMemoryError:
            bad.append((ident, ns))
    if bad:
        report.violations[name] = bad
    yield from maintenance_checks_plan(report)
    return report


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def maintenance_checks_plan(report: InvariantReport) -> Plan[None]:
    """The checks that read values: a compacted episode's sources exist (or were forgotten:
    their audit trail says so), and no active procedure comes from a rejected observation."""
    name = "a compacted episode's sources exist or were forgotten"
    report.checked.append(name)
    present: dict[str, set[str]] = {}
    for target, ident in (yield Sql(
            "SELECT superseded_by, id FROM memories WHERE status = 'compacted'")):
        present.setdefault(target, set()).add(ident)
    forgotten = {r[0] for r in (yield Sql(
        "SELECT DISTINCT memory_id FROM memory_audit WHERE to_status = 'forgotten'"))}
    bad: list[Any] = []
    for ident, value in (yield Sql(
            "SELECT id, value FROM memories WHERE kind = 'episode' AND key LIKE 'compact:%'")):
        sources = ((_json(value) or {}).get("metadata") or {}).get("source_ids")
        missing = set(sources or ()) - present.get(ident, set()) - forgotten
        if missing:
            bad.append((ident, sorted(missing)[:3]))
    if bad:
        report.violations[name] = bad
    name = "no active procedure was promoted from a rejected observation"
    report.checked.append(name)
    rejected = {r[0] for r in (yield Sql(
        "SELECT id FROM memories WHERE kind = 'observation' AND status = 'rejected'"))}
    bad = [(ident, source) for ident, value in (yield Sql(
        "SELECT id, value FROM memories WHERE kind = 'procedure' AND status = 'active'"))
        if (source := (_json(value) or {}).get("source_observation")) in rejected]
    if bad:
        report.violations[name] = bad
