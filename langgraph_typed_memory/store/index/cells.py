"""The search caches' memory: rows kept per scope cell, bounded in bytes, shared by threads.

A ranked search sees up to four cells (kind, tenant, user, agent): its own and the wider
ones (tenant-wide, then user-wide, agent-wide). The cache keeps what a search reads of each
cell apart (`ScopeRows` entries: a vector matrix, full-text postings), so a tenant-wide
cell is held once however many users read it, and a user's entry holds only that user's
rows. A search combines the views of its cells.

Each cell's entry is kept valid by the cell's counters in `memory_scope_versions` (see
`index/scopes`), read by equality on the cell columns, the form their index serves. Every
cell a search sees is kept, however small: reading a user's few rows with each search cost
more than ranking them cached at every size measured (docs/backends.md), and the byte bound,
not a size threshold, limits the memory.

`CellCache` holds the entries of every family (vectors, postings) of a store in one LRU
bounded in bytes; a lock guards the LRU and every change to an entry, never a statement,
so the threads of a pool-backed store and the tasks of an async one search concurrently.
An entry is brought up to date by the first search that finds it stale; a search that
finds it brought up to date meanwhile uses it as it is.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langgraph_typed_memory.namespaces import RANKED_KINDS
from langgraph_typed_memory.store.core.protocol import Plan, Reads, Sql
from langgraph_typed_memory.store.core.queries import Cell, ScopeRead, cell_filter
from langgraph_typed_memory.store.index.scopes import ScopeRows

__all__ = ["CellCache", "CellFamily", "Counted", "DEFAULT_CACHE_BYTES", "LOAD_CHUNK",
           "counters_sql", "counted_cells", "answers_of"]

logger = logging.getLogger(__name__)

DEFAULT_CACHE_BYTES = 512 * 2**20
"""The default bound of a store's search caches: room for one 100,000-memory scope's vectors
and postings, or for many smaller cells."""

LOAD_CHUNK = 50_000
"""The rows a statement of a cell's full read returns where a backend reads cells in chunks
(`CellFamily.load_chunk`): SQLite, whose large scopes are held in the process as sketches
and postings, however many rows they have."""

E = TypeVar("E", bound=ScopeRows)
Key = tuple[str, Cell, str]
"""(family, cell, status filter) of an entry."""


@dataclass(frozen=True, slots=True)
class Counted:
    """A cell's counters: every change but an addition, vectors added, records added, and
    the change log's newest id, as read together."""

    changes: int
    appends: int
    inserts: int
    logged: int


_COUNTED_KINDS = sorted(RANKED_KINDS)
"""The kinds whose cells the caches hold: the ranked ones."""


def counters_sql(scope: ScopeRead) -> Sql:
    """The counters of the cells `scope` sees, of every ranked kind, one row per cell that
    has any, read by equality on the cell columns (the form the cell index serves).

    The statement is the same for every kind of one scope and `shared`: the vector and the
    lexical searches of the facts and of the episodes of a fan-out, run together, read all
    their counters in one statement.

    Example:
        >>> read = ScopeRead("fact", "acme", "alice", None, "m.status = 'active'", 5.0)
        >>> counters_sql(read).params
        ['episode', 'fact', 'observation', 'acme', '', 'alice', '', '']
    """
    return Sql(
        "SELECT user_id, agent_id, version - appends, appends, inserts, "
        "(SELECT coalesce(max(id), 0) FROM memory_scope_changes), kind "
        "FROM memory_scope_versions "
        f"WHERE kind IN ({', '.join('?' * len(_COUNTED_KINDS))}) AND tenant_id = ? "
        "AND coalesce(user_id, '') IN (?, ?) AND coalesce(agent_id, '') IN (?, ?)",
        [*_COUNTED_KINDS, scope.tenant_id, "", scope.user_id or "", "", scope.agent_id or ""],
        shared=True)


