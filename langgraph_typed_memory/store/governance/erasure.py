"""Erasure of a user or a tenant: every kind and status, the full-text and vector
indexes, the audit trail, evidence the user contributed to wider records, and a deletion
event that records what was erased (counts only, never content).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langgraph_typed_memory.namespaces import Scope, encode_namespace
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Plan, Sql
from langgraph_typed_memory.store.core.queries import namespace_under
from langgraph_typed_memory.store.index import FORGET_CHANGES

if TYPE_CHECKING:
    from langgraph_typed_memory.store.core.records import Records

__all__ = ["ErasureReport", "erase_plan", "purge_plan"]

SQL_INSERT_DELETION = (
    "INSERT INTO memory_deletions (id, at, tenant_id, user_id, actor, reason, counts) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


@dataclass(slots=True)
class ErasureReport:
    """What an erasure removed."""

    event_id: str
    tenant_id: str
    user_id: str | None
    records: dict[str, int] = field(default_factory=dict)
    """Records deleted, per kind (`untyped` for untyped namespaces)."""
    evidence_scrubbed: int = 0
    """Wider records whose evidence trail lost this user's entries."""
    derived_deleted: int = 0
    """Wider records deleted because this user was their only source."""
    audit_events: int = 0
    threads: list[str] = field(default_factory=list)
    """Checkpointer threads deleted."""
    threads_kept: list[str] = field(default_factory=list)
    """The scope's threads left in place because no checkpointer was given."""


def scope_filter(tenant_id: str, user_id: str | None, alias: str = "") -> tuple[str, list[Any]]:
    """The rows of a tenant, or of one user of it (user and user+agent scopes): what erasure
    deletes and an export holds. `alias` prefixes the columns (e.g. "m.").

    Example:
        >>> scope_filter("acme", "alice", "m.")
        ('m.tenant_id = ? AND m.user_id = ?', ['acme', 'alice'])
    """
    if user_id is None:
        return f"{alias}tenant_id = ?", [tenant_id]
    return f"{alias}tenant_id = ? AND {alias}user_id = ?", [tenant_id, user_id]


def untyped_prefix_filter(prefix: tuple[str, ...], range_ops: tuple[str, str],
                          alias: str = "") -> tuple[str, list[Any]]:
    """The untyped items under a namespace prefix (a range on the namespace index).

    Example:
        >>> untyped_prefix_filter(("notes",), (">=", "<"))
        ('(ns = ? OR (ns >= ? AND ns < ?)) AND kind IS NULL', ['notes', 'notes.', 'notes/'])
    """
    under, params = namespace_under(encode_namespace(prefix), range_ops, alias)
    return f"{under} AND {alias}kind IS NULL", params


def erase_plan(
    records: Records,
    tenant_id: str,
    user_id: str | None,
    *,
    actor: str,
    reason: str,
    untyped_prefixes: list[tuple[str, ...]],
) -> Plan[ErasureReport]:
    """Delete the scope's memory in one transaction, then compact the indexes."""
    d = records.dialect
    where, params = scope_filter(tenant_id, user_id)
    report = ErasureReport(uuid.uuid4().hex, tenant_id, user_id)
    # Each statement sees what was committed before it, once the scope's writes under way
    # have ended (their lock is shared); the next ones wait for this transaction.
    yield Begin(read_committed=True)
    lock = d.lock_scopes(["/".join(Scope(tenant_id, user_id).labels())], shared=False)
    if lock is not None:
        yield lock
    for kind, count in (yield Sql(
        f"SELECT kind, count(*) FROM memories WHERE kind IS NOT NULL AND {where} GROUP BY kind",
        params,
    )):
        report.records[kind] = int(count)
    doomed = f"SELECT seq FROM memories WHERE kind IS NOT NULL AND {where}"
    for uses in ("memory_access_log", "memory_access"):
        yield Sql(f"DELETE FROM {uses} WHERE memory_id IN "
                  f"(SELECT id FROM memories WHERE kind IS NOT NULL AND {where})", params)
    if records.has_vector_table:
        yield Sql(f"DELETE FROM memory_vectors WHERE seq IN ({doomed})", params)
    yield Sql(f"DELETE FROM memories WHERE kind IS NOT NULL AND {where}", params)
    report.audit_events = int((yield Sql(
        f"SELECT count(*) FROM memory_audit WHERE {where}", params))[0][0])
    yield Sql(f"DELETE FROM memory_audit WHERE {where}", params)
    if user_id is not None:
        yield from _scrub_evidence(records, tenant_id, user_id, report)
    untyped = 0
    for prefix in untyped_prefixes:
        match, args = untyped_prefix_filter(prefix, d.range_ops)
        untyped += int((yield Sql(f"SELECT count(*) FROM memories WHERE {match}", args))[0][0])
        if records.has_vector_table:
            yield Sql(f"DELETE FROM memory_vectors WHERE seq IN "
                      f"(SELECT seq FROM memories WHERE {match})", args)
        yield Sql(f"DELETE FROM memories WHERE {match}", args)
    if untyped:
        report.records["untyped"] = untyped
    counts = {"records": report.records, "evidence_scrubbed": report.evidence_scrubbed,
              "derived_deleted": report.derived_deleted, "audit_events": report.audit_events}
    yield Sql(SQL_INSERT_DELETION, [report.event_id, records.clock().timestamp(), tenant_id,
                                    user_id, actor, reason, d.dump_json(counts)])
    yield Sql(FORGET_CHANGES, [tenant_id])  # other processes reload what they cached
    yield Commit()
    return report


def purge_plan(records: Records) -> Plan[None]:
    """After an erasure (and the checkpointer's thread deletions): purge erased text from
    files and index structures (SQLite: merge full-text segments, VACUUM, empty the WAL),
    and from this process's scope caches (another process reloads at its next search of
    the scope: the erasure moved its counters and left no logged change to patch it by)."""
    records.dialect.cache.forget()
    for statement in records.dialect.after_erasure():  # noqa: UP028 - a list cannot take send()
        yield statement


def _scrub_evidence(records: Records, tenant_id: str, user_id: str, report: ErasureReport
                    ) -> Plan[None]:
    """Wider (tenant- or agent-scoped) records keep no trace of the erased user."""
    d = records.dialect
    rows = yield Sql(
        "SELECT seq, id, evidence FROM memories WHERE tenant_id = ? AND user_id IS NULL "
        "AND evidence IS NOT NULL",
        [tenant_id],
    )
    for seq, _ident, evidence in rows:
        trail = d.load_json(evidence) or []
        kept = [e for e in trail if not (isinstance(e, dict) and e.get("source") == user_id)]
        if len(kept) == len(trail):
            continue
        if kept:
            yield Sql("UPDATE memories SET evidence = ? WHERE seq = ?", [d.dump_json(kept), seq])
            report.evidence_scrubbed += 1
        else:
            if records.has_vector_table:
                yield Sql("DELETE FROM memory_vectors WHERE seq = ?", [seq])
            yield Sql("DELETE FROM memory_audit WHERE memory_id = ?", [_ident])
            yield Sql("DELETE FROM memories WHERE seq = ?", [seq])
            report.derived_deleted += 1
