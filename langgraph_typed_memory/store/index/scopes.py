"""What keeps the search caches valid: counters per scope cell, and the rows a cell holds.

The vector matrices (`index/vectors`) and the full-text postings (`index/tsvector`,
`index/fts5`) are read after the SQL scope filter and kept in this process per scope cell
(kind, tenant, user, agent; `index/cells`). Validity comes from the database, not from this
process: triggers (migrations `0008_scope_versions`, `0010_scope_appends`,
`0013_scope_inserts`, `0015_scope_changes`) count every change to a cell in
`memory_scope_versions`, whoever makes it (this store, another store object, another
process, a maintenance job): `version` counts every change but a record's insert, `appends`
the vectors added (also counted in `version`), `inserts` the records added; an update counts
only if it changes what a cache holds (`ROW_COLUMNS`). Each change counted in `version` and
not in `appends` (a deletion, a status, text, confidence or expiry change) also logs its
record's seq in `memory_scope_changes`, from the same trigger. A search reads the counters of
the cells it can see (by equality on the cell columns) with the log's newest id. When a
cell's counters moved, its cache fetches the rows after the newest one it holds and, if
changes moved, the seqs logged since its last read with those records' rows as they are
now, then reads the counters again: if what it fetched is exactly what was counted, a
changed record's rows held are masked (dead, like an expired row) and its rows still
selected are added again, as new rows are. Any mismatch (a racing writer, a trimmed log)
reloads the cell, as do dead rows past a quarter of an entry. Cells are never deleted and
counters only grow, so a cell's counters move on every change to it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "ScopeRows", "VERSIONS_TABLE", "BACKFILL", "ROW_CELL", "VECTOR_CELL",
    "VECTOR_APPEND_CELL", "APPENDS_COLUMN", "ROW_COLUMNS", "bump_cell", "row_changed",
    "ROW_CHANGE", "VECTOR_CHANGE", "changes_table", "log_change", "TRIM_CHANGES",
    "FORGET_CHANGES", "NAMESPACE_VERSIONS_TABLE", "bump_namespace", "namespace_counters",
]

VERSIONS_TABLE = (
    """CREATE TABLE memory_scope_versions (
        kind TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        version BIGINT NOT NULL
    )""",
    """CREATE UNIQUE INDEX memory_scope_versions_cell ON memory_scope_versions
        (kind, tenant_id, coalesce(user_id, ''), coalesce(agent_id, ''))""",
)
"""DDL shared by both dialects: one counter per scope cell (NULL user/agent: wider cells)."""

def bump_cell(source: str, *, append: bool = False) -> str:
    """The statement counting one change of the cell(s) `source` yields: `source` is a VALUES
    list or a SELECT of (kind, tenant_id, user_id, agent_id, 1), in the dialect's trigger
    syntax. With `append` (an added vector), `source` yields one more 1 and `appends` counts
    it too.

    Example:
        >>> bump_cell("VALUES ('fact', 'acme', NULL, NULL, 1)")[:33]
        'INSERT INTO memory_scope_versions'
    """
    return (
        "INSERT INTO memory_scope_versions (kind, tenant_id, user_id, agent_id, version"
        f"{', appends' if append else ''}) {source} "
        "ON CONFLICT (kind, tenant_id, coalesce(user_id, ''), coalesce(agent_id, '')) "
        "DO UPDATE SET version = memory_scope_versions.version + 1"
        + (", appends = memory_scope_versions.appends + 1" if append else "")
    )


ROW_CELL = "VALUES ({row}.kind, {row}.tenant_id, {row}.user_id, {row}.agent_id, 1)"
"""The cell of the trigger's row (`{row}`: OLD or NEW) of `memories`."""


def _vector_record(last: str) -> str:
    """The SELECT of the cell of the record a `memory_vectors` trigger row (`{row}`) belongs
    to (no row if the record is untyped), ending with the column(s) `last`."""
    return (f"SELECT m.kind, m.tenant_id, m.user_id, m.agent_id, {last} FROM memories m "
            "WHERE m.seq = {row}.seq AND m.kind IS NOT NULL")


