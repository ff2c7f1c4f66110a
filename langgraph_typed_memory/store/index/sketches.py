"""Sign-bit sketches of the vectors of scopes too large for the exact matrices.

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

Where the bits come from is the backend's (`SketchSql`). SQLite writes them beside each
vector (`memory_vectors.sign_bits`, made when the vector is written), so a cell's first read
fetches 48 bytes a vector, not 1,536; a vector written before the column existed has its
bits made from its embedding when read. Postgres makes them in the server as the cell is
read (pgvector's `binary_quantize`), so only the bits leave it.

The entries live in the store's `CellCache` beside the others (one LRU, one byte bound)
and are kept valid by the cells' counters as the matrices are (`cells.CellFamily`). The
bits are held column by column (one array of 64-bit words per 64 dimensions), so a query's
distance to every row is one XOR and one population count per word.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.store.core.protocol import Plan, Sql
from langgraph_typed_memory.store.core.queries import ScopeRead
from langgraph_typed_memory.store.index.cells import CellCache, CellFamily
from langgraph_typed_memory.store.index.scopes import ScopeRows
from langgraph_typed_memory.store.index.vectors import (
    Decode,
    Query,
    VectorRanking,
    best_records,
    unit_vector,
)

__all__ = ["DEFAULT_RESCORED", "Rescore", "ScopeSketchCache", "SketchRanking", "SketchSql",
           "sign_bits"]

logger = logging.getLogger(__name__)

DEFAULT_RESCORED = 500
"""The candidates a sketch-ranked search rescores exactly (at least four times its depth):
the recall knob. Higher is slower (each is a vector read from the database) and nearer the
exact ranking. On a scope of a million clustered memories (docs/large-scopes.md) 500 found
0.967 of the true top 10 where 1,000 found 0.971, and the fan-out took 9 ms less."""
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
    return _in_words(np.packbits(vectors > 0, axis=1, bitorder="little"))


def _in_words(packed: np.ndarray) -> np.ndarray:
    """Rows of bytes padded to whole 64-bit words, as (n, words) uint64."""
    room = -(-packed.shape[1] // 8) * 8
    if room != packed.shape[1]:
        packed = np.pad(packed, ((0, 0), (0, room - packed.shape[1])))
    return np.ascontiguousarray(packed).view(np.uint64)


@dataclass(frozen=True, slots=True)
class SketchSql:
    """How a backend reads sketched cells: `bits` and `unbitted` are the expressions of a
    vector's bits and of its embedding where it has none (over `memories m` `join`ed to
    `memory_vectors v`), and `msb_first` says the bits come first dimension in the byte's
    highest bit (Postgres' `bit` type), where `sign_bits` puts it in the lowest."""

    bits: str
    unbitted: str
    join: str
    msb_first: bool = False


Rescore = Callable[[list[int], np.ndarray], Plan[tuple[np.ndarray, np.ndarray]]]
"""A dialect's exact rescoring of the candidates: the seqs of the vectors of the records
given and each one's cosine with the query's unit vector."""

_REVERSED = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], np.uint8)
"""Each byte with its bits in the other order."""


def _stored_words(stored: list[Any], msb_first: bool) -> np.ndarray:
    """Bits as fetched (bytes of one vector each) as `sign_bits` packs them: each byte's
    bits reversed if they came highest first, each row padded to whole 64-bit words.

    Example (dimensions 0 and 2 positive, sent highest bit first):
        >>> _stored_words([bytes([0b10100000])], msb_first=True)[0, 0]
        np.uint64(5)
    """
    raw = np.frombuffer(b"".join(bytes(b) for b in stored), np.uint8).reshape(len(stored), -1)
    return _in_words(_REVERSED[raw] if msb_first else raw)


