"""Exact vector search on a cached matrix per scope, valid while the scope's version holds.

Both backends rank vectors the same way: the scope's vectors, read once after the SQL scope
filter, are kept unit-normalized as one float32 matrix, so a query is one matrix-vector
product (exact: every vector in scope is scored). An LRU keeps `size` scopes.

Validity comes from the database, not from this process: triggers (migrations
`0008_scope_versions`, `0010_scope_appends`) count every change to a scope cell (kind,
tenant, user, agent) in `memory_scope_versions`, whoever makes it (this store, another store
object on the same connection, another process, a maintenance job): `version` counts every
change, `appends` the vectors added. A search reads the sums over the cells it can see (one
indexed lookup). When only `appends` moved (the common case: new records), the cache fetches
the rows after the newest one it holds and keeps them if they are exactly the ones counted;
any other change (a deletion, a status or expiry change, or a count that does not match)
reloads the scope. Cells are never deleted and counters only grow, so the sums move on every
change.

A large scope is ranked in a worker thread (`top_k` returns a future), so the caller can run
its lexical SQL meanwhile: numpy and the database drivers release the GIL, and the product is
`einsum`'s single-threaded loop, which reads a memory-bound matrix as fast as two BLAS threads
(75k x 384: ~5 ms either way, measured) and leaves the other core to the SQL.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np

from langgraph_typed_memory.store.protocol import Plan, Sql

__all__ = [
    "ScopeVectorCache", "VERSIONS_TABLE", "BACKFILL", "ROW_CELL", "VECTOR_CELL",
    "VECTOR_APPEND_CELL", "APPENDS_COLUMN", "bump_cell",
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

BACKFILL = (
    "INSERT INTO memory_scope_versions (kind, tenant_id, user_id, agent_id, version) "
    "SELECT DISTINCT kind, tenant_id, user_id, agent_id, 1 FROM memories "
    "WHERE kind IS NOT NULL AND tenant_id IS NOT NULL"
)
"""Cells for the rows that existed before the migration."""

Decode = Callable[[list[Any]], np.ndarray]
"""Turns the fetched embedding values of n rows into an (n, dims) float32 matrix."""

PARALLEL_FROM = 16_384
"""Scopes with this many vectors or more are ranked in a worker thread; a smaller product is
short, with little to hide behind the SQL (a judgment, not a measured optimum)."""


def _new_workers() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="typed-memory-vectors")


_WORKERS = _new_workers()
"""Shared by every cache in the process; threads start on first use. A forked child gets
its own (it inherits the parent's pool without its threads, and would wait forever)."""


def _after_fork() -> None:
    global _WORKERS
    _WORKERS = _new_workers()


os.register_at_fork(after_in_child=_after_fork)


class _ScopeMatrix:
    """A scope's vectors (unit-normalized rows; zero vectors stay zero), their records' seqs
    and expiry times, in buffers with spare room so that appends do not copy the matrix."""

    __slots__ = ("version", "appends", "size", "soonest", "_seqs", "_matrix", "_expires")

    def __init__(self, version: int, appends: int) -> None:
        self.version, self.appends, self.size = version, appends, 0
        self.soonest = np.inf
        """The earliest expiry time held: before it, no row needs masking."""
        self._seqs = np.zeros(0, np.int64)
        self._matrix = np.zeros((0, 0), np.float32)
        self._expires = np.zeros(0, np.float64)

    @property
    def seqs(self) -> np.ndarray:
        return self._seqs[: self.size]

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix[: self.size]

    @property
    def expires(self) -> np.ndarray:
        return self._expires[: self.size]

    def append(self, rows: list[tuple[Any, ...]], decode: Decode) -> None:
        """Add (seq, embedding, expires_at) rows. The buffers keep an eighth spare and grow
        by half when full, so appends after a load rarely copy the matrix."""
        if not rows:
            return
        vectors = decode([r[1] for r in rows])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        end = self.size + len(rows)
        if end > len(self._seqs):
            room = max(end + end // 8, len(self._seqs) * 3 // 2, 64)
            matrix = np.zeros((room, vectors.shape[1]), np.float32)
            if self.size:
                matrix[: self.size] = self._matrix[: self.size]
            self._matrix = matrix
            self._seqs = np.resize(self._seqs, room)
            self._expires = np.resize(self._expires, room)
        self._matrix[self.size : end] = vectors / norms
        self._seqs[self.size : end] = [r[0] for r in rows]
        self._expires[self.size : end] = [np.inf if r[2] is None else r[2] for r in rows]
        self.soonest = min(self.soonest, float(self._expires[self.size : end].min()))
        self.size = end


class ScopeVectorCache:
    """Per-scope normalized vector matrices, checked against the scope's version each query.

    `full_loads` and `appended_loads` count how each entry was brought up to date.

    Example:
        >>> cache = ScopeVectorCache(size=2)
        >>> len(cache), cache.full_loads
        (0, 0)
    """

    def __init__(self, size: int = 8, *, parallel_from: int = PARALLEL_FROM) -> None:
        self.size = size
        self.parallel_from = parallel_from
        self._entries: OrderedDict[tuple[Any, ...], _ScopeMatrix] = OrderedDict()
        self.full_loads = 0
        self.appended_loads = 0

    def __len__(self) -> int:
        return len(self._entries)

    def top_k(
        self,
        where: str,
        params: Sequence[Any],
        cells: tuple[str, Sequence[Any]],
        query: Sequence[float],
        depth: int | None,
        now: float,
        *,
        embedding: str,
        decode: Decode,
    ) -> Plan[Future[list[tuple[int, float]]]]:
        """Best-first (seq, cosine) among rows matching `where` (alias `m` for memories, `v`
        for memory_vectors) that have not expired at `now`, one per record (max over its
        vectors). `cells` filters `memory_scope_versions` (alias `m`) to the cells the scope
        can see; `embedding` is the SQL expression fetched for `v.embedding`.

        The plan brings the scope up to date; its value is the ranking's future, already
        done for a scope under `parallel_from` vectors, else running in a worker thread."""
        key = (where, tuple(params))
        entry = yield from self._current(key, where, params, cells, embedding, decode)
        self._entries.move_to_end(key)
        # The views are taken now: a later append writes past them or into a new buffer.
        rank = partial(_rank, entry.matrix, entry.seqs,
                       entry.expires if entry.soonest <= now else None, now, query, depth)
        if entry.size >= self.parallel_from:
            return _WORKERS.submit(rank)
        done: Future[list[tuple[int, float]]] = Future()
        done.set_result(rank())
        return done

    def _current(
        self, key: tuple[Any, ...], where: str, params: Sequence[Any],
        cells: tuple[str, Sequence[Any]], embedding: str, decode: Decode,
    ) -> Plan[_ScopeMatrix]:
        """The entry for `key`, brought up to date: as cached, with the appended rows, or
        reloaded (counters read before the rows, so a racing write reloads, never hides)."""
        counters = Sql(
            "SELECT coalesce(sum(m.version), 0), coalesce(sum(m.appends), 0) "
            f"FROM memory_scope_versions m WHERE {cells[0]}", list(cells[1]),
        )
        version, appends = (int(x) for x in (yield counters)[0])
        entry = self._entries.get(key)
        if entry is not None and entry.version == version:
            return entry
        select = (f"SELECT v.seq, {embedding}, m.expires_at FROM memory_vectors v "
                  f"CROSS JOIN memories m WHERE m.seq = v.seq AND {where}")
        if entry is not None and entry.size and version - appends == entry.version - entry.appends:
            # Only vectors were added. Fetch the rows after the newest held, then read the
            # counters again: the rows are kept if they are all the appends counted (any
            # row of the delta is counted by then; a missing one shows as a shortfall).
            rows = yield Sql(f"{select} AND v.seq > ? ORDER BY v.seq",
                             [*params, int(entry.seqs.max())])
            again, again_appends = (int(x) for x in (yield counters)[0])
            if (again - again_appends == entry.version - entry.appends
                    and len(rows) == again_appends - entry.appends):
                entry.append(rows, decode)
                entry.version, entry.appends = again, again_appends
                self.appended_loads += 1
                return entry
            version, appends = again, again_appends
        entry = _ScopeMatrix(version, appends)
        entry.append((yield Sql(select, list(params))), decode)
        self.full_loads += 1
        self._entries[key] = entry
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return entry


def _rank(
    matrix: np.ndarray, seqs: np.ndarray, expires: np.ndarray | None, now: float,
    query: Sequence[float], depth: int | None,
) -> list[tuple[int, float]]:
    """Best-first (seq, cosine) of normalized `matrix` rows against `query`, leaving out rows
    whose expiry (`expires`, None: none due) has passed at `now`."""
    if not len(seqs):
        return []
    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    if not norm:
        scores = np.zeros(len(seqs), np.float32)
    else:
        scores = np.einsum("ij,j->i", matrix, q / norm)  # one thread (see the module doc)
    if expires is not None:
        live = expires > now
        seqs, scores = seqs[live], scores[live]
    return _top(seqs, scores, depth)


def _top(seqs: np.ndarray, scores: np.ndarray, depth: int | None) -> list[tuple[int, float]]:
    """Best-first (seq, score), one per record (max over its vectors)."""
    if depth is not None and len(scores) > depth * 4:
        keep = np.argpartition(-scores, depth * 4)[: depth * 4]  # enough for max-pooling
        seqs, scores = seqs[keep], scores[keep]
    order = np.argsort(-scores, kind="stable")
    best: dict[int, float] = {}
    for i in order:
        seq = int(seqs[i])
        if seq not in best:
            best[seq] = float(scores[i])
            if depth is not None and len(best) == depth:
                break
    return list(best.items())
