"""Postgres lexical ranking on cached postings per scope cell, valid while its counters hold.

The ranking is `PostgresDialect.lexical`'s: a row scores the sum of the BM25 IDFs of the
query lexemes it holds (df counted among the scope's live rows), plus 0.01 x `ts_rank_cd`
for the best 2 x depth by that sum. As one statement it reads every row holding a query
term, ~2.5 us each, most of it the heap fetch of a wide row to test the scope, and common
words match thousands of rows (the 100k scope of the latency benchmark: ~10 ms of a
fan-out's ~19). Here each scope cell's rows are read once, as (seq, lexemes, occurrences,
expiry), into postings (lexeme -> row numbers and occurrence counts) kept in this process and
brought up to date like the vector matrices (`scope_cache`: new records are fetched alone,
changed ones masked and fetched again); a query adds IDFs over a few postings arrays in
numpy, with each term's df summed over the cells the scope sees.

`ts_rank_cd` is computed here too. For a query of terms joined by `|`, every occurrence of a
query lexeme is a cover of its own, worth 1 / (1 / 0.1f) at the default weight of an
unweighted position (`to_tsvector` gives every lexeme weight D), summed in double precision
and returned as float4; two query lexemes never share a position under the `english`
configuration (one lexeme per token). So the rank is a function of the number of occurrences
of the query's distinct lexemes (`_cover_densities`); the tests compare the whole ranking with
the statement's on random corpora.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from langgraph_typed_memory.store.cell_cache import CellCache, CellFamily, Counted
from langgraph_typed_memory.store.protocol import Plan, Sql
from langgraph_typed_memory.store.queries import Cell, ScopeRead
from langgraph_typed_memory.store.scope_cache import ScopeRows

__all__ = ["ScopeLexicalCache", "ScopePostings", "Segment", "at_least_kth", "ranked"]

_NONE = np.zeros(0, np.int32)


_POSITION = 1.0 / (1.0 / float(np.float32(0.1)))
"""One occurrence's cover density: Postgres' weight of a D position is the float 0.1f."""


@lru_cache(maxsize=64)
def _cover_densities(bits: int) -> np.ndarray:
    """`ts_rank_cd` of a row holding the query's lexemes k times in all, for k in
    0 .. 2^bits - 1 (one table per bit length serves every row of a query): k positions
    added in double precision, the sum returned as float4.

    Example:
        >>> _cover_densities(2)[[0, 3]].tolist()
        [0.0, 0.30000001192092896]
    """
    sums = np.zeros(1 << bits)
    for k in range(1, len(sums)):
        sums[k] = sums[k - 1] + _POSITION
    return sums.astype(np.float32).astype(np.float64)


def at_least_kth(scores: np.ndarray, k: int) -> np.ndarray:
    """Which of `scores` are at least the k-th best (ties included: possibly more than k).

    Example:
        >>> at_least_kth(np.array([0.5, 2.0, 1.0, 1.0]), 2).tolist()
        [False, True, True, True]
    """
    return scores >= -np.partition(-scores, k - 1)[k - 1]  # type: ignore[no-any-return]


TERM_OVERHEAD = 120
"""Bytes a lexeme costs in a segment beyond its postings (its key and its slot in the
segment's dict), counted in an entry's size."""


@dataclass(frozen=True, slots=True)
class Segment:
    """The postings of some rows of a cell, in flat arrays: lexeme `terms[t]`'s postings
    are `rows[starts[t] : starts[t + 1]]` (the rows holding it, ascending) with its
    occurrences in each (`counts`, the same slice). Never changed once made.

    Example:
        >>> seg = Segment.of(["red", "tulip"], [0, 1, 3], [0, 0, 1], [1, 2, 1])
        >>> [a.tolist() for a in seg.postings("tulip")]
        [[0, 1], [2, 1]]
    """

    terms: dict[str, int]
    starts: np.ndarray
    rows: np.ndarray
    counts: np.ndarray

    @staticmethod
    def of(terms: Sequence[str], starts: Sequence[int] | np.ndarray,
           rows: Sequence[int] | np.ndarray, counts: Sequence[int] | np.ndarray) -> Segment:
        return Segment({t: i for i, t in enumerate(terms)}, np.asarray(starts, np.int64),
                       np.asarray(rows, np.int32), np.asarray(counts, np.int32))

    def postings(self, lexeme: str) -> tuple[np.ndarray, np.ndarray] | None:
        t = self.terms.get(lexeme)
        if t is None:
            return None
        a, b = self.starts[t], self.starts[t + 1]
        return self.rows[a:b], self.counts[a:b]

    def nbytes(self) -> int:
        return (int(self.starts.nbytes + self.rows.nbytes + self.counts.nbytes)
                + TERM_OVERHEAD * len(self.terms))

    def merged(self, later: Segment) -> Segment:
        """One segment of this one's rows and `later`'s (rows after these)."""
        terms = dict(self.terms)
        for lexeme in later.terms:
            terms.setdefault(lexeme, len(terms))
        moved = np.fromiter((terms[t] for t in later.terms), np.int64, len(later.terms))
        ids = np.concatenate((np.repeat(np.arange(len(self.terms)), np.diff(self.starts)),
                              np.repeat(moved, np.diff(later.starts))))
        order = np.argsort(ids, kind="stable")  # a lexeme's rows stay ascending
        starts = np.zeros(len(terms) + 1, np.int64)
        np.cumsum(np.bincount(ids, minlength=len(terms)), out=starts[1:])
        return Segment(terms, starts, np.concatenate((self.rows, later.rows))[order],
                       np.concatenate((self.counts, later.counts))[order])


class ScopePostings(ScopeRows):
    """A cell's rows (seq, expiry: `ScopeRows`; length) and, per lexeme, the numbers of the
    rows holding it (ascending) with its occurrences in each, in `Segment`s: one per load
    or append, the last two merged while the last is at least half the one before (so a
    cell of n rows has at most log2(n) + 1, and a row is merged about log2(n) times). A
    segment is never changed; a view keeps the list of segments it was cut with."""

    __slots__ = ("_segments", "_lengths", "_posting_bytes")

    def __init__(self, changes: int, added: int, logged: int = 0) -> None:
        super().__init__(changes, added, logged)
        self._segments: list[Segment] = []
        self._lengths = np.zeros(0, np.int32)
        self._posting_bytes = 0

    @property
    def lengths(self) -> np.ndarray:
        return self._lengths[: self.size]

    def _grow(self, room: int) -> None:
        super()._grow(room)
        self._lengths = np.resize(self._lengths, room)

    def _trim(self) -> None:
        super()._trim()
        self._lengths = self._lengths[: self.size]
        self._segments = list(self._segments)

    def nbytes(self) -> int:
        return super().nbytes() + int(self._lengths.nbytes) + self._posting_bytes

    def holding(self, lexeme: str | None, live: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The numbers of the rows holding `lexeme` (ascending) and its occurrences in each,
        kept to the rows `live` marks (None: all)."""
        if lexeme is None:
            return _NONE, _NONE
        found = [held for seg in self._segments if (held := seg.postings(lexeme)) is not None]
        if not found:
            return _NONE, _NONE
        rows, counts = found[0] if len(found) == 1 else (
            np.concatenate([r for r, _ in found]), np.concatenate([c for _, c in found]))
        if live is not None:
            alive = live[rows]
            rows, counts = rows[alive], counts[alive]
        return rows, counts

    def append(self, rows: list[tuple[Any, ...]]) -> None:
        """Add (seq, lexemes, occurrences, expires_at) rows, a row's length its count of
        distinct lexemes (Postgres' `length(tsvector)`)."""
        terms: dict[str, int] = {}
        ids: list[int] = []
        owners: list[int] = []
        counts: list[int] = []
        for row, (_, lexemes, occurrences, _) in enumerate(rows):
            ids.extend([terms.setdefault(lexeme, len(terms)) for lexeme in lexemes])
            owners.extend([row] * len(lexemes))
            counts.extend(occurrences)
        by_term = np.asarray(ids, np.int64)
        order = np.argsort(by_term, kind="stable")  # each lexeme's rows ascending
        starts = np.zeros(len(terms) + 1, np.int64)
        np.cumsum(np.bincount(by_term, minlength=len(terms)), out=starts[1:])
        self.add([r[0] for r in rows], [r[3] for r in rows], [len(r[1]) for r in rows],
                 Segment(terms, starts, np.asarray(owners, np.int32)[order],
                         np.asarray(counts, np.int32)[order]))

    def add(
        self, seqs: Sequence[int], expires: Sequence[float | None],
        lengths: Sequence[int] | np.ndarray, postings: Segment,
    ) -> None:
        """Add rows after those held: their seqs, expiry times and lengths, and their
        postings (rows numbered from 0 in these rows)."""
        if not len(seqs):
            return
        start, end = self._place(seqs, expires)
        self._lengths[start:end] = lengths
        if start:
            postings = Segment(postings.terms, postings.starts, postings.rows + np.int32(start),
                               postings.counts)
        segments = self._segments
        segments.append(postings)
        while len(segments) > 1 and len(segments[-1].rows) * 2 >= len(segments[-2].rows):
            later = segments.pop()
            segments[-1] = segments[-1].merged(later)
        self._posting_bytes = sum(seg.nbytes() for seg in segments)
        self.size = end


_SELECT = ("SELECT m.seq, tsvector_to_array(m.search_tsv), "
           "array(SELECT cardinality(u.positions) FROM unnest(m.search_tsv) AS u), "
           "m.expires_at FROM memories m WHERE {where}")
"""A scope's rows for the postings: lexemes and their occurrence counts, in the tsvector's
order both. Loading the 75k facts of the latency benchmark's scope takes ~2 s (half the
fetch, half the postings; measured once): a reload (the first search, a trimmed log, dead
rows past a quarter) costs that much once."""


class ScopeLexicalCache(CellFamily[ScopePostings]):
    """Postings per scope cell, checked against the cells' counters each query; a search
    ranks the cells it sees together.

    Example:
        >>> cache = ScopeLexicalCache(CellCache())
        >>> len(cache), cache.full_loads
        (0, 0)
    """

    def __init__(self, cache: CellCache) -> None:
        super().__init__(cache, "postings", "inserts")

    def ranked(
        self, scope: ScopeRead, lexemes: Sequence[str | None], total: float, depth: int,
        counted: dict[Cell, Counted],
    ) -> Plan[list[tuple[int, float]]]:
        """`ranked` over the scope's rows, its cells brought up to date first from
        `counted`, their counters as the caller read them (`counters_sql`)."""
        cells = yield from self.views(
            scope, counted, lambda where, params: Sql(_SELECT.format(where=where), params),
            ScopePostings)
        return ranked(cells, lexemes, total, scope.now, depth)


def ranked(
    cells: Sequence[ScopePostings], lexemes: Sequence[str | None], total: float, now: float,
    depth: int,
) -> list[tuple[int, float]]:
    """The `depth` best (seq, score) among the rows of `cells` live at `now` holding any of
    `lexemes` (one per query term, None for a term without one), as
    `PostgresDialect.lexical` ranks them. A term's IDF is ln(1 + (N - df + 0.5) / (df + 0.5)),
    df its rows in all the cells, N the larger of `total` and twice the largest df; a lexeme
    repeated counts once; sums are added in term order, so rows holding the same terms tie
    exactly. The best 2 x depth by that sum (shorter text, then older row, first) get
    0.01 x `ts_rank_cd`, and are ordered by the total, then seq.

    Example (row 12 has expired):
        >>> entry = ScopePostings(0, 0)
        >>> entry.append([(7, ["red", "tulip"], [1, 2], None), (9, ["tulip"], [1], None),
        ...               (12, ["rose"], [1], 5.0)])
        >>> [(seq, round(score, 4)) for seq, score in ranked(
        ...     [entry], ["tulip", None, "rose"], total=100.0, now=10.0, depth=5)]
        [(7, 3.7008), (9, 3.6998)]
    """
    if depth < 1:
        return []
    holders = []
    for cell in cells:
        live = cell.live(now)
        holders.append([cell.holding(lexeme, live) for lexeme in lexemes])
    df = [sum(len(held[t][0]) for held in holders) for t in range(len(lexemes))]
    n = max(total, 2 * max(df, default=0), 1)
    weight = [math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df]
    keep = 2 * depth
    parts = []  # per cell: its best rows by the IDF sum, with their sums
    for cell, held in zip(cells, holders, strict=True):
        idf = np.zeros(cell.size)
        hit = np.zeros(cell.size, bool)
        counted: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for t, (lexeme, (rows, counts)) in enumerate(zip(lexemes, held, strict=True)):
            hit[rows] = True
            if lexeme is not None and lexeme not in counted:
                counted[lexeme] = (rows, counts)
                idf[rows] += weight[t]
        found = np.flatnonzero(hit)
        scores = idf[found]
        if len(found) > keep:
            kept = at_least_kth(scores, keep)
            found, scores = found[kept], scores[kept]
        parts.append((cell, found, scores, counted))
    seqs = np.concatenate([cell.seqs[found] for cell, found, _, _ in parts] or [_NONE])
    lengths = np.concatenate([cell.lengths[found] for cell, found, _, _ in parts] or [_NONE])
    scores = np.concatenate([s for _, _, s, _ in parts] or [np.zeros(0)])
    best = np.lexsort((seqs, lengths, -scores))[:keep]
    # Occurrences of the query's lexemes, for the kept rows only (postings rows ascend).
    occurrences = np.zeros(len(best), np.int64)
    start = 0
    for _, found, _, counted in parts:
        mine = (best >= start) & (best < start + len(found))
        rows_kept = found[best[mine] - start]
        got = np.zeros(len(rows_kept), np.int64)
        for rows, counts in counted.values():
            if len(rows):
                at = np.minimum(np.searchsorted(rows, rows_kept), len(rows) - 1)
                holds = rows[at] == rows_kept
                got[holds] += counts[at[holds]]
        occurrences[mine] = got
        start += len(found)
    seqs, scores = seqs[best], scores[best]
    densities = _cover_densities(int(occurrences.max(initial=0)).bit_length())
    scores = scores + 0.01 * densities[occurrences]
    order = np.lexsort((seqs, -scores))[:depth]
    return list(zip(seqs[order].tolist(), scores[order].tolist(), strict=True))
