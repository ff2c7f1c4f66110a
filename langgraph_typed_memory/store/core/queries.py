"""The SQL both backends share, as named constants, written with `?` placeholders.

The Postgres executor turns `?` into psycopg's `%s`; dialect-specific statements (full-text,
vectors, migrations) live in each backend's `dialect.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from langgraph_typed_memory.namespaces import Scope

TYPED_FIELD = "$memory"
"""The vector field name of a typed record's embedded text."""

COLUMNS = (
    "seq, id, ns, key, value, kind, tenant_id, user_id, agent_id, status, confidence, "
    "superseded_by, occurred_at, created_at, updated_at, expires_at, source_run_id, "
    "source_turn, policy_version, content_hash, access_count, last_accessed_at, "
    "repetitions, evidence, contradicts, needs_review"
)
EXPIRES_AT = COLUMNS.split(", ").index("expires_at")
"""Where a row read with `COLUMNS` holds its expiry time."""
CURRENT = "status NOT IN ('superseded', 'revoked')"
LIVE = "(m.expires_at IS NULL OR m.expires_at > ?)"
Clause = tuple[str, list[Any]]
"""An SQL condition and its parameters."""


UNTYPED_CURRENT = "m.kind IS NULL AND m.status NOT IN ('superseded', 'revoked')"
"""The current untyped rows (alias `m`): the condition of the `memories_untyped` index."""
NO_VECTORS = "NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.seq = m.seq)"
"""A row without vectors (alias `m`)."""


def untyped_current(prefix: str | None, range_ops: tuple[str, str]) -> Clause:
    """The current untyped rows under an encoded prefix (None: every untyped row), alias
    `m`, expired or not.

    Example:
        >>> untyped_current("notes", (">=", "<"))[1]
        ['notes', 'notes.', 'notes/']
    """
    where, params = namespace_under(prefix, range_ops) if prefix is not None else ("1 = 1", [])
    return f"{where} AND {UNTYPED_CURRENT}", params


def untyped_where(prefix: str | None, range_ops: tuple[str, str], now: float,
                  extra: Clause | None = None) -> Clause:
    """The current, live untyped rows under an encoded prefix (None: every untyped row)
    passing `extra` (a filter's clause), alias `m`, in no order.

    Example:
        >>> untyped_where("notes", (">=", "<"), 5.0)[1]
        ['notes', 'notes.', 'notes/', 5.0]
    """
    where, params = untyped_current(prefix, range_ops)
    sql = f"{where} AND {LIVE}"
    if extra is not None:
        sql, params = f"{sql} AND ({extra[0]})", [*params, now, *extra[1]]
    else:
        params = [*params, now]
    return sql, params


def untyped_page(prefix: str | None, range_ops: tuple[str, str], now: float,
                 extra: Clause | None, *, take: int, skip: int = 0,
                 after: int | None = None) -> Clause:
    """An untyped search's rows in creation order: the current, live untyped rows under an
    encoded prefix (None: every untyped row) passing `extra`, after the `skip` first, at most
    `take`; with `after`, only rows written after that sequence number.

    The rows of the prefix's own namespace and those of the namespaces under it are read as
    two ranges of the `memories_untyped` index (namespace, then sequence number): the first
    in sequence order, so a page of a large namespace stops at its last row instead of
    reading and sorting the namespace; the second (empty for LangMem's per-user namespaces)
    is sorted. Each gives at most `skip + take` rows, merged by sequence number.

    Example:
        >>> sql, params = untyped_page("kb.docs", (">=", "<"), 5.0, None, take=10)
        >>> sql.count("ORDER BY"), params
        (3, ['kb.docs', 5.0, 10, 'kb.docs.', 'kb.docs/', 5.0, 10, 10, 0])
    """
    rest = f" AND {UNTYPED_CURRENT} AND {LIVE}"
    extra_sql, extra_params = (f" AND ({extra[0]})", list(extra[1])) if extra else ("", [])
    after_sql, after_params = (" AND m.seq > ?", [after]) if after is not None else ("", [])
    tail = f"{rest}{extra_sql}{after_sql} ORDER BY m.seq LIMIT ?"
    tail_params = [now, *extra_params, *after_params, skip + take]
    if prefix is None:
        sql = f"SELECT {COLUMNS} FROM memories m WHERE 1 = 1{tail} OFFSET ?"
        return sql, [*tail_params[:-1], take, skip]
    at_least, below = range_ops
    here = f"SELECT {COLUMNS} FROM memories m WHERE m.ns = ?{tail}"
    under = f"SELECT {COLUMNS} FROM memories m WHERE m.ns {at_least} ? AND m.ns {below} ?{tail}"
    sql = (f"SELECT * FROM (SELECT * FROM ({here}) AS here UNION ALL "
           f"SELECT * FROM ({under}) AS under) AS found ORDER BY seq LIMIT ? OFFSET ?")
    return sql, [prefix, *tail_params, prefix + ".", prefix + "/", *tail_params, take, skip]


