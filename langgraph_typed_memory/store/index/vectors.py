"""Exact vector search on cached matrices per scope cell, valid while the cells' counters hold.

Both backends rank vectors the same way: each scope cell's vectors, read after the SQL scope
filter, are kept unit-normalized as one float32 matrix (`index/cells`: a byte-bounded LRU
shared by a store's caches), so a query is one matrix-vector product per cell the scope sees
(exact: every vector in scope is scored), and the cells' best are merged.

Entries are kept valid by the cells' counters (`index/scopes`: added vectors are fetched
alone, a changed record's rows masked and fetched again).

A large scope is ranked in worker threads (`top_k` returns a future), so the caller can go
on with its batch meanwhile: numpy and the database drivers release the GIL. The matrix is cut
into `CHUNKS` equal chunks (one per thread), each ranked by `einsum`'s single-threaded loop in
the shared pool of two threads, and the chunks' best are merged: the product is memory-bound,
and one BLAS call on two threads reads it no faster than one thread (75k x 384: ~5 ms either
way), while two threads on two halves do (100k x 384: 4.9 against 7.6 ms, measured once);
chunks also let the facts and episodes searches of one fan-out share both threads.

No float16 copy is kept: `torch.mv` on float16 (rescored exactly near the cut) had been ~0.7
ms faster per fan-out at 100k on a quiet machine, but with other work on the cores it was
slower than einsum on float32 (75k x 384: 14.5 against 9.2 ms, one thread) and cost half
again the cache's memory (docs/backends.md).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from langgraph_typed_memory.store.core.protocol import Plan, Sql
from langgraph_typed_memory.store.core.queries import ScopeRead
from langgraph_typed_memory.store.index.cells import (
    CellCache,
    CellFamily,
)
from langgraph_typed_memory.store.index.scopes import ScopeRows

__all__ = ["ScopeVectorCache", "VectorRanking", "Query", "SQLITE_JOIN", "POSTGRES_JOIN"]

Decode = Callable[[list[Any]], np.ndarray]
"""Turns the fetched embedding values of n rows into an (n, dims) float32 matrix."""
Query = Sequence[float] | Callable[[], Plan[Sequence[float] | None]]
"""A query's vector, or a plan of it (None: there is none)."""

SQLITE_JOIN = "CROSS JOIN memory_vectors v ON v.seq = m.seq"
"""A cell's vectors, driven from its rows: SQLite keeps the tables in the order written
with CROSS JOIN, so the scope index gives the rows and the primary key each one's vectors."""
POSTGRES_JOIN = ("CROSS JOIN LATERAL (SELECT v.seq, v.embedding FROM memory_vectors v "
                 "WHERE v.seq = m.seq OFFSET 0) v")
"""The same on Postgres: `OFFSET 0` keeps the planner from turning the lookup into a hash
join, which read every vector of the table (a sequential scan) to keep a cell's."""

PARALLEL_FROM = 16_384
"""Scopes with this many vectors or more are ranked in worker threads; a smaller product is
short, with little to hide behind the SQL (a judgment, not a measured optimum)."""
CHUNKS = 2
"""Chunks of a ranking in worker threads: one per thread, so that the scopes one fan-out
ranks at once (facts and episodes) split evenly over both threads; fixed-size chunks (32k
rows) left four uneven parts two threads could not share, and were slower (the figures are
in docs/backends.md)."""


def _new_workers() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="typed-memory-vectors")


_WORKERS = _new_workers()
"""Shared by every cache in the process; threads start on first use. A forked child gets
its own (it inherits the parent's pool without its threads, and would wait forever)."""


def _after_fork() -> None:
    global _WORKERS
    _WORKERS = _new_workers()


os.register_at_fork(after_in_child=_after_fork)


