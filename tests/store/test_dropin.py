"""The drop-in contract with LangGraph's stores: an untyped search reads its namespace
through the namespace index on both backends (its cost grows with the namespace, not with
the table: LangMem's `("memories", user)` among thousands of users), and the TTL sweeper runs
as LangGraph's does."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langgraph_typed_memory.namespaces import encode_namespace
from langgraph_typed_memory.scoring import matches_filter
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.filters import filter_sql
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Sql
from langgraph_typed_memory.store.core.untyped import sql_namespaces
from langgraph_typed_memory.store.postgres.dialect import POSTGRES_JSON
from langgraph_typed_memory.store.sqlite.dialect import SQLITE_JSON
from tests.conftest import ALL_BACKENDS


def explained(store: Any, sql: str, args: list[Any]) -> str:
    """The database's plan for a statement (sequential scans discouraged on Postgres, so a
    plan that can use an index does)."""
    d = store.records.dialect

    def explain() -> Any:
        if d.name == "sqlite":
            rows = yield Sql("EXPLAIN QUERY PLAN " + sql, args)
            return "\n".join(str(r[-1]) for r in rows)
        yield Begin()
        yield Sql("SET LOCAL enable_seqscan = off")
        rows = yield Sql("EXPLAIN " + sql, args)
        yield Commit()
        return "\n".join(str(r[0]) for r in rows)

    return str(store.run_plan(explain))


def untyped_reads(store: Any, prefix: tuple[str, ...]) -> dict[str, tuple[str, list[Any]]]:
    """The statements of an untyped search (a page, a page with a filter, a ranked read of
    vectors) and of a listing of namespaces, for `prefix`."""
    d = store.records.dialect
    joined = encode_namespace(prefix)
    topic = filter_sql(d.json, {"topic": "t1"})
    assert topic.exact and topic.sql is not None
    where = q.untyped_where(joined, d.range_ops, 0.0, (topic.sql, topic.params))
    return {
        "page": q.untyped_page(joined, d.range_ops, 0.0, None, take=10, skip=5),
        "filtered": q.untyped_page(joined, d.range_ops, 0.0, (topic.sql, topic.params),
                                   take=10),
        "vectors": (f"SELECT v.seq FROM memories m JOIN memory_vectors v ON v.seq = m.seq "
                    f"WHERE {where[0]}", where[1]),
        "namespaces": sql_namespaces(joined, True, d.range_ops, d.position_fn, d.byte_order,
                                     0.0, 2, (100, 0)),
    }


@pytest.mark.perf_contract
def test_untyped_reads_use_the_namespace_index(store):
    for user in range(30):
        for i in range(5):
            store.put(("memories", f"u{user}"), f"k{i}", {"text": f"note {i}", "topic": "t1"})
    for prefix in (("memories", "u7"), ("memories",)):
        for what, (sql, args) in untyped_reads(store, prefix).items():
            plan = explained(store, sql, args)
            assert "memories_untyped" in plan or "memories_ns" in plan, (what, plan)
            assert "SCAN m\n" not in plan + "\n" and "Seq Scan" not in plan, (what, plan)
            assert "SCAN memories" not in plan, (what, plan)
            if what == "namespaces":  # each step stops at the next namespace, unsorted
                assert "Sort Key: m" not in plan, plan
    assert [i.key for i in store.search(("memories", "u7"), limit=2, offset=1)] == ["k1", "k2"]
    assert len(store.search(("memories",), limit=200)) == 150
    assert len(store.list_namespaces(prefix=("memories",), limit=200)) == 30
    assert store.list_namespaces(prefix=("memories",), max_depth=1) == [("memories",)]


# ---------------------------------------------------------------- filters in SQL

SCALARS = [None, True, False, 0, 1, 2, -1, 0.0, 1.0, 2.5, -0.5, "1", "a", "", "2.5", " 3 ",
           "inf", 2**53 + 1, 2**62, 1e20, -(2**63)]
KEYS = ["a", "b", "a.b", "x y"]


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 2 and roll < 0.15:
        return {k: _value(rng, depth + 1) for k in rng.sample(KEYS, rng.randint(0, 3))}
    if depth < 2 and roll < 0.25:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    return rng.choice(SCALARS)


def _condition(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.35:
        return rng.choice([*SCALARS, math.nan, math.inf, "a\x00"])
    if roll < 0.45:
        return {k: _condition(rng) for k in rng.sample(KEYS, rng.randint(0, 2))}
    if roll < 0.5:
        return [rng.choice(SCALARS) for _ in range(rng.randint(0, 2))]
    ops = rng.sample(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"], rng.randint(1, 2))
    bounds = [*SCALARS, math.nan, math.inf, -math.inf, [1], {"a": 1}]
    return {op: rng.choice(bounds) for op in ops}


def test_filters_in_sql_keep_what_the_matcher_keeps(store):
    """Filters the database answers (equality of every JSON type, nested objects and
    lists, dotted keys, `$ne`, ranges) select exactly what LangGraph's matcher does."""
    rng = random.Random(39)
    ns = ("filters",)
    values = {}
    for i in range(80):
        value = {k: _value(rng) for k in rng.sample(KEYS, rng.randint(1, 4))}
        values[f"k{i:02}"] = value
    store.batch([PutOp(ns, key, value, index=False) for key, value in values.items()])
    stored = {i.key: i.value for i in store.search(ns, limit=1000)}
    assert stored.keys() == values.keys()
    matched = 0
    for _ in range(150):
        flt = {k: _condition(rng) for k in rng.sample(KEYS, rng.randint(1, 2))}
        expected = [k for k, v in stored.items() if matches_filter(v, flt)]
        matched += bool(expected)
        assert [i.key for i in store.search(ns, filter=flt, limit=1000)] == expected, flt
        window = [i.key for i in store.search(ns, filter=flt, limit=3, offset=2)]
        assert window == expected[2:5], flt
    assert matched > 40  # the filters are not all empty-handed