def counted_cells(scope: ScopeRead, rows: Sequence[Sequence[Any]], *,
                  every_kind: bool = False) -> dict[Cell, Counted]:
    """`counters_sql`'s rows of the scope's kind (`every_kind`: of every ranked kind), by
    cell.

    Example:
        >>> read = ScopeRead("fact", "acme", "alice", None, "m.status = 'active'", 5.0)
        >>> counted_cells(read, [(None, None, 3, 2, 4, 9, "fact"), ("alice", None, 1, 1, 1, 9,
        ...                                                         "episode")])
        {('fact', 'acme', None, None): Counted(changes=3, appends=2, inserts=4, logged=9)}
    """
    return {(kind, scope.tenant_id, user, agent):
            Counted(int(changes), int(appends), int(inserts), int(logged))
            for user, agent, changes, appends, inserts, logged, kind in rows
            if every_kind or kind == scope.kind}


class CellCache:
    """The entries of a store's search caches, least recently used first, bounded in bytes.

    An entry larger than the bound is not kept. Every entry's size is counted when it is
    stored and after each change (`resized`). `lock` guards the entries and every change to
    one; it is never held while a statement runs.

    Example:
        >>> cache = CellCache(2**20)
        >>> len(cache), cache.nbytes, cache.max_bytes
        (0, 0, 1048576)
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"cache_bytes must be 0 or more, not {max_bytes}")
        self.max_bytes = max_bytes
        self.lock = threading.RLock()
        self._entries: OrderedDict[Key, ScopeRows] = OrderedDict()
        self._sizes: dict[Key, int] = {}
        self._bytes = 0
        self.evictions = 0
        self._forgetting: list[Callable[[], None]] = []

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """The bytes held by the entries."""
        return self._bytes

    def count(self, family: str) -> int:
        """The entries of one family."""
        with self.lock:
            return sum(1 for key in self._entries if key[0] == family)

    def held(self, family: str) -> list[tuple[Cell, ScopeRows]]:
        """The (cell, entry) of one family, least recently used first."""
        with self.lock:
            return [(key[1], entry) for key, entry in self._entries.items()
                    if key[0] == family]

    def get(self, key: Key) -> ScopeRows | None:
        """The entry of `key`, now the most recently used; None if not held. Call with
        `lock` held when the entry is then read or changed."""
        with self.lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: Key, entry: ScopeRows) -> None:
        """Hold `entry` for `key` (replacing any), then evict to the bound."""
        with self.lock:
            self._drop(key)
            self._entries[key] = entry
            self._sizes[key] = entry.nbytes()
            self._bytes += self._sizes[key]
            self._evict()

    def resized(self, key: Key) -> None:
        """Count the entry of `key` again after a change, then evict to the bound."""
        with self.lock:
            entry = self._entries.get(key)
            if entry is not None:
                size = entry.nbytes()
                self._bytes += size - self._sizes[key]
                self._sizes[key] = size
                self._evict()

    def drop(self, key: Key) -> None:
        """Stop holding the entry of `key`."""
        with self.lock:
            self._drop(key)

    def forget(self, tenant_id: str | None = None) -> None:
        """Drop the entries of a tenant's cells (after an erasure: no copy of erased rows
        stays in memory), or every entry; then tell whatever else keeps rows of this store
        (`on_forget`) to drop them."""
        with self.lock:
            for key in [k for k in self._entries if tenant_id is None or k[1][1] == tenant_id]:
                self._drop(key)
            listeners = list(self._forgetting)
        for forget in listeners:
            forget()

    def on_forget(self, forget: Callable[[], None]) -> None:
        """Call `forget()` whenever the cache forgets (after an erasure): for what a caller
        keeps of the store's records beside the cache (the nodes' entity directories)."""
        with self.lock:
            self._forgetting.append(forget)

    def _drop(self, key: Key) -> None:
        if self._entries.pop(key, None) is not None:
            self._bytes -= self._sizes.pop(key)

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and self._entries:
            key = next(iter(self._entries))
            self._drop(key)
            self.evictions += 1
            logger.debug("search cache: evicted %s (%d bytes held)", key, self._bytes)


@dataclass(slots=True)
class _Wanted:
    """What a search fetches for one cell: `reads` into its round trip (their positions)."""

    cell: Cell
    how: str
    """'load' (a full read) or 'patch' (rows added and changed)."""
    reads: list[int]
    counted: Counted
    entry: ScopeRows | None = None
    """The entry a patch starts from, and its counters (changes, added) then."""
    state: tuple[int, int] = (0, 0)


class CellFamily(Generic[E]):
    """The entries of one kind of structure (`name`), brought up to date per cell.

    `added` names the counter of the rows its select returns (`appends`: vectors,
    `inserts`: records). `full_loads`, `appended_loads` (rows added only) and
    `patched_loads` (records changed) count how cells were read.

    Example:
        >>> family = CellFamily(CellCache(), "vectors", "appends")
        >>> len(family), family.full_loads
        (0, 0)
    """

    def __init__(self, cache: CellCache, name: str, added: str,
                 load_chunk: int | None = None) -> None:
        self.cache, self.name, self._added = cache, name, added
        self.load_chunk = load_chunk
        """The most rows a statement of a cell's full read returns (None: no limit): a
        larger cell is read in chunks, so its rows never sit in memory all at once beside
        the entry they fill."""
        self.full_loads = self.appended_loads = self.patched_loads = 0

    def __len__(self) -> int:
        return self.cache.count(self.name)

    def _count(self, counted: Counted) -> int:
        return counted.appends if self._added == "appends" else counted.inserts

    def cold_loads(self, scope: ScopeRead, select: Callable[[str, list[Any]], Sql]
                   ) -> list[tuple[Cell, Sql]]:
        """The full reads of the cells `scope` sees that this family does not hold.

        Example:
            >>> family = CellFamily(CellCache(), "vectors", "appends")
            >>> read = ScopeRead("fact", "acme", "alice", None, "m.status = 'active'", 5.0)
            >>> [cell for cell, _ in family.cold_loads(read, lambda w, p: Sql(w, p))]
            [('fact', 'acme', None, None), ('fact', 'acme', 'alice', None)]
        """
        out = []
        with self.cache.lock:
            for cell in scope.cells():
                if self.cache.get((self.name, cell, scope.status)) is None:
                    out.append((cell, self._full(select, *scope.in_cell(cell))))
        return out

    def counted_with_cold(
        self, scope: ScopeRead, select: Callable[[str, list[Any]], Sql], *before: Sql,
    ) -> Plan[tuple[list[list[tuple[Any, ...]]], dict[Cell, Counted],
                    dict[Cell, list[tuple[Any, ...]]]]]:
        """The cells' counters (`counters_sql`), and after them, in the same round trip, the
        full reads of the cells this family does not hold (`cold_loads`): a user's first
        search reads its cells without a round trip of their own. `before` are the caller's
        own statements, sent first. Returns their answers, the counters by cell, and the rows
        loaded by cell: what `views` takes as `counted` and `loaded`."""
        cold = self.cold_loads(scope, select)
        answers = answers_of((yield Reads((*before, counters_sql(scope),
                                           *(sql for _, sql in cold)))))
        at = len(before)
        own, counters, loads = answers[:at], answers[at], answers[at + 1:]
        return own, counted_cells(scope, counters), {
            cell: rows for (cell, _), rows in zip(cold, loads, strict=True)}

    def views(
        self, scope: ScopeRead, counted: dict[Cell, Counted],
        select: Callable[[str, list[Any]], Sql], new: Callable[[int, int, int], E], *,
        prepare: Callable[[list[tuple[Any, ...]]], Plan[Any]] | None = None,
        loaded: dict[Cell, list[tuple[Any, ...]]] | None = None,
    ) -> Plan[list[E]]:
        """Views of the rows of the cells `scope` sees, as of `counted` (their counters, read
        by the caller with `counters_sql`) or later; cells without counters hold no rows.

        `select(where, params)` is the statement of a cell's rows (`where` on alias `m`,
        ordered by seq once the family adds its ORDER BY), `new(changes, added, logged)` an empty
        entry read at those counters,
        `prepare(rows)`, if given, a plan turning fetched rows into what `append` takes
        (SQLite tokenizes texts), `loaded` the rows of cells read after `counted`
        (`counted_with_cold`).
        Everything else the cells need goes out in one round trip: the full loads of cells
        not held (and not `loaded`), and for stale entries the rows after the newest held,
        the records logged as changed and their rows now, then the counters again. A patch
        is kept only if it is exactly what was counted; else the cell is read again. A cell
        loaded after its counters were read may hold more than they counted: its entry is
        kept at those counters, and the next search that finds them moved reads it again.
        """
        wanted: list[_Wanted] = []
        reads: list[Sql] = []
        out: dict[Cell, E] = {}
        for cell in scope.cells():
            now = counted.get(cell)
            if now is None:
                if loaded is not None and cell in loaded:
                    self._hold_empty(scope, cell, new)
                continue
            where, params = scope.in_cell(cell)
            key = (self.name, cell, scope.status)
            with self.cache.lock:
                entry = self.cache.get(key)
                if entry is not None and entry.covers(now.changes, self._count(now)):
                    if entry.changes == now.changes and self._count(now) == entry.added:
                        entry.logged = max(entry.logged, now.logged)  # nothing changed here
                    out[cell] = entry.view()  # type: ignore[assignment]
                    continue
                state = None if entry is None or not entry.newest() else (
                    entry, entry.changes, entry.added, entry.logged, entry.newest())
            if state is None and loaded is not None and cell in loaded:
                entry = self._new(new, now)
                yield from self._filled(entry, loaded[cell], select, scope, cell, prepare)
                out[cell] = self._publish(scope, cell, entry)
                continue
            if state is None:
                wanted.append(_Wanted(cell, "load", [len(reads)], now))
                reads.append(self._full(select, where, params))
                continue
            entry, changes, added, logged, newest = state
            patch = _Wanted(cell, "patch", [len(reads)], now, entry, (changes, added))
            reads.append(_ordered(select(f"{where} AND m.seq > ?", [*params, newest])))
            if now.changes != changes:
                log, args = _logged(cell, logged)
                patch.reads += [len(reads), len(reads) + 1]
                reads += [Sql(log, args), _ordered(select(
                    f"{where} AND m.seq IN ({log} AND c.seq <= ?)",
                    [*params, *args, newest]))]
            wanted.append(patch)
        if not wanted:
            return [out[c] for c in scope.cells() if c in out]
        patching = any(w.how == "patch" for w in wanted)
        if patching:
            reads.append(counters_sql(scope))
        answers = answers_of((yield Reads(tuple(reads))))
        again = counted_cells(scope, answers[-1]) if patching else {}
        reload: list[_Wanted] = []
        for w in wanted:
            if w.how == "patch":
                view = yield from self._patch(scope, w, answers, again, prepare)
                if view is None:
                    reload.append(w)
                else:
                    out[w.cell] = view
                continue
            entry = self._new(new, w.counted)
            yield from self._filled(entry, answers[w.reads[0]], select, scope, w.cell, prepare)
            out[w.cell] = self._publish(scope, w.cell, entry)
        if reload:  # a patch that did not add up: read those cells again, whole
            answers = answers_of((yield Reads(tuple(
                self._full(select, *scope.in_cell(w.cell)) for w in reload))))
            for w, rows in zip(reload, answers, strict=True):
                entry = self._new(new, w.counted)
                yield from self._filled(entry, rows, select, scope, w.cell, prepare)
                out[w.cell] = self._publish(scope, w.cell, entry)
        return [out[c] for c in scope.cells() if c in out]

    def _full(self, select: Callable[[str, list[Any]], Sql], where: str, params: list[Any]
              ) -> Sql:
        """The statement of a cell's full read, or of its first chunk (`load_chunk`)."""
        sql = _ordered(select(where, params))
        if self.load_chunk is None:
            return sql
        return Sql(f"{sql.text} LIMIT {int(self.load_chunk)}", sql.params, binary=True)

    def _filled(
        self, entry: E, rows: list[tuple[Any, ...]], select: Callable[[str, list[Any]], Sql],
        scope: ScopeRead, cell: Cell,
        prepare: Callable[[list[tuple[Any, ...]]], Plan[Any]] | None,
    ) -> Plan[None]:
        """Fill `entry` from a full read's `rows` (seq first, in seq order), reading the
        next chunks while one comes full. A record's rows stay in one chunk: the rows of
        the last seq of a full chunk are read again with the next one."""
        where, params = scope.in_cell(cell)
        while self.load_chunk is not None and len(rows) >= self.load_chunk:
            last = rows[-1][0]
            whole = [row for row in rows if row[0] != last] or rows
            yield from _append(entry, whole, prepare)
            rows = yield self._full(select, f"{where} AND m.seq > ?",
                                    [*params, int(whole[-1][0])])
        yield from _append(entry, rows, prepare)

    def _hold_empty(self, scope: ScopeRead, cell: Cell, new: Callable[[int, int, int], E]
                    ) -> None:
        """Hold a cell that has no counters (no record ever) as empty, so that `cold_loads`
        does not read it with every search; the first search that finds it counted reads it
        whole (an entry without rows is never patched)."""
        key = (self.name, cell, scope.status)
        with self.cache.lock:
            if self.cache.get(key) is None:
                self.cache.put(key, new(0, 0, 0))

    def _new(self, new: Callable[[int, int, int], E], counted: Counted) -> E:
        return new(counted.changes, self._count(counted), counted.logged)

    def _publish(self, scope: ScopeRead, cell: Cell, entry: E) -> E:
        """Keep a fully read entry (unless one as recent is held already); its view."""
        key = (self.name, cell, scope.status)
        with self.cache.lock:
            self.full_loads += 1
            held = self.cache.get(key)
            if held is not None and held.covers(entry.changes, entry.added):
                return held.view()  # type: ignore[return-value]
            self.cache.put(key, entry)
            return entry.view()  # type: ignore[return-value]

    def _patch(
        self, scope: ScopeRead, w: _Wanted, answers: list[list[tuple[Any, ...]]],
        again: dict[Cell, Counted], prepare: Callable[[list[tuple[Any, ...]]], Plan[Any]] | None,
    ) -> Plan[E | None]:
        """Bring a stale entry up to the counters read after its rows were fetched; its view,
        or None when what was fetched is not all that was counted (the caller reloads).

        Whatever was fetched is counted by the time the counters are read again, so it is
        kept only if it is all that was counted (a shortfall is a change fetched too late
        or a row not selected). A changed record newer than the newest held comes as an
        added row; one held comes with its rows as they are now, appended after it is
        masked. Another search may have brought the entry up to date meanwhile: then it
        is used as it is if it is as recent."""
        entry, now = w.entry, again.get(w.cell)
        assert entry is not None
        if now is None:
            return None
        rows = answers[w.reads[0]]
        changes = now.changes - w.state[0]
        changed = len(w.reads) > 1
        if len(rows) != self._count(now) - w.state[1] or (
                len(answers[w.reads[1]]) != changes if changed else changes):
            return None
        if changed:
            rows = [*answers[w.reads[2]], *rows]
        prepared = rows if prepare is None else (yield from prepare(rows))
        key = (self.name, w.cell, scope.status)
        with self.cache.lock:
            held = self.cache.get(key)
            if held is not entry or (entry.changes, entry.added) != w.state:
                if held is not None and held.covers(now.changes, self._count(now)):
                    return held.view()  # type: ignore[return-value]
                return None
            if changed:
                if not entry.mask([s for (s,) in answers[w.reads[1]]]):
                    self.cache.drop(key)
                    return None  # too many dead rows: reloaded
                self.patched_loads += 1
            else:
                self.appended_loads += 1
            entry.append(prepared)
            entry.changes, entry.added, entry.logged = now.changes, self._count(now), now.logged
            self.cache.resized(key)
            return entry.view()  # type: ignore[return-value]


def _ordered(sql: Sql) -> Sql:
    """A cell's rows in seq order, fetched in binary where the driver can."""
    return Sql(f"{sql.text} ORDER BY m.seq", sql.params, binary=True)


def _logged(cell: Cell, since: int) -> tuple[str, list[Any]]:
    """The seqs the change log holds for `cell` after id `since` (alias `c`)."""
    where, params = cell_filter(cell, "c")
    return (f"SELECT c.seq FROM memory_scope_changes c WHERE {where} AND c.id > ?",
            [*params, since])


def answers_of(answers: list[Any]) -> list[list[tuple[Any, ...]]]:
    """A `Reads` answer's rows, raising the first statement's error there is."""
    for answer in answers:
        if isinstance(answer, Exception):
            raise answer
    return answers


def _append(
    entry: ScopeRows, rows: list[tuple[Any, ...]],
    prepare: Callable[[list[tuple[Any, ...]]], Plan[Any]] | None,
) -> Plan[None]:
    if rows:
        entry.append(rows if prepare is None else (yield from prepare(rows)))
