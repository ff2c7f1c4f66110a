"""Code written for LangGraph's own stores runs unchanged on every backend.

Each test feeds the store what LangGraph's `SqliteStore`, `PostgresStore` or `InMemoryStore`
accept: their index config keys, namespace paths given as lists, filter keys that are not
identifiers, filter bounds no record can hold, and large windows. Filter keys carrying SQL
are literal keys: they match a record holding that exact key and nothing else.
"""

from __future__ import annotations

import math
from collections import UserList
from typing import Any

import pytest
from langgraph.store.base import BaseStore, ListNamespacesOp, MatchCondition
from langgraph.store.memory import InMemoryStore

from langgraph_typed_memory import InvalidQuery
from langgraph_typed_memory.config import normalize_index
from langgraph_typed_memory.errors import ConfigurationError
from tests.conftest import StoreFactory
from tests.fake_embeddings import HashEmbeddings
from tests.store.test_bad_input import raw_tables

DOCS = ("docs",)
ALICE_FACTS = ("tenant:acme", "user:alice", "fact")
BOB_FACTS = ("tenant:acme", "user:bob", "fact")
MAX_WINDOW = 10**18
"""The largest limit or offset the store takes (docs/compatibility.md)."""


def keys(items: list[Any]) -> list[str]:
    return sorted(i.key for i in items)


def fact(content: str, predicate: str = "note", **extra: Any) -> dict[str, Any]:
    return {"subject": "alice", "predicate": predicate, "content": content, **extra}


# ------------------------------------------------------------------ index config


def test_index_text_fields_embeds_the_fields_it_names(backend_store_factory: StoreFactory):
    store = backend_store_factory({"dims": 32, "embed": HashEmbeddings(32),
                                   "text_fields": ["text"]})
    store.put(DOCS, "named", {"text": "apples and pears", "other": "boats"})
    store.put(DOCS, "unnamed", {"other": "apples and pears"})
    scores = {i.key: i.score for i in store.search(DOCS, query="apples and pears")}
    assert scores["named"] == pytest.approx(1.0, abs=1e-5)
    assert scores["unnamed"] is None  # only `text` is embedded, as with fields=["text"]


def test_index_text_fields_reads_as_langgraph_sqlite_store_reads_it():
    embed = HashEmbeddings(8)
    settings = normalize_index({"dims": 8, "embed": embed, "text_fields": "a.b"})
    assert settings is not None and settings.fields == ("a.b",)
    both = normalize_index({"dims": 8, "embed": embed, "fields": ["x"], "text_fields": ["x"]})
    assert both is not None and both.fields == ("x",)
    with pytest.raises(ConfigurationError, match=r"fields=\['x'\].*text_fields=\['y'\]"):
        normalize_index({"dims": 8, "embed": embed, "fields": ["x"], "text_fields": ["y"]})
    with pytest.raises(ConfigurationError, match="text_fields"):
        normalize_index({"dims": 8, "embed": embed, "text_fields": [3]})


# ------------------------------------------------------------------ namespace paths


def test_list_namespaces_takes_any_sequence_of_labels(store: BaseStore):
    for ns in [("a", "b"), ("a", "c", "b"), ("z", "b"), ("z",)]:
        store.put(ns, "k", {"text": "x"})
    assert store.list_namespaces(prefix=["a"]) == [("a", "b"), ("a", "c", "b")]
    assert store.list_namespaces(suffix=["b"]) == [("a", "b"), ("a", "c", "b"), ("z", "b")]
    assert store.list_namespaces(prefix=["a", "*", "b"]) == [("a", "c", "b")]
    assert store.list_namespaces(prefix=["a"], max_depth=1) == [("a",)]
    condition = MatchCondition("prefix", UserList(["z"]))
    assert store.batch([ListNamespacesOp((condition,))])[0] == [("z",), ("z", "b")]


def test_search_takes_a_list_prefix_and_keys_become_text(store: BaseStore):
    store.put(DOCS, 42, {"text": "x"})  # LangGraph's methods call str(key)
    store.put(ALICE_FACTS, "f", fact("Alice has a cat"))
    assert keys(store.search(["docs"])) == ["42"] and store.get(DOCS, 42).key == "42"
    assert keys(store.search(list(ALICE_FACTS), query="cat")) == ["f"]


