"""Exact vector search on cached matrices per scope cell, valid while the cells' counters hold.

Both backends rank vectors the same way: each scope cell's vectors, read after the SQL scope
filter, are kept unit-normalized as one float32 matrix (`index/cells`: a byte-bounded LRU
shared by a store's caches), so a query is one matrix-vector product per cell the scope sees
(exact: every vector in scope is scored), and the cells' best are merged.

Entries are kept valid by the cells' counters (`index/scopes`: added vectors are fetched
alone, a changed record's rows masked and fetched again).

A query's product with a cell's matrix is one call to the BLAS numpy links (`matrix @ q`, on
the BLAS's own threads), in the searching thread: the calling thread waits for it either way.
Worker threads ranking halves with `np.einsum` while the calling thread ranked the words were
slower at every size measured: a worker's result waits for the GIL, and einsum's single
loop reads the matrix half as fast (docs/backends.md).

No float16 copy is kept: float16 products (`torch.mv`, rescored exactly near the cut) were
slower than float32 ones with other work on the cores, and cost half again the cache's
memory (docs/backends.md).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.protocol import Plan, Reads, Sql
from langgraph_typed_memory.store.core.queries import ScopeRead
from langgraph_typed_memory.store.index.cells import CellCache, CellFamily, Key, answers_of
from langgraph_typed_memory.store.index.postings import at_least_kth
from langgraph_typed_memory.store.index.scopes import ScopeRows, namespace_counters

__all__ = ["ScopeVectorCache", "normalized", "scores_of", "NamespaceVectorCache", "VectorRanking",
           "Query", "SQLITE_JOIN", "POSTGRES_JOIN"]

logger = logging.getLogger(__name__)

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

ROW_BLOCK = 8
"""A matrix goes to BLAS with a multiple of this many rows (its rows padded with spare rows
of its buffer, whose scores are dropped): then a row's score is the same bits whatever the
matrix's number of rows and the row's place in it (OpenBLAS' product takes rows in fours,
two threads take halves; a remainder is summed in another order), so an entry's history
(its rows masked and appended again, its buffer grown) never changes a ranking. This holds
with BLAS on one or two threads; where it runs more (`OPENBLAS_NUM_THREADS`), a thread's
share of rows may end in a remainder and a score's last bits may again depend on the
cell's history (docs/backends.md)."""


