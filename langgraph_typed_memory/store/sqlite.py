"""The embedded default: SQLite through the standard library's `sqlite3`.

One connection per store, WAL journal for files, writers serialized with `BEGIN IMMEDIATE`
and a busy timeout. The async class runs the same code in a worker thread, so it never blocks
the event loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from functools import partial
from typing import Any

from langgraph.store.base import IndexConfig, TTLConfig

from langgraph_typed_memory.config import LifecycleConfig, RetrievalConfig
from langgraph_typed_memory.gate import GateConfig
from langgraph_typed_memory.store.base import MemoryStoreBase
from langgraph_typed_memory.store.protocol import Begin, Commit, Sql, drive_sync
from langgraph_typed_memory.store.retry import Attempt, run_sync
from langgraph_typed_memory.store.sqlite_sql import SqliteDialect

__all__ = ["SqliteMemoryStore", "AsyncSqliteMemoryStore", "connect_sqlite"]


def connect_sqlite(path: str) -> sqlite3.Connection:
    """Open a connection configured for the store (autocommit, WAL, foreign keys).

    Reads get a 64 MiB page cache and up to 1 GiB of the file memory-mapped: the scope
    filter and full-text joins touch pages all over a large file, and SQLite's default
    2 MB cache sent each one through a read() (docs/backends.md has the figures).

    Example:
        >>> conn = connect_sqlite(":memory:")
        >>> conn.execute("PRAGMA foreign_keys").fetchone()
        (1,)
    """
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA secure_delete = ON")  # deleted content is zeroed, not left in the file
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA cache_size = -65536")
    conn.execute("PRAGMA mmap_size = 1073741824")
    if path != ":memory:" and not path.startswith("file::memory:"):
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


class SqliteMemoryStore(MemoryStoreBase):
    """Typed memory on SQLite: a drop-in LangGraph `BaseStore`.

    Args:
        conn: A `sqlite3.Connection` (use `connect_sqlite` or `from_conn_string`).
        index: LangGraph's `IndexConfig` (`dims`, `embed`, `fields`); None: lexical-only.
        ttl: LangGraph's `TTLConfig`.
        retrieval: How semantic discovery ranks (see `RetrievalConfig`).
        clock: Returns the current time (inject one in tests).
        gate: Thresholds of the promotion gate (see `GateConfig`).
        lifecycle: Expiry, garbage collection, access tracking and retention (see
            `LifecycleConfig`).

    Example:
        >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
        ...     store.setup()
        ...     ns = ("tenant:acme", "user:alice", "preference")
        ...     store.put(ns, "output_format", {"value": "json"})
        ...     print(store.get(ns, "output_format").value["value"])
        json
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        index: IndexConfig | Mapping[str, Any] | None = None,
        ttl: TTLConfig | Mapping[str, Any] | None = None,
        retrieval: RetrievalConfig | Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
        gate: GateConfig | Mapping[str, Any] | None = None,
        lifecycle: LifecycleConfig | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            SqliteDialect(), index=index, ttl=ttl, retrieval=retrieval, clock=clock, gate=gate,
            lifecycle=lifecycle,
        )
        self.conn = conn
        self._lock = threading.RLock()
        self._file = _database_file(conn)

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        index: IndexConfig | Mapping[str, Any] | None = None,
        ttl: TTLConfig | Mapping[str, Any] | None = None,
        retrieval: RetrievalConfig | Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
        gate: GateConfig | Mapping[str, Any] | None = None,
        lifecycle: LifecycleConfig | Mapping[str, Any] | None = None,
    ) -> Iterator[SqliteMemoryStore]:
        """Open a store on a file path or ``":memory:"``; closes the connection on exit."""
        conn = connect_sqlite(conn_string)
        try:
            store = cls(conn, index=index, ttl=ttl, retrieval=retrieval, clock=clock,
                        gate=gate, lifecycle=lifecycle)
            try:
                yield store
            finally:
                store._flush_before_close()
        finally:
            conn.close()

    def _execute(self, req: Sql | Begin | Commit) -> list[tuple[Any, ...]]:
        return _execute(self.conn, req)

    def _run(self, plan: Any) -> Any:
        attempt = partial(_attempt, self, self.conn, self._lock, self._execute)
        return run_sync(plan, attempt, self.retry_policy)

    def _background_runner(self) -> Callable[[Any], Any] | None:
        """A flush thread writes through its own connection to the file: sqlite3 crashes
        (segmentation fault) when a connection is closed while another thread runs a
        statement on it, and the caller may close `conn` at any time. An in-memory database
        has no second connection: None (reads flush inline)."""
        return self._run_on_own_connection if self._file else None

    def _run_on_own_connection(self, plan: Any) -> Any:
        conn = sqlite3.connect(self._file, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = 10000")
            attempt = partial(_attempt, self, conn, threading.Lock(), partial(_execute, conn))
            return run_sync(plan, attempt, self.retry_policy)
        finally:
            conn.close()


def _database_file(conn: sqlite3.Connection) -> str:
    """The file of `conn`'s main database; '' in memory (or a temporary database)."""
    return next((row[2] or "" for row in conn.execute("PRAGMA database_list")
                 if row[1] == "main"), "")


def _execute(conn: sqlite3.Connection, req: Sql | Begin | Commit) -> list[tuple[Any, ...]]:
    if isinstance(req, Begin):
        conn.execute("BEGIN IMMEDIATE")
        return []
    if isinstance(req, Commit):
        conn.execute("COMMIT")
        return []
    if req.many is not None:
        conn.executemany(req.text, req.many)
        return []
    return conn.execute(req.text, req.params).fetchall()


def _attempt(
    store: SqliteMemoryStore, conn: sqlite3.Connection, lock: Any,
    execute: Callable[[Sql | Begin | Commit], list[tuple[Any, ...]]], plan: Any, attempt: Attempt,
) -> Any:
    # The lock is held per attempt, not across the backoff: other threads go on meanwhile.
    def rollback() -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    timeout = store._engine.index.embed_timeout if store._engine.index else None
    with lock:
        return drive_sync(plan, attempt.watch(execute), store.embeddings,
                          attempt.watch_rollback(rollback), embed_timeout=timeout)


class AsyncSqliteMemoryStore(SqliteMemoryStore):
    """The async SQLite store: the same engine, run in a worker thread per call.

    Example:
        >>> import asyncio
        >>> async def main():
        ...     async with AsyncSqliteMemoryStore.from_conn_string(":memory:") as store:
        ...         await store.setup()
        ...         await store.aput(("notes",), "n1", {"text": "hello"})
        ...         return (await store.aget(("notes",), "n1")).value
        >>> asyncio.run(main())
        {'text': 'hello'}
    """

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]
        cls,
        conn_string: str,
        *,
        index: IndexConfig | Mapping[str, Any] | None = None,
        ttl: TTLConfig | Mapping[str, Any] | None = None,
        retrieval: RetrievalConfig | Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
        gate: GateConfig | Mapping[str, Any] | None = None,
        lifecycle: LifecycleConfig | Mapping[str, Any] | None = None,
    ) -> AsyncIterator[AsyncSqliteMemoryStore]:
        """Open a store on a file path or ``":memory:"``; closes the connection on exit."""
        conn = await asyncio.to_thread(connect_sqlite, conn_string)
        try:
            store = cls(conn, index=index, ttl=ttl, retrieval=retrieval, clock=clock,
                        gate=gate, lifecycle=lifecycle)
            try:
                yield store
            finally:
                await asyncio.to_thread(store._flush_before_close)
        finally:
            await asyncio.to_thread(conn.close)

    async def setup(self) -> None:  # type: ignore[override]
        """Create or migrate the schema without blocking the event loop."""
        await asyncio.to_thread(SqliteMemoryStore.setup, self)

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        """Delete items whose TTL has passed, off the event loop."""
        return await asyncio.to_thread(SqliteMemoryStore.sweep_ttl, self)