class _ScopeMatrix(ScopeRows):
    """A cell's vectors (unit-normalized rows; zero vectors stay zero), beside their
    records' seqs, expiry times (`ScopeRows`) and priors."""

    __slots__ = ("_decode", "_matrix", "_priors")

    def __init__(self, changes: int, added: int, logged: int, decode: Decode) -> None:
        super().__init__(changes, added, logged)
        self._decode = decode
        self._matrix = np.zeros((0, 0), np.float32)
        self._priors = np.zeros((0, 3), np.float64)
        """Per row: the record's confidence (0 if none), time (occurred, else created) and
        compaction tier."""

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix[: self.size]

    def _grow(self, room: int) -> None:
        super()._grow(room)
        matrix = np.zeros((room, self._matrix.shape[1]), np.float32)
        matrix[: self.size] = self._matrix[: self.size]
        self._matrix = matrix
        self._priors = np.resize(self._priors, (room, 3))

    def _trim(self) -> None:
        super()._trim()
        self._matrix, self._priors = self._matrix[: self.size], self._priors[: self.size]

    def nbytes(self) -> int:
        return super().nbytes() + int(self._matrix.nbytes + self._priors.nbytes)

    def append(self, rows: list[tuple[Any, ...]]) -> None:
        """Add (seq, embedding, expires_at, confidence, time, tier) rows."""
        if not rows:
            return
        vectors = self._decode([r[1] for r in rows])
        if not self.size:
            self._matrix = np.zeros((len(self._seqs), vectors.shape[1]), np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        start, end = self._place([r[0] for r in rows], [r[2] for r in rows])
        self._matrix[start:end] = vectors / norms
        self._priors[start:end] = [(r[3] or 0.0, r[4], int(r[5] or 0)) for r in rows]
        self.size = end

    def priors(self, seqs: Sequence[int]) -> dict[int, tuple[float, float, int]]:
        """(confidence, time, tier) of the records among `seqs` that have a vector here."""
        held, at = self.find(seqs)
        return {int(seq): (float(row[0]), float(row[1]), int(row[2]))
                for seq, row in zip(held, self._priors[at], strict=True)}


@dataclass(frozen=True)
class VectorRanking:
    """A vector search under way: `hits`, the future of its best-first (seq, cosine); and
    the cells' views it ranks, which answer `priors`."""

    hits: Future[list[tuple[int, float]]]
    cells: tuple[_ScopeMatrix, ...]

    def priors(self, seqs: Sequence[int]) -> dict[int, tuple[float, float, int]]:
        """(confidence, time: occurred, else created, compaction tier) of the records among
        `seqs` that the ranked cells hold a vector of, as the ranking read them."""
        found: dict[int, tuple[float, float, int]] = {}
        for cell in self.cells:
            found.update(cell.priors(seqs))
        return found


class ScopeVectorCache(CellFamily[_ScopeMatrix]):
    """Normalized vector matrices per scope cell, checked against the cells' counters each
    query; a search ranks the cells it sees together.

    Example:
        >>> cache = ScopeVectorCache(CellCache())
        >>> len(cache), cache.full_loads
        (0, 0)
    """

    def __init__(
        self, cache: CellCache, *, parallel_from: int = PARALLEL_FROM, chunks: int = CHUNKS,
    ) -> None:
        super().__init__(cache, "vectors", "appends")
        self.parallel_from = parallel_from
        self.chunks = chunks

    def top_k(
        self, scope: ScopeRead, query: Query, depth: int | None, *,
        embedding: str, decode: Decode, tier: str, join: str = SQLITE_JOIN,
    ) -> Plan[VectorRanking | None]:
        """Best-first (seq, cosine) among the scope's rows (`scope.in_cell` per cell) that
        have not expired, one per record (max over its vectors); `embedding` is the SQL
        expression fetched for `v.embedding`, `tier` the one of a record's compaction tier
        (text or NULL), held for `priors`, and `join` the dialect's join of each record's
        vectors (`v`) to its row (`m`), which must look them up by the vectors' primary key.

        `query` is the query's vector, or a plan of it asked once the cells are up to date
        (the embedder may still be at work meanwhile; None: there is none, and no ranking).
        The plan reads the cells' counters and brings their entries up to date; its value
        holds the ranking's future, already done for scopes under `parallel_from` vectors,
        else running in worker threads, in `chunks` equal chunks."""
        columns = (f"SELECT v.seq, {embedding}, m.expires_at, m.confidence, "
                   f"coalesce(m.occurred_at, m.created_at), {tier} "
                   f"FROM memories m {join} WHERE ")
        def select(where: str, params: list[Any]) -> Sql:
            return Sql(columns + where, params)

        _, counted, loaded = yield from self.counted_with_cold(scope, select)
        cells = tuple((yield from self.views(
            scope, counted, select,
            lambda changes, added, logged: _ScopeMatrix(changes, added, logged, decode),
            loaded=loaded)))
        vector = (yield from query()) if callable(query) else query
        if vector is None:
            return None
        return VectorRanking(self._ranked(cells, scope.now, vector, depth), cells)

    def _ranked(
        self, cells: Sequence[_ScopeMatrix], now: float, query: Sequence[float],
        depth: int | None,
    ) -> Future[list[tuple[int, float]]]:
        """The future ranking of the cells' rows: inline under `parallel_from` rows in all,
        else in `chunks` equal chunks over the cells, in worker threads."""
        total = sum(cell.size for cell in cells)
        parts: list[Future[list[tuple[int, float]]]] = []
        step = total if total < self.parallel_from else -(-total // self.chunks)
        # The query normalized here, once: a worker starts on its product at once, and this
        # thread does not hand the GIL over (as numpy does in a norm) while workers start,
        # which on two busy cores could leave it waiting for a worker's time slice.
        unit = _unit(query)
        for cell in cells:
            expires = cell.expires if cell.soonest <= now else None
            for i in range(0, cell.size, max(step, 1)):
                args = (cell.matrix[i : i + step], cell.seqs[i : i + step],
                        None if expires is None else expires[i : i + step], now, unit, depth)
                if total < self.parallel_from:
                    part: Future[list[tuple[int, float]]] = Future()
                    part.set_result(_rank(*args))
                    parts.append(part)
                else:
                    parts.append(_WORKERS.submit(_rank, *args))
        if len(parts) == 1:
            return parts[0]
        if not parts:
            done: Future[list[tuple[int, float]]] = Future()
            done.set_result([])
            return done
        return _merged(parts, depth)


def _merged(
    parts: list[Future[list[tuple[int, float]]]], depth: int | None
) -> Future[list[tuple[int, float]]]:
    """A future of the best-first merge of the chunks' rankings, set by the last to finish.

    A record in the best `depth` overall is in the best `depth` of the chunk holding its best
    vector, so the merge of the chunks' lists is the ranking of the whole matrix.
    """
    merged: Future[list[tuple[int, float]]] = Future()
    left = [len(parts)]
    lock = threading.Lock()

    def finished(_: Future[list[tuple[int, float]]]) -> None:
        with lock:
            left[0] -= 1
            if left[0]:
                return
        try:
            found = sorted((hit for part in parts for hit in part.result()),
                           key=lambda hit: (-hit[1], hit[0]))
            best: dict[int, float] = {}
            for seq, score in found:
                if seq not in best:
                    best[seq] = score
                    if len(best) == depth:
                        break
            merged.set_result(list(best.items()))
        except BaseException as exc:
            merged.set_exception(exc)

    for part in parts:
        part.add_done_callback(finished)
    return merged


def _unit(query: Sequence[float]) -> np.ndarray | None:
    """The query as a float32 unit vector; None for a zero vector (every row scores 0)."""
    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    return q / norm if norm else None


def _rank(
    matrix: np.ndarray, seqs: np.ndarray, expires: np.ndarray | None, now: float,
    unit: np.ndarray | None, depth: int | None,
) -> list[tuple[int, float]]:
    """Best-first (seq, cosine) of normalized `matrix` rows against the query's `unit` vector
    (None: a zero query, every row 0), leaving out rows whose expiry (`expires`, None: none
    due) has passed at `now`."""
    if not len(seqs):
        return []
    if unit is None:
        scores = np.zeros(len(seqs), np.float32)
    else:
        scores = np.einsum("ij,j->i", matrix, unit)  # one thread (see the module doc)
    if expires is not None:
        live = expires > now
        seqs, scores = seqs[live], scores[live]
    return _top(seqs, scores, depth)


def _top(seqs: np.ndarray, scores: np.ndarray, depth: int | None) -> list[tuple[int, float]]:
    """Best-first (seq, score), one per record (max over its vectors); ties: older record
    first, wherever its rows are held."""
    if depth is not None and len(scores) > depth * 4:
        keep = np.argpartition(-scores, depth * 4)[: depth * 4]  # enough for max-pooling
        seqs, scores = seqs[keep], scores[keep]
    order = np.lexsort((seqs, -scores))
    best: dict[int, float] = {}
    for i in order:
        seq = int(seqs[i])
        if seq not in best:
            best[seq] = float(scores[i])
            if depth is not None and len(best) == depth:
                break
    return list(best.items())
