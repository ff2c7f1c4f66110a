"""Production: Postgres with pgvector through psycopg 3 (a connection or a psycopg_pool pool).

Connections must be in autocommit mode: the engine opens its own transaction around a batch's
writes. The async class drives the same engine over `psycopg.AsyncConnection` or
`psycopg_pool.AsyncConnectionPool`.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import lru_cache
from typing import Any, Unpack

from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.store.core.base import (
    AsyncMemoryStore,
    MemoryStoreBase,
    StoreOptions,
    SyncMemoryStore,
    checked_options,
    index_dims,
)
from langgraph_typed_memory.store.core.protocol import (
    Begin,
    Commit,
    Sql,
    closed,
    drive_async,
    drive_sync,
    not_set_up,
)
from langgraph_typed_memory.store.core.retry import Attempt, run_async, run_sync
from langgraph_typed_memory.store.index import DEFAULT_CACHE_BYTES
from langgraph_typed_memory.store.postgres.dialect import (
    FLOAT4_ARRAY_OID,
    POSTGRES_RESCORED,
    Float4Block,
    PostgresDialect,
)
from langgraph_typed_memory.store.postgres.large_scopes import DEFAULT_EF_SEARCH

try:
    import psycopg
    from psycopg import pq
    from psycopg.adapt import Dumper
    from psycopg.rows import tuple_row
    from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolClosed
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "The Postgres stores need the 'postgres' extra: "
        "pip install 'langgraph-typed-memory[postgres]'"
    ) from exc

__all__ = ["PostgresMemoryStore", "AsyncPostgresMemoryStore"]


class _Float4BlockDumper(Dumper):
    """A `Float4Block` parameter in Postgres' binary form of `float4[]`:
    the server reads the values as they are, where the text form of a vector is parsed."""

    format = pq.Format.BINARY
    oid = FLOAT4_ARRAY_OID

    def dump(self, obj: Float4Block) -> bytes:
        return obj.binary()


psycopg.adapters.register_dumper(Float4Block, _Float4BlockDumper)


def _timeout(store: MemoryStoreBase) -> float | None:
    index = store._engine.index
    return index.embed_timeout if index else None


@lru_cache(maxsize=512)
def to_psycopg(text: str) -> str:
    """The engine writes `?` placeholders; psycopg wants `%s` (and `%%` for a literal %)."""
    return text.replace("%", "%%").replace("?", "%s")


BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ"
"""Write transactions: a concurrent change to a row this one read or writes is a
serialization failure, which the store retries, never a lost update."""
BEGIN_READ_COMMITTED = "BEGIN ISOLATION LEVEL READ COMMITTED"
"""Transactions that first wait on an advisory lock (migrations, erasure) and must then see
what its holder committed (`Begin.read_committed`)."""


def _statement(req: Sql | Begin | Commit) -> str:
    if isinstance(req, Begin):
        return BEGIN_READ_COMMITTED if req.read_committed else BEGIN
    if isinstance(req, Commit):
        return "COMMIT"
    return to_psycopg(req.text)



_LOCKS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def _shared_lock(conn: Any, make: Callable[[], Any]) -> Any:
    """One lock per connection, shared by every store object on it: a store's background
    access flush and another store's read on the same connection take turns (psycopg runs
    one command, one transaction, at a time). A pool needs none: each use has its own
    connection.

    Example:
        >>> class Conn: ...
        >>> conn = Conn()
        >>> _shared_lock(conn, threading.Lock) is _shared_lock(conn, threading.Lock)
        True
    """
    with _LOCKS_GUARD:
        lock = _LOCKS.get(conn)
        if lock is None:
            lock = _LOCKS[conn] = make()
        return lock

def _has_rows(cur: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]) -> bool:
    """Whether the cursor's statement returned rows: `description`, without building a
    `Column` for each of its columns (~140 per retrieve-node fan-out; ~0.25 ms of its p50
    main-thread time, measured once)."""
    result = cur.pgresult
    return result is not None and result.status == pq.ExecStatus.TUPLES_OK


def _rows(cur: psycopg.Cursor[Any]) -> list[tuple[Any, ...]]:
    """A pipelined statement's rows (its cursor closed)."""
    with cur:
        return cur.fetchall() if _has_rows(cur) else []


async def _arows(cur: psycopg.AsyncCursor[Any]) -> list[tuple[Any, ...]]:
    async with cur:
        return await cur.fetchall() if _has_rows(cur) else []


def _typed(exc: Exception, conn: Any) -> Exception | None:
    """The store's error for a driver's `exc`, if it has one: `StoreNotSetUp` for a missing
    table or column (by SQLSTATE), `StoreClosed` for a closed pool, or an error raised while
    the connection is closed (by asking it).

    Example:
        >>> type(_typed(psycopg.errors.UndefinedTable("no memories"), None)).__name__
        'StoreNotSetUp'
        >>> _typed(psycopg.OperationalError("server gone"), None) is None
        True
    """
    if isinstance(exc, psycopg.errors.UndefinedTable):
        return not_set_up(exc, "table")
    if isinstance(exc, psycopg.errors.UndefinedColumn):
        return not_set_up(exc, "column")
    if isinstance(exc, PoolClosed) or (
            isinstance(exc, psycopg.OperationalError) and getattr(conn, "closed", False)):
        return closed(exc)
    return None