def sql_rows_by_seq(clause: str) -> str:
    """The rows (all columns) whose seq passes `clause` (a dialect's `in_list`)."""
    return f"SELECT {COLUMNS} FROM memories m WHERE {clause}"


def namespace_under(joined: str, range_ops: tuple[str, str], alias: str = "m.",
                    ) -> Clause:
    """The rows of namespace `joined` (an encoded prefix) and of every namespace under it, as
    a range the namespace index answers: a label holds no ".", so the namespaces under
    "notes" are exactly those from "notes." up to (not including) "notes/", the next string
    in byte order. `range_ops` are the dialect's byte-order comparisons (`>=`, `<` on
    SQLite; `~>=~`, `~<~` on Postgres, which its `text_pattern_ops` index serves whatever
    the database's collation).

    Example:
        >>> namespace_under("notes", (">=", "<"))
        ('(m.ns = ? OR (m.ns >= ? AND m.ns < ?))', ['notes', 'notes.', 'notes/'])
    """
    at_least, below = range_ops
    return (f"({alias}ns = ? OR ({alias}ns {at_least} ? AND {alias}ns {below} ?))",
            [joined, joined + ".", joined + "/"])


SQL_GET = (
    f"SELECT {COLUMNS} FROM memories m WHERE m.ns = ? AND m.key = ? AND m.{CURRENT} AND {LIVE}"
)
SQL_HISTORY = f"SELECT {COLUMNS} FROM memories m WHERE m.ns = ? AND m.key = ? ORDER BY m.seq DESC"
SQL_NEWEST = (
    f"SELECT {COLUMNS} FROM memories m WHERE m.ns = ? AND m.status = 'active' AND {LIVE} "
    "AND m.seq < ? ORDER BY m.seq DESC LIMIT ?"
)
"""A namespace's current records written before a sequence number, newest first (index
`memories_active_seq`)."""
SQL_NEWEST_AFTER = (
    f"SELECT {COLUMNS} FROM memories m WHERE m.ns = ? AND m.status = 'active' AND {LIVE} "
    "AND m.seq > ? ORDER BY m.seq DESC LIMIT ?"
)
"""A namespace's current records written after a sequence number, newest first (the same
index)."""
SQL_CELL_COUNTERS = (
    "SELECT version, inserts FROM memory_scope_versions WHERE kind = ? AND tenant_id = ? "
    "AND coalesce(user_id, '') = ? AND coalesce(agent_id, '') = ?"
)
"""A scope cell's counters (every change, records added), by equality on its index."""
SQL_DURING = (
    f"SELECT {COLUMNS} FROM memories m WHERE m.ns = ? AND m.status = 'active' AND {LIVE} "
    "AND m.occurred_at >= ? AND (m.occurred_at, m.seq) < (?, ?) "
    "ORDER BY m.occurred_at DESC, m.seq DESC LIMIT ?"
)
"""A namespace's current records that occurred in a span, before a (time, sequence number)
position, latest first (index `memories_active_occurred`)."""
SQL_LIST_NS = f"SELECT DISTINCT m.ns FROM memories m WHERE m.{CURRENT} AND {LIVE}"
SQL_REFRESH_TTL = (
    "UPDATE memories SET expires_at = ? + ttl_minutes * 60.0 "
    "WHERE ttl_minutes IS NOT NULL AND {clause}"
)
SQL_CURRENT_ROW = (
    "SELECT seq, id, value, content_hash, status FROM memories m "
    f"WHERE ns = ? AND key = ? AND {CURRENT}"
)
INSERT_COLUMNS = (
    "id", "ns", "key", "value", "kind", "tenant_id", "user_id", "agent_id", "status",
    "confidence", "content_hash", "search_text", "occurred_at", "created_at", "updated_at",
    "expires_at", "ttl_minutes", "source_run_id", "source_turn", "policy_version", "evidence",
    "contradicts", "needs_review",
)
"""The columns a new record is written with, in `SQL_INSERT_ROW`'s order."""
SQL_INSERT_INTO = f"INSERT INTO memories ({', '.join(INSERT_COLUMNS)}) "
SQL_INSERT_ROW = SQL_INSERT_INTO + f"VALUES ({', '.join('?' * len(INSERT_COLUMNS))})"
SQL_INSERT = SQL_INSERT_ROW + " RETURNING seq"
SQL_CURRENT_ROWS = (
    "WITH k (ns, key) AS ({pairs}) "
    "SELECT m.ns, m.key, m.seq, m.id, m.value, m.content_hash, m.status FROM k "
    "JOIN memories m ON m.ns = k.ns AND m.key = k.key WHERE m." + CURRENT
)
"""The current rows of several (ns, key) pairs; `{pairs}` is the dialect's rows of them
(`Dialect.key_pairs`: a `VALUES` list, or Postgres' arrays unnested). Driven from
the pairs, each looked up in the index of current keys: SQLite ran `(ns, key) IN (VALUES
...)` as a scan of that whole index, so every batch of puts cost time in proportion to the
table (a bulk load of a million records slowed to half its first rate)."""
SQL_CURRENT_FOR_GATE = (
    "SELECT seq, id, content_hash, confidence, status, evidence, contradicts, source_run_id, "
    f"source_turn FROM memories m WHERE ns = ? AND key = ? AND {CURRENT}"
)
SQL_STATED_IN_TURN = (
    "SELECT seq, id, key, value FROM memories m "
    "WHERE ns = ? AND source_run_id = ? AND source_turn = ? AND m.status = 'active'"
)
"""The active records of a namespace written from one turn (a run and a turn index)."""