def _padded(rows: int) -> int:
    """`rows` rounded up to a multiple of `ROW_BLOCK`.

    Example:
        >>> _padded(0), _padded(1), _padded(8), _padded(9)
        (0, 8, 8, 16)
    """
    return -(-rows // ROW_BLOCK) * ROW_BLOCK


def normalized(vectors: np.ndarray) -> np.ndarray:
    """The rows as unit vectors (zero rows stay zero), as the matrices hold them."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


def scores_of(vectors: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Each row's cosine with the query's `unit` vector, to the bit as a cached matrix
    holding the row scores it (`normalized`, and padded to `ROW_BLOCK` rows).

    Example:
        >>> scores_of(np.array([[3.0, 4.0], [0.0, 0.0]], np.float32), np.float32([1, 0]))
        array([0.6, 0. ], dtype=float32)
    """
    matrix = np.zeros((_padded(len(vectors)), vectors.shape[1]), np.float32)
    matrix[: len(vectors)] = normalized(vectors)
    return (matrix @ unit)[: len(vectors)]


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
    def padded(self) -> np.ndarray:
        """The rows, and spare rows up to a multiple of `ROW_BLOCK` (their scores are to
        be dropped)."""
        return self._matrix[: _padded(self.size)]

    def _grow(self, room: int) -> None:
        room = _padded(room)
        super()._grow(room)
        matrix = np.zeros((room, self._matrix.shape[1]), np.float32)
        matrix[: self.size] = self._matrix[: self.size]
        self._matrix = matrix
        self._priors = np.resize(self._priors, (room, 3))

    def _trim(self) -> None:
        super()._trim()
        self._matrix = self._matrix[: _padded(self.size)]  # spare rows: see `padded`
        self._priors = self._priors[: self.size]

    def nbytes(self) -> int:
        return super().nbytes() + int(self._matrix.nbytes + self._priors.nbytes)

    def _placed(self, rows: list[tuple[Any, ...]]) -> tuple[np.ndarray, int, int]:
        """The rows' decoded vectors and the slots `_place` gave them (seq, expiry first)."""
        vectors = self._decode([r[1] for r in rows])
        if not self.size:
            self._matrix = np.zeros((len(self._seqs), vectors.shape[1]), np.float32)
        return (vectors, *self._place([r[0] for r in rows], [r[2] for r in rows]))

    def append(self, rows: list[tuple[Any, ...]]) -> None:
        """Add (seq, embedding, expires_at, confidence, time, tier) rows."""
        if not rows:
            return
        vectors, start, end = self._placed(rows)
        self._matrix[start:end] = normalized(vectors)
        self._priors[start:end] = [(r[3] or 0.0, r[4], int(r[5] or 0)) for r in rows]
        self.size = end

    def priors(self, seqs: Sequence[int]) -> dict[int, tuple[float, float, int]]:
        """(confidence, time, tier) of the records among `seqs` that have a vector here."""
        held, at = self.find(seqs)
        return {int(seq): (float(row[0]), float(row[1]), int(row[2]))
                for seq, row in zip(held, self._priors[at], strict=True)}


@dataclass(frozen=True)
class VectorRanking:
    """A vector search's best-first (seq, cosine) `hits`, and the cells' views it ranked,
    which answer `priors`."""

    hits: list[tuple[int, float]]
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

    def __init__(self, cache: CellCache) -> None:
        super().__init__(cache, "vectors", "appends")

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
        holds the ranking."""
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
        return VectorRanking(_ranked(cells, scope.now, vector, depth), cells)


NAMESPACE_FAMILY = "namespace vectors"
"""The `CellCache` family of the untyped searches' matrices."""


class _NamespaceMatrix(_ScopeMatrix):
    """The vectors of the current untyped rows under a search prefix, expired or not
    (`_ScopeMatrix`), and the time their expiries were read (`checked`)."""

    __slots__ = ("checked",)

    def __init__(self, changes: int, added: int, decode: Decode, checked: float) -> None:
        super().__init__(changes, added, 0, decode)
        self.checked = checked

    def append(self, rows: list[tuple[Any, ...]]) -> None:
        """Add (seq, embedding, expires_at) rows (no priors: an untyped search has none)."""
        if not rows:
            return
        vectors, start, end = self._placed(rows)
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))[:, None]
        norms[norms == 0] = 1.0
        self._newest = max(self._newest, int(self._seqs[start:end].max()))  # read unordered
        np.divide(vectors, norms, out=self._matrix[start:end])
        self.size = end

    def fresh(self, now: float) -> bool:
        """Whether the held expiries are true at `now`. A held expiry is never later than
        the record's (a TTL refresh, which moves it later, is not counted), so it is true
        while it has not passed, and once it passed before the rows were read (no read
        refreshes an expired record); one that passed since may have been refreshed."""
        if self.soonest > now:
            return True
        if now < self.checked:
            return False
        expires = self.expires
        return not bool(np.any((expires > self.checked) & (expires <= now)))


REMEMBERED = 65536
"""The prefixes whose size a `NamespaceVectorCache` remembers (~100 bytes each)."""


