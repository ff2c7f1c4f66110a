"""Exact vector ranking over the cells a scope sees against a brute-force ranking.

The cells are ranked one by one and merged (`vectors._ranked`); the reference scores
every live record once, over all cells together: its best cosine over its vectors (a record
may have several), expired rows left out, a changed record's old rows masked.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from langgraph_typed_memory.store.index.vectors import _ranked, _ScopeMatrix

NOW = 100.0
DIMS = 16


def _decode(values: list[list[float]]) -> np.ndarray:
    return np.asarray(values, np.float32)


def _records(rng: random.Random, count: int) -> list[dict]:
    """Records of one vector, of two, or of nine alike (an item indexed on a list of texts:
    its rows then crowd the best rows of a ranking)."""
    def vectors() -> list[list[float]]:
        base = [rng.gauss(0, 1) for _ in range(DIMS)]
        return [[x + rng.gauss(0, 0.05 * bool(i)) for x in base]
                for i in range(rng.choice([1, 1, 2, 9]))]

    return [{"seq": seq, "vectors": vectors(),
             "expires": rng.choice([None] * 5 + [NOW - 1.0, NOW + 1.0])}
            for seq in range(1, count + 1)]


def _cells(records: list[dict], rng: random.Random, count: int) -> list[_ScopeMatrix]:
    """The records spread over `count` cells, appended in chunks; a few records changed:
    their rows masked and appended again (with new vectors, which the reference uses)."""
    parts: list[list[dict]] = [[] for _ in range(count)]
    for record in records:
        parts[rng.randrange(count)].append(record)
    cells = []
    for part in parts:
        cell = _ScopeMatrix(0, 0, 0, _decode)
        rows = [(r["seq"], v, r["expires"], 0.5, NOW, None) for r in part for v in r["vectors"]]
        at = 0
        while at < len(rows):
            step = rng.randint(1, 7)
            cell.append(rows[at: at + step])
            at += step
        for record in rng.sample(part, min(2, len(part))):
            cell.mask([record["seq"]])
            record["vectors"] = [[rng.gauss(0, 1) for _ in range(DIMS)]]
            cell.append([(record["seq"], record["vectors"][0], record["expires"], 0.5, NOW,
                          None)])
        cells.append(cell.view())
    return cells


def _reference(records: list[dict], query: list[float], depth: int) -> list[tuple[int, float]]:
    q = np.asarray(query, np.float64) / np.linalg.norm(query)
    scored = []
    for r in records:
        if r["expires"] is not None and r["expires"] <= NOW:
            continue
        best = max(float(np.dot(np.asarray(v) / np.linalg.norm(v), q)) for v in r["vectors"])
        scored.append((r["seq"], best))
    return sorted(scored, key=lambda hit: (-hit[1], hit[0]))[:depth]


@pytest.mark.parametrize("seed", range(30))
def test_the_cells_ranked_one_by_one_and_merged_rank_as_one_scope(seed):
    rng = random.Random(seed)
    records = _records(rng, rng.randint(1, 80))
    cells = _cells(records, rng, rng.randint(1, 4))
    query = [rng.gauss(0, 1) for _ in range(DIMS)]
    depth = rng.choice([1, 5, 10, 200])
    found = _ranked(cells, NOW, query, depth)
    expected = _reference(records, query, depth)
    assert [seq for seq, _ in found] == [seq for seq, _ in expected]
    assert [score for _, score in found] == pytest.approx([s for _, s in expected], abs=1e-5)


def test_a_zero_query_scores_every_live_record_zero_older_first():
    rng = random.Random(7)
    records = _records(rng, 20)
    cells = _cells(records, rng, 3)
    found = _ranked(cells, NOW, [0.0] * DIMS, 5)
    live = sorted(r["seq"] for r in records if r["expires"] is None or r["expires"] > NOW)
    assert found == [(seq, 0.0) for seq in live[:5]]


@pytest.mark.parametrize("count", [20, 1000])
def test_ties_go_to_the_older_record_past_the_first_rows_sorted(count):
    """Rows tied at the score of the deepest row sorted are sorted too: the older records
    win the ties however many rows there are (a zero query ties them all)."""
    rng = random.Random(count)
    records = [{"seq": seq, "vectors": [[rng.gauss(0, 1) for _ in range(DIMS)]],
                "expires": None} for seq in range(1, count + 1)]
    cells = _cells(records, rng, 1)
    assert _ranked(cells, NOW, [0.0] * DIMS, 3) == [(1, 0.0), (2, 0.0), (3, 0.0)]
    assert _ranked(cells, NOW, [1.0] * DIMS, 0) == []


@pytest.mark.parametrize("seed", range(20))
def test_a_ranking_is_the_same_bits_whatever_the_entrys_history(seed):
    """Records loaded at once, or appended in chunks with some masked and appended again,
    score exactly the same (BLAS sums a matrix's last rows in another order unless their
    number is a multiple of its block: the rows are padded)."""
    rng = random.Random(seed)
    records = _records(rng, rng.randint(1, 90))
    query = [rng.gauss(0, 1) for _ in range(384 // 8)]
    for r in records:
        r["vectors"] = [[rng.gauss(0, 1) for _ in range(384 // 8)] for _ in r["vectors"]]
        r["expires"] = None
    whole = _ScopeMatrix(0, 0, 0, _decode)
    whole.append([(r["seq"], v, None, 0.5, NOW, None) for r in records for v in r["vectors"]])
    pieces = _ScopeMatrix(0, 0, 0, _decode)
    rows = [(r["seq"], v, None, 0.5, NOW, None) for r in records for v in r["vectors"]]
    for at in range(0, len(rows), 3):
        pieces.append(rows[at: at + 3])
    again = rng.sample(records, min(5, len(records)))
    pieces.mask([r["seq"] for r in again])
    pieces.append([(r["seq"], v, None, 0.5, NOW, None) for r in again for v in r["vectors"]])
    assert (_ranked([pieces.view()], NOW, query, None)
            == _ranked([whole.view()], NOW, query, None))