class PostgresOptions(StoreOptions, total=False):
    """The Postgres stores' options: every store's, `rescored` and `ef_search`."""

    rescored: int
    ef_search: int


def _dialect(options: PostgresOptions, owner: str) -> PostgresDialect:
    """The dialect the options describe, taking the options only it reads out of them."""
    checked_options(options, PostgresOptions, owner)
    return PostgresDialect(options.pop("cache_bytes", DEFAULT_CACHE_BYTES),
                           dims=index_dims(options),
                           rescored=options.pop("rescored", POSTGRES_RESCORED),
                           ef_search=options.pop("ef_search", DEFAULT_EF_SEARCH))


def _check_autocommit(conn: Any) -> None:
    if not conn.autocommit:
        raise ConfigurationError(
            "The Postgres memory store needs autocommit connections: "
            "psycopg.connect(url, autocommit=True), or a pool with kwargs={'autocommit': True}."
        )


class PostgresMemoryStore(SyncMemoryStore):
    """Typed memory on Postgres + pgvector: a drop-in LangGraph `BaseStore`.

    Args:
        conn: A `psycopg.Connection` (autocommit) or a `psycopg_pool.ConnectionPool`.
        index: LangGraph's `IndexConfig` (`dims`, `embed`, `fields`); None: lexical-only.
        ttl: LangGraph's `TTLConfig`.
        retrieval: How semantic discovery ranks (see `RetrievalConfig`).
        clock: Returns the current time (inject one in tests).
        gate: Thresholds of the promotion gate (see `GateConfig`).
        lifecycle: Expiry, garbage collection, access tracking and retention (see
            `LifecycleConfig`).
        cache_bytes: The most memory the search caches (vector matrices and full-text
            postings per scope cell) hold in this process; least recently used cells go
            first (docs/backends.md). A scope whose cells do not fit it is ranked by its
            vectors' sign bits instead, its nearest rescored exactly; one whose sign bits
            and postings do not fit either, by the database (docs/large-scopes.md).
        rescored: The recall knob of a scope ranked by its sign bits: how many candidates
            are rescored exactly (default 250; higher is slower and nearer the exact
            ranking).
        ef_search: The recall knob of a scope ranked by the database: pgvector's
            `hnsw.ef_search` (1 to 1000; higher is slower and nearer the exact ranking).

    Example:
        ```python
        with PostgresMemoryStore.from_conn_string("postgresql://localhost/app") as store:
            store.setup()
            store.put(("tenant:acme", "user:alice", "preference"), "tone", {"value": "terse"})
        ```
    """

    def __init__(self, conn: psycopg.Connection[Any] | ConnectionPool[Any],
                 **options: Unpack[PostgresOptions]) -> None:
        super().__init__(_dialect(options, type(self).__name__), options)
        self.conn = conn
        self._lock = _shared_lock(conn, threading.Lock)

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        pool_size: int | None = None,
        **options: Unpack[PostgresOptions],
    ) -> Iterator[PostgresMemoryStore]:
        """Connect to a ``postgresql://`` URL (a pool of `pool_size` if given)."""
        if pool_size:
            with ConnectionPool(
                conn_string, min_size=1, max_size=pool_size, kwargs={"autocommit": True},
                open=True,
            ) as pool:
                with cls(pool, **options)._flushed_on_exit() as store:
                    yield store
        else:
            with psycopg.connect(conn_string, autocommit=True) as conn:
                with cls(conn, **options)._flushed_on_exit() as store:
                    yield store

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        if isinstance(self.conn, ConnectionPool):
            with self.conn.connection() as conn:
                _check_autocommit(conn)
                yield conn
        else:
            with self._lock:
                _check_autocommit(self.conn)
                yield self.conn

    def _run(self, plan: Any) -> Any:
        return run_sync(plan, self._attempt, self.retry_policy)

    def _attempt(self, plan: Any, attempt: Attempt) -> Any:
        try:
            return self._attempt_on_connection(plan, attempt)
        except PoolClosed as exc:
            raise closed(exc) from exc

    def _attempt_on_connection(self, plan: Any, attempt: Attempt) -> Any:
        # A connection per attempt: the pool (or the lock) is free during the backoff.
        with self._connection() as conn:

            def execute(req: Sql | Begin | Commit) -> list[tuple[Any, ...]]:
                try:
                    with conn.cursor(row_factory=tuple_row) as cur:
                        if isinstance(req, Sql) and req.many is not None:
                            cur.executemany(_statement(req), req.many)
                            return []
                        cur.execute(_statement(req),
                                    req.params if isinstance(req, Sql) else (),
                                    prepare=req.prepare if isinstance(req, Sql) else None,
                                    binary=isinstance(req, Sql) and req.binary)
                        return cur.fetchall() if _has_rows(cur) else []
                except psycopg.Error as exc:
                    if (typed := _typed(exc, conn)) is not None:
                        raise typed from exc
                    raise

            def reads(steps: Sequence[Sql]) -> list[list[tuple[Any, ...]]]:
                with conn.pipeline():
                    cursors = [conn.cursor(row_factory=tuple_row) for _ in steps]
                    for cur, req in zip(cursors, steps, strict=True):
                        cur.execute(_statement(req), req.params, prepare=req.prepare,
                                    binary=req.binary)
                return [_rows(cur) for cur in cursors]

            def rollback() -> None:
                conn.execute("ROLLBACK")

            return drive_sync(plan, attempt.watch(execute), self.embeddings,
                              attempt.watch_rollback(rollback), embed_timeout=_timeout(self),
                              reads=reads)