HOLDING_WINDOW = 2000
"""How many of a namespace's newest active records a correction reads for the value it
replaces: a user's turn log only grows, and a correction's cost must not grow with it."""


def sql_holding_text(position_fn: str) -> str:
    """The newest active records of a namespace, among its `HOLDING_WINDOW` newest, whose
    indexed text holds a lower-cased string; `position_fn` is the dialect's substring function
    (a constant)."""
    return (
        "SELECT seq, id, key, value, source_run_id, source_turn FROM ("
        "SELECT seq, id, key, value, source_run_id, source_turn, search_text FROM memories m "
        f"WHERE ns = ? AND m.status = 'active' ORDER BY m.seq DESC LIMIT {HOLDING_WINDOW}"
        f") recent WHERE {position_fn}(lower(recent.search_text), ?) > 0 "
        "ORDER BY recent.seq DESC LIMIT 20"
    )


SQL_KEY_FOR_CORRECTION = (
    f"SELECT key FROM memories m WHERE ns = ? AND {CURRENT} AND m.status != 'expired' "
    "AND substr(lower(m.search_text), 1, ?) = ? ORDER BY m.seq DESC LIMIT 1"
)
"""The newest current fact of a namespace whose subject and predicate start its indexed text."""
SQL_REPEAT = (
    "UPDATE memories SET repetitions = repetitions + 1, evidence = ?, status = ?, "
    "updated_at = ?, last_accessed_at = ? WHERE seq = ?"
)
"""A restatement: one more repetition and evidence entry, and a use (freshness restarts)."""
SQL_LINK_CONTRADICTION = "UPDATE memories SET contradicts = ?, needs_review = ? WHERE seq = ?"
SQL_UPDATE_UNTYPED = (
    "UPDATE memories SET value = ?, updated_at = ?, expires_at = ?, ttl_minutes = ? WHERE seq = ?"
)
SQL_TOUCH = "UPDATE memories SET updated_at = ?, expires_at = ?, ttl_minutes = ? WHERE seq = ?"
SQL_SUPERSEDE = (
    "UPDATE memories SET status = 'superseded', superseded_by = ?, updated_at = ?, "
    "search_text = NULL WHERE seq = ?"
)
SQL_REVOKE = (
    "UPDATE memories SET status = 'revoked', updated_at = ?, search_text = NULL WHERE seq = ?"
)
SQL_DELETE = "DELETE FROM memories WHERE seq = ?"
SQL_DELETE_UNTYPED = f"DELETE FROM memories WHERE ns = ? AND key = ? AND {CURRENT}"
"""An untyped key's current item, deleted by its key (its vectors by the cascade), found by
the unique index of current keys (a condition on `kind` would match the untyped rows' index
too, which Postgres then chose and read the whole namespace through)."""
SQL_DROP_VECTORS = "DELETE FROM memory_vectors WHERE seq = ?"
SQL_INSERT_VECTOR = "INSERT INTO memory_vectors (seq, field, embedding) VALUES (?, ?, ?)"
SQL_INSERT_VECTOR_FOR_ID = (
    "INSERT INTO memory_vectors (seq, field, embedding) "
    "VALUES ((SELECT seq FROM memories WHERE id = ?), ?, ?)"
)
SQL_NOTE_ACCESS = "INSERT INTO memory_access_log (memory_id, n, at) VALUES (?, ?, ?)"
"""Log buffered retrievals (access tracking): (record id, count, last time) per record. An
append: it writes the end of a narrow table, not the records' wide rows all over the file."""
SQL_ACCESS_LOG_SPAN = "SELECT min(entry), max(entry) FROM memory_access_log"
"""The access log's first and last entries (NULLs when it is empty)."""
SQL_FOLD_ACCESS = (
    "INSERT INTO memory_access (memory_id, n, at) "
    "SELECT memory_id, sum(n), max(at) FROM memory_access_log WHERE entry <= ? "
    "GROUP BY memory_id ON CONFLICT (memory_id) DO UPDATE SET n = memory_access.n + excluded.n, "
    "at = CASE WHEN excluded.at > memory_access.at THEN excluded.at ELSE memory_access.at END"
)
"""Add the access log's entries up to one (its number) to the uses of their records
(`memory_access`: one narrow row per record, in id order, so the entries of a chunk share
its pages), each record once however many entries it has."""
SQL_DROP_FOLDED = "DELETE FROM memory_access_log WHERE entry <= ?"
"""Drop the entries `SQL_FOLD_ACCESS` counted."""
ACCESS_JOIN = "LEFT JOIN memory_access a ON a.memory_id = m.id"
"""A record's (`m`) uses folded from the access log (`a`), if any."""
ACCESS_COUNT = "(m.access_count + coalesce(a.n, 0))"
"""A record's retrievals: those its row holds (an import's) and those folded from the log."""
LAST_ACCESS = ("(CASE WHEN a.at IS NOT NULL AND (m.last_accessed_at IS NULL "
               "OR a.at > m.last_accessed_at) THEN a.at ELSE m.last_accessed_at END)")
