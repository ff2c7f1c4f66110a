"""Per-scope caches of search structures, valid while the scope's counters hold.

The vector matrices (`vector_cache`) and the full-text postings (`lexical_cache`,
`fts5_cache`) of a scope are read once after the SQL scope filter and kept in this process.
Validity comes from the database, not from this process: triggers (migrations
`0008_scope_versions`, `0010_scope_appends`, `0013_scope_inserts`, `0015_scope_changes`)
count every change to a scope cell (kind, tenant, user, agent) in `memory_scope_versions`,
whoever makes it (this store, another store object, another process, a maintenance job):
`version` counts every change but a record's insert, `appends` the vectors added (also
counted in `version`), `inserts` the records added; an update counts only if it changes what
a cache holds (`ROW_COLUMNS`). Each change counted in `version` and not in `appends` (a
deletion, a status, text, confidence or expiry change) also logs its record's seq in
`memory_scope_changes`, from the same trigger. A search reads the sums over the cells it can
see (one indexed lookup) with the log's newest id. When the sums moved, a cache fetches the
rows after the newest one it holds and, if changes moved, the seqs logged since its last
read with those records' rows as they are now, then reads the counters again: if what it
fetched is exactly what was counted, a changed record's rows held are masked (dead, like an
expired row) and its rows still selected are added again, as new rows are. Any mismatch (a
racing writer, a trimmed log) reloads the scope, as do dead rows past a quarter of an
entry. Cells are never deleted and counters only grow, so the sums move on every change.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from langgraph_typed_memory.store.protocol import Plan, Reads, Sql

__all__ = [
    "ScopeCache", "ScopeEntry", "ScopeRows", "VERSIONS_TABLE", "BACKFILL", "ROW_CELL",
    "VECTOR_CELL",
    "VECTOR_APPEND_CELL", "APPENDS_COLUMN", "ROW_COLUMNS", "bump_cell", "row_changed",
    "ROW_CHANGE", "VECTOR_CHANGE", "changes_table", "log_change", "TRIM_CHANGES",
    "FORGET_CHANGES",
    "counters_from",
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
VECTOR_CELL = ("SELECT m.kind, m.tenant_id, m.user_id, m.agent_id, 1 FROM memories m "
               "WHERE m.seq = {row}.seq AND m.kind IS NOT NULL")
"""The cell of the record a `memory_vectors` trigger row belongs to (none if untyped)."""
VECTOR_APPEND_CELL = VECTOR_CELL.replace(", 1 FROM", ", 1, 1 FROM")
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
VECTOR_CHANGE = VECTOR_CELL.replace(", 1 FROM", ", m.seq FROM")
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


class ScopeEntry(Protocol):
    """What `ScopeCache` keeps per scope: the counters it was read at, and its rows."""

    changes: int
    """The sum of `version - appends` (every change but an addition) when last read."""
    added: int
    """The sum of the cache's additions counter (`appends` or `inserts`) when last read."""
    logged: int
    """The newest id of `memory_scope_changes` when last read."""

    def newest(self) -> int:
        """The highest seq held (0 when empty)."""
        ...

    def append(self, rows: list[tuple[Any, ...]]) -> None:
        """Add rows fetched by the cache's select, in seq order (each batch)."""
        ...

    def mask(self, seqs: Sequence[int]) -> bool:
        """Mask the rows of the records `seqs`; False if the entry is better reloaded."""
        ...


DEAD_SHARE = 4
"""An entry is reloaded once more than 1 / DEAD_SHARE of its rows are dead (masked for a
change), past `DEAD_FLOOR` rows: dead rows cost every ranking their masking and memory."""
DEAD_FLOOR = 1024


