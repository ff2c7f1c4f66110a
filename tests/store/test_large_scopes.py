"""A scope too large for the search caches is ranked by Postgres, not loaded into the process.

A tiny cache bound (`cache_bytes`) forces the database's ranking on a small scope: its
vector results are measured against the exact in-process ranking of the same data (a store
object with the default bound, on the same database): recall@10 at least 0.95 at the
default `ef_search`, and the same top 10 at a high one. The process holds none of the
scope's rows meanwhile, the scope filter holds before ranking (another user's nearer
records never come back), and the trace says which regime answered.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langgraph_typed_memory.store.postgres.large_scopes import HNSW_INDEX
from tests.conftest import fresh_database, hash_index

pytestmark = pytest.mark.postgres

ROWS = 2000
QUERIES = 30
VECTOR_ONLY = {"lexical_weight": 0.0, "freshness_weight": 0.0, "confidence_weight": 0.0}
TINY = 4096
"""A cache bound no scope of these tests fits."""
ALICE = ("tenant:acme", "user:alice", "fact")
BOB = ("tenant:acme", "user:bob", "fact")


def _words(rng: random.Random, n: int) -> str:
    return " ".join(f"w{rng.randrange(400)}" for _ in range(n))


@pytest.fixture(scope="module")
def loaded(pg_server: Any) -> Iterator[tuple[str, list[str]]]:
    """A database with ROWS facts in alice's scope and as many in bob's (the same texts,
    so bob's are as near every query as alice's), and the queries."""
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore

    rng = random.Random(43)
    texts = [_words(rng, 8) + f" n{i}" for i in range(ROWS)]
    url = fresh_database(pg_server)
    with psycopg.connect(url, autocommit=True) as conn:
        store = PostgresMemoryStore(conn, index=hash_index(64))
        store.setup()
        for ns in (ALICE, BOB):
            ops = [PutOp(ns, f"f{i}", {"subject": "user", "predicate": f"topic_{i % 40}",
                                       "content": text}) for i, text in enumerate(texts)]
            for start in range(0, len(ops), 500):
                store.batch(ops[start:start + 500])
        conn.execute(HNSW_INDEX)  # an operator's step: setup() does not create it
        conn.execute("VACUUM ANALYZE")
    yield url, [_words(rng, 3) for _ in range(QUERIES)]


def test_without_the_index_the_database_ranks_exactly(pg_server: Any) -> None:
    """Before an operator creates the HNSW index, a large scope is ranked by an exact scan in
    the database: the same top 10 as the caches, nothing held in the process."""
    import psycopg

    rng = random.Random(44)
    with psycopg.connect(fresh_database(pg_server), autocommit=True) as conn:
        exact = _store(conn, retrieval=VECTOR_ONLY)
        exact.setup()
        exact.batch([PutOp(ALICE, f"f{i}", {"subject": "user", "predicate": f"topic_{i}",
                                            "content": _words(rng, 8)}) for i in range(300)])
        large = _store(conn, retrieval=VECTOR_ONLY, cache_bytes=TINY)
        for query in [_words(rng, 3) for _ in range(10)]:
            keys, mode = _keys(large, query)
            assert mode == "vector+database"
            assert keys == _keys(exact, query)[0]
        assert len(large.records.dialect.cache) == 0


def _store(conn: Any, **kwargs: Any) -> Any:
    from langgraph_typed_memory import PostgresMemoryStore

    return PostgresMemoryStore(conn, index=hash_index(64), **kwargs)


def _keys(store: Any, query: str, ns: tuple[str, ...] = ALICE) -> tuple[list[str], str]:
    found = store.search(ns, query=query, limit=10)
    return [item.key for item in found], found.retrieval_mode


def _recall(found: list[list[str]], exact: list[list[str]]) -> float:
    return sum(len(set(f) & set(e)) for f, e in zip(found, exact, strict=True)) / sum(
        len(e) for e in exact)


def test_database_ranking_keeps_recall_and_holds_nothing_in_the_process(
        loaded: tuple[str, list[str]]) -> None:
    import psycopg

    url, queries = loaded
    with psycopg.connect(url, autocommit=True) as conn:
        exact = _store(conn, retrieval=VECTOR_ONLY)
        large = _store(conn, retrieval=VECTOR_ONLY, cache_bytes=TINY)
        expected = [_keys(exact, q) for q in queries]
        found = [_keys(large, q) for q in queries]
        assert {mode for _, mode in expected} == {"vector"}
        assert {mode for _, mode in found} == {"vector+database"}
        assert _recall([f for f, _ in found], [e for e, _ in expected]) >= 0.95
        dialect = large.records.dialect
        assert len(dialect.cache) == 0 and dialect.vectors.full_loads == 0
        assert dialect.postings.full_loads == 0


def test_database_ranking_is_exact_at_a_high_ef_search(
        loaded: tuple[str, list[str]]) -> None:
    import psycopg

    url, queries = loaded
    with psycopg.connect(url, autocommit=True) as conn:
        exact = _store(conn, retrieval=VECTOR_ONLY)
        large = _store(conn, retrieval=VECTOR_ONLY, cache_bytes=TINY, ef_search=1000)
        for query in queries:
            assert _keys(large, query)[0] == _keys(exact, query)[0]


def test_the_scope_filter_holds_before_the_database_ranks(
        loaded: tuple[str, list[str]]) -> None:
    """Bob holds the same texts as alice: a filter applied after ranking would let his
    (equally near) records crowd hers out; none may come back, at any depth."""
    import psycopg

    url, queries = loaded
    with psycopg.connect(url, autocommit=True) as conn:
        large = _store(conn, cache_bytes=TINY)
        for query in queries[:10]:
            found = large.search(ALICE, query=query, limit=50)
            assert found.retrieval_mode == "hybrid+database"
            assert len(found) == 50
            assert {tuple(item.namespace) for item in found} == {ALICE}


def test_words_alone_are_ranked_by_the_database(loaded: tuple[str, list[str]]) -> None:
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore

    url, _ = loaded
    with psycopg.connect(url, autocommit=True) as conn:
        words = PostgresMemoryStore(conn, cache_bytes=TINY)  # no index: full text alone
        found = words.search(ALICE, query="n17 unknownword", limit=5)
        assert found.retrieval_mode == "lexical+database"
        assert [item.key for item in found] == ["f17"]
        assert len(words.records.dialect.cache) == 0


def test_a_scope_that_fits_stays_exact_in_the_process(
        loaded: tuple[str, list[str]]) -> None:
    import psycopg

    url, queries = loaded
    with psycopg.connect(url, autocommit=True) as conn:
        store = _store(conn)
        found = store.search(ALICE, query=queries[0], limit=10)
        assert found.retrieval_mode == "hybrid"
        assert len(store.records.dialect.large) == 0


async def test_the_async_store_ranks_a_large_scope_in_the_database(
        loaded: tuple[str, list[str]]) -> None:
    import psycopg

    from langgraph_typed_memory import AsyncPostgresMemoryStore

    url, queries = loaded
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        exact = AsyncPostgresMemoryStore(conn, index=hash_index(64), retrieval=VECTOR_ONLY)
        large = AsyncPostgresMemoryStore(conn, index=hash_index(64), retrieval=VECTOR_ONLY,
                                         cache_bytes=TINY, ef_search=1000)
        for query in queries[:5]:
            want = await exact.asearch(ALICE, query=query, limit=10)
            got = await large.asearch(ALICE, query=query, limit=10)
            assert got.retrieval_mode == "vector+database"
            assert [i.key for i in got] == [i.key for i in want]
