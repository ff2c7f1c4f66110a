"""Retrying a plan when the database asks for it: lock waits and write races.

Concurrent writers meet errors that mean "try again", not "you are wrong": SQLite's
`SQLITE_BUSY`/`SQLITE_LOCKED` ("database is locked") once the busy timeout has run out, and
on Postgres a serialization failure, a deadlock, or a unique violation on the current-value
index (two writers superseding the same key at once). The store retries the whole plan, with
bounded exponential backoff and full jitter, so no such error reaches the caller.

A generator plan cannot be replayed once partly consumed, so the store retries at the level
that can rebuild it: `run_sync`/`run_async` take a plan factory. They retry only errors the
database marks retryable, only when nothing was committed in the failed attempt and the
transaction it opened was rolled back; every other error surfaces unchanged, on the first
attempt.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Plan, Sql

__all__ = ["RetryPolicy", "Attempt", "PlanSource", "is_retryable", "run_sync", "run_async"]

T = TypeVar("T")
PlanSource = Plan[T] | Callable[[], Plan[T]]
"""A plan (run once) or a factory that builds a fresh plan for every attempt (retried)."""

logger = logging.getLogger(__name__)

SQLITE_BUSY = 5
SQLITE_LOCKED = 6
PG_RETRYABLE = {"40001": "serialization failure", "40P01": "deadlock detected"}
PG_UNIQUE_VIOLATION = "23505"
CURRENT_INDEX = "memories_current"
"""The unique index allowing one current version per (namespace, key)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a store retries a plan the database asked to retry.

    The delay before retry n (0-based) is uniform in [0, min(max_delay, base_delay * 2**n)]
    ("full jitter"). Set `store.retry_policy` to change it; `attempts=1` disables retrying.

    Example:
        >>> policy = RetryPolicy(attempts=5, base_delay=0.01, max_delay=0.1)
        >>> policy.delay(0, 1.0), policy.delay(10, 1.0)
        (0.01, 0.1)
    """

    attempts: int = 30
    """Attempts in all, the first included."""
    base_delay: float = 0.005
    """Seconds: the backoff ceiling of the first retry."""
    max_delay: float = 0.5
    """Seconds: the backoff ceiling never grows past this."""
    on_retry: Callable[[int, BaseException], None] | None = None
    """Called before each backoff with the attempt number (1-based) and the error."""

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or isinstance(self.attempts, bool) or not (
            1 <= self.attempts <= 1000
        ):
            raise ConfigurationError(
                f"RetryPolicy attempts={self.attempts!r}: use an int in [1, 1000]."
            )
        for name in ("base_delay", "max_delay"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not (
                0 <= value <= 60
            ):
                raise ConfigurationError(
                    f"RetryPolicy {name}={value!r}: use a number of seconds in [0, 60]."
                )

    def delay(self, retry: int, jitter: float | None = None) -> float:
        """Seconds to wait before retry `retry` (0-based); `jitter` in [0, 1], random if None.

        Example:
            >>> RetryPolicy(base_delay=0.01, max_delay=0.1).delay(2, 0.5)
            0.02
        """
        ceiling = min(self.max_delay, self.base_delay * 2 ** min(retry, 30))
        return ceiling * (random.random() if jitter is None else jitter)


def is_retryable(exc: BaseException) -> bool:
    """Whether the database marked this error as "try the transaction again".

    Example:
        >>> import sqlite3
        >>> busy = sqlite3.OperationalError("database is locked")
        >>> busy.sqlite_errorcode = 5
        >>> is_retryable(busy), is_retryable(ValueError("bad input"))
        (True, False)
    """
    if isinstance(exc, sqlite3.OperationalError):
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None:
            return code & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED)
        return "database is locked" in str(exc) or "database table is locked" in str(exc)
    sqlstate = getattr(exc, "sqlstate", None)  # psycopg errors, without importing psycopg
    if sqlstate in PG_RETRYABLE:
        return True
    if sqlstate == PG_UNIQUE_VIOLATION:
        diag = getattr(exc, "diag", None)
        return getattr(diag, "constraint_name", None) == CURRENT_INDEX
    return False


class Attempt:
    """Watches one attempt's requests, to tell whether retrying it is safe.

    Safe means: no `Commit` succeeded during the attempt, and a transaction it opened was
    rolled back (a failure while rolling back leaves the connection in doubt: no retry).

    Example:
        >>> attempt = Attempt()
        >>> execute = attempt.watch(lambda req: [])
        >>> _ = execute(Begin())
        >>> attempt.safe_to_retry
        False
        >>> attempt.watch_rollback(lambda: None)()
        >>> attempt.safe_to_retry
        True
    """

    def __init__(self) -> None:
        self.open = False
        self.committed = False

    @property
    def safe_to_retry(self) -> bool:
        return not self.open and not self.committed

    def _saw(self, req: Sql | Begin | Commit) -> None:
        if isinstance(req, Begin):
            self.open = True
        elif isinstance(req, Commit):
            self.open, self.committed = False, True

    def watch(
        self, execute: Callable[[Sql | Begin | Commit], list[tuple[Any, ...]]]
    ) -> Callable[[Sql | Begin | Commit], list[tuple[Any, ...]]]:
        """Wrap a blocking executor so the attempt sees which requests succeeded."""

        def watched(req: Sql | Begin | Commit) -> list[tuple[Any, ...]]:
            rows = execute(req)
            self._saw(req)
            return rows

        return watched

    def awatch(
        self, execute: Callable[[Sql | Begin | Commit], Awaitable[list[tuple[Any, ...]]]]
    ) -> Callable[[Sql | Begin | Commit], Awaitable[list[tuple[Any, ...]]]]:
        """Wrap an async executor so the attempt sees which requests succeeded."""

        async def watched(req: Sql | Begin | Commit) -> list[tuple[Any, ...]]:
            rows = await execute(req)
            self._saw(req)
            return rows

        return watched

    def watch_rollback(self, rollback: Callable[[], None]) -> Callable[[], None]:
        """Wrap a blocking rollback: the transaction is closed once it returns."""

        def watched() -> None:
            rollback()
            self.open = False

        return watched

    def awatch_rollback(self, rollback: Callable[[], Awaitable[None]]
                        ) -> Callable[[], Awaitable[None]]:
        """Wrap an async rollback: the transaction is closed once it returns."""

        async def watched() -> None:
            await rollback()
            self.open = False

        return watched


def _should_retry(policy: RetryPolicy, n: int, attempt: Attempt, exc: Exception) -> bool:
    if n + 1 >= policy.attempts or not attempt.safe_to_retry or not is_retryable(exc):
        return False
    logger.debug("retrying a store plan (attempt %d failed): %r", n + 1, exc)
    if policy.on_retry is not None:
        policy.on_retry(n + 1, exc)
    return True


def run_sync(
    source: PlanSource[T],
    attempt: Callable[[Plan[T], Attempt], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `attempt(plan, watcher)`; rebuild the plan and retry while the database asks to.

    A plan object (not a factory) runs once: it cannot be rebuilt.

    Example:
        >>> def plan():
        ...     rows = yield Sql("SELECT 1")
        ...     return rows
        >>> calls = []
        >>> def attempt(p, watcher):
        ...     calls.append(1)
        ...     if len(calls) < 3:
        ...         busy = sqlite3.OperationalError("database is locked")
        ...         busy.sqlite_errorcode = 5
        ...         raise busy
        ...     return "done"
        >>> run_sync(plan, attempt, RetryPolicy(base_delay=0)), len(calls)
        ('done', 3)
    """
    n = 0
    while True:
        watcher = Attempt()
        try:
            return attempt(source() if callable(source) else source, watcher)
        except Exception as exc:
            if not callable(source) or not _should_retry(policy, n, watcher, exc):
                raise
        sleep(policy.delay(n))
        n += 1


async def run_async(
    source: PlanSource[T],
    attempt: Callable[[Plan[T], Attempt], Awaitable[T]],
    policy: RetryPolicy,
) -> T:
    """The async `run_sync`: the backoff awaits instead of blocking the loop."""
    n = 0
    while True:
        watcher = Attempt()
        try:
            return await attempt(source() if callable(source) else source, watcher)
        except Exception as exc:
            if not callable(source) or not _should_retry(policy, n, watcher, exc):
                raise
        await asyncio.sleep(policy.delay(n))
        n += 1