class ScopeRows:
    """A `ScopeEntry`'s rows: their records' seqs and expiry times, in buffers with spare
    room (an eighth, growing by half when full) so that appends rarely copy them. A record's
    rows are masked when it changes (expiry -inf) and its rows now selected appended again,
    so seqs ascend until a record is added again. A subclass keeps its own columns beside
    them (`_grow` resizes them too) and fills them in `append` around `_place`."""

    __slots__ = ("changes", "added", "logged", "size", "soonest", "dead", "_newest",
                 "_ordered", "_index", "_seqs", "_expires")

    def __init__(self, changes: int, added: int) -> None:
        self.changes, self.added, self.logged, self.size = changes, added, 0, 0
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

    @property
    def seqs(self) -> np.ndarray:
        return self._seqs[: self.size]

    @property
    def expires(self) -> np.ndarray:
        return self._expires[: self.size]

    def newest(self) -> int:
        return self._newest

    def live(self, now: float) -> np.ndarray | None:
        """Which rows are live at `now` (a mask); None while no row held has expired."""
        return self.expires > now if self.soonest <= now else None

    def mask(self, seqs: Sequence[int]) -> bool:
        """Mask the rows of the records `seqs` (a change: its rows still selected are
        appended again); False once dead rows exceed the entry's share."""
        dead = np.flatnonzero(np.isin(self.seqs, np.asarray(seqs, np.int64))
                              & (self.expires != -np.inf))
        if len(dead):
            self._expires[dead] = -np.inf
            self.soonest, self.dead, self._index = -np.inf, self.dead + len(dead), None
        return self.dead <= max(self.size // DEAD_SHARE, DEAD_FLOOR)

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
        if end > len(self._seqs):
            self._grow(max(end + end // 8, len(self._seqs) * 3 // 2, 64))
        self._seqs[start:end] = seqs
        self._expires[start:end] = [np.inf if e is None else e for e in expires]
        self.soonest = min(self.soonest, float(self._expires[start:end].min()))
        if self._seqs[start] <= self._newest:
            self._ordered = False
        self._newest = max(self._newest, int(self._seqs[end - 1]))
        self._index = None
        return start, end


E = TypeVar("E", bound=ScopeEntry)


def _answers(answers: list[Any]) -> list[list[tuple[Any, ...]]]:
    """A `Reads` answer's rows, raising the first statement's error there is."""
    for answer in answers:
        if isinstance(answer, Exception):
            raise answer
    return answers


def _add(
    entry: E, rows: list[tuple[Any, ...]],
    add: Callable[[E, list[tuple[Any, ...]]], Plan[None]] | None,
) -> Plan[None]:
    """Add the rows a cache's select returned to `entry`: by `add` if given, else by the
    entry's `append`."""
    if add is None:
        entry.append(rows)
    else:
        yield from add(entry, rows)


class ScopeCache(Generic[E]):
    """An LRU of `size` scope entries, brought up to date from the scope's counters.

    `added` names the counter of rows the entry's select returns (`appends`: vectors,
    `inserts`: records); `full_loads`, `appended_loads` (rows added only) and
    `patched_loads` (records changed) count how entries were brought up to date.

    Example:
        >>> cache = ScopeCache(2, "appends")
        >>> len(cache), cache.full_loads
        (0, 0)
    """

    def __init__(self, size: int, added: str) -> None:
        self.size = size
        self._added = added
        self._entries: OrderedDict[tuple[Any, ...], E] = OrderedDict()
        self.full_loads = 0
        self.appended_loads = 0
        self.patched_loads = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop every entry (after an erasure: no copy of erased rows stays in memory)."""
        self._entries.clear()

    def counters_sql(self, cells: str) -> str:
        """The statement reading the (changes, added, logged) of the cells `cells` selects
        (alias `m`), for `current`.

        Example:
            >>> ScopeCache(1, "inserts").counters_sql("m.kind = ?")[48:76]
            'coalesce(sum(m.inserts), 0),'
        """
        return ("SELECT coalesce(sum(m.version - m.appends), 0), "
                f"coalesce(sum(m.{self._added}), 0), "
                "(SELECT coalesce(max(c.id), 0) FROM memory_scope_changes c) "
                f"FROM memory_scope_versions m WHERE {cells}")

    def current(
        self, key: tuple[Any, ...], cells: tuple[str, Sequence[Any]], select: Sql,
        seq: str, new: Callable[[int, int], E], *,
        counters: tuple[int, int, int] | None = None,
        add: Callable[[E, list[tuple[Any, ...]]], Plan[None]] | None = None,
        by_seq: Sql | None = None,
    ) -> Plan[E]:
        """The entry for `key`, brought up to date: as cached, patched with the rows added
        and changed, or reloaded by `select` into `new(changes, added)`. `cells` filters
        `memory_scope_versions` (alias `m`) to the cells the scope can see; `seq` is the
        select's seq column; `counters`, if given, are the cells' (changes, added, logged) as
        the caller just read them (`counters_sql`); `add`, if given, adds the rows `select`
        returns to an entry in place of its `append` (SQLite tokenizes texts); `by_seq`, if
        given, is `select` for reads by seq (the rows after the newest held, the records
        changed), with a better plan for them. Counters are read before the rows, so a racing
        write reloads, never hides."""
        read = Sql(self.counters_sql(cells[0]), list(cells[1]))
        if counters is None:
            counters = counters_from((yield read)[0])
        entry = self._entries.get(key)
        if entry is not None and (entry.changes, entry.added) != counters[:2]:
            counters = yield from self._patch(entry, counters, read, cells, by_seq or select,
                                              seq, add)
        elif entry is not None:  # nothing changed here: the next read of the log starts now
            entry.logged = counters[2]
        if entry is None or (entry.changes, entry.added) != counters[:2]:
            entry = new(*counters[:2])
            entry.logged = counters[2]
            rows = yield Sql(f"{select.text} ORDER BY {seq}", select.params)
            yield from _add(entry, rows, add)
            self.full_loads += 1
            self._entries[key] = entry
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        self._entries.move_to_end(key)
        return entry

    def _patch(
        self, entry: E, counters: tuple[int, int, int], read: Sql,
        cells: tuple[str, Sequence[Any]], select: Sql, seq: str,
        add: Callable[[E, list[tuple[Any, ...]]], Plan[None]] | None,
    ) -> Plan[tuple[int, int, int]]:
        """Bring `entry` up to `counters` from the rows added after its newest and, if
        changes moved, the records logged as changed since its last read; returns the
        counters read again (the entry's own if it was patched).

        The rows are fetched, then the counters read again, in order and in one round
        trip: whatever was fetched is counted by then, so it is kept only if it is all
        that was counted (a shortfall is a change fetched too late or a row not selected:
        the caller reloads). A changed record newer than the newest held comes as an added
        row; one held comes with its rows as they are now, appended after it is masked."""
        if not entry.newest():
            return counters
        reads = [Sql(f"{select.text} AND {seq} > ? ORDER BY {seq}",
                     [*select.params, entry.newest()])]
        changed = counters[0] != entry.changes
        if changed:
            logged = (f"SELECT m.seq FROM memory_scope_changes m WHERE {cells[0]} "
                      "AND m.id > ?")
            since = [*cells[1], entry.logged]
            reads += [Sql(logged, since),
                      Sql(f"{select.text} AND {seq} IN ({logged} AND m.seq <= ?) "
                          f"ORDER BY {seq}", [*select.params, *since, entry.newest()])]
        answers = _answers((yield Reads((*reads, read))))
        again = counters_from(answers[-1][0])
        rows, changes = answers[0], again[0] - entry.changes
        if len(rows) != again[1] - entry.added or (
                len(answers[1]) != changes if changed else changes):
            return again
        if changed:
            if not entry.mask([s for (s,) in answers[1]]):
                return again  # too many dead rows: the caller reloads
            rows = [*answers[2], *rows]
            self.patched_loads += 1
        else:
            self.appended_loads += 1
        yield from _add(entry, rows, add)
        entry.changes, entry.added, entry.logged = again
        return again


def counters_from(row: Sequence[Any]) -> tuple[int, int, int]:
    """A `counters_sql` row as (changes, added, logged)."""
    changes, added, logged = row
    return int(changes), int(added), int(logged)