VECTOR_CELL = _vector_record("1")
"""The cell of the record a `memory_vectors` trigger row belongs to (none if untyped)."""
VECTOR_APPEND_CELL = _vector_record("1, 1")
"""`VECTOR_CELL` for `bump_cell(..., append=True)`."""
APPENDS_COLUMN = (
    "ALTER TABLE memory_scope_versions ADD COLUMN appends BIGINT NOT NULL DEFAULT 0"
)
"""Migration 0010 (both dialects): the count of vectors added, beside every change's."""

ROW_COLUMNS = ("status", "expires_at", "search_text", "confidence", "value", "occurred_at")
"""What the caches hold of a record besides its vectors and lexemes, or derive from: a real
change of any of them counts as a change of the record's cell (a column set again to its
value does not: a restatement sets `status` to what it was)."""


def row_changed(distinct: str) -> str:
    """The trigger condition: a `ROW_COLUMNS` value of OLD is `distinct` from NEW's (the
    dialect's null-safe inequality).

    Example:
        >>> row_changed("IS NOT")[:42]
        'old.status IS NOT new.status OR old.expire'
    """
    return " OR ".join(f"old.{c} {distinct} new.{c}" for c in ROW_COLUMNS)


def changes_table(key: str) -> str:
    """Migration 0015's log of changed records per cell; `key` is the dialect's
    auto-increment `id` column."""
    return ("CREATE TABLE memory_scope_changes (" + key + ", kind TEXT NOT NULL, "
            "tenant_id TEXT NOT NULL, user_id TEXT, agent_id TEXT, seq BIGINT NOT NULL)")


def log_change(source: str) -> str:
    """The statement logging the change of the record(s) `source` yields: a VALUES list or a
    SELECT of (kind, tenant_id, user_id, agent_id, seq), in the dialect's trigger syntax.

    Example:
        >>> log_change(ROW_CHANGE.format(row="old"))[-50:]
        'old.tenant_id, old.user_id, old.agent_id, old.seq)'
    """
    return ("INSERT INTO memory_scope_changes (kind, tenant_id, user_id, agent_id, seq) "
            + source)


ROW_CHANGE = "VALUES ({row}.kind, {row}.tenant_id, {row}.user_id, {row}.agent_id, {row}.seq)"
"""`ROW_CELL` for `log_change`."""
VECTOR_CHANGE = _vector_record("m.seq")
"""`VECTOR_CELL` for `log_change`: the same rows, so a change is logged where counted."""
TRIM_CHANGES = ("DELETE FROM memory_scope_changes "
                "WHERE id <= (SELECT max(id) FROM memory_scope_changes) - ?")
"""Keeps the newest changes logged (the parameter: how many ids back): a cache last read
before them reloads, as after any change it cannot account for."""
FORGET_CHANGES = "DELETE FROM memory_scope_changes WHERE tenant_id = ?"
"""An erasure's last step: without the tenant's logged changes, every cached scope of the
tenant that the erasure changed is reloaded, not patched, in every process, so no copy of
an erased row stays masked in memory (and the log holds no trace of the erased user)."""

BACKFILL = (
    "INSERT INTO memory_scope_versions (kind, tenant_id, user_id, agent_id, version) "
    "SELECT DISTINCT kind, tenant_id, user_id, agent_id, 1 FROM memories "
    "WHERE kind IS NOT NULL AND tenant_id IS NOT NULL"
)
"""Cells for the rows that existed before the migration."""


NAMESPACE_VERSIONS_TABLE = (
    "CREATE TABLE memory_namespace_versions (ns TEXT PRIMARY KEY, "
    "changes BIGINT NOT NULL DEFAULT 0, appends BIGINT NOT NULL DEFAULT 0)"
)
"""The counters of the untyped namespaces (a row per namespace once it changed), which keep
the cached vectors of untyped searches valid (`NamespaceVectorCache`): `appends` counts the
vectors added to a namespace's records, `changes` every other change of what the cache
holds (a vector or record deleted, a record's status or namespace changed, its expiry moved
earlier). An expiry moved later (a TTL refresh on read) is not counted: a cached expiry is
then earlier than the true one, and a search that finds a held row expired since the entry
was read reads it again. Rows are never deleted, so the sum of a prefix's counters only
grows."""


