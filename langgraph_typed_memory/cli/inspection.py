"""Read-only plans the CLI runs on a store's connection: schema state and scope listings.

`store.search` only returns a scope's active records; an operator also needs the superseded,
revoked and provisional ones, so `inspect` reads the `memories` table directly (scope columns
first, as every read path does). These plans only select.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph_typed_memory.namespaces import decode_namespace, encode_namespace
from langgraph_typed_memory.store.core.protocol import Plan, Sql

__all__ = ["SchemaState", "ScopeFilter", "RecordRow", "schema_plan", "records_plan", "table_plan",
           "ID_PREFIX", "located_plan", "near_plan", "keys_plan"]

CURRENT = "status NOT IN ('superseded', 'revoked')"
ID_PREFIX = 8
"""The fewest leading characters of a record's id that find it: the CLI's tables show that
many."""


@dataclass(frozen=True, slots=True)
class SchemaState:
    """What `setup()` has done to a database so far."""

    applied: frozenset[str] | None
    """Names of the applied migrations; None when the database has no memory schema."""
    dims: int | None
    """The vector size the database was set up for; None when set up lexical-only."""


@dataclass(frozen=True, slots=True)
class ScopeFilter:
    """Which typed records `inspect` lists; None fields match anything.

    `status` is a status name, ``"current"`` (everything but superseded and revoked) or
    ``"all"``.
    """

    tenant_id: str
    user_id: str | None = None
    agent_id: str | None = None
    kind: str | None = None
    status: str = "current"

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition and its parameters.

        Example:
            >>> ScopeFilter("acme", user_id="alice", kind="fact").where()
            ("kind IS NOT NULL AND tenant_id = ? AND user_id = ? AND kind = ? AND status NOT IN ('superseded', 'revoked')", ['acme', 'alice', 'fact'])
        """  # noqa: E501
        parts, params = ["kind IS NOT NULL", "tenant_id = ?"], [self.tenant_id]
        for column, value in (("user_id", self.user_id), ("agent_id", self.agent_id),
                              ("kind", self.kind)):
            if value is not None:
                parts.append(f"{column} = ?")
                params.append(value)
        if self.status == "current":
            parts.append(CURRENT)
        elif self.status != "all":
            parts.append("status = ?")
            params.append(self.status)
        return " AND ".join(parts), params


@dataclass(frozen=True, slots=True)
class RecordRow:
    """One typed record as `inspect` shows it."""

    id: str
    namespace: tuple[str, ...]
    key: str
    kind: str
    status: str
    scope: dict[str, str | None]
    updated_at: datetime
    value: Any


def schema_plan() -> Plan[SchemaState]:
    """Read the applied migrations and the stored vector size (nothing when not set up)."""
    try:
        rows = yield Sql("SELECT name FROM memory_migrations")
    except Exception:  # the table does not exist: never set up
        return SchemaState(None, None)
    applied = frozenset(r[0] for r in rows)
    try:
        meta = yield Sql("SELECT value FROM memory_meta WHERE key = ?", ["dims"])
    except Exception:
        meta = []
    return SchemaState(applied, int(meta[0][0]) if meta else None)


def records_plan(
    scope: ScopeFilter, limit: int, load_json: Callable[[Any], Any]
) -> Plan[tuple[int, list[RecordRow]]]:
    """How many records match `scope`, and the `limit` most recently updated ones."""
    where, params = scope.where()
    total = (yield Sql(f"SELECT count(*) FROM memories WHERE {where}", params))[0][0]
    rows = yield Sql(
        "SELECT id, ns, key, kind, status, tenant_id, user_id, agent_id, updated_at, value "
        f"FROM memories WHERE {where} ORDER BY updated_at DESC, seq DESC LIMIT ?",
        [*params, limit],
    )
    return int(total), [
        RecordRow(
            id=r[0], namespace=decode_namespace(r[1]), key=r[2], kind=r[3], status=r[4],
            scope={"tenant_id": r[5], "user_id": r[6], "agent_id": r[7]},
            updated_at=datetime.fromtimestamp(r[8], tz=UTC), value=load_json(r[9]),
        )
        for r in rows
    ]


def located_plan(memory_id: str) -> Plan[list[tuple[str, tuple[str, ...], str]]]:
    """The typed record version whose id is `memory_id`, or whose id starts with it (at
    least `ID_PREFIX` characters): (id, namespace, key), at most two (two: the prefix is
    ambiguous).

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore
        >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
        ...     store.setup()
        ...     store.put(("tenant:acme", "user:alice", "preference"), "tone", {"value": "terse"})
        ...     [memory_id] = [i.memory["id"] for i in store.search(
        ...         ("tenant:acme", "user:alice", "preference"))]
        ...     [found[1:] for found in store.run_plan(located_plan(memory_id[:8]))]
        [(('tenant:acme', 'user:alice', 'preference'), 'tone')]
    """
    rows = yield Sql("SELECT id, ns, key FROM memories WHERE id = ? AND kind IS NOT NULL",
                     [memory_id])
    if not rows and len(memory_id) >= ID_PREFIX:
        rows = yield Sql("SELECT id, ns, key FROM memories "
                         "WHERE substr(id, 1, ?) = ? AND kind IS NOT NULL LIMIT 2",
                         [len(memory_id), memory_id])
    return [(r[0], decode_namespace(r[1]), r[2]) for r in rows]


NEAR = 5
"""The most near names a hint offers."""


def near_plan(scope: ScopeFilter) -> Plan[tuple[list[str], list[str]]]:
    """What a user may have meant when nothing matched `scope`: the tenant ids near its
    tenant's and, if it names a user, that tenant's user ids near it (`_near`), at most
    `NEAR` of each."""
    tenants = [r[0] for r in (yield Sql(
        "SELECT DISTINCT tenant_id FROM memories WHERE kind IS NOT NULL LIMIT 10000"))]
    users: list[str] = []
    if scope.user_id is not None:
        users = [r[0] for r in (yield Sql(
            "SELECT DISTINCT user_id FROM memories WHERE kind IS NOT NULL AND tenant_id = ? "
            "AND user_id IS NOT NULL LIMIT 10000", [scope.tenant_id]))]
    return _near(scope.tenant_id, tenants), _near(scope.user_id or "", users)


def keys_plan(namespace: tuple[str, ...]) -> Plan[list[str]]:
    """The first `NEAR` keys a namespace holds, in order."""
    rows = yield Sql("SELECT DISTINCT key FROM memories WHERE ns = ? ORDER BY key LIMIT ?",
                     [encode_namespace(namespace), NEAR])
    return [r[0] for r in rows]


def _near(asked: str, known: list[str]) -> list[str]:
    """The `known` ids like `asked`: equal but for letter case, else close by spelling.

    Example:
        >>> _near("Acme", ["acme", "globex"]), _near("alise", ["alice", "bob"])
        (['acme'], ['alice'])
    """
    same = [k for k in known if k.casefold() == asked.casefold() and k != asked]
    return same or difflib.get_close_matches(asked, [k for k in known if k != asked], n=NEAR,
                                             cutoff=0.6)


def table_plan(backend: str, table: str) -> Plan[bool]:
    """Whether `table` exists (e.g. LangGraph's checkpointer tables in the same database)."""
    if backend == "sqlite":
        rows = yield Sql("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [table])
        return bool(rows)
    rows = yield Sql("SELECT to_regclass(?) IS NOT NULL", [table])
    return bool(rows and rows[0][0])