def test_a_filter_sql_answers_exactly_pages_in_sql():
    exact = [{"topic": "cats"}, {"n": 3}, {"flag": True}, {"meta": {"tag": "red"}},
             {"tags": ["a", "b"]}, {"user.level": "pro"}, {"n": {"$ne": 2}}, {"n": None}]
    for flt in exact:
        assert filter_sql(SQLITE_JSON, flt).exact and filter_sql(POSTGRES_JSON, flt).exact
    for flt in [{"n": {"$gt": 2}}, {"n": 2**60}, {"n": {"$eq": [1]}}, {'we"ird': 1}]:
        assert not filter_sql(SQLITE_JSON, flt).exact, flt


def test_namespaces_list_in_tuple_order(store):
    labels = ["a", "a-b", "a.b".replace(".", "_"), "b", "\x01", "a\x01", "\u00e9"]
    for first in labels:
        for second in ["x", "-", "\x01y"]:
            store.put(("root", first, second), "k", {"v": 1})
    everything = sorted(("root", f, s) for f in labels for s in ["x", "-", "\x01y"])
    assert store.list_namespaces(prefix=("root",), limit=1000) == everything
    assert store.list_namespaces(prefix=("root",), limit=4, offset=3) == everything[3:7]
    heads = sorted({ns[:2] for ns in everything})
    assert store.list_namespaces(prefix=("root",), max_depth=2, limit=1000) == heads
    assert store.list_namespaces(prefix=("root",), max_depth=2, limit=2, offset=1) == heads[1:3]
    assert store.list_namespaces(prefix=("root", "a"), limit=1000) == [
        ns for ns in everything if ns[1] == "a"]


