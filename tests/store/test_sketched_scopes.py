"""A scope too large for the exact matrices is ranked by its vectors' sign bits.

A cache bound that alice's scope does not fit as float32 matrices, but fits as sketches and
postings, forces the sketch regime on a small scope; its vector results are measured against
the exact ranking of the same data (a store object with the default bound, on the same
database): recall@10 at least 0.95 at the default `rescored`, and the same top 10 when every
row is rescored. The process holds no matrix of the scope meanwhile, the scope filter holds
before ranking (bob's equally near records never come back), writes are seen at once, and
the trace says which regime answered. Both backends: SQLite keeps each vector's bits beside
it, Postgres makes them as the cell is read.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langgraph_typed_memory import (
    AsyncPostgresMemoryStore,
    AsyncSqliteMemoryStore,
    PostgresMemoryStore,
    SqliteMemoryStore,
)
from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.store.sqlite.store import connect_sqlite
from tests.conftest import fresh_database, hash_index

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


class Backend:
    """Opens stores on one database: `target` is a SQLite file or a Postgres URL."""

    def __init__(self, name: str, target: str) -> None:
        self.name, self.target = name, target
        self._open = ExitStack()

    def store(self, **kwargs: Any) -> Any:
        """A store on the database (its connection closed with the others by `close`)."""
        if self.name == "sqlite":
            return self._open.enter_context(SqliteMemoryStore.from_conn_string(
                self.target, index=hash_index(DIMS), **kwargs))
        return self._open.enter_context(PostgresMemoryStore.from_conn_string(
            self.target, index=hash_index(DIMS), **kwargs))

    def async_store(self, **kwargs: Any) -> Any:
        cls = AsyncSqliteMemoryStore if self.name == "sqlite" else AsyncPostgresMemoryStore
        return cls.from_conn_string(self.target, index=hash_index(DIMS), **kwargs)

    def close(self) -> None:
        self._open.close()


def _fill(store: Any, ns: tuple[str, ...], texts: list[str]) -> None:
    ops = [PutOp(ns, f"f{i}", {"subject": "user", "predicate": f"topic_{i % 40}",
                               "content": text}) for i, text in enumerate(texts)]
    for start in range(0, len(ops), 500):
        store.batch(ops[start:start + 500])


def _new_database(request: pytest.FixtureRequest, name: str, path: Path) -> str:
    if name == "sqlite":
        return str(path)
    return fresh_database(request.getfixturevalue("pg_server"))


BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(scope="module", params=BACKENDS)
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[Backend, list[str]]]:
    """A database with ROWS facts in alice's scope and as many in bob's (the same texts, so
    bob's are as near every query as alice's), and the queries."""
    rng = random.Random(43)
    texts = [_words(rng, 8) + f" n{i}" for i in range(ROWS)]
    backend = Backend(request.param, _new_database(
        request, request.param, tmp_path_factory.mktemp("sketched") / "memory.db"))
    store = backend.store()
    store.setup()
    for ns in (ALICE, BOB):
        _fill(store, ns, texts)
    backend.close()
    yield backend, [_words(rng, 3) for _ in range(QUERIES)]
    backend.close()


@pytest.fixture
def backend(loaded: tuple[Backend, list[str]]) -> Iterator[Backend]:
    yield loaded[0]
    loaded[0].close()


def _keys(store: Any, query: str, ns: tuple[str, ...] = ALICE) -> tuple[list[str], str]:
    found = store.search(ns, query=query, limit=10)
    return [item.key for item in found], found.retrieval_mode


def _recall(found: list[list[str]], exact: list[list[str]]) -> float:
    return sum(len(set(f) & set(e)) for f, e in zip(found, exact, strict=True)) / sum(
        len(e) for e in exact)


def test_sketches_keep_recall_and_hold_no_matrix(
        loaded: tuple[Backend, list[str]], backend: Backend) -> None:
    queries = loaded[1]
    exact = backend.store(retrieval=VECTOR_ONLY)
    large = backend.store(retrieval=VECTOR_ONLY, cache_bytes=BOUND)
    expected = [_keys(exact, q) for q in queries]
    found = [_keys(large, q) for q in queries]
    assert {mode for _, mode in expected} == {"vector"}
    assert {mode for _, mode in found} == {"vector+sketch"}
    assert _recall([f for f, _ in found], [e for e, _ in expected]) >= 0.95
    dialect = large.records.dialect
    assert dialect.vectors.full_loads == 0 and len(dialect.vectors) == 0
    assert len(dialect.sketches) == 2  # the tenant's cell and alice's, held
    assert dialect.cache.nbytes <= BOUND


def test_rescoring_every_row_is_exact(loaded: tuple[Backend, list[str]],
                                      backend: Backend) -> None:
    exact = backend.store(retrieval=VECTOR_ONLY)
    large = backend.store(retrieval=VECTOR_ONLY, cache_bytes=BOUND, rescored=ROWS)
    for query in loaded[1]:
        assert _keys(large, query)[0] == _keys(exact, query)[0]


def test_the_scope_filter_holds_before_the_sketches_rank(
        loaded: tuple[Backend, list[str]], backend: Backend) -> None:
    """Bob holds the same texts as alice: none of his may come back, at any depth."""
    large = backend.store(cache_bytes=BOUND)
    for query in loaded[1][:10]:
        found = large.search(ALICE, query=query, limit=50)
        assert found.retrieval_mode == "hybrid+sketch"
        assert len(found) == 50
        assert {tuple(item.namespace) for item in found} == {ALICE}


@pytest.mark.parametrize("name", BACKENDS)
def test_writes_are_seen_by_the_next_search(request: pytest.FixtureRequest, name: str,
                                            tmp_path: Path) -> None:
    rng = random.Random(7)
    backend = Backend(name, _new_database(request, name, tmp_path / "m.db"))
    try:
        store = backend.store(retrieval=VECTOR_ONLY, cache_bytes=200_000)
        store.setup()
        store.batch([PutOp(ALICE, f"f{i}", {"subject": "user", "predicate": "p",
                                            "content": _words(rng, 8)}) for i in range(500)])
        query = "zebra quartz lantern"
        assert _keys(store, query)[1] == "vector+sketch"
        store.put(ALICE, "new", {"subject": "user", "predicate": "p", "content": query})
        assert _keys(store, query)[0][0] == "new"
        store.delete(ALICE, "new")
        assert "new" not in _keys(store, query)[0]
    finally:
        backend.close()


def test_vectors_written_before_their_bits_were_kept_rank_the_same(
        loaded: tuple[Backend, list[str]], backend: Backend, tmp_path: Path) -> None:
    """A SQLite database from before the bits were kept has none: they are made when read
    (Postgres never keeps them)."""
    queries = loaded[1]
    if backend.name != "sqlite":
        pytest.skip("Postgres makes the bits as it reads them")
    with_bits = backend.store(retrieval=VECTOR_ONLY, cache_bytes=BOUND)
    expected = [_keys(with_bits, q) for q in queries[:10]]
    copy = tmp_path / "old.db"
    copy.write_bytes(Path(backend.target).read_bytes())
    conn = connect_sqlite(str(copy))
    conn.execute("UPDATE memory_vectors SET sign_bits = NULL WHERE seq % 2 = 0")
    conn.commit()
    without = SqliteMemoryStore(conn, index=hash_index(DIMS), retrieval=VECTOR_ONLY,
                                cache_bytes=BOUND)
    assert [_keys(without, q) for q in queries[:10]] == expected
    conn.close()


def test_the_knob_is_checked_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="rescored must be 1 or more"):
        SqliteMemoryStore(connect_sqlite(":memory:"), rescored=0)


@pytest.mark.postgres
def test_the_postgres_knob_is_checked_at_construction(pg_server: Any) -> None:
    import psycopg

    with psycopg.connect(fresh_database(pg_server), autocommit=True) as conn, \
            pytest.raises(ConfigurationError, match="rescored must be 1 or more"):
        PostgresMemoryStore(conn, rescored=0)


async def test_the_async_store_ranks_a_large_scope_by_its_sketches(
        loaded: tuple[Backend, list[str]]) -> None:
    backend, queries = loaded
    async with backend.async_store(retrieval=VECTOR_ONLY) as exact, \
            backend.async_store(retrieval=VECTOR_ONLY, cache_bytes=BOUND,
                                rescored=ROWS) as large:
        for query in queries[:5]:
            want = await exact.asearch(ALICE, query=query, limit=10)
            got = await large.asearch(ALICE, query=query, limit=10)
            assert got.retrieval_mode == "vector+sketch"
            assert [i.key for i in got] == [i.key for i in want]