class NamespaceVectorCache:
    """Normalized vector matrices of untyped searches, one per search prefix, held in the
    store's `CellCache` beside the scope cells' entries (one LRU, one byte bound) and checked
    against the untyped namespaces' counters (`memory_namespace_versions`, summed over the
    prefix's namespaces) each query. Vectors added to the prefix's namespaces are fetched
    alone; any other change counted reloads the prefix's vectors, as does a held row
    expired since they were read (see `_NamespaceMatrix.fresh`). A prefix whose vectors
    exceed the bound is read and ranked each time, unheld.

    Where the database can rank (`top_k`'s `server`) and `row_bytes` gives a vector's size,
    a prefix no entry holds is ranked there, its counters read alongside; a later query
    loads it once its vectors are known to fit (`appends` bounds them). A prefix asked once
    (a user's namespace among thousands) costs no load, and one too large is never read (or
    read once, if its counters began after its vectors: then never again).

    Example:
        >>> cache = NamespaceVectorCache(CellCache(), embedding="v.embedding",
        ...                              decode=lambda values: np.zeros((len(values), 2)))
        >>> len(cache), cache.full_loads
        (0, 0)
    """

    def __init__(self, cache: CellCache, *, embedding: str, decode: Decode,
                 join: str = SQLITE_JOIN, row_bytes: int | None = None) -> None:
        self.cache, self._decode, self._row_bytes = cache, decode, row_bytes
        self._appends: dict[Key, int] = {}
        """The most appends counted for each prefix asked while no entry held it, or
        `sys.maxsize` once its vectors were read and found too large to hold (at most
        `REMEMBERED` prefixes, the oldest forgotten first)."""
        self._columns = f"SELECT v.seq, {embedding}, m.expires_at FROM memories m {join} WHERE "
        self.full_loads = self.appended_loads = 0

    def __len__(self) -> int:
        return self.cache.count(NAMESPACE_FAMILY)

    def top_k(self, prefix: str | None, range_ops: tuple[str, str], now: float,
              query: Sequence[float], depth: int, server: Callable[[], Sql] | None = None,
              ) -> Plan[list[tuple[int, float]]]:
        """Best-first (seq, cosine) of the current untyped rows under the encoded `prefix`
        (None: every untyped row) live at `now`, one per record (its best vector; ties:
        older record first), the `depth` best. Exact: every vector is scored. `server`: makes
        the statement ranking them in the database, as (seq, cosine) rows (made only when
        used: it spells out the query vector)."""
        key: Key = (NAMESPACE_FAMILY, ("", prefix or "", None, None), "")
        where, params = q.untyped_current(prefix, range_ops)
        counters = Sql(*namespace_counters(
            None if prefix is None else q.namespace_under(prefix, range_ops, "n.")))

        def select(after: int | None = None) -> Sql:
            if after is None:
                return Sql(self._columns + where, params, binary=True)
            return Sql(f"{self._columns}{where} AND m.seq > ?", [*params, after], binary=True)

        with self.cache.lock:
            held = self.cache.get(key)
            state = None if not isinstance(held, _NamespaceMatrix) else (
                held, held.changes, held.added, held.newest())
        if state is None and server is not None and not self._fits(key):
            counted, ranked = answers_of((yield Reads((counters, server()))))
            self._remember(key, int(counted[0][1]))
            return [(int(seq), float(score)) for seq, score in ranked]
        if state is None:
            counted, rows = answers_of((yield Reads((counters, select()))))
            self._remember(key, int(counted[0][1]))
            entry = self._load(key, int(counted[0][0]), int(counted[0][1]), rows, now)
        else:
            entry = yield from self._current(key, state, counters, select, now)
        return _rank(entry.padded, entry.seqs, entry.expires if entry.soonest <= now else None,
                     now, unit_vector(query), depth)

    def _fits(self, key: Key) -> bool:
        """Whether the prefix's vectors, at most its appends when last asked, fit the bound."""
        appends = self._appends.get(key)
        return (appends is not None and self._row_bytes is not None
                and appends * self._row_bytes <= self.cache.max_bytes)

    def _remember(self, key: Key, appends: int) -> None:
        """Note a prefix's counted appends (a bound only grows)."""
        with self.cache.lock:
            known = self._appends.pop(key, 0)
            self._appends[key] = max(known, appends)
            if len(self._appends) > REMEMBERED:
                del self._appends[next(iter(self._appends))]

    def _current(self, key: Key, state: tuple[_NamespaceMatrix, int, int, int],
                 counters: Sql, select: Callable[..., Sql], now: float
                 ) -> Plan[_NamespaceMatrix]:
        """The view of a held entry brought up to the counters: as it is, with the vectors
        added since (if they are exactly what was counted), or read again."""
        held, changes, added, newest = state
        (counted,) = yield counters
        moved, appends = int(counted[0]), int(counted[1])
        with self.cache.lock:
            if held.covers(moved, appends) and held.fresh(now):
                return held.view()  # type: ignore[return-value]
        if moved == changes and appends > added and newest and held.fresh(now):
            rows, again = answers_of((yield Reads((select(newest), counters))))
            moved, appends = int(again[0][0]), int(again[0][1])
            if moved == changes and len(rows) == appends - added:
                with self.cache.lock:
                    if self.cache.get(key) is held and (held.changes, held.added) == (
                            changes, added):
                        held.append(rows)
                        held.added = appends
                        self.appended_loads += 1
                        self.cache.resized(key)
                        return held.view()  # type: ignore[return-value]
        return self._load(key, moved, appends, (yield select()), now)

    def _load(self, key: Key, changes: int, appends: int, rows: list[tuple[Any, ...]],
              now: float) -> _NamespaceMatrix:
        """Keep a fully read entry (unless one as recent is held, or it exceeds the
        bound); its view."""
        entry = _NamespaceMatrix(changes, appends, self._decode, now)
        entry.append(rows)
        with self.cache.lock:
            self.full_loads += 1
            held = self.cache.get(key)
            if isinstance(held, _NamespaceMatrix) and held.covers(changes, appends) and (
                    held.fresh(now)):
                return held.view()  # type: ignore[return-value]
            if entry.nbytes() <= self.cache.max_bytes:
                self.cache.put(key, entry)
            else:  # where the database can rank them, it does from now on
                self._appends[key] = sys.maxsize
                logger.info("search cache: %d untyped vectors under %r exceed the bound "
                            "(%d bytes): ranked unheld", entry.size, key[1][1],
                            self.cache.max_bytes)
            return entry.view()  # type: ignore[return-value]