@pytest.mark.parametrize("path", [[1], ("a", None), "a", b"a", None])
def test_match_path_that_is_not_labels_is_refused(store: BaseStore, path: Any):
    op = ListNamespacesOp((MatchCondition("prefix", path),))
    with pytest.raises(InvalidQuery, match="must be a tuple or list of strings"):
        store.batch([op])


# ------------------------------------------------------------------ filter keys


def test_filter_keys_with_hyphens_and_leading_digits(store: BaseStore):
    store.put(DOCS, "pub", {"text": "report", "access-level": "public", "123abc": "ok",
                            "user": {"access-level": "admin"}})
    store.put(DOCS, "priv", {"text": "report", "access-level": "private", "123abc": "no",
                             "user": {"access-level": "guest"}})
    for query in (None, "report"):
        def found(filter: dict[str, Any], query: str | None = query) -> list[str]:
            return keys(store.search(DOCS, query=query, filter=filter))

        assert found({"access-level": "public"}) == ["pub"]
        assert found({"access-level": {"$ne": "public"}}) == ["priv"]
        assert found({"123abc": "ok"}) == ["pub"]
        assert found({"user": {"access-level": "guest"}}) == ["priv"]
    store.put(ALICE_FACTS, "f", fact("Alice files reports", metadata={"access-level": "public"}))
    store.put(ALICE_FACTS, "g", fact("Alice reads reports", metadata={"access-level": "team"}))
    for query in (None, "reports"):
        hits = store.search(ALICE_FACTS, query=query, filter={"metadata": {"access-level": "team"}})
        assert keys(hits) == ["g"]


def test_dotted_filter_key_reaches_a_nested_field(store: BaseStore):
    store.put(DOCS, "pub", {"user": {"access-level": "admin"}})
    store.put(DOCS, "priv", {"user": {"access-level": "guest"}})
    store.put(DOCS, "lit", {"user.access-level": "admin", "user": {"access-level": "guest"}})
    for query in (None, "admin"):
        # the nested field, unless the value has the dotted key itself (then that key)
        assert keys(store.search(DOCS, query=query, filter={"user.access-level": "admin"})) == [
            "lit", "pub"]


# ------------------------------------------------------------------ filter values


def test_infinite_bounds_in_filters(store: BaseStore):
    store.put(DOCS, "cheap", {"text": "a lamp", "price": 3})
    store.put(DOCS, "dear", {"text": "a lamp", "price": 1e300})
    store.put(DOCS, "free", {"text": "a lamp", "price": -2.5})
    for query in (None, "lamp"):
        def found(bound: dict[str, float], query: str | None = query) -> list[str]:
            return keys(store.search(DOCS, query=query, filter={"price": bound}))

        assert found({"$lt": math.inf}) == ["cheap", "dear", "free"]
        assert found({"$gt": -math.inf, "$lte": 3}) == ["cheap", "free"]
        assert found({"$gt": math.inf}) == []
        assert found({"$eq": math.inf}) == []
    store.put(ALICE_FACTS, "f", fact("Alice buys lamps", confidence=0.9))
    for query in (None, "lamps"):
        hits = store.search(ALICE_FACTS, query=query, filter={"confidence": {"$lt": math.inf}})
        assert keys(hits) == ["f"]


def test_nul_byte_in_a_filter_matches_nothing(store: BaseStore):
    store.put(DOCS, "d", {"text": "report", "meta": {"tag": "red"}})
    store.put(ALICE_FACTS, "f", fact("Alice files reports"))
    for query in (None, "report"):
        for filter in ({"text": "report\x00"}, {"meta": {"tag": "re\x00d"}},
                       {"text": {"$eq": "\x00"}}, {"te\x00xt": "report"}):
            assert store.search(DOCS, query=query, filter=filter) == []
        assert keys(store.search(DOCS, query=query, filter={"text": {"$ne": "\x00"}})) == ["d"]
        assert store.search(ALICE_FACTS, query=query, filter={"subject": "alice\x00"}) == []


def test_nan_in_a_filter_matches_nothing(store: BaseStore):
    """As on LangGraph's stores: no stored number equals NaN or compares with it."""
    store.put(DOCS, "d", {"n": 1.5, "text": "report"})
    for filter in ({"n": math.nan}, {"n": {"$lt": math.nan}}, {"n": {"$gte": math.nan}}):
        assert store.search(DOCS, filter=filter) == []
        assert store.search(DOCS, query="report", filter=filter) == []


# ------------------------------------------------------------------ windows