class AsyncPostgresMemoryStore(AsyncMemoryStore):
    """Typed memory on Postgres with psycopg's async connection or pool.

    The sync methods work from other threads while the store's event loop runs (as with
    LangGraph's `AsyncPostgresStore`); calling them on the loop's own thread is an error.

    Example:
        ```python
        async with AsyncPostgresMemoryStore.from_conn_string(url) as store:
            await store.setup()
            await store.aput(("notes",), "n1", {"text": "hello"})
        ```
    """

    def __init__(self, conn: psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any],
                 **options: Unpack[PostgresOptions]) -> None:
        super().__init__(_dialect(options, type(self).__name__), options)
        self.conn = conn
        self.loop = asyncio.get_running_loop()
        self._lock = _shared_lock(conn, asyncio.Lock)

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls,
        conn_string: str,
        *,
        pool_size: int | None = None,
        **options: Unpack[PostgresOptions],
    ) -> AsyncIterator[AsyncPostgresMemoryStore]:
        """Connect to a ``postgresql://`` URL (a pool of `pool_size` if given)."""
        if pool_size:
            async with AsyncConnectionPool(
                conn_string, min_size=1, max_size=pool_size, kwargs={"autocommit": True},
                open=False,
            ) as pool:
                async with cls(pool, **options)._aflushed_on_exit() as store:
                    yield store
        else:
            async with await psycopg.AsyncConnection.connect(
                conn_string, autocommit=True
            ) as conn:
                async with cls(conn, **options)._aflushed_on_exit() as store:
                    yield store

    async def _arun(self, plan: Any) -> Any:
        """Drive a plan on the store's event loop (the connection belongs to it); called
        from another loop, the work is handed over and awaited without blocking the
        caller's loop."""
        if asyncio.get_running_loop() is not self.loop:
            future = asyncio.run_coroutine_threadsafe(self._arun(plan), self.loop)
            return await asyncio.wrap_future(future)
        return await run_async(plan, self._attempt, self.retry_policy)

    async def _attempt(self, plan: Any, attempt: Attempt) -> Any:
        if isinstance(self.conn, AsyncConnectionPool):
            try:
                async with self.conn.connection() as conn:
                    return await self._drive(conn, plan, attempt)
            except PoolClosed as exc:
                raise closed(exc) from exc
        async with self._lock:
            return await self._drive(self.conn, plan, attempt)

    async def _drive(
        self, conn: psycopg.AsyncConnection[Any], plan: Any, attempt: Attempt
    ) -> Any:
        _check_autocommit(conn)

        async def execute(req: Sql | Begin | Commit) -> list[tuple[Any, ...]]:
            try:
                async with conn.cursor(row_factory=tuple_row) as cur:
                    if isinstance(req, Sql) and req.many is not None:
                        await cur.executemany(_statement(req), req.many)
                        return []
                    await cur.execute(_statement(req),
                                      req.params if isinstance(req, Sql) else (),
                                      prepare=req.prepare if isinstance(req, Sql) else None,
                                      binary=isinstance(req, Sql) and req.binary)
                    return await cur.fetchall() if _has_rows(cur) else []
            except psycopg.Error as exc:
                if (typed := _typed(exc, conn)) is not None:
                    raise typed from exc
                raise

        async def reads(steps: Sequence[Sql]) -> list[list[tuple[Any, ...]]]:
            async with conn.pipeline():
                cursors = [conn.cursor(row_factory=tuple_row) for _ in steps]
                for cur, req in zip(cursors, steps, strict=True):
                    await cur.execute(_statement(req), req.params, prepare=req.prepare,
                                      binary=req.binary)
            return [await _arows(cur) for cur in cursors]

        async def rollback() -> None:
            await conn.execute("ROLLBACK")

        return await drive_async(plan, attempt.awatch(execute), self.embeddings,
                                 attempt.awatch_rollback(rollback), embed_timeout=_timeout(self),
                                 reads=reads)

    def _run(self, plan: Any) -> Any:
        """Run a plan on the store's event loop from another thread (sync methods)."""
        try:
            if asyncio.get_running_loop() is self.loop:
                raise asyncio.InvalidStateError(
                    "Synchronous calls to AsyncPostgresMemoryStore are only allowed from a "
                    "different thread than the store's event loop; use the a* methods "
                    "(aget, asearch, aput...) inside async code."
                )
        except RuntimeError:
            pass
        return asyncio.run_coroutine_threadsafe(self._arun(plan), self.loop).result()