def _words(rows: list[tuple[Any, ...]], decode: Decode, msb_first: bool) -> np.ndarray:
    """The bits of fetched (seq, bits, embedding, ...) rows: the stored bits, or where a row
    has none (written before they were kept), the bits of its embedding."""
    stored = [r[1] for r in rows]
    if all(bits is not None for bits in stored):
        return _stored_words(stored, msb_first)
    made = sign_bits(decode([r[2] for r in rows if r[1] is None]))
    out = np.zeros((len(rows), made.shape[1]), np.uint64)
    missing = np.array([bits is None for bits in stored])
    out[missing] = made
    if not missing.all():
        out[~missing] = _stored_words([b for b in stored if b is not None], msb_first)
    return out


class _ScopeSketch(ScopeRows):
    """A cell's vectors' sign bits, one array of words per 64 dimensions, beside their
    records' seqs and expiry times (`ScopeRows`)."""

    __slots__ = ("_decode", "_msb_first", "_bits")

    def __init__(self, changes: int, added: int, logged: int, decode: Decode,
                 msb_first: bool = False) -> None:
        super().__init__(changes, added, logged)
        self._decode, self._msb_first = decode, msb_first
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
        words = _words(rows, self._decode, self._msb_first)
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
    """The seqs of the `count` live rows of `cells` whose bits are nearest the `query`'s
    (fewer if they hold fewer), in seq order. Rows as near as the farthest taken are taken
    oldest first, so the same rows give the same candidates.

    Example:
        >>> cell = _ScopeSketch(0, 0, 0, lambda values: np.zeros((len(values), 64)))
        >>> bits = [np.uint64(v).tobytes() for v in (0b1111, 0b0001, 0b0011, 0b0000)]
        >>> cell.append([(s, b, None, None) for s, b in zip([3, 5, 7, 9], bits)])
        >>> nearest([cell], 0.0, np.array([0b0001], np.uint64), 2).tolist()
        [5, 7]
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
        edge = int(np.searchsorted(np.bincount(distance).cumsum(), count))
        inside = held[distance < edge]
        tied = held[distance == edge]
        room = count - len(inside)
        held = np.concatenate([inside, np.partition(tied, room - 1)[:room]])
    return np.unique(held)


class ScopeSketchCache(CellFamily[_ScopeSketch]):
    """Sign-bit sketches per scope cell, checked against the cells' counters each query;
    a search takes the nearest rows of the cells it sees together and ranks them exactly.

    Example:
        >>> cache = ScopeSketchCache(CellCache(), SketchSql("v.bits", "NULL", "JOIN v"))
        >>> len(cache), cache.rescored
        (0, 500)
    """

    def __init__(self, cache: CellCache, sql: SketchSql, rescored: int = DEFAULT_RESCORED
                 ) -> None:
        if rescored < 1:
            raise ConfigurationError(f"rescored must be 1 or more (the candidates a search "
                                     f"of a large scope rescores exactly), not {rescored}")
        super().__init__(cache, "sketches", "appends")
        self.rescored, self.sql = rescored, sql

    def top_k(
        self, scope: ScopeRead, query: Query, depth: int | None, *, decode: Decode,
        rescore: Rescore,
    ) -> Plan[SketchRanking | None]:
        """Best-first (seq, cosine) among the scope's rows that have not expired, one per
        record (max over its vectors), at most `depth` (`DEPTH_WHEN_ALL` when None): the
        rows nearest by their bits (`nearest`), rescored from their vectors in the database
        by the dialect's `rescore`. `decode` turns fetched embeddings into a float32 matrix.
        Expired rows are left out by the cells' expiry times, as the exact regime does."""
        sql = self.sql

        def select(where: str, params: list[Any]) -> Sql:
            return Sql(f"SELECT v.seq, {sql.bits}, {sql.unbitted}, m.expires_at "
                       f"FROM memories m {sql.join} WHERE {where}", params)

        _, counted, loaded = yield from self.counted_with_cold(scope, select)
        cells = tuple((yield from self.views(
            scope, counted, select,
            lambda changes, added, logged: _ScopeSketch(changes, added, logged, decode,
                                                        sql.msb_first),
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
        held, scores = yield from rescore(seqs.tolist(), unit)
        return SketchRanking(best_records(held, scores, wanted), ())