"""A record's last use: its row's (a write that restated it, a reactivation, an import) or
the newest folded from the log."""
SQL_REACTIVATE = (
    "UPDATE memories SET status = 'active', updated_at = ?, last_accessed_at = ? "
    "WHERE id = ? AND status = 'expired' RETURNING seq"
)
"""Expiry reversed on access."""
SQL_MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS memory_migrations (name TEXT PRIMARY KEY, applied_at REAL)"
)
SQL_APPLIED = "SELECT name FROM memory_migrations"
SQL_RECORD_MIGRATION = "INSERT INTO memory_migrations (name, applied_at) VALUES (?, ?)"
SQL_META_GET = "SELECT value FROM memory_meta WHERE key = ?"
SQL_META_SET = "INSERT INTO memory_meta (key, value) VALUES (?, ?)"
SQL_AUDIT_INTO = (
    "INSERT INTO memory_audit (memory_id, ns, key, kind, tenant_id, user_id, agent_id, at, "
    "actor, from_status, to_status, reason, run_id) "
)
SQL_AUDIT_INSERT = SQL_AUDIT_INTO + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
SQL_AUDIT_FOR_KEY = (
    "SELECT memory_id, at, actor, from_status, to_status, reason, run_id FROM memory_audit "
    "WHERE ns = ? AND key = ? ORDER BY seq"
)


def audit_migration(seq_column: str) -> tuple[str, tuple[str, ...]]:
    """Migration 0004: the audit log; `seq_column` is the dialect's auto-increment key."""
    return (
        "0004_audit",
        (
            f"""CREATE TABLE memory_audit (
                {seq_column},
                memory_id TEXT NOT NULL,
                ns TEXT NOT NULL,
                key TEXT NOT NULL,
                kind TEXT NOT NULL,
                tenant_id TEXT NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                at DOUBLE PRECISION NOT NULL,
                actor TEXT NOT NULL,
                from_status TEXT,
                to_status TEXT NOT NULL,
                reason TEXT NOT NULL,
                run_id TEXT
            )""",
            "CREATE INDEX memory_audit_key ON memory_audit (ns, key)",
            "CREATE INDEX memory_audit_memory ON memory_audit (memory_id)",
            "CREATE INDEX memory_audit_scope ON memory_audit (tenant_id, user_id)",
        ),
    )


