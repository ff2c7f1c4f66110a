"""An operator's review of the facts users proposed for their whole tenant.

Under `GateConfig.tenant_sharing="review"`, a fact a user's conversation states about the
tenant ("our fiscal year starts on April 1") is kept for the tenant as a proposal: status
`provisional`, `needs_review` set, shown by no read. `pending_plan` lists them; `review_plan`
accepts one (it becomes active: every user of the tenant is shown it) or rejects it (revoked).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langgraph_typed_memory.errors import UnknownMemory
from langgraph_typed_memory.namespaces import Scope, TypedNamespace
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Plan, Sql

if TYPE_CHECKING:
    from langgraph_typed_memory.store.core.records import Records

__all__ = ["PendingFact", "pending_plan", "review_plan"]

_PENDING = ("kind = 'fact' AND tenant_id = ? AND user_id IS NULL AND agent_id IS NULL "
            "AND status = 'provisional' AND needs_review = ?")
SQL_PENDING = (f"SELECT key, id, value, evidence, created_at FROM memories WHERE {_PENDING} "
               "ORDER BY seq")
SQL_PENDING_AT = f"SELECT seq, id FROM memories WHERE {_PENDING} AND key = ?"
SQL_DECIDED = "UPDATE memories SET status = ?, needs_review = ?, updated_at = ? WHERE seq = ?"


@dataclass(slots=True)
class PendingFact:
    """A fact proposed for the tenant, awaiting review."""

    key: str
    id: str
    content: str
    proposed_by: list[str] = field(default_factory=list)
    """The users (or agents) who stated it, in order."""
    created_at: float = 0.0


def pending_plan(records: Records, tenant_id: str) -> Plan[list[PendingFact]]:
    """The tenant's facts awaiting review, oldest first."""
    d = records.dialect
    rows = yield Sql(SQL_PENDING, [tenant_id, True])
    out = []
    for key, ident, value, evidence, created in rows:
        body: dict[str, Any] = d.load_json(value) or {}
        trail = (d.load_json(evidence) if evidence is not None else None) or []
        who = [str(e.get("source")) for e in trail if isinstance(e, dict) and e.get("source")]
        out.append(PendingFact(key, ident, str(body.get("content") or ""),
                               list(dict.fromkeys(who)), float(created or 0.0)))
    return out


def review_plan(records: Records, tenant_id: str, key: str, *, approve: bool, actor: str,
                reason: str) -> Plan[str]:
    """Accept (active) or reject (revoked) the proposal at `key`; returns its new status.

    Raises:
        UnknownMemory: no proposal awaits review at `key` in the tenant.
    """
    yield Begin()
    rows = yield Sql(SQL_PENDING_AT, [tenant_id, True, key])
    if not rows:
        raise UnknownMemory(
            f"no fact proposed for tenant {tenant_id!r} awaits review at key {key!r}; list "
            "them with store.pending_reviews(tenant_id).")
    seq, ident = rows[0]
    status = "active" if approve else "revoked"
    yield Sql(SQL_DECIDED, [status, False, records.clock().timestamp(), seq])
    yield from records.transition(ident, TypedNamespace(Scope(tenant_id), "fact"), key,
                                  "provisional", status,
                                  f"{'approved' if approve else 'rejected'}: {reason}",
                                  actor=actor)
    yield Commit()
    return status