def bump_namespace(source: str, column: str, by: str = "1") -> str:
    """The statement counting changes (`column`: `changes` or `appends`) of the untyped
    namespace(s) `source` yields: a VALUES list or a SELECT of (ns, n), in the dialect's
    trigger syntax (a SELECT needs a WHERE: SQLite's upsert grammar). A namespace already
    counted gains `by`: 1 (a row trigger's one change) or `excluded.<column>` (a statement
    trigger's n).

    Example:
        >>> bump_namespace("VALUES (old.ns, 1)", "changes")[-61:]
        'DO UPDATE SET changes = memory_namespace_versions.changes + 1'
    """
    return (f"INSERT INTO memory_namespace_versions (ns, {column}) {source} "
            f"ON CONFLICT (ns) DO UPDATE SET {column} = memory_namespace_versions.{column} "
            f"+ {by}")


def namespace_counters(under: tuple[str, list[Any]] | None) -> tuple[str, list[Any]]:
    """The summed (changes, appends) of the untyped namespaces `under` selects (a condition
    on alias `n`, `queries.namespace_under`; None: every namespace), read by the key.

    Example:
        >>> namespace_counters(("n.ns = ?", ["kb"]))[0][-25:]
        'versions n WHERE n.ns = ?'
    """
    where, params = under if under is not None else ("1 = 1", [])
    return ("SELECT coalesce(sum(n.changes), 0), coalesce(sum(n.appends), 0) "
            f"FROM memory_namespace_versions n WHERE {where}", params)


ENTRY_OVERHEAD = 1024
"""The bytes an entry counts beside its buffers: its objects (about 0.5-1 KB measured with
`sys.getsizeof` over an entry's attributes)."""
DEAD_SHARE = 4
"""An entry is reloaded once more than 1 / DEAD_SHARE of its rows are dead (masked for a
change), past `DEAD_FLOOR` rows: dead rows cost every ranking their masking and memory."""
DEAD_FLOOR = 1024