def deletions_migration(json_type: str) -> tuple[str, tuple[str, ...]]:
    """Migration 0005: erasure events (counts only, never content)."""
    return (
        "0005_deletions",
        (
            f"""CREATE TABLE memory_deletions (
                id TEXT PRIMARY KEY,
                at DOUBLE PRECISION NOT NULL,
                tenant_id TEXT NOT NULL,
                user_id TEXT,
                actor TEXT NOT NULL,
                reason TEXT NOT NULL,
                counts {json_type} NOT NULL
            )""",
        ),
    )


THREADS_MIGRATION: tuple[str, tuple[str, ...]] = (
    "0024_threads",
    (
        """CREATE TABLE memory_threads (
            thread_id TEXT NOT NULL,
            scope TEXT NOT NULL,
            tenant_id TEXT NOT NULL,
            user_id TEXT,
            agent_id TEXT,
            at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (thread_id, scope)
        )""",
        "CREATE INDEX memory_threads_owner ON memory_threads (tenant_id, user_id)",
    ),
)
"""Migration 0024: which conversation threads each scope's runs used, recorded by the memory
nodes with the scope they computed (`governance/threads.py`): what erasure deletes from the
checkpointer."""


def untyped_migration(ns_column: str) -> tuple[str, tuple[str, ...]]:
    """Migration 0025: the current untyped rows by namespace, then sequence number
    (`UNTYPED_CURRENT`): an untyped search reads a namespace's rows in creation order and
    stops at its page, and a listing of namespaces steps from one namespace to the next.
    `ns_column` is the dialect's indexed form of `ns` (Postgres: byte order,
    `text_pattern_ops`, whatever the collation)."""
    return ("0025_untyped_by_namespace", (
        f"CREATE INDEX memories_untyped ON memories ({ns_column}, seq) "
        "WHERE kind IS NULL AND status NOT IN ('superseded', 'revoked')",
    ))


def scope_locks(scopes: Iterable[Scope]) -> list[str]:
    """The names of the advisory locks a write to these scopes holds shared, in order: its
    tenant's and its user's. Erasing a user takes the user's exclusively, erasing a tenant
    the tenant's, so an erasure waits for the scope's writes under way and the next ones
    wait for it (instead of both retrying on each other's rows).

    Example:
        >>> scope_locks([Scope("acme", "bob"), Scope("acme", "alice", "bot"), Scope("acme")])
        ['tenant:acme', 'tenant:acme/user:alice', 'tenant:acme/user:bob']
    """
    names = set()
    for scope in scopes:
        names.add("/".join(Scope(scope.tenant_id).labels()))
        if scope.user_id is not None:
            names.add("/".join(Scope(scope.tenant_id, scope.user_id).labels()))
    return sorted(names)


Cell = tuple[str, str, str | None, str | None]
"""A scope cell: (kind, tenant, user, agent), None for a wider cell's user or agent. The
unit `memory_scope_versions` counts changes of, and the unit the search caches hold."""


