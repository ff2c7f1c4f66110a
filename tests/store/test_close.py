"""Closing a store built on a connection: `close()`, `aclose()` and `with store:`.

A store owns a `connect_sqlite` connection (the last store on it closes it); a connection the
application opened itself is the application's, and stays open.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from langgraph_typed_memory import AsyncSqliteMemoryStore, SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.errors import StoreClosed
from tests.conftest import fresh_database

NS = ("tenant:acme", "user:alice", "preference")


USES = ("SELECT (SELECT coalesce(sum(n), 0) FROM memory_access) "
        "+ (SELECT coalesce(sum(n), 0) FROM memory_access_log)")
"""The uses of records written to the database (folded or still in the log)."""


def _logged_uses(path: Path) -> int:
    conn = sqlite3.connect(str(path))
    try:
        return int(conn.execute(USES).fetchone()[0])
    finally:
        conn.close()


def test_close_writes_pending_counts_and_closes_the_helpers_connection(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    conn = connect_sqlite(str(path))
    store = SqliteMemoryStore(conn)
    store.setup()
    store.put(NS, "tone", {"value": "terse"})
    assert store.get(NS, "tone") is not None  # one use, pending in memory
    store.close()
    store.close()  # idempotent
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")
    with pytest.raises(StoreClosed):
        store.get(NS, "tone")
    assert _logged_uses(path) == 1


def test_with_store_closes_it(tmp_path: Path) -> None:
    conn = connect_sqlite(str(tmp_path / "m.db"))
    with SqliteMemoryStore(conn) as store:
        store.setup()
        store.put(NS, "tone", {"value": "terse"})
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


def test_a_connection_the_app_opened_stays_open(tmp_path: Path) -> None:
    conn = sqlite3.connect(str(tmp_path / "m.db"), isolation_level=None,
                           check_same_thread=False)
    with SqliteMemoryStore(conn) as store:
        store.setup()
        store.put(NS, "tone", {"value": "terse"})
    assert conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)
    conn.close()


def test_the_last_store_on_a_shared_connection_closes_it(tmp_path: Path) -> None:
    conn = connect_sqlite(str(tmp_path / "m.db"))
    first, second = SqliteMemoryStore(conn), SqliteMemoryStore(conn)
    first.setup()
    first.close()
    second.put(NS, "tone", {"value": "terse"})  # still open for the other store
    second.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


def test_async_store_aclose_and_async_with(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    async def main() -> sqlite3.Connection:
        conn = connect_sqlite(str(path))
        async with AsyncSqliteMemoryStore(conn) as store:
            await store.setup()
            await store.aput(NS, "tone", {"value": "terse"})
            assert await store.aget(NS, "tone") is not None
        await store.aclose()  # idempotent
        return conn

    conn = asyncio.run(main())
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")
    assert _logged_uses(path) == 1


@pytest.mark.postgres
def test_postgres_close_flushes_and_leaves_the_apps_connection_open(pg_server: object) -> None:
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore

    with psycopg.connect(fresh_database(pg_server), autocommit=True) as conn:
        with PostgresMemoryStore(conn) as store:
            store.setup()
            store.put(NS, "tone", {"value": "terse"})
            assert store.get(NS, "tone") is not None
        assert not conn.closed
        row = conn.execute(USES).fetchone()
        assert row is not None and row[0] == 1