def test_large_limits_and_offsets_are_accepted(store: BaseStore):
    store.put(DOCS, "d1", {"text": "quarterly report"})
    store.put(("docs", "sub"), "d2", {"text": "meeting notes"})
    store.put(ALICE_FACTS, "city", fact("Alice lives in Lyon", predicate="city"))
    store.put(ALICE_FACTS, "city", fact("Alice lives in Paris", predicate="city"))
    store.put(ALICE_FACTS, "pet", fact("Alice has a cat named foo_bar", predicate="pet"))
    for limit in (100_000, 2**31 - 1, MAX_WINDOW):
        assert store.list_namespaces(limit=limit) == [("docs",), ("docs", "sub"), ALICE_FACTS]
        assert keys(store.search(DOCS, limit=limit)) == ["d1", "d2"]
        assert keys(store.search(DOCS, query="report", limit=limit)) == ["d1", "d2"]
        assert keys(store.search(ALICE_FACTS, query="Alice Paris", limit=limit)) == [
            "city", "pet"]
        phrase = store.search(ALICE_FACTS, query="foo_bar", limit=limit)  # several tokens
        assert phrase[0].key == "pet" and keys(phrase) == ["city", "pet"]
        assert phrase.retrieval_mode == "hybrid" and not phrase.degraded
        assert keys(store.search(ALICE_FACTS, filter={"$newest": True}, limit=limit)) == [
            "city", "pet"]
        history = store.search(ALICE_FACTS, query="Lyon", filter={"$history": True},
                               limit=limit, offset=limit)
        assert history == []
    assert store.list_namespaces(offset=MAX_WINDOW) == []
    assert store.search(ALICE_FACTS, query="Alice", offset=MAX_WINDOW) == []


@pytest.mark.parametrize("window", [
    {"limit": -1}, {"offset": -1}, {"limit": 2.5}, {"limit": "10"}, {"limit": True},
    {"offset": None}, {"limit": MAX_WINDOW + 1},
])
def test_meaningless_windows_are_refused(store: BaseStore, window: dict[str, Any]):
    name, value = next(iter(window.items()))
    with pytest.raises(InvalidQuery, match=f"{name}={value!r}"):
        store.search(DOCS, **window)
    with pytest.raises(InvalidQuery, match=f"{name}={value!r}"):
        store.list_namespaces(**window)


# ------------------------------------------------------------------ filter keys are data

INJECTIONS = [
    "access') = 'public' OR '1'='1",
    "access-level') IS NOT NULL OR ('1'='1",
    "x'); DROP TABLE memories; --",
    'access-level" OR "1"="1',
    "value->>'access-level'",
    "' || (SELECT key FROM memories) || '",
]


def _tables(store: BaseStore) -> dict[str, Any]:
    """Every row of every table but SQLite's counters of generated ids: a read refreshes
    TTLs with an UPDATE (here of no row) whose triggers can log changes, and SQLite then adds
    the change log's counter, at 0."""
    return {t: rows for t, rows in raw_tables(store).items() if t != "sqlite_sequence"}


def test_filter_keys_carrying_sql_are_literal_keys(store: BaseStore):
    records = {
        "pub": {"text": "report", "access-level": "public"},
        "priv": {"text": "report", "access-level": "private"},
        "odd": {"text": "report", INJECTIONS[0]: "public"},
    }
    reference = InMemoryStore()
    for key, value in records.items():
        store.put(DOCS, key, value)
        reference.put(DOCS, key, value)
    store.put(ALICE_FACTS, "f", fact("Alice files reports", metadata={"access-level": "x"}))
    store.put(BOB_FACTS, "g", fact("Bob files reports", metadata={"access-level": "x"}))
    holds_the_key = [{INJECTIONS[0]: "public"}, {INJECTIONS[0]: {"$eq": "public"}}]
    before = _tables(store)
    for injected in INJECTIONS:
        for filter in ({injected: "public"}, {injected: {"$eq": "public"}},
                       {"access-level": "private", injected: "public"}, {"user": {injected: 1}}):
            for query in (None, "report"):
                got = keys(store.search(DOCS, query=query, filter=filter))
                assert got == (["odd"] if filter in holds_the_key else []), (injected, filter)
                assert got == keys(reference.search(DOCS, filter=filter))
            assert store.search(ALICE_FACTS, query="reports", filter={"metadata": filter}) == []
            assert store.search(ALICE_FACTS, filter=filter) == []
    assert _tables(store) == before
    assert keys(store.search(DOCS)) == ["odd", "priv", "pub"]
    assert keys(store.search(BOB_FACTS)) == ["g"]