def visible_filter(
    kind: str | tuple[str, ...], tenant_id: str, user_id: str | None, agent_id: str | None,
    status: str | None = None,
) -> tuple[str, list[Any]]:
    """The scope filter of a typed read (alias `m`): its own cell and the wider shared ones,
    of one kind or of several (a tuple), with `status` (an SQL constant on `m`) if given.

    One term per cell of each kind, OR-ed, each holding every condition with the cell's
    columns by equality: the form the scope index serves term by term on both backends,
    whether or not the database has statistics. Written once for all cells
    (`m.user_id IS NULL OR m.user_id = ?`), SQLite without statistics used the index only
    down to the status and read every user's rows of the tenant's kinds: a fan-out's listing
    of policies, procedures and preferences took 0.6-0.8 ms at 2,000 users and grew with
    them; with `m.kind IN (...)` in each term it read the whole tenant (tests check the
    plans).

    Example:
        >>> where, params = visible_filter("fact", "acme", "alice", None, "m.status = 'a'")
        >>> for term in where.split(" OR "):
        ...     print(term.replace("m.kind = ? AND m.tenant_id = ? AND ", ""))
        ((m.user_id IS NULL AND m.agent_id IS NULL AND m.status = 'a')
        (m.user_id = ? AND m.agent_id IS NULL AND m.status = 'a'))
        >>> params
        ['fact', 'acme', 'fact', 'acme', 'alice']
        >>> where, params = visible_filter(("fact", "episode"), "acme", None, None)
        >>> where.count(" OR "), params
        (1, ['fact', 'acme', 'episode', 'acme'])
    """
    kinds = (kind,) if isinstance(kind, str) else kind
    rest = "" if status is None else f" AND {status}"
    terms: list[str] = []
    params: list[Any] = []
    for one in kinds:
        for user in (None,) if user_id is None else (None, user_id):
            for agent in (None,) if agent_id is None else (None, agent_id):
                where, values = cell_filter((one, tenant_id, user, agent))
                terms.append(f"({where}{rest})")
                params += values
    return (terms[0] if len(terms) == 1 else f"({' OR '.join(terms)})"), params


def cell_filter(cell: Cell, alias: str = "m") -> tuple[str, list[Any]]:
    """Equality on one cell's columns (`alias`: a table with kind, tenant_id, user_id and
    agent_id), the form an index on those columns serves.

    Example:
        >>> where, params = cell_filter(("fact", "acme", None, "bot"))
        >>> where.split(" AND ")[2:], params
        (['m.user_id IS NULL', 'm.agent_id = ?'], ['fact', 'acme', 'bot'])
    """
    kind, tenant_id, user_id, agent_id = cell
    parts, params = [f"{alias}.kind = ?", f"{alias}.tenant_id = ?"], [kind, tenant_id]
    for column, value in (("user_id", user_id), ("agent_id", agent_id)):
        if value is None:
            parts.append(f"{alias}.{column} IS NULL")
        else:
            parts.append(f"{alias}.{column} = ?")
            params.append(value)
    return " AND ".join(parts), params


@dataclass(frozen=True, slots=True)
class ScopeRead:
    """The rows a ranked search reads: the records of `kind` visible from the scope
    (`tenant_id`, `user_id`, `agent_id`: its own cell and the wider ones) whose status passes
    `status` (an SQL constant on alias `m`), live at `now`. The expiry test is left out of
    `visible()`, so that structures cached per cell can mask expiry themselves.

    Example:
        >>> read = ScopeRead("fact", "acme", "alice", None, "m.status = 'active'", 5.0)
        >>> read.live()[1]
        ['fact', 'acme', 'fact', 'acme', 'alice', 5.0]
        >>> read.cells()
        [('fact', 'acme', None, None), ('fact', 'acme', 'alice', None)]
    """

    kind: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    status: str
    now: float

    def visible(self) -> tuple[str, list[Any]]:
        """The filter of the visible rows (alias `m`) without the expiry test."""
        return visible_filter(self.kind, self.tenant_id, self.user_id, self.agent_id,
                              self.status)

    def live(self) -> tuple[str, list[Any]]:
        """The filter with the expiry test, for a statement."""
        where, params = self.visible()
        return f"{where} AND {LIVE}", [*params, self.now]

    def cells(self) -> list[Cell]:
        """The cells the scope sees, widest first: 1 to 4."""
        users = (None,) if self.user_id is None else (None, self.user_id)
        agents = (None,) if self.agent_id is None else (None, self.agent_id)
        return [(self.kind, self.tenant_id, u, a) for u in users for a in agents]

    def in_cell(self, cell: Cell) -> tuple[str, list[Any]]:
        """The filter of this read's rows in one cell (without the expiry test)."""
        where, params = cell_filter(cell)
        return f"{where} AND {self.status}", params


class Bulk(Enum):
    """The statements a batch (or the access buffer) sends for many rows at once, in the
    order a batch sends them: records before their vectors. Each is its one-row statement;
    a dialect's `bulk` picks its many-row form by member, never by reading SQL."""

    ROW = SQL_INSERT_ROW
    VECTOR_FOR_ID = SQL_INSERT_VECTOR_FOR_ID
    VECTOR = SQL_INSERT_VECTOR
    AUDIT = SQL_AUDIT_INSERT
    NOTE_ACCESS = SQL_NOTE_ACCESS