def _ranked(cells: Sequence[_ScopeMatrix], now: float, query: Sequence[float],
            depth: int | None) -> list[tuple[int, float]]:
    """The ranking of the cells' rows: each cell's, merged."""
    unit = unit_vector(query)
    return _merged([
        _rank(cell.padded, cell.seqs, cell.expires if cell.soonest <= now else None, now,
              unit, depth)
        for cell in cells], depth)


def _merged(parts: list[list[tuple[int, float]]], depth: int | None
            ) -> list[tuple[int, float]]:
    """The best-first merge of the cells' rankings, one per record (the cells hold
    different records; a record held by two entries keeps its best): a record in the best
    `depth` overall is in the best `depth` of the cell holding it.

    Example:
        >>> _merged([[(4, 0.9), (2, 0.5)], [(7, 0.9), (3, 0.6)]], 3)
        [(4, 0.9), (7, 0.9), (3, 0.6)]
    """
    if len(parts) == 1:
        return parts[0]
    best: dict[int, float] = {}
    for seq, score in sorted((hit for part in parts for hit in part),
                             key=lambda hit: (-hit[1], hit[0])):
        if seq not in best:
            best[seq] = score
            if len(best) == depth:
                break
    return list(best.items())


def unit_vector(query: Sequence[float]) -> np.ndarray | None:
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
    due) has passed at `now`. `matrix` may hold spare rows after those of `seqs`."""
    if not len(seqs):
        return []
    scores = (np.zeros(len(seqs), np.float32) if unit is None
              else (matrix @ unit)[: len(seqs)])
    if expires is not None:
        live = expires > now
        seqs, scores = seqs[live], scores[live]
    return best_records(seqs, scores, depth)


def best_records(seqs: np.ndarray, scores: np.ndarray, depth: int | None
                 ) -> list[tuple[int, float]]:
    """Best-first (seq, score), one per record (max over its vectors); ties: older record
    first, wherever its rows are held.

    With `depth`, only the rows scoring at least the (4 x depth)-th best are sorted (every row
    tied with it too, so that ties still go to the older record), then those at least the
    twice-deeper one while they hold fewer than `depth` records (an item indexed on a list of
    texts has a vector for each, and alike ones crowd the best rows): the records of the
    best rows are the best records.

    Example:
        >>> best_records(np.array([5, 5, 5, 7, 9]), np.array([0.9, 0.8, 0.7, 0.6, 0.5]), 2)
        [(5, 0.9), (7, 0.6)]
        >>> best_records(np.array([9, 8, 7, 6, 1]), np.zeros(5), 1)
        [(1, 0.0)]
    """
    if depth == 0:
        return []
    rows = len(scores) if depth is None else depth * 4
    while True:
        if rows < len(scores):
            keep = at_least_kth(scores, rows)
            got_seqs, got = seqs[keep], scores[keep]
        else:
            got_seqs, got = seqs, scores
        order = np.lexsort((got_seqs, -got))
        best: dict[int, float] = {}
        for i in order:
            seq = int(got_seqs[i])
            if seq not in best:
                best[seq] = float(got[i])
                if depth is not None and len(best) == depth:
                    return list(best.items())
        if rows >= len(scores):
            return list(best.items())
        rows *= 2

