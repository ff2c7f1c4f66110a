"""Lifecycle rules as pure functions (B3, C6, F1): statuses are computed, never accepted.

States: ``active``, ``provisional``, ``superseded``, ``expired``, ``revoked``, ``forgotten``.
A new record of a user- or agent-scoped kind enters ``active``; a tenant-scoped fact enters
``provisional`` and stays invisible to semantic discovery until confirmed (C6). A new value for
the same key supersedes the old record (kept, pointing at its replacement). A typed delete
revokes. ``expired`` and ``forgotten`` are set by maintenance (docs/kinds.md).
"""

from __future__ import annotations

from typing import Literal

from langgraph_typed_memory.namespaces import Scope

__all__ = ["Status", "STATUSES", "initial_status"]

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