class ScopeRows:
    """The rows a cache holds for one cell: their records' seqs and expiry times, in buffers
    with spare room (an eighth after a load, growing by half when full, by at least 64 rows)
    so that appends rarely copy them,
    and the cell's counters they were read at (`changes`, `added`, `logged`). A record's
    rows are masked when it changes (expiry -inf) and its rows now selected appended again,
    so seqs ascend until a record is added again. A subclass keeps its own columns beside
    them (`_grow` resizes them, `_trim` cuts them for a view) and fills them in `append`
    around `_place`.

    Searches read a `view()`: a copy of the entry cut to its rows at the time. Appends write
    past a view's rows (or into new buffers), and masking copies the expiry times before it
    changes them, so a view stays as it was while the entry moves on: a search ranking in one
    thread never sees a change another makes half made.
    """

    __slots__ = ("changes", "added", "logged", "size", "soonest", "dead", "_newest",
                 "_ordered", "_index", "_seqs", "_expires", "_view")

    def __init__(self, changes: int, added: int, logged: int = 0) -> None:
        self.changes, self.added, self.logged, self.size = changes, added, logged, 0
        """The cell's counters when last read: every change but an addition, additions
        (`appends` or `inserts`), and the newest id of the change log."""
        self.soonest = np.inf
        """The earliest expiry time held: before it, no row needs masking."""
        self.dead = 0
        """Rows masked for a change of their record."""
        self._newest = 0
        self._ordered = True
        """Whether the seqs held ascend (no record added again)."""
        self._index: tuple[np.ndarray, np.ndarray] | None = None
        """The live rows' positions in seq order and their seqs, once `find` needed them."""
        self._seqs = np.zeros(0, np.int64)
        self._expires = np.zeros(0, np.float64)
        self._view: ScopeRows | None = None
        """The view of the rows as they are, until they change."""

    @property
    def seqs(self) -> np.ndarray:
        return self._seqs[: self.size]

    @property
    def expires(self) -> np.ndarray:
        return self._expires[: self.size]

    def newest(self) -> int:
        """The highest seq held (0 when empty)."""
        return self._newest

    def covers(self, changes: int, added: int) -> bool:
        """Whether the entry is at least as recent as counters read as (`changes`, `added`):
        counters only grow, so an entry read at a later state has both at least as high."""
        return self.changes >= changes and self.added >= added

    def live(self, now: float) -> np.ndarray | None:
        """Which rows are live at `now` (a mask); None while no row held has expired."""
        return self.expires > now if self.soonest <= now else None

    def append(self, rows: Any) -> None:
        """Add rows (as the cache's select returned them, or as its `prepare` made them),
        after those held."""
        raise NotImplementedError

    def mask(self, seqs: Sequence[int]) -> bool:
        """Mask the rows of the records `seqs` (a change: its rows still selected are
        appended again); False once dead rows exceed the entry's share."""
        dead = np.flatnonzero(np.isin(self.seqs, np.asarray(seqs, np.int64))
                              & (self.expires != -np.inf))
        if len(dead):
            self._expires = self._expires.copy()  # views keep the times they were cut with
            self._expires[dead] = -np.inf
            self.soonest, self.dead, self._index = -np.inf, self.dead + len(dead), None
            self._view = None
        return self.dead <= max(self.size // DEAD_SHARE, DEAD_FLOOR)

    def view(self) -> ScopeRows:
        """The rows as they are now, cut to their number: unchanged by later appends and
        masks (the same object until the entry changes)."""
        if self._view is None:
            view = copy.copy(self)
            view._trim()
            view._view = view
            self._view = view
        return self._view

    def _trim(self) -> None:
        self._seqs, self._expires = self._seqs[: self.size], self._expires[: self.size]

    def nbytes(self) -> int:
        """The memory of the entry's buffers (their room, not only the rows held), and of
        the entry itself (`ENTRY_OVERHEAD`: an empty entry counts too, so a bound in bytes
        also bounds how many are held)."""
        return int(self._seqs.nbytes + self._expires.nbytes) + ENTRY_OVERHEAD

    def find(self, seqs: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The records among `seqs` held by a live row, and a position of each.

        Example:
            >>> rows = ScopeRows(0, 0)
            >>> rows.size = rows._place([4, 6, 9], [None, None, None])[1]
            >>> rows.mask([6])
            True
            >>> rows.size = rows._place([6], [None])[1]  # record 6 as it is now
            >>> [a.tolist() for a in rows.find([9, 6, 5])]
            [[9, 6], [2, 3]]
        """
        wanted = np.asarray(seqs, np.int64)
        if not self.size or not len(wanted):
            return wanted[:0], wanted[:0]
        if self._ordered and not self.dead:
            index, held = None, self.seqs
        else:
            if self._index is None:
                alive = np.flatnonzero(self.expires != -np.inf)
                order = alive[np.argsort(self.seqs[alive], kind="stable")]
                self._index = (order, self.seqs[order])
            index, held = self._index
        if not len(held):
            return wanted[:0], wanted[:0]
        at = np.minimum(np.searchsorted(held, wanted), len(held) - 1)
        hit = held[at] == wanted
        return wanted[hit], at[hit] if index is None else index[at[hit]]

    def _grow(self, room: int) -> None:
        self._seqs = np.resize(self._seqs, room)
        self._expires = np.resize(self._expires, room)

    def _place(self, seqs: Sequence[int], expires: Sequence[float | None]) -> tuple[int, int]:
        """Write the seqs and expiry times of rows after those held; returns their
        (start, end) in the buffers. The caller fills its columns, then sets `size`."""
        start, end = self.size, self.size + len(seqs)
        if end > len(self._seqs):  # a first load gets an eighth spare, a growth half again
            self._grow(end + end // 8 if not self.size
                       else max(end + end // 8, len(self._seqs) * 3 // 2, 64))
        self._seqs[start:end] = seqs
        self._expires[start:end] = [np.inf if e is None else e for e in expires]
        self.soonest = min(self.soonest, float(self._expires[start:end].min()))
        if self._seqs[start] <= self._newest:
            self._ordered = False
        self._newest = max(self._newest, int(self._seqs[end - 1]))
        self._index, self._view = None, None
        return start, end
