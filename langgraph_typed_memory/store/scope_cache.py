"""Per-scope caches of search structures, valid while the scope's counters hold.

The vector matrices (`vector_cache`) and, on Postgres, the full-text postings
(`lexical_cache`) of a scope are read once after the SQL scope filter and kept in this
process. Validity comes from the database, not from this process: triggers (migrations
`0008_scope_versions`, `0010_scope_appends`, Postgres `0013_scope_inserts`) count every
change to a scope cell (kind, tenant, user, agent) in `memory_scope_versions`, whoever makes
it (this store, another store object, another process, a maintenance job): `version` counts
every change but a record's insert, `appends` the vectors added (also counted in `version`),
`inserts` (Postgres) the records added; an update counts only if it changes what a cache holds
(`ROW_COLUMNS`). A search reads the sums over the cells it can see
(one indexed lookup). When only additions moved (the common case: new records), a cache
fetches the rows after the newest one it holds and keeps them if they are exactly the ones
counted; any other change (a deletion, a status, text or expiry change, or a count that does
not match) reloads the scope. Cells are never deleted and counters only grow, so the sums
move on every change.
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

    def newest(self) -> int:
        """The highest seq held (0 when empty)."""
        ...

    def append(self, rows: list[tuple[Any, ...]]) -> None:
        """Add rows fetched by the cache's select, in seq order (after the rows held)."""
        ...


class ScopeRows:
    """A `ScopeEntry`'s rows: their records' seqs (ascending) and expiry times, in buffers
    with spare room (an eighth, growing by half when full) so that appends rarely copy them.
    A subclass keeps its own columns beside them (`_grow` resizes them too) and fills them
    in `append` around `_place`."""

    __slots__ = ("changes", "added", "size", "soonest", "_seqs", "_expires")

    def __init__(self, changes: int, added: int) -> None:
        self.changes, self.added, self.size = changes, added, 0
        self.soonest = np.inf
        """The earliest expiry time held: before it, no row needs masking."""
        self._seqs = np.zeros(0, np.int64)
        self._expires = np.zeros(0, np.float64)

    @property
    def seqs(self) -> np.ndarray:
        return self._seqs[: self.size]

    @property
    def expires(self) -> np.ndarray:
        return self._expires[: self.size]

    def newest(self) -> int:
        return int(self._seqs[self.size - 1]) if self.size else 0

    def live(self, now: float) -> np.ndarray | None:
        """Which rows are live at `now` (a mask); None while no row held has expired."""
        return self.expires > now if self.soonest <= now else None

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
    `inserts`: records); `full_loads` and `appended_loads` count how entries were brought up
    to date.

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

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop every entry (after an erasure: no copy of erased rows stays in memory)."""
        self._entries.clear()

    def counters_sql(self, cells: str) -> str:
        """The statement reading the (changes, added) of the cells `cells` selects (alias
        `m`), for `current`.

        Example:
            >>> ScopeCache(1, "inserts").counters_sql("m.kind = ?")[48:]
            'coalesce(sum(m.inserts), 0) FROM memory_scope_versions m WHERE m.kind = ?'
        """
        return ("SELECT coalesce(sum(m.version - m.appends), 0), "
                f"coalesce(sum(m.{self._added}), 0) FROM memory_scope_versions m WHERE {cells}")

    def current(
        self, key: tuple[Any, ...], cells: tuple[str, Sequence[Any]], select: Sql,
        seq: str, new: Callable[[int, int], E], *, counters: tuple[int, int] | None = None,
        add: Callable[[E, list[tuple[Any, ...]]], Plan[None]] | None = None,
        newer: Sql | None = None,
    ) -> Plan[E]:
        """The entry for `key`, brought up to date: as cached, with the added rows, or
        reloaded by `select` into `new(changes, added)`. `cells` filters
        `memory_scope_versions` (alias `m`) to the cells the scope can see; `seq` is the
        select's seq column; `counters`, if given, are the cells' (changes, added) as the
        caller just read them (`counters_sql`); `add`, if given, adds the rows `select`
        returns to an entry in place of its `append` (SQLite tokenizes texts); `newer`, if given,
        is the select of the rows after a seq (its last parameter), in seq order, for a plan
        better than `select`'s with `seq > ?` added. Counters are read before the rows, so a
        racing write reloads, never hides."""
        read = Sql(self.counters_sql(cells[0]), list(cells[1]))
        if counters is None:
            first = (yield read)[0]
            counters = (int(first[0]), int(first[1]))
        changes, added = counters
        entry = self._entries.get(key)
        if entry is not None and (entry.changes, entry.added) != (changes, added) \
                and entry.changes == changes and entry.newest():
            # Only rows were added. Fetch the rows after the newest held, then read the
            # counters again (in order, one round trip): the rows are kept if they are all
            # the additions counted (any row of the delta is counted by then; a missing one
            # shows as a shortfall).
            after = newer or Sql(f"{select.text} AND {seq} > ? ORDER BY {seq}", select.params)
            rows, again = _answers((yield Reads((
                Sql(after.text, [*after.params, entry.newest()]), read))))
            changes, added = (int(x) for x in again[0])
            if changes == entry.changes and len(rows) == added - entry.added:
                yield from _add(entry, rows, add)
                entry.added = added
                self.appended_loads += 1
        if entry is None or (entry.changes, entry.added) != (changes, added):
            entry = new(changes, added)
            rows = yield Sql(f"{select.text} ORDER BY {seq}", select.params)
            yield from _add(entry, rows, add)
            self.full_loads += 1
            self._entries[key] = entry
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        self._entries.move_to_end(key)
        return entry
