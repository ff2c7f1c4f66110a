"""Sign-bit sketches of the vectors of scopes too large for the exact matrices (SQLite).

A scope whose cells would hold more than the cache bound as float32 matrices
(`OversizedScopes`) keeps, per cell, one bit per dimension of each vector instead: whether
the coordinate is positive (48 bytes for 384 dimensions, a 32nd of the matrix). A search
scores every live row of the scope by the Hamming distance of its bits to the query's (a
few milliseconds per million rows), takes the `rescored` nearest, and ranks those exactly:
their float32 vectors are read from the database by seq and scored by cosine, max-pooled
per record as the exact regime does. Recall is what the rescoring misses: rows whose bits
disagree with the query's more than those of `rescored` others although their cosine is
higher. On vectors that cluster (as embeddings of texts do) the nearest rows share most
bits with the query; on random vectors, which have no such structure, recall falls
(docs/large-scopes.md has the figures).

The bits are written beside each vector (`memory_vectors.sign_bits`, made when the vector
is written), so a cell's first read fetches 48 bytes a vector, not 1,536; a vector written
before the column existed has its bits made from its embedding when read.

The entries live in the store's `CellCache` beside the others (one LRU, one byte bound)
and are kept valid by the cells' counters as the matrices are (`cells.CellFamily`). The
bits are held column by column (one array of 64-bit words per 64 dimensions), so a query's
distance to every row is one XOR and one population count per word.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.store.core.protocol import Plan, Sql
from langgraph_typed_memory.store.core.queries import ScopeRead
from langgraph_typed_memory.store.index.cells import CellCache, CellFamily
from langgraph_typed_memory.store.index.scopes import ScopeRows
from langgraph_typed_memory.store.index.vectors import (
    SQLITE_JOIN,
    Decode,
    Query,
    VectorRanking,
    best_records,
    scores_of,
    unit_vector,
)

__all__ = ["DEFAULT_RESCORED", "ScopeSketchCache", "SketchRanking", "sign_bits"]

logger = logging.getLogger(__name__)

DEFAULT_RESCORED = 1000
"""The candidates a sketch-ranked search rescores exactly (at least four times its depth):
the recall knob. Higher is slower (each is a vector read from the database) and nearer the
exact ranking."""
DEPTH_WHEN_ALL = 1000
"""The records a sketch-ranked search returns when the search asks for every one (a
search with a value filter): the exact regime ranks every row."""


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """Each row's signs, one bit per coordinate (1: positive), packed into 64-bit words:
    an (n, ceil(dims / 64)) uint64 array.

    Example:
        >>> sign_bits(np.array([[0.5, -1.0, 2.0], [-1.0, 0.0, 3.0]], np.float32))[:, 0] & 7
        array([5, 4], dtype=uint64)
    """
    packed = np.packbits(vectors > 0, axis=1, bitorder="little")
    room = -(-packed.shape[1] // 8) * 8
    if room != packed.shape[1]:
        packed = np.pad(packed, ((0, 0), (0, room - packed.shape[1])))
    return np.ascontiguousarray(packed).view(np.uint64)


def _words(rows: list[tuple[Any, ...]], decode: Decode) -> np.ndarray:
    """The bits of fetched (seq, bits, embedding, ...) rows: the stored bits, or where a row
    has none (written before they were kept), the bits of its embedding."""
    stored = [r[1] for r in rows]
    if all(bits is not None for bits in stored):
        return np.frombuffer(b"".join(stored), dtype=np.uint64).reshape(len(rows), -1)
    made = sign_bits(decode([r[2] for r in rows if r[1] is None]))
    out = np.zeros((len(rows), made.shape[1]), np.uint64)
    missing = np.array([bits is None for bits in stored])
    out[missing] = made
    if not missing.all():
        out[~missing] = np.frombuffer(b"".join(b for b in stored if b is not None),
                                      dtype=np.uint64).reshape(-1, made.shape[1])
    return out


class _ScopeSketch(ScopeRows):
    """A cell's vectors' sign bits, one array of words per 64 dimensions, beside their
    records' seqs and expiry times (`ScopeRows`)."""

    __slots__ = ("_decode", "_bits")

    def __init__(self, changes: int, added: int, logged: int, decode: Decode) -> None:
        super().__init__(changes, added, logged)
        self._decode = decode
        self._bits = np.zeros((0, 0), np.uint64)

    def _grow(self, room: int) -> None:
        super()._grow(room)
        bits = np.zeros((self._bits.shape[0], room), np.uint64)
        bits[:, : self.size] = self._bits[:, : self.size]
        self._bits = bits

    def _trim(self) -> None:
        super()._trim()
        self._bits = self._bits[:, : self.size]

    def nbytes(self) -> int:
        return super().nbytes() + int(self._bits.nbytes)

    def append(self, rows: list[tuple[Any, ...]]) -> None:
        """Add (seq, bits, embedding, expires_at) rows (the embedding only where the bits
        are None)."""
        if not rows:
            return
        words = _words(rows, self._decode)
        if not self.size:
            self._bits = np.zeros((words.shape[1], len(self._seqs)), np.uint64)
        start, end = self._place([r[0] for r in rows], [r[3] for r in rows])
        self._bits[:, start:end] = words.T
        self.size = end

    def distances(self, query: np.ndarray) -> np.ndarray:
        """The Hamming distance of each row's bits to the `query`'s words (uint16)."""
        out = np.zeros(self.size, np.uint16)
        word = np.empty(self.size, np.uint64)
        for column, bits in zip(self._bits, query, strict=True):
            np.bitwise_xor(column[: self.size], bits, out=word)
            out += np.bitwise_count(word)
        return out