def test_the_ttl_sweeper_deletes_expired_items_in_the_background(tmp_path):
    import time
    from datetime import UTC, datetime, timedelta

    from langgraph_typed_memory import SqliteMemoryStore

    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    ttl = {"default_ttl": 1, "sweep_interval_minutes": 0.001}  # every 60 ms
    with SqliteMemoryStore.from_conn_string(str(tmp_path / "m.db"), ttl=ttl,
                                            clock=lambda: now[0]) as store:
        store.setup()
        store.put(("notes",), "n1", {"text": "call back"})
        running = store.start_ttl_sweeper()
        assert store.start_ttl_sweeper() is running  # one sweeper at a time
        now[0] += timedelta(minutes=2)
        deadline = time.monotonic() + 5
        while store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]:
            assert time.monotonic() < deadline, "the sweeper did not delete the expired item"
            time.sleep(0.02)
        assert store.stop_ttl_sweeper(timeout=5) and running.done()
    with SqliteMemoryStore.from_conn_string(str(tmp_path / "n.db")) as plain:
        assert plain.start_ttl_sweeper().done()  # no TTL config: nothing to sweep


async def test_the_async_ttl_sweeper_stops_with_the_store(tmp_path):
    from langgraph_typed_memory import AsyncSqliteMemoryStore

    async with AsyncSqliteMemoryStore.from_conn_string(
            str(tmp_path / "a.db"), ttl={"default_ttl": 1}) as store:
        await store.setup()
        task = await store.start_ttl_sweeper(sweep_interval_minutes=10)
        assert not task.done()
    assert task.done()  # leaving the block stopped it


# ---------------------------------------------------------------- cached ranking