# ------------------------------------------------------------------ connections


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_postgres_connection_with_dict_rows_works(request: pytest.FixtureRequest, mode: str):
    """LangGraph's PostgresStore asks for `row_factory=dict_row`; a connection made that way
    serves this store too (its cursors read tuples whatever the connection's default)."""
    import asyncio

    psycopg = pytest.importorskip("psycopg")
    from psycopg.rows import dict_row

    from langgraph_typed_memory import AsyncPostgresMemoryStore, PostgresMemoryStore
    from tests.conftest import fresh_database

    url = fresh_database(request.getfixturevalue("pg_server"))
    index = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    facts = ("tenant:acme", "user:alice", "fact")
    if mode == "sync":
        with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
            store = PostgresMemoryStore(conn, index=index)
            store.setup()
            store.put(facts, "city", fact("Alice lives in Lyon"))
            store.put(("docs",), "d", {"text": "a lamp"})
            assert [i.key for i in store.search(facts, query="Lyon")] == ["city"]
            assert [i.key for i in store.search(("docs",), query="lamp")] == ["d"]
        return

    async def run() -> list[str]:
        async with await psycopg.AsyncConnection.connect(
                url, autocommit=True, row_factory=dict_row) as conn:
            store = AsyncPostgresMemoryStore(conn, index=index)
            await store.setup()
            await store.aput(facts, "city", fact("Alice lives in Lyon"))
            return [i.key for i in await store.asearch(facts, query="Lyon")]

    assert asyncio.run(run()) == ["city"]


STORE_CLASSES = ["SqliteMemoryStore", "AsyncSqliteMemoryStore", "PostgresMemoryStore",
                 "AsyncPostgresMemoryStore"]


@pytest.mark.parametrize("name", STORE_CLASSES)
def test_no_method_changes_between_sync_and_async_down_the_hierarchy(name: str) -> None:
    """A method is sync or async in every class that defines it: an async store's `setup` is
    a coroutine (as on LangGraph's async stores) without overriding a sync `setup` of a class
    it derives from, so a sync call never meets a coroutine it did not expect."""
    import inspect

    import langgraph_typed_memory as ltm

    cls = getattr(ltm, name)
    for attr in {a for klass in cls.__mro__ for a in vars(klass)}:
        shapes = {klass.__name__: inspect.iscoroutinefunction(vars(klass)[attr])
                  for klass in cls.__mro__ if attr in vars(klass)
                  and inspect.isfunction(vars(klass)[attr])}
        assert len(set(shapes.values())) <= 1, f"{name}.{attr}: {shapes}"
    expect_async = name.startswith("Async")
    assert inspect.iscoroutinefunction(cls.setup) is expect_async
    assert inspect.iscoroutinefunction(cls.sweep_ttl) is expect_async


def test_async_postgres_maintenance_runs_on_the_event_loop(
        request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The async Postgres store's own a* methods drive their plans on its event loop: none
    hops to a worker thread (and back through the loop) on the way."""
    import asyncio

    psycopg = pytest.importorskip("psycopg")

    from langgraph_typed_memory import AsyncPostgresMemoryStore
    from tests.conftest import fresh_database

    url = fresh_database(request.getfixturevalue("pg_server"))
    prefs = ("tenant:acme", "user:alice", "preference")

    def no_thread(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a worker thread was used: {args[:1]!r}")

    async def run() -> tuple[Any, ...]:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            store = AsyncPostgresMemoryStore(conn)
            await store.setup()
            monkeypatch.setattr(asyncio, "to_thread", no_thread)
            await store.aput(prefs, "tone", {"value": "terse"})
            await store.aget(prefs, "tone")
            flushed = await store.aflush_access()
            swept = await store.asweep()
            ttl = await store.sweep_ttl()
            ok = (await store.acheck_invariants()).ok
            history = await store.ahistory(prefs, "tone")
            erased = await store.aerase("acme", "alice")
            return flushed, swept.expired + swept.forgotten, ttl, ok, len(history), erased.records

    flushed, swept, ttl, ok, versions, deleted = asyncio.run(run())
    assert (flushed, swept, ttl, ok, versions) == (1, 0, 0, True, 1)
    assert deleted.get("preference") == 1
