"""The search caches per scope cell: shared tenant-wide rows, a byte bound, concurrent use,
and the indexes their statements use.

A search sees up to four cells (tenant-wide, the user's, the agent's, both); the caches hold
each cell once, whoever reads it, within `cache_bytes`. Searches and writes from 8 threads
(and from async tasks) on one store object must return exactly what a search alone returns
in the same state. The statements that read counters and load cells must use the indexes
named here (`EXPLAIN QUERY PLAN` on SQLite, `EXPLAIN` on Postgres), so a rewrite that falls
back to a scan fails.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langgraph.store.base import BaseStore, PutOp

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.namespaces import Scope
from langgraph_typed_memory.store.core.protocol import Reads, Sql
from langgraph_typed_memory.store.core.search import scope_read
from langgraph_typed_memory.store.index.postings import ScopePostings
from langgraph_typed_memory.store.sqlite.dialect import SqliteDialect
from langgraph_typed_memory.store.sqlite.store import connect_sqlite
from tests.conftest import (
    POSTGRES_BACKENDS,
    FakeClock,
    fresh_database,
    hash_index,
)

USERS = 8
QUERIES = ["red tulips garden", "whales singing songs", "blue office door", "tulips office"]
WORDS = ["red", "tulips", "garden", "spring", "whales", "songs", "blue", "office", "door",
         "singing", "green", "roses"]
TENANT_FACTS = ("tenant:acme", "fact")


def _user_facts(user: int) -> tuple[str, ...]:
    return ("tenant:acme", f"user:u{user}", "fact")


def _text(i: int) -> str:
    return " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(1 + i % 5))


def _fill(store: BaseStore, users: int = USERS, per_user: int = 12, tenant: int = 30) -> None:
    """`per_user` facts per user and `tenant` active tenant-wide facts (through the gate
    from two sources, as a tenant fact needs)."""
    proposals = [{"kind": "fact", "scope": "tenant", "subject": "acme",
                  "predicate": f"topic_{i}", "content": f"acme {_text(i + 100)}",
                  "stateful": False, "confidence": 0.9} for i in range(tenant)]
    for source in ("admin", "import"):
        store.promote(proposals, tenant_id="acme", source=source,  # type: ignore[attr-defined]
                      run_id=f"load-{source}")
    store.batch([PutOp(_user_facts(u), f"k{i}", {"subject": f"u{u}", "predicate": f"p{i}",
                                                  "content": _text(u * 31 + i),
                                                  "confidence": 0.8})
                 for u in range(users) for i in range(per_user)])


def _answers(store: BaseStore, user: int) -> list[list[tuple[str, float]]]:
    return [[(h.key, h.score) for h in store.search(_user_facts(user), query=text, limit=8)]
            for text in QUERIES]


def _writer(store: BaseStore, backend: str, url: str | None) -> Callable[[str, list[Any]], None]:
    """A connection of its own (another writer of the database), as a function running one
    statement written with `?`."""
    if backend.startswith("postgres") or backend == "async_postgres":
        import psycopg

        conn: Any = psycopg.connect(url, autocommit=True)

        def run_pg(sql: str, params: list[Any]) -> None:
            conn.execute(sql.replace("?", "%s"), params)

        return run_pg
    path = store.conn.execute("PRAGMA database_list").fetchone()[2]  # type: ignore[attr-defined]
    lite = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)

    def run_lite(sql: str, params: list[Any]) -> None:
        lite.execute(sql, params)

    return run_lite


SET_CONFIDENCE = ("UPDATE memories SET confidence = ? WHERE ns = ? AND key = ? "
                  "AND status = 'active'")
"""A change the caches must follow (the record's priors), with no effect on full-text
statistics, so every search's expected answer is known for each state."""


def _states(store: BaseStore, write: Callable[[str, list[Any]], None]
            ) -> dict[tuple[int, float, float], list[list[tuple[str, float]]]]:
    """Each user's answers for each (user's record k0 confidence, tenant record confidence)."""
    expected = {}
    for tenant_conf in (0.9, 0.75):
        write(SET_CONFIDENCE, [tenant_conf, "tenant:acme.fact", _tenant_key(store)])
        for conf in (0.8, 0.3):
            for user in range(USERS):
                write(SET_CONFIDENCE, [conf, f"tenant:acme.user:u{user}.fact", "k0"])
                expected[(user, conf, tenant_conf)] = _answers(store, user)
    return expected


def _tenant_key(store: BaseStore) -> str:
    return store.search(TENANT_FACTS, limit=1)[0].key


@pytest.fixture
def concurrent_store(backend: str, make_store: Callable[..., BaseStore], request: Any,
                     ) -> Iterator[tuple[BaseStore, str | None]]:
    if backend == "sqlite_memory":
        pytest.skip("a second connection cannot reach an in-memory database")
    url = None
    if backend in POSTGRES_BACKENDS:
        server = request.getfixturevalue("pg_server")
        url = fresh_database(server)
    store = make_store(hash_index(), clock=FakeClock()) if url is None else None
    yield store, url  # type: ignore[misc]


def _pg_store(url: str, pool: bool) -> Any:
    import psycopg
    from psycopg_pool import ConnectionPool

    from langgraph_typed_memory import PostgresMemoryStore

    conn: Any = (ConnectionPool(url, min_size=1, max_size=8, kwargs={"autocommit": True},
                                open=True) if pool else psycopg.connect(url, autocommit=True))
    store = PostgresMemoryStore(conn, index=hash_index(), clock=FakeClock())
    store.setup()
    with psycopg.connect(url, autocommit=True) as raw:  # N stays as counted now
        raw.execute("ALTER TABLE memories SET (autovacuum_enabled = false)")
    return store, conn


def test_threads_search_and_write_one_store_exactly(
        backend: str, concurrent_store: Any) -> None:
    """8 threads on one store object, each searching its user's scope (its cell and the
    tenant-wide one) while it changes its own record and another thread changes a
    tenant-wide one: every answer is the one a lone search gives in that state."""
    if backend.startswith("async"):
        pytest.skip("the async stores: test_async_tasks_search_and_write_one_store_exactly")
    store, url = concurrent_store
    closing = None
    if url is not None:
        store, closing = _pg_store(url, pool=backend == "postgres_pool")
    try:
        _fill(store)
        write = _writer(store, backend, url)
        expected = _states(store, write)
        tenant_key = _tenant_key(store)
        failures: list[str] = []
        done = threading.Event()
        tenant_conf = [0.75]

        def tenant_writer() -> None:
            own = _writer(store, backend, url)
            while not done.is_set():
                tenant_conf[0] = 0.9 if tenant_conf[0] == 0.75 else 0.75
                own(SET_CONFIDENCE, [tenant_conf[0], "tenant:acme.fact", tenant_key])

        def reader(user: int) -> None:
            own = _writer(store, backend, url)
            try:
                for round_ in range(6):
                    conf = (0.8, 0.3)[round_ % 2]
                    own(SET_CONFIDENCE, [conf, f"tenant:acme.user:u{user}.fact", "k0"])
                    got = _answers(store, user)
                    if got not in (expected[(user, conf, 0.9)], expected[(user, conf, 0.75)]):
                        failures.append(f"u{user} round {round_}: {got}")
            except Exception as exc:  # noqa: BLE001 - reported below
                failures.append(f"u{user}: {exc!r}")

        flipper = threading.Thread(target=tenant_writer)
        flipper.start()
        threads = [threading.Thread(target=reader, args=(u,)) for u in range(USERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        done.set()
        flipper.join(30)
        assert not failures, failures[:3]
        cache = store.records.dialect.cache  # type: ignore[attr-defined]
        assert cache.nbytes <= cache.max_bytes
    finally:
        if closing is not None:
            store.flush_access()
            closing.close()


def test_async_tasks_search_and_write_one_store_exactly(
        backend: str, concurrent_store: Any) -> None:
    """The same from async tasks on one async store (its own event loop)."""
    if not backend.startswith("async"):
        pytest.skip("the sync stores: test_threads_search_and_write_one_store_exactly")
    store, url = concurrent_store
    if url is None:
        _fill(store)
        write = _writer(store, backend, url)
        expected = _states(store, write)

        async def main() -> list[str]:
            failures: list[str] = []

            async def reader(user: int) -> None:
                own = _writer(store, backend, url)
                for round_ in range(6):
                    conf = (0.8, 0.3)[round_ % 2]
                    await asyncio.to_thread(
                        own, SET_CONFIDENCE, [conf, f"tenant:acme.user:u{user}.fact", "k0"])
                    got = [[(h.key, h.score) for h in await store.asearch(
                        _user_facts(user), query=text, limit=8)] for text in QUERIES]
                    if got != expected[(user, conf, 0.75)]:
                        failures.append(f"u{user} round {round_}: {got}")

            await asyncio.gather(*(reader(u) for u in range(USERS)))
            return failures

        assert not asyncio.run(main())
        return
    pytest.skip("async Postgres: covered by the pool's threads (one connection, serialized)")


def test_tenant_wide_rows_are_cached_once_however_many_users_read_them() -> None:
    with SqliteMemoryStore.from_conn_string(":memory:", index=hash_index(),
                                            clock=FakeClock()) as store:
        store.setup()
        _fill(store, users=20, per_user=5, tenant=40)
        for user in range(20):
            assert store.search(_user_facts(user), query="red tulips")
        held = store.records.dialect.cache.held("vectors")
        tenant = [entry for cell, entry in held if cell[2] is None]
        assert len(tenant) == 1 and tenant[0].size == 40  # once, with the tenant's rows
        users = [entry for cell, entry in held if cell[2] is not None]
        assert len(users) == 20 and all(entry.size == 5 for entry in users)
        assert len(store.records.dialect.cache.held("postings")) == 21


def test_a_cell_held_empty_is_read_once_it_holds_records(store: BaseStore) -> None:
    """A first search reads the cells it does not hold with their counters; one without any
    record is held empty (not read again by every search), until a record arrives."""
    episodes = ("tenant:acme", "user:alice", "episode")
    assert list(store.search(episodes, query="red tulips")) == []
    cache = store.records.dialect.cache  # type: ignore[attr-defined]
    empty = [entry for cell, entry in cache.held("vectors") if cell[0] == "episode"]
    assert empty and all(entry.size == 0 for entry in empty)
    store.put(episodes, "e1", {"title": "garden", "summary": "red tulips in the garden"})
    assert [i.key for i in store.search(episodes, query="red tulips")] == ["e1"]
    store.put(("tenant:acme", "episode"), "t1", {"title": "all hands",
                                                 "summary": "red tulips for everyone"})
    assert {i.key for i in store.search(episodes, query="red tulips")} == {"e1", "t1"}


def test_empty_cells_count_against_the_bound() -> None:
    """Every entry counts its own objects: cells held empty cannot grow without bound."""
    from langgraph_typed_memory.store.index.scopes import ENTRY_OVERHEAD

    bound = 20 * ENTRY_OVERHEAD
    with SqliteMemoryStore.from_conn_string(":memory:", index=hash_index(), clock=FakeClock(),
                                            cache_bytes=bound) as store:
        store.setup()
        for user in range(50):  # users without any episode
            store.search(("tenant:acme", f"user:u{user}", "episode"), query="red tulips")
        cache = store.records.dialect.cache
        assert 0 < len(cache) <= 20 and cache.nbytes <= bound and cache.evictions > 0


def test_the_cache_never_exceeds_its_bound_and_answers_stay_exact() -> None:
    """A bound that holds a few cells: the least recently used go, answers are those of an
    unbounded store, and a cell larger than the bound is used without being kept (a scope
    over the bound is ranked by its sketches, every row of it rescored exactly)."""
    with SqliteMemoryStore.from_conn_string(":memory:", index=hash_index(),
                                            clock=FakeClock()) as roomy:
        roomy.setup()
        _fill(roomy, users=12, per_user=20, tenant=10)
        expected = {u: _answers(roomy, u) for u in range(12)}
    for bound in (40_000, 2_000):
        with SqliteMemoryStore.from_conn_string(":memory:", index=hash_index(),
                                                clock=FakeClock(), cache_bytes=bound) as store:
            store.setup()
            cache = store.records.dialect.cache
            _fill(store, users=12, per_user=20, tenant=10)
            for _ in range(2):
                for user in range(12):
                    assert _answers(store, user) == expected[user]
                    assert cache.nbytes <= bound
                    held = [entry for family in ("vectors", "sketches", "postings")
                            for entry in cache.held(family)]
                    assert cache.nbytes == sum(entry.nbytes() for _, entry in held)
            assert cache.evictions > 0 or not len(cache)
            if bound == 2_000:
                assert not len(cache)  # every cell is larger than the bound


def test_cells_read_in_chunks_hold_what_one_read_holds() -> None:
    """A cell larger than a chunk is read a chunk at a time (SQLite reads every cell so),
    each chunk after the last whole record of the one before: the same rows, the same
    answers, also in the sketch regime, and after the rows changed."""
    with SqliteMemoryStore.from_conn_string(":memory:", index=hash_index(),
                                            clock=FakeClock()) as whole:
        whole.setup()
        _fill(whole, users=3, per_user=40, tenant=10)
        for family in (whole.records.dialect.vectors, whole.records.dialect.postings):
            family.load_chunk = None
        expected = {u: _answers(whole, u) for u in range(3)}
    for bound in (None, 10_000):  # exact, then ranked by sketches
        options = {} if bound is None else {"cache_bytes": bound}
        with SqliteMemoryStore.from_conn_string(":memory:", index=hash_index(),
                                                clock=FakeClock(), **options) as store:
            store.setup()
            _fill(store, users=3, per_user=40, tenant=10)
            dialect = store.records.dialect
            for family in (dialect.vectors, dialect.postings, dialect.sketches):
                family.load_chunk = 7
            for user in range(3):
                assert _answers(store, user) == expected[user]
            if bound is None:  # every row held, each cell's once
                held = [entry.size for family in ("vectors", "postings")
                        for _, entry in dialect.cache.held(family)]
                assert sorted(held) == [10, 10] + [40] * 6
            else:
                assert dialect.sketches.full_loads and not dialect.vectors.full_loads


# -------------------------------------------------------------------------- query plans


def _run_sqlite(conn: sqlite3.Connection, plan: Any, seen: list[Sql]) -> Any:
    request = next(plan)
    try:
        while True:
            steps = request.steps if isinstance(request, Reads) else (request,)
            seen.extend(steps)
            answers = [conn.execute(s.text, s.params).fetchall() for s in steps]
            request = plan.send(answers if isinstance(request, Reads) else answers[0])
    except StopIteration as stop:
        return stop.value


def _statements(run: Callable[[Any, list[Sql]], Any], dialect: Any,
                write: Callable[[str], None]) -> list[Sql]:
    """The statements of a vector and a lexical search of alice's facts (her cell and the
    tenant-wide one): loaded, after an added record, and after a changed one."""
    read = scope_read(Scope("acme", user_id="u3"), "fact", "m.status = 'active'", 1e12)
    seen: list[Sql] = []
    for change in (None, "add", "update"):
        if change:
            write(change)
        run(dialect.vector_top_k(read, [1.0] * 32, 10), seen)
        run(dialect.lexical(read, ["red", "tulips"], 10), seen)
    return seen


def _kinds(statements: list[Sql]) -> dict[str, list[Sql]]:
    """The statements by what they read."""
    out: dict[str, list[Sql]] = {"counters": [], "vectors": [], "postings": [], "log": []}
    for s in statements:
        if "FROM memory_scope_versions" in s.text and "SELECT user_id" in s.text:
            out["counters"].append(s)
        elif "memory_vectors v" in s.text:
            out["vectors"].append(s)
        elif s.text.startswith("SELECT c.seq FROM memory_scope_changes"):
            out["log"].append(s)
        elif s.text.startswith("SELECT m.seq, ") and "FROM memories m WHERE" in s.text:
            out["postings"].append(s)
    return out


def _sqlite_world(rows: int = 3000) -> sqlite3.Connection:
    conn = connect_sqlite(":memory:")
    SqliteMemoryStore(conn, index=hash_index()).setup()
    conn.execute("BEGIN")
    for i in range(rows):
        user = None if i % 10 == 0 else f"u{i % 50}"
        ns = "tenant:acme.fact" if user is None else f"tenant:acme.user:{user}.fact"
        seq = conn.execute(
            "INSERT INTO memories (id, ns, key, value, kind, tenant_id, user_id, status, "
            "search_text, created_at, updated_at) VALUES (?, ?, ?, '{}', 'fact', 'acme', ?, "
            "'active', ?, 1, 1) RETURNING seq",
            [f"id{i}", ns, f"k{i}", user, _text(i)]).fetchone()[0]
        conn.execute("INSERT INTO memory_vectors (seq, field, embedding) "
                     "VALUES (?, '$memory', ?)", [seq, bytes(128)])
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    return conn


@pytest.mark.perf_contract
def test_sqlite_cache_statements_use_their_indexes() -> None:
    conn = _sqlite_world()

    def write(change: str) -> None:
        if change == "add":
            seq = conn.execute(
                "INSERT INTO memories (id, ns, key, value, kind, tenant_id, user_id, status, "
                "search_text, created_at, updated_at) VALUES ('new', 'n', 'k', '{}', 'fact', "
                "'acme', 'u3', 'active', 'red tulips', 1, 1) RETURNING seq").fetchone()[0]
            conn.execute("INSERT INTO memory_vectors (seq, field, embedding) "
                         "VALUES (?, '$memory', ?)", [seq, bytes(128)])
        else:
            conn.execute("UPDATE memories SET confidence = 0.5 WHERE id = 'id3'")

    statements = _kinds(_statements(
        lambda plan, seen: _run_sqlite(conn, plan, seen), SqliteDialect(), write))
    for kind, index in (("counters", "USING INDEX memory_scope_versions_cell"),
                        ("vectors", "USING INDEX memories_scope"),
                        ("postings", "USING INDEX memories_scope")):
        assert statements[kind], kind
        for s in statements[kind]:
            plan = " / ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + s.text,
                                                         s.params))
            if "m.seq IN" in s.text:  # the records logged as changed, by their seq
                index = "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)"
            assert index in plan, (kind, s.text, plan)
            if kind == "vectors":  # each vector by the primary key, never a scan
                assert "SEARCH v USING" in plan and "SCAN v" not in plan, plan
            if kind != "counters" and "m.seq IN" not in s.text:
                assert "TEMP B-TREE" not in plan, plan  # the index gives seq order
    assert any("m.seq > ?" in s.text for s in statements["vectors"])  # the append was read
    assert statements["log"]  # and the change
    conn.close()


@pytest.mark.perf_contract
def test_postgres_cache_statements_use_their_indexes(pg_server: Any) -> None:
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore
    from langgraph_typed_memory.store.postgres.dialect import PostgresDialect
    from langgraph_typed_memory.store.postgres.store import to_psycopg

    url = fresh_database(pg_server)
    with psycopg.connect(url, autocommit=True) as conn:
        PostgresMemoryStore(conn, index=hash_index()).setup()
        conn.execute(
            "INSERT INTO memories (id, ns, key, value, kind, tenant_id, user_id, status, "
            "search_text, created_at, updated_at) "
            "SELECT 'id' || i, 'ns' || i, 'k' || i, '{}', 'fact', 'acme', "
            "CASE WHEN i % 100 = 0 THEN NULL ELSE 'u' || (i % 200) END, 'active', "
            "'red tulips garden ' || i, 1, 1 FROM generate_series(1, 20000) AS i")
        conn.execute("INSERT INTO memory_vectors (seq, field, embedding) "
                     "SELECT seq, '$memory', array_fill(0.1, ARRAY[32])::vector FROM memories")
        conn.execute("ANALYZE")

        def run(plan: Any, seen: list[Sql]) -> Any:
            request = next(plan)
            try:
                while True:
                    steps = request.steps if isinstance(request, Reads) else (request,)
                    seen.extend(steps)
                    answers = [conn.execute(to_psycopg(s.text), s.params, prepare=False
                                            ).fetchall() for s in steps]
                    request = plan.send(answers if isinstance(request, Reads) else answers[0])
            except StopIteration as stop:
                return stop.value

        def write(change: str) -> None:
            if change == "add":
                conn.execute(
                    "INSERT INTO memories (id, ns, key, value, kind, tenant_id, user_id, "
                    "status, search_text, created_at, updated_at) VALUES ('new', 'n', 'k', "
                    "'{}', 'fact', 'acme', 'u3', 'active', 'red tulips', 1, 1)")
                conn.execute("INSERT INTO memory_vectors SELECT seq, '$memory', "
                             "array_fill(0.2, ARRAY[32])::vector FROM memories WHERE id = 'new'")
            else:
                conn.execute("UPDATE memories SET confidence = 0.5 WHERE id = 'id3'")

        statements = _kinds(_statements(run, PostgresDialect(), write))
        for kind, index in (("counters", "memory_scope_versions_cell"),
                            ("vectors", "memories_scope"), ("postings", "memories_scope")):
            assert statements[kind], kind
            for s in statements[kind]:
                # A few hundred cells fit a page or two: whether the index can serve the
                # counters is asked with sequential scans off.
                conn.execute(f"SET enable_seqscan = {'off' if kind == 'counters' else 'on'}")
                plan = "\n".join(r[0] for r in conn.execute(
                    "EXPLAIN " + to_psycopg(s.text), s.params, prepare=False))
                if "m.seq IN" in s.text:  # the records logged as changed, by their seq
                    assert "memories_pkey" in plan, plan
                elif "m.seq > ?" in s.text:  # the rows after the newest: either range
                    assert "memories_scope" in plan or "memories_pkey" in plan, plan
                else:
                    assert index in plan, (kind, s.text, plan)
                assert "Seq Scan on memories " not in plan, plan
                assert "Seq Scan on memory_vectors " not in plan, plan
                if kind == "vectors":  # each vector by the primary key
                    assert "memory_vectors_pkey" in plan, plan
        assert any("m.seq > ?" in s.text for s in statements["vectors"])
        assert statements["log"]


def test_postings_appended_in_segments_equal_postings_read_at_once() -> None:
    """Rows appended a few at a time (segments merged as they grow) hold the same postings
    as the same rows read at once, and a view cut before an append keeps its own."""
    rng = random.Random(3)
    words = [f"w{i}" for i in range(40)]
    rows = []
    for seq in range(1, 301):
        lexemes = sorted(set(rng.choices(words, k=rng.randint(1, 6))))
        rows.append((seq, lexemes, [rng.randint(1, 3) for _ in lexemes], None))
    whole = ScopePostings(0, 0)
    whole.append(rows)
    grown, views, at = ScopePostings(0, 0), [], 0
    while at < len(rows):
        step = rng.randint(1, 40)
        grown.append(rows[at : at + step])
        at += step
        views.append((at, grown.view()))
    assert len(grown._segments) <= 10
    for word in [*words, "absent"]:
        for view in (grown, whole):
            assert [a.tolist() for a in view.holding(word, None)] == \
                [a.tolist() for a in whole.holding(word, None)]
        for size, view in views:
            expected = [(r, c) for r, c in zip(*(a.tolist() for a in whole.holding(word, None)),
                                               strict=True) if r < size]
            assert list(zip(*(a.tolist() for a in view.holding(word, None)), strict=True)) \
                == expected