class SketchRanking(VectorRanking):
    """A ranking of sketched cells rescored exactly. It holds no cells: the priors of the
    records it returns are read with them."""

    regime = "sketch"


def nearest(cells: Sequence[_ScopeSketch], now: float, query: np.ndarray, count: int
            ) -> np.ndarray:
    """The seqs of the live rows of `cells` whose bits are nearest the `query`'s: at least
    `count` rows (every one tied with the last), at most four times as many.

    Example:
        >>> cell = _ScopeSketch(0, 0, 0, lambda values: np.zeros((len(values), 64)))
        >>> bits = [np.uint64(v).tobytes() for v in (0b1111, 0b0001, 0b0011, 0b0000)]
        >>> cell.append([(s, b, None, None) for s, b in zip([3, 5, 7, 9], bits)])
        >>> nearest([cell], 0.0, np.array([0b0001], np.uint64), 2).tolist()
        [5, 7, 9]
    """
    found, seqs = [], []
    for cell in cells:
        if not cell.size:
            continue
        distance, held = cell.distances(query), cell.seqs
        live = cell.live(now)
        if live is not None:
            distance, held = distance[live], held[live]
        found.append(distance)
        seqs.append(held)
    if not found:
        return np.zeros(0, np.int64)
    distance, held = np.concatenate(found), np.concatenate(seqs)
    if len(held) > count:
        below = np.bincount(distance).cumsum()
        near = distance <= int(np.searchsorted(below, count))
        held = held[near] if int(near.sum()) <= 4 * count else held[
            np.argpartition(distance, count)[:count]]
    return np.unique(held)


class ScopeSketchCache(CellFamily[_ScopeSketch]):
    """Sign-bit sketches per scope cell, checked against the cells' counters each query;
    a search takes the nearest rows of the cells it sees together and ranks them exactly.

    Example:
        >>> cache = ScopeSketchCache(CellCache())
        >>> len(cache), cache.rescored
        (0, 1000)
    """

    def __init__(self, cache: CellCache, rescored: int = DEFAULT_RESCORED) -> None:
        if rescored < 1:
            raise ConfigurationError(f"rescored must be 1 or more (the candidates a search "
                                     f"of a large scope rescores exactly), not {rescored}")
        super().__init__(cache, "sketches", "appends")
        self.rescored = rescored

    def top_k(
        self, scope: ScopeRead, query: Query, depth: int | None, *, decode: Decode,
        in_list: Callable[[str, Sequence[Any]], tuple[str, list[Any]]],
    ) -> Plan[SketchRanking | None]:
        """Best-first (seq, cosine) among the scope's rows that have not expired, one per
        record (max over its vectors), at most `depth` (`DEPTH_WHEN_ALL` when None): the
        rows nearest by their bits (`nearest`), rescored from their vectors in the database.
        `decode` turns fetched embeddings into a float32 matrix, `in_list` is the dialect's
        `column IN (...)`. Expired rows are left out by the cells' expiry times, as the
        exact regime does."""
        def select(where: str, params: list[Any]) -> Sql:
            return Sql("SELECT v.seq, v.sign_bits, CASE WHEN v.sign_bits IS NULL "
                       f"THEN v.embedding END, m.expires_at FROM memories m {SQLITE_JOIN} "
                       f"WHERE {where}", params)

        _, counted, loaded = yield from self.counted_with_cold(scope, select)
        cells = tuple((yield from self.views(
            scope, counted, select,
            lambda changes, added, logged: _ScopeSketch(changes, added, logged, decode),
            loaded=loaded)))
        vector = (yield from query()) if callable(query) else query
        if vector is None:
            return None
        wanted = DEPTH_WHEN_ALL if depth is None else depth
        unit = unit_vector(vector)
        if wanted < 1 or not cells:
            return SketchRanking([], ())
        if unit is None:  # a zero query: every row scores 0, the oldest records first
            live = [cell.seqs if cell.live(scope.now) is None
                    else cell.seqs[cell.live(scope.now)] for cell in cells]
            oldest = np.unique(np.concatenate(live))[:wanted]
            return SketchRanking([(int(seq), 0.0) for seq in oldest], ())
        seqs = nearest(cells, scope.now, sign_bits(unit[None, :])[0],
                       max(self.rescored, 4 * wanted))
        if not len(seqs):
            return SketchRanking([], ())
        clause, params = in_list("seq", seqs.tolist())
        rows = yield Sql(f"SELECT seq, embedding FROM memory_vectors WHERE {clause}", params)
        if not rows:
            return SketchRanking([], ())
        held = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        scores = scores_of(decode([r[1] for r in rows]), unit)
        return SketchRanking(best_records(held, scores, wanted), ())