def _scan(store: Any, prefix: str, now: float, query: list[float]) -> dict[int, float]:
    """Every live record under `prefix` with vectors, scored by reading and ranking all its
    vectors (the scan the cache replaces), by seq."""
    from langgraph_typed_memory.scoring import cosine_scores
    from langgraph_typed_memory.store.postgres.dialect import _decode as pg_decode
    from langgraph_typed_memory.store.sqlite.dialect import _decode as sqlite_decode

    d = store.records.dialect
    where, params = q.untyped_where(prefix, d.range_ops, now)
    embedding = "v.embedding" if d.name == "sqlite" else "vector_send(v.embedding)"

    def read() -> Any:
        return (yield Sql(f"SELECT v.seq, {embedding} FROM memories m JOIN memory_vectors v "
                          f"ON v.seq = m.seq WHERE {where}", params, binary=True))

    rows = store.run_plan(read)
    decode = sqlite_decode if d.name == "sqlite" else pg_decode
    scores = cosine_scores(query, decode([r[1] for r in rows])) if rows else []
    best: dict[int, float] = {}
    for (seq, _), score in zip(rows, scores, strict=True):
        best[seq] = max(best.get(seq, -2.0), float(score))
    return best


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_cached_untyped_ranking_is_the_scan(engine, request, tmp_path, clock):
    """An untyped query ranks the namespace's vectors held in memory: after every kind of
    change (vectors added, records updated, deleted, expired, refreshed, swept, written by
    another store object) its best records and scores are those of a scan of the rows."""
    from datetime import timedelta

    from tests.conftest import hash_index

    index = hash_index()
    if engine == "sqlite":
        from langgraph_typed_memory import SqliteMemoryStore
        from langgraph_typed_memory.store.sqlite.store import connect_sqlite

        path = str(tmp_path / "cached.db")
        store: Any = SqliteMemoryStore(connect_sqlite(path), index=index, clock=clock)
        store.setup()
        other: Any = SqliteMemoryStore(connect_sqlite(path), index=index, clock=clock)
    else:
        if "postgres" not in ALL_BACKENDS:
            pytest.skip("Postgres tests are off")
        import psycopg

        from langgraph_typed_memory import PostgresMemoryStore
        from tests.conftest import fresh_database

        url = fresh_database(request.getfixturevalue("pg_server"))
        store = PostgresMemoryStore(psycopg.connect(url, autocommit=True), index=index,
                                    clock=clock)
        store.setup()
        other = PostgresMemoryStore(psycopg.connect(url, autocommit=True), index=index,
                                    clock=clock)
        request.addfinalizer(other.conn.close)
        request.addfinalizer(store.conn.close)
    d = store.records.dialect
    embed = index["embed"]
    rng = random.Random(7)
    words = ["red", "tulips", "garden", "whales", "songs", "blue", "office", "door", "lyon"]

    def text() -> str:
        return " ".join(rng.choices(words, k=3))

    def check(step: str) -> None:
        now = clock().timestamp()
        for query, depth in (("red tulips", 7), ("blue whales door", 1), ("lyon", 500)):
            vector = embed.embed_query(query)
            got = store.run_plan(lambda v=vector, k=depth: d.untyped_top("kb", now, None, v, k))
            want = _scan(store, "kb", now, vector)
            assert len(got) == min(depth, len(want)), step
            for seq, score in got:
                assert abs(score - want[seq]) < 1e-5, (step, seq)
            left = [s for seq, s in want.items() if seq not in dict(got)]
            if got and left:
                assert got[-1][1] >= max(left) - 1e-5, step
            scores = [s for _, s in got]
            assert scores == sorted(scores, reverse=True), step

    for i in range(40):
        store.put(("kb",), f"k{i}", {"text": text(), "alt": text()},
                  index=["text", "alt"] if i % 3 == 0 else None, ttl=5 if i % 4 == 0 else None)
        store.put(("kb", "sub"), f"s{i}", {"text": text()}, index=False if i % 5 == 0 else None)
        store.put(("other",), f"o{i}", {"text": text()})
    check("loaded")
    loads = d.namespaces.full_loads
    for i in range(40, 50):
        store.put(("kb",), f"k{i}", {"text": text()})
    check("added")
    assert d.namespaces.full_loads == loads and d.namespaces.appended_loads >= 1
    for i in range(5):
        store.delete(("kb",), f"k{i}")
        store.put(("kb", "sub"), f"s{i + 5}", {"text": text()})
    check("updated and deleted")
    clock.advance(minutes=3)
    assert store.search(("kb",), query="red garden", limit=50, refresh_ttl=True)
    clock.advance(minutes=3)  # held expiries passed; those refreshed at +3 min have not
    check("expired and refreshed")
    store.sweep_ttl()
    check("swept")
    other.put(("kb",), "from-another-store", {"text": "lyon lyon lyon"})
    other.delete(("kb",), "k10")
    check("written elsewhere")
    found = store.search(("kb",), query="lyon", limit=3)
    assert found[0].key == "from-another-store"
    clock.now -= timedelta(minutes=30)  # an earlier time: expired rows are live again
    check("clock moved back")
    store.put(("kb",), "brief", {"text": "lyon red"}, ttl=5)
    clock.advance(minutes=7)
    check("expired, unswept")  # read while expired
    clock.advance(minutes=-4)
    assert "brief" in {i.key for i in store.search(("kb",), query="lyon", limit=500,
                                                   refresh_ttl=True)}
    clock.advance(minutes=3)  # the cached expiry passed, the refreshed one not
    check("refreshed at an earlier time")
    other.close()
    store.close()


# ---------------------------------------------------------------- one-key writes

