"""A scope too large for the exact matrices is ranked by its vectors' sign bits on SQLite.

A cache bound that alice's scope does not fit as float32 matrices, but fits as sketches and
postings, forces the sketch regime on a small scope; its vector results are measured against
the exact ranking of the same data (a store object with the default bound, on the same
file): recall@10 at least 0.95 at the default `rescored`, and the same top 10 when every row
is rescored. The process holds no matrix of the scope meanwhile, the scope filter holds
before ranking (bob's equally near records never come back), writes are seen at once, and
the trace says which regime answered.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langgraph_typed_memory import AsyncSqliteMemoryStore, SqliteMemoryStore
from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.store.sqlite.store import connect_sqlite
from tests.conftest import hash_index

ROWS = 3000
QUERIES = 30
DIMS = 384
VECTOR_ONLY = {"lexical_weight": 0.0, "freshness_weight": 0.0, "confidence_weight": 0.0}
BOUND = 1_500_000
"""Alice's scope measures ~5.2 MB as matrices and postings; its sketches (~0.2 MB) and
postings fit."""
ALICE = ("tenant:acme", "user:alice", "fact")
BOB = ("tenant:acme", "user:bob", "fact")


def _words(rng: random.Random, n: int) -> str:
    return " ".join(f"w{rng.randrange(400)}" for _ in range(n))


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[str]]]:
    """A file with ROWS facts in alice's scope and as many in bob's (the same texts, so
    bob's are as near every query as alice's), and the queries."""
    rng = random.Random(43)
    texts = [_words(rng, 8) + f" n{i}" for i in range(ROWS)]
    path = tmp_path_factory.mktemp("sketched") / "memory.db"
    with SqliteMemoryStore.from_conn_string(str(path), index=hash_index(DIMS)) as store:
        store.setup()
        for ns in (ALICE, BOB):
            ops = [PutOp(ns, f"f{i}", {"subject": "user", "predicate": f"topic_{i % 40}",
                                       "content": text}) for i, text in enumerate(texts)]
            for start in range(0, len(ops), 500):
                store.batch(ops[start:start + 500])
    yield path, [_words(rng, 3) for _ in range(QUERIES)]


def _store(conn: Any, **kwargs: Any) -> SqliteMemoryStore:
    return SqliteMemoryStore(conn, index=hash_index(DIMS), **kwargs)


def _keys(store: Any, query: str, ns: tuple[str, ...] = ALICE) -> tuple[list[str], str]:
    found = store.search(ns, query=query, limit=10)
    return [item.key for item in found], found.retrieval_mode


def _recall(found: list[list[str]], exact: list[list[str]]) -> float:
    return sum(len(set(f) & set(e)) for f, e in zip(found, exact, strict=True)) / sum(
        len(e) for e in exact)


def test_sketches_keep_recall_and_hold_no_matrix(loaded: tuple[Path, list[str]]) -> None:
    path, queries = loaded
    conn = connect_sqlite(str(path))
    exact = _store(conn, retrieval=VECTOR_ONLY)
    large = _store(conn, retrieval=VECTOR_ONLY, cache_bytes=BOUND)
    expected = [_keys(exact, q) for q in queries]
    found = [_keys(large, q) for q in queries]
    assert {mode for _, mode in expected} == {"vector"}
    assert {mode for _, mode in found} == {"vector+sketch"}
    assert _recall([f for f, _ in found], [e for e, _ in expected]) >= 0.95
    dialect = large.records.dialect
    assert dialect.vectors.full_loads == 0 and len(dialect.vectors) == 0
    assert len(dialect.sketches) == 2  # the tenant's cell and alice's, held
    assert dialect.cache.nbytes <= BOUND
    for store in (exact, large):
        store.close()
    conn.close()


def test_rescoring_every_row_is_exact(loaded: tuple[Path, list[str]]) -> None:
    path, queries = loaded
    conn = connect_sqlite(str(path))
    exact = _store(conn, retrieval=VECTOR_ONLY)
    large = _store(conn, retrieval=VECTOR_ONLY, cache_bytes=BOUND, rescored=ROWS)
    for query in queries:
        assert _keys(large, query)[0] == _keys(exact, query)[0]
    conn.close()


def test_the_scope_filter_holds_before_the_sketches_rank(
        loaded: tuple[Path, list[str]]) -> None:
    """Bob holds the same texts as alice: none of his may come back, at any depth."""
    path, queries = loaded
    conn = connect_sqlite(str(path))
    large = _store(conn, cache_bytes=BOUND)
    for query in queries[:10]:
        found = large.search(ALICE, query=query, limit=50)
        assert found.retrieval_mode == "hybrid+sketch"
        assert len(found) == 50
        assert {tuple(item.namespace) for item in found} == {ALICE}
    conn.close()


def test_writes_are_seen_by_the_next_search(tmp_path: Path) -> None:
    rng = random.Random(7)
    with SqliteMemoryStore.from_conn_string(
            str(tmp_path / "m.db"), index=hash_index(DIMS), retrieval=VECTOR_ONLY,
            cache_bytes=200_000) as store:
        store.setup()
        store.batch([PutOp(ALICE, f"f{i}", {"subject": "user", "predicate": "p",
                                            "content": _words(rng, 8)}) for i in range(500)])
        query = "zebra quartz lantern"
        assert _keys(store, query)[1] == "vector+sketch"
        store.put(ALICE, "new", {"subject": "user", "predicate": "p", "content": query})
        assert _keys(store, query)[0][0] == "new"
        store.delete(ALICE, "new")
        assert "new" not in _keys(store, query)[0]


def test_vectors_written_before_their_bits_were_kept_rank_the_same(
        loaded: tuple[Path, list[str]], tmp_path: Path) -> None:
    """A database from before the bits were kept has none: they are made when read."""
    path, queries = loaded
    conn = connect_sqlite(str(path))
    with_bits = _store(conn, retrieval=VECTOR_ONLY, cache_bytes=BOUND)
    expected = [_keys(with_bits, q) for q in queries[:10]]
    conn.close()
    copy = tmp_path / "old.db"
    copy.write_bytes(path.read_bytes())
    conn = connect_sqlite(str(copy))
    conn.execute("UPDATE memory_vectors SET sign_bits = NULL WHERE seq % 2 = 0")
    conn.commit()
    without = _store(conn, retrieval=VECTOR_ONLY, cache_bytes=BOUND)
    assert [_keys(without, q) for q in queries[:10]] == expected
    conn.close()


def test_the_knob_is_checked_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="rescored must be 1 or more"):
        SqliteMemoryStore(connect_sqlite(":memory:"), rescored=0)


async def test_the_async_store_ranks_a_large_scope_by_its_sketches(
        loaded: tuple[Path, list[str]]) -> None:
    path, queries = loaded
    async with AsyncSqliteMemoryStore.from_conn_string(
            str(path), index=hash_index(DIMS), retrieval=VECTOR_ONLY) as exact, \
            AsyncSqliteMemoryStore.from_conn_string(
                str(path), index=hash_index(DIMS), retrieval=VECTOR_ONLY,
                cache_bytes=BOUND, rescored=ROWS) as large:
        for query in queries[:5]:
            want = await exact.asearch(ALICE, query=query, limit=10)
            got = await large.asearch(ALICE, query=query, limit=10)
            assert got.retrieval_mode == "vector+sketch"
            assert [i.key for i in got] == [i.key for i in want]
