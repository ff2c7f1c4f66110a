"""The TTL sweeper: a store's `sweep_ttl` called every few minutes in the background, as
LangGraph's stores do (`start_ttl_sweeper` / `stop_ttl_sweeper`), in a thread for a store
driven from synchronous code and as an asyncio task for one driven from async code.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable

__all__ = ["AsyncTtlSweeper", "DEFAULT_INTERVAL_MINUTES", "TtlSweeper", "sweep_interval"]

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_MINUTES = 5.0
"""LangGraph's stores sweep every 5 minutes unless told otherwise."""


def sweep_interval(asked: float | None, configured: float | None) -> float:
    """Minutes between sweeps: the argument, else the TTL config's
    `sweep_interval_minutes`, else `DEFAULT_INTERVAL_MINUTES`.

    Example:
        >>> sweep_interval(None, None), sweep_interval(None, 1), sweep_interval(0.5, 1)
        (5.0, 1.0, 0.5)
    """
    return float(asked or configured or DEFAULT_INTERVAL_MINUTES)


def _swept(count: int) -> None:
    if count:
        logger.info("TTL sweeper deleted %d expired item(s)", count)


class TtlSweeper:
    """A thread calling `sweep` every `interval` minutes until stopped.

    Example:
        >>> import time
        >>> calls = []
        >>> sweeper = TtlSweeper()
        >>> future = sweeper.start(lambda: calls.append(1) or 0, 0.0005)  # every 30 ms
        >>> time.sleep(0.2); sweeper.stop(timeout=1), future.done(), len(calls) > 1
        (True, True, True)
    """

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._future: concurrent.futures.Future[None] | None = None

    def start(self, sweep: Callable[[], int], interval: float
              ) -> concurrent.futures.Future[None]:
        """Start sweeping (a sweeper already running goes on); the future completes when it
        stops, and cancelling it stops it."""
        if self._thread is not None and self._thread.is_alive() and self._future is not None:
            return self._future
        self._stop.clear()
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        future.add_done_callback(lambda f: self._stop.set() if f.cancelled() else None)

        def loop() -> None:
            while not self._stop.wait(interval * 60):
                try:
                    _swept(sweep())
                except Exception as exc:  # a failed sweep is retried at the next one
                    logger.warning("TTL sweep failed, retried in %s minutes: %r", interval, exc)
            if not future.done():
                future.set_result(None)

        self._thread = threading.Thread(target=loop, name="typed-memory-ttl-sweeper",
                                        daemon=True)
        self._future = future
        self._thread.start()
        logger.info("TTL sweeper started: every %s minutes", interval)
        return future

    def stop(self, timeout: float | None = None) -> bool:
        """Stop it; True when it stopped (or never ran) within `timeout` seconds."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return True
        self._stop.set()
        thread.join(timeout)
        if thread.is_alive():
            logger.warning("TTL sweeper did not stop within %s seconds", timeout)
            return False
        self._thread = None
        return True


class AsyncTtlSweeper:
    """An asyncio task awaiting `sweep` every `interval` minutes until stopped.

    Example:
        >>> async def main():
        ...     calls = []
        ...     async def sweep():
        ...         calls.append(1)
        ...         return 0
        ...     sweeper = AsyncTtlSweeper()
        ...     sweeper.start(sweep, 0.0005)
        ...     await asyncio.sleep(0.2)
        ...     return await sweeper.stop(timeout=1), len(calls) > 1
        >>> asyncio.run(main())
        (True, True)
    """

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    def start(self, sweep: Callable[[], Awaitable[int]], interval: float) -> asyncio.Task[None]:
        """Start sweeping on the running loop (a sweeper already running goes on)."""
        if self._task is not None and not self._task.done():
            return self._task

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval * 60)
                try:
                    _swept(await sweep())
                except Exception as exc:
                    logger.warning("TTL sweep failed, retried in %s minutes: %r", interval,
                                   exc)

        self._task = asyncio.get_running_loop().create_task(loop(),
                                                            name="typed-memory-ttl-sweeper")
        logger.info("TTL sweeper started: every %s minutes", interval)
        return self._task

    async def stop(self, timeout: float | None = None) -> bool:
        """Stop it; True when it stopped (or never ran) within `timeout` seconds."""
        task = self._task
        if task is None or task.done():
            return True
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=timeout)
        if not done:
            logger.warning("TTL sweeper did not stop within %s seconds", timeout)
            return False
        self._task = None
        return True
