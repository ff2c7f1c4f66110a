"""The vector cache's float16 ranking (torch loaded) gives exactly the float32 ranking."""

from __future__ import annotations

import numpy as np
import pytest

from langgraph_typed_memory.store import vector_cache
from langgraph_typed_memory.store.vector_cache import _rank, _ScopeMatrix

torch = pytest.importorskip("torch")


def _unit(rng: np.random.Generator, n: int, dims: int = 64) -> np.ndarray:
    rows = rng.standard_normal((n, dims)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(6))
def test_half_ranking_equals_the_float32_ranking(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 3000
    matrix = _unit(rng, n)
    # Near-duplicates crowd the cut (float16 cannot order them), some records hold
    # several vectors (max-pooled), a few rows are zero, some have expired.
    matrix[100:400] = matrix[:300] + rng.normal(0, 1e-4, (300, 64)).astype(np.float32)
    matrix[100:400] /= np.linalg.norm(matrix[100:400], axis=1, keepdims=True)
    matrix[500:510] = 0.0
    seqs = np.sort(rng.choice(n * 2, n, replace=False)).astype(np.int64)
    seqs[1000:1200] = seqs[999]
    expires = np.where(rng.random(n) < 0.2, 5.0, np.inf)
    half = torch.from_numpy(matrix).to(torch.float16)
    for query in [matrix[7], matrix[150], *rng.standard_normal((8, 64))]:
        for depth in (1, 5, 50, 200):
            for dead in (None, expires):
                exact = _rank(matrix, seqs, dead, 10.0, query, depth)
                assert _rank(matrix, seqs, dead, 10.0, query, depth, half) == exact


def test_an_entry_keeps_a_float16_copy_only_where_torch_is_loaded(monkeypatch) -> None:
    rng = np.random.default_rng(1)
    rows = [(i + 1, vector, None, 0.5, 0.0, None) for i, vector in enumerate(_unit(rng, 300))]

    def decode(values: list[np.ndarray]) -> np.ndarray:
        return np.stack(values)

    with_half = _ScopeMatrix(0, 0, 0, decode)
    for start in range(0, 300, 70):  # appends that grow the buffers
        with_half.append(rows[start : start + 70])
    assert with_half.half is not None and with_half.half.dtype == torch.float16
    assert torch.equal(with_half.half, torch.from_numpy(with_half.matrix).to(torch.float16))
    monkeypatch.setattr(vector_cache, "_torch", lambda: None)
    without = _ScopeMatrix(0, 0, 0, decode)
    without.append(rows)
    assert without.half is None
    assert np.array_equal(without.matrix, with_half.matrix)
    query = rng.standard_normal(64)
    assert (_rank(with_half.matrix, with_half.seqs, None, 0.0, query, 10, with_half.half)
            == _rank(without.matrix, without.seqs, None, 0.0, query, 10))


@pytest.mark.parametrize("seed", range(5))
def test_rows_crowded_below_float16_resolution_are_rescored(seed: int) -> None:
    """400 rows whose scores differ by 5e-7 (float16 resolves ~6e-5 there, and rounds the
    inputs): float16 alone misorders them (without the error margin most of these cases
    fail); the rescoring must return the exact best."""
    rng = np.random.default_rng(seed)
    query = _unit(rng, 1)[0]
    others = _unit(rng, 3000)
    others -= np.outer(others @ query, query)  # orthogonal to the query
    others /= np.linalg.norm(others, axis=1, keepdims=True)
    scores = np.concatenate([0.1 + 5e-7 * rng.permutation(400), rng.uniform(-0.5, 0.09, 2600)])
    matrix = (scores[:, None] * query + np.sqrt(1 - scores[:, None] ** 2) * others)
    matrix = matrix.astype(np.float32)
    seqs = np.arange(len(matrix), dtype=np.int64)
    half = torch.from_numpy(matrix).to(torch.float16)
    for depth in (1, 3, 10):
        exact = _rank(matrix, seqs, None, 0.0, query, depth)
        assert _rank(matrix, seqs, None, 0.0, query, depth, half) == exact
