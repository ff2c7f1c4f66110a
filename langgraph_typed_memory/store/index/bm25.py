"""The lexical ranking of both backends: Okapi BM25 over the postings of the cells a scope sees.

Each database tokenizes and filters: SQLite with FTS5's `porter unicode61` tokenizer
(`index/fts5`), Postgres with `to_tsvector('english', ...)` (`index/tsvector`), each keeping
the postings of the rows a scope sees, per cell (`ScopePostings`). The score is computed here
alone, so the two backends rank alike whenever their tokens agree.

For the distinct query tokens t, a row scores

    sum over t of  idf(t) * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl))

with k1 = 1.2 and b = 0.75, f the occurrences of t in the row and dl the row's token count.
The IDF is ln(1 + (N - df + 0.5) / (df + 0.5)) (Lucene's form): positive for every df, and
falling as df grows, so holding a common word still adds a little. The classic
ln((N - df + 0.5) / (df + 0.5)) turns negative for a word in more than half the rows, which
would make holding it cost a row its rank (FTS5 and `rank_bm25` clamp it instead, each in
its own way).

N, avgdl and each df are the scope's: counted over the live rows of the cells it sees (its
own cell and the wider ones: tenant-wide, user-wide, agent-wide), as the search filters them
(status, expiry), never over the whole table. Another tenant's or another user's rows change
nothing in a scope's ranking, and neither do expired or superseded records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from langgraph_typed_memory.store.core.protocol import Plan, Sql
from langgraph_typed_memory.store.core.queries import Cell, ScopeRead
from langgraph_typed_memory.store.index.cells import CellCache, CellFamily, Counted
from langgraph_typed_memory.store.index.postings import ScopePostings, at_least_kth

__all__ = ["B", "K1", "PostingsCache", "bm25_ranked", "idf"]

K1, B = 1.2, 0.75
"""Okapi BM25's term-frequency saturation and length normalization."""


def idf(rows: int, df: int) -> float:
    """The weight of a token held by `df` of `rows` rows: ln(1 + (N - df + 0.5) / (df + 0.5)).

    Example (a token in every row still counts a little):
        >>> round(idf(10, 1), 4), round(idf(10, 10), 4)
        (1.9924, 0.0465)
    """
    return math.log(1.0 + (rows - df + 0.5) / (df + 0.5))


def bm25_ranked(
    cells: Sequence[ScopePostings], tokens: Sequence[str], now: float, depth: int | None,
) -> list[tuple[int, float]]:
    """The `depth` best (seq, score) among the rows of `cells` live at `now` holding any of
    `tokens` (every such row when `depth` is None), by BM25 with the statistics of those
    cells' live rows; best first, ties: the older row (lower seq) first.

    A token given twice counts once. Each row's terms are added in the order of `tokens`, so
    rows holding the same tokens as often, with the same length, tie exactly, whichever cell
    holds them.

    Example (four live rows of 3, 4, 3 and 2 tokens; row 12 has expired and counts nowhere):
        >>> cell = ScopePostings(0, 0)
        >>> cell.append([(7, ["red", "tulip"], [1, 2], None), (9, ["tulip", "pot"], [1, 3], None),
        ...              (10, ["rose", "pot"], [1, 2], None), (11, ["red"], [2], None),
        ...              (12, ["tulip"], [1], 5.0)])
        >>> [(seq, round(score, 4)) for seq, score in bm25_ranked(
        ...     [cell], ["tulip", "rose", "tulip"], now=10.0, depth=5)]
        [(10, 1.204), (7, 0.9531), (9, 0.61)]
    """
    if depth is not None and depth < 1:
        return []
    tokens = list(dict.fromkeys(tokens))
    lives = [cell.live(now) for cell in cells]
    rows = length = 0
    for cell, live in zip(cells, lives, strict=True):
        rows += cell.size if live is None else int(np.count_nonzero(live))
        length += int(cell.lengths.sum(dtype=np.int64, where=True if live is None else live))
    if not tokens or not length:
        return []
    avgdl = length / rows
    held = [[cell.holding(token, live) for token in tokens]
            for cell, live in zip(cells, lives, strict=True)]
    weights = [idf(rows, sum(len(postings[t][0]) for postings in held))
               for t in range(len(tokens))]
    seqs, scores = [], []
    for cell, postings in zip(cells, held, strict=True):
        score = np.zeros(cell.size)
        hit = np.zeros(cell.size, bool)
        lengths = cell.lengths
        for weight, (found, counts) in zip(weights, postings, strict=True):
            if len(found):
                f = counts.astype(np.float64)
                norm = K1 * ((1.0 - B) + B * (lengths[found] / avgdl))
                score[found] += weight * (f * (K1 + 1.0)) / (f + norm)
                hit[found] = True
        found = np.flatnonzero(hit)
        best = score[found]
        if depth is not None and len(found) > depth:  # a cell's rows past its depth-th: out
            kept = at_least_kth(best, depth)
            found, best = found[kept], best[kept]
        seqs.append(cell.seqs[found])
        scores.append(best)
    if not seqs:
        return []
    all_seqs, all_scores = np.concatenate(seqs), np.concatenate(scores)
    order = np.lexsort((all_seqs, -all_scores))[:depth]
    return list(zip(all_seqs[order].tolist(), all_scores[order].tolist(), strict=True))


class PostingsCache(CellFamily[ScopePostings]):
    """Postings per scope cell, checked against the cells' counters each query (`inserts`:
    the records added); a search ranks the cells it sees together with `bm25_ranked`.

    A backend's cache gives `SELECT`, the statement of a cell's rows (`{where}` on alias
    `m`), the `entry` class that appends those rows, and `prepare`, a plan turning the rows
    into what `entry.append` takes, when they need one (SQLite tokenizes the texts that
    keep no tokens).

    Example:
        >>> class Cache(PostingsCache):
        ...     SELECT = "SELECT m.seq FROM memories m WHERE {where}"
        >>> Cache(CellCache()).select("m.seq > ?", [3]).text
        'SELECT m.seq FROM memories m WHERE m.seq > ?'
    """

    SELECT: str
    entry: type[ScopePostings] = ScopePostings

    def __init__(self, cache: CellCache,
                 prepare: Callable[[list[tuple[Any, ...]]], Plan[Any]] | None = None) -> None:
        super().__init__(cache, "postings", "inserts")
        self._prepare = prepare

    def select(self, where: str, params: list[Any]) -> Sql:
        """The statement of a cell's rows."""
        return Sql(self.SELECT.format(where=where), params)

    def ranked(
        self, scope: ScopeRead, tokens: Sequence[str], depth: int | None,
        counted: dict[Cell, Counted], loaded: dict[Cell, list[tuple[Any, ...]]] | None = None,
    ) -> Plan[list[tuple[int, float]]]:
        """`bm25_ranked` over the scope's rows for the query's `tokens`, its cells brought up
        to date first from `counted`, their counters as the caller read them
        (`counters_sql`), with `loaded` the rows of `cold_loads` read after them."""
        cells = yield from self.views(scope, counted, self.select, self.entry,
                                      prepare=self._prepare, loaded=loaded)
        return bm25_ranked(cells, tokens, scope.now, depth)
