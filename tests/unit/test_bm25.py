"""The one lexical ranking (`bm25_ranked`) against `rank_bm25.BM25Okapi` on the same tokens.

`rank_bm25` scores a document from its own corpus statistics with the classic IDF, floored at
a share of the mean IDF where it turns negative; `_Reference` gives it this project's IDF,
ln(1 + (N - df + 0.5) / (df + 0.5)), and k1 = 1.2, b = 0.75. Its corpus is the live rows only,
so the statistics the ranking counts (N, avgdl, df: over the scope's live rows) are checked
too. The random corpora have words in more than half the rows, where the two IDFs differ
(checked: with `rank_bm25`'s own IDF the scores would not match), repeated words, empty rows,
expired and masked rows, and rows split over several cells as a scope sees them.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from langgraph_typed_memory.store.index.bm25 import K1, B, bm25_ranked, idf
from langgraph_typed_memory.store.index.postings import ScopePostings

NOW = 100.0
WORDS = ["common", "often"] + [f"w{i}" for i in range(40)]
WEIGHTS = [30.0, 12.0] + [1.0 / (rank + 1) for rank in range(40)]


class _Reference(BM25Okapi):
    """`rank_bm25`'s BM25 with the ranking's IDF."""

    def __init__(self, corpus: list[list[str]]) -> None:
        super().__init__(corpus, k1=K1, b=B)

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {word: math.log(1 + (self.corpus_size - df + 0.5) / (df + 0.5))
                    for word, df in nd.items()}


def _rows(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """Random rows: seq, tokens (with repeats; some rows empty), expiry."""
    rows = []
    for seq in range(1, count + 1):
        tokens = [] if rng.random() < 0.05 else rng.choices(WORDS, WEIGHTS, k=rng.randint(1, 14))
        expires = rng.choice([None] * 6 + [NOW - 1.0, NOW + 1.0])
        rows.append({"seq": seq, "tokens": tokens, "expires": expires})
    return rows


def _cells(rows: list[dict[str, Any]], rng: random.Random, count: int) -> list[ScopePostings]:
    """The rows spread over `count` cells, each appended in a few chunks, a few rows masked
    (as a changed record is) and appended again."""
    parts: list[list[dict[str, Any]]] = [[] for _ in range(count)]
    for row in rows:
        parts[rng.randrange(count)].append(row)
    cells = []
    for part in parts:
        cell = ScopePostings(0, 0)
        at = 0
        while at < len(part):
            step = rng.randint(1, 60)
            cell.append([_posting(row) for row in part[at: at + step]])
            at += step
        changed = rng.sample(part, min(2, len(part)))
        if changed:
            cell.mask([row["seq"] for row in changed])
            cell.append([_posting(row) for row in changed])
        cells.append(cell)
    return cells


def _posting(row: dict[str, Any]) -> tuple[Any, ...]:
    counts: dict[str, int] = {}
    for token in row["tokens"]:
        counts[token] = counts.get(token, 0) + 1
    return row["seq"], list(counts), list(counts.values()), row["expires"]


def _live(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["expires"] is None or r["expires"] > NOW]


@pytest.mark.parametrize("seed", range(6))
def test_scores_equal_rank_bm25_with_the_same_idf(seed: int) -> None:
    rng = random.Random(seed)
    rows = _rows(rng, 400)
    live = _live(rows)
    reference = _Reference([r["tokens"] for r in live])
    cells = _cells(rows, rng, rng.randint(1, 4))
    hits = 0
    for _ in range(40):
        query = list(dict.fromkeys(rng.choices(WORDS + ["absent"], k=rng.randint(1, 5))))
        expected = reference.get_scores(query)
        holds = {r["seq"] for r in live if set(query) & set(r["tokens"])}
        got = bm25_ranked(cells, query, NOW, None)
        assert {seq for seq, _ in got} == holds
        by_seq = dict(zip([r["seq"] for r in live], expected.tolist(), strict=True))
        for seq, score in got:
            assert math.isclose(score, by_seq[seq], rel_tol=1e-12), (query, seq)
        # best first, ties (equal scores: the same tokens as often, the same length) by seq
        assert got == sorted(got, key=lambda hit: (-hit[1], hit[0]))
        for depth in (1, 3, 10):
            assert bm25_ranked(cells, query, NOW, depth) == got[:depth]
        hits += len(got)
    assert hits > 500
    # The corpus holds words where rank_bm25's own IDF differs from this one (a word in more
    # than half the rows): its scores would fail the comparison above.
    own = BM25Okapi([r["tokens"] for r in live], k1=K1, b=B).get_scores(["common"])
    assert not np.allclose(own, reference.get_scores(["common"]))


def test_a_token_given_twice_counts_once() -> None:
    rows = _rows(random.Random(9), 200)
    cells = _cells(rows, random.Random(10), 2)
    assert bm25_ranked(cells, ["w1", "common", "w1"], NOW, 20) == \
        bm25_ranked(cells, ["w1", "common"], NOW, 20)


def test_statistics_are_the_live_rows_of_the_cells_given() -> None:
    """N, avgdl and df count the cells given (a scope's), live at `now`: a cell the scope does
    not see changes nothing, one it sees changes the weights; a row that expires leaves the
    statistics too."""
    rng = random.Random(4)
    mine = _cells(_rows(rng, 150), rng, 2)
    other = ScopePostings(0, 0)
    other.append([(1000 + i, ["w2", "common"], [1, 1], None) for i in range(500)])
    query = ["w2", "w3"]
    alone = bm25_ranked(mine, query, NOW, None)
    assert alone and bm25_ranked(mine, query, NOW, None) == alone
    together = bm25_ranked([*mine, other], query, NOW, None)
    assert [hit for hit in together if hit[0] < 1000] != alone  # w2 got common: weights moved
    later = bm25_ranked(mine, query, NOW + 5.0, None)  # the rows expiring at NOW + 1 left
    assert {seq for seq, _ in later} < {seq for seq, _ in alone}
    assert dict(later) != {seq: s for seq, s in alone if seq in dict(later)}


def test_idf_stays_positive_and_falls_with_df() -> None:
    weights = [idf(100, df) for df in range(1, 101)]
    assert all(w > 0 for w in weights)
    assert weights == sorted(weights, reverse=True)


def test_nothing_to_rank() -> None:
    empty = ScopePostings(0, 0)
    blank = ScopePostings(0, 0)
    blank.append([(1, [], [], None)])
    assert bm25_ranked([], ["w1"], NOW, 5) == []
    assert bm25_ranked([empty, blank], ["w1"], NOW, 5) == []
    assert bm25_ranked([blank], [], NOW, None) == []
    cells = _cells(_rows(random.Random(2), 50), random.Random(3), 1)
    assert bm25_ranked(cells, ["w0"], NOW, 0) == []