@pytest.mark.perf_contract
def test_an_untyped_put_or_delete_alone_is_one_statement_on_postgres(monkeypatch, request):
    """LangGraph code puts and deletes one key at a time: on Postgres each is one statement
    and one round trip (no transaction around it, no read of the key's item first), its
    vectors in the same statement, and the delete finds its row by the index of current keys
    even before the table's statistics know the namespace is large."""
    if "postgres" not in ALL_BACKENDS:
        pytest.skip("Postgres tests are off")
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore
    from langgraph_typed_memory.store.postgres import store as pg_store_module
    from tests.conftest import fresh_database, hash_index
    from tests.store.test_fanout_statements import Trips

    conn = psycopg.connect(fresh_database(request.getfixturevalue("pg_server")),
                           autocommit=True)
    request.addfinalizer(conn.close)
    store = PostgresMemoryStore(conn, index=hash_index())
    store.setup()
    store.batch([PutOp(("kb",), f"k{i}", {"text": f"item {i}"}) for i in range(3000)])
    trips = Trips(monkeypatch, pg_store_module)
    store.put(("kb",), "k1", {"text": "red tulips", "alt": "blue"}, index=["text", "alt"])
    store.put(("kb",), "k1", {"text": "red whales"})  # "alt" is no longer embedded
    store.delete(("kb",), "k2")
    assert [len(trip) for trip in trips.trips] == [1, 1, 1], trips.trips
    assert store.get(("kb",), "k2") is None
    assert store.get(("kb",), "k1").value == {"text": "red whales"}
    fields = conn.execute("SELECT v.field FROM memory_vectors v JOIN memories m "
                          "ON m.seq = v.seq WHERE m.key = 'k1'").fetchall()
    assert fields == [("text",)]
    assert store.search(("kb",), query="red whales", limit=1)[0].key == "k1"
    plan = " ".join(r[0] for r in conn.execute(
        "EXPLAIN " + q.SQL_DELETE_UNTYPED.replace("?", "%s"), ["kb", "k3"]))
    assert "memories_current" in plan, plan


def test_a_namespace_too_large_to_hold_ranks_as_one_held(make_store, clock):
    """A store whose cache can hold no namespace's vectors ranks untyped queries as one that
    holds them (on Postgres, pgvector scores them on the server)."""
    from tests.conftest import hash_index

    held = make_store(hash_index(), clock=clock)
    unheld = make_store(hash_index(), clock=clock, cache_bytes=64)
    words = ["red", "tulips", "garden", "whales", "songs", "blue", "office", "door"]
    rng = random.Random(3)
    items = [PutOp(("kb", "docs"), f"k{i}", {"text": " ".join(rng.choices(words, k=3))})
             for i in range(120)]
    held.batch(items)
    unheld.batch(items)
    for query in ("red tulips", "blue door", "songs"):
        want = held.search(("kb",), query=query, limit=10)
        got = unheld.search(("kb",), query=query, limit=10)
        assert [i.key for i in got] == [i.key for i in want]  # ties: older item first
        assert [i.score for i in got] == pytest.approx([i.score for i in want], abs=1e-5)


def test_a_namespace_found_too_large_is_not_read_again_on_postgres(request, clock):
    """Counters that began after a namespace's vectors (a database from before they were
    kept) may say it fits; once read and found too large it is ranked by pgvector from then
    on, never read whole again."""
    if "postgres" not in ALL_BACKENDS:
        pytest.skip("Postgres tests are off")
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore
    from tests.conftest import fresh_database, hash_index

    conn = psycopg.connect(fresh_database(request.getfixturevalue("pg_server")),
                           autocommit=True)
    request.addfinalizer(conn.close)
    store = PostgresMemoryStore(conn, index=hash_index(), clock=clock, cache_bytes=4096)
    store.setup()
    store.batch([PutOp(("kb",), f"k{i}", {"text": f"red tulips {i}"}) for i in range(120)])
    conn.execute("DELETE FROM memory_namespace_versions")  # as if counted only from now
    namespaces = store.records.dialect.namespaces
    first = [(i.key, i.score) for i in store.search(("kb",), query="red tulips", limit=5)]
    for _ in range(3):
        again = [(i.key, i.score) for i in store.search(("kb",), query="red tulips", limit=5)]
        assert [k for k, _ in again] == [k for k, _ in first]
    assert namespaces.full_loads == 1 and len(namespaces) == 0
