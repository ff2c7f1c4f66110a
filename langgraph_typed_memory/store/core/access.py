"""Access tracking: retrievals counted in memory, written in one batched update.

A read notes the typed records it used; the counts wait in the buffer until enough are
pending or enough time has passed, then the store writes them: in a background thread (the
store's `on_due` hook) or with a write transaction that comes first; also before a sweep and
when asked (`flush_access`). A flush that fails puts its counts back, and reads wait a period before
they try again (a read-only replica would otherwise fail a flush on every read).

When a flush is due is a matter of this process's own pace, so it is timed by a monotonic
timer (`time.monotonic`), not by the store's clock: the clock stamps the records (the time
of each access) and may be injected, as a simulation that moves it minutes per turn does,
which would make every read of a fast loop start a flush.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from itertools import islice
from typing import Any

from langgraph_typed_memory.config import LifecycleSettings
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.protocol import Plan, Sql

__all__ = ["AccessBuffer", "BackgroundFlush", "FLUSH_CHUNK"]

logger = logging.getLogger(__name__)

FLUSH_CHUNK = 64
"""Access counts written per transaction by the background flush."""


class AccessBuffer:
    """Retrievals not yet written: record id -> (count, last access time).

    Example:
        >>> from datetime import UTC, datetime
        >>> buffer = AccessBuffer(LifecycleSettings(), lambda: datetime(2026, 1, 1, tzinfo=UTC))
        >>> plan = buffer.note(["m1", "m1"])
        >>> next(plan, None) is None, len(buffer)  # nothing due: nothing written
        (True, 1)
    """

    def __init__(
        self, lifecycle: LifecycleSettings, clock: Callable[[], datetime],
        bulk: Callable[[q.Bulk, list[list[Any]]], Sql] | None = None,
    ) -> None:
        self.lifecycle = lifecycle
        self.clock = clock
        """Stamps the accesses (`last_accessed_at`)."""
        self.timer: Callable[[], float] = time.monotonic
        """Times the flushes: when one is due, and the pause after a failed one."""
        self.bulk = bulk or (lambda statement, rows: Sql(statement.value, many=rows))
        """Turns the update and its rows into one request (the dialect's `bulk`)."""
        self.on_due: Callable[[], bool] | None = None
        """Called when a read makes a flush due; True: the store writes in the background."""
        self._pending: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()
        self._flushed = self.timer()
        self._retry_at = 0.0

    def use_timer(self, timer: Callable[[], float]) -> None:
        """Time the flushes with `timer` (seconds) from now on, the interval starting over
        (a test follows its fake clock with it)."""
        with self._lock:
            self.timer, self._flushed, self._retry_at = timer, timer(), 0.0

    def __len__(self) -> int:
        return len(self._pending)

    def due(self) -> bool:
        """Whether enough counts are pending, or enough time has passed, for a flush."""
        with self._lock:
            return self._due(self.timer())

    def _due(self, now: float) -> bool:
        return bool(self._pending) and now >= self._retry_at and (
            len(self._pending) >= self.lifecycle.access_flush_every
            or now - self._flushed >= self.lifecycle.access_flush_seconds)

    def note(self, ids: Sequence[str]) -> Plan[None]:
        """Count retrievals of typed records. Once `access_flush_every` are pending or
        `access_flush_seconds` have passed, the store writes them in the background (`on_due`
        returns True: the read never writes) or the read flushes inline."""
        if not ids:
            return
        now, at = self.timer(), self.clock().timestamp()
        with self._lock:
            for ident in ids:
                count, _ = self._pending.get(ident, (0, at))
                self._pending[ident] = (count + 1, at)
            due = self._due(now)
        if due and not (self.on_due and self.on_due()):
            try:
                yield from self.flush()
            except Exception:  # a busy database must not fail a read: keep them for later
                pass

    def flush(self, limit: int | None = None) -> Plan[int]:
        """Write the buffered counts and times (one batched update), the oldest `limit` if
        given; returns how many records were updated. Runs in the caller's transaction, or
        alone."""
        with self._lock:
            if limit is None or len(self._pending) <= limit:
                pending, self._pending = self._pending, {}
            else:
                pending = {k: self._pending.pop(k) for k in list(islice(self._pending, limit))}
            self._flushed = self.timer()
        if not pending:
            return 0
        try:
            yield self.bulk(q.Bulk.NOTE_ACCESS, [
                [count, at, at, ident] for ident, (count, at) in pending.items()
            ])
        except BaseException:
            with self._lock:  # put them back, merged with newer ones
                self._retry_at = self._flushed + self.lifecycle.access_flush_seconds
                for ident, (count, at) in pending.items():
                    newer, last = self._pending.get(ident, (0, at))
                    self._pending[ident] = (count + newer, max(at, last))
            raise
        return len(pending)


Runner = Callable[[Callable[[], Plan[int]]], Any]
"""Runs a plan factory on a store's connection (its `_run`), from any thread."""


class BackgroundFlush:
    """Writes an access buffer from a daemon thread, one flush at a time.

    `lock` is held while a flush writes: a signal while one runs does nothing (it, or the
    next one, takes the newer ids), and whoever must see every count written waits on it.

    Example:
        >>> from datetime import UTC, datetime
        >>> flush = BackgroundFlush(AccessBuffer(LifecycleSettings(), lambda: datetime.now(UTC)))
        >>> flush.start(None)  # no safe way to write from a thread: the read flushes inline
        False
    """

    def __init__(self, buffer: AccessBuffer) -> None:
        self.buffer = buffer
        self.lock = threading.Lock()

    def start(self, runner: Runner | None) -> bool:
        """Start writing in a thread through `runner`; False (nothing started) without one."""
        if runner is None:
            return False
        if not self.lock.acquire(blocking=False):
            return True
        try:
            threading.Thread(target=self._write, args=(runner,),
                             name="typed-memory-access-flush", daemon=True).start()
        except RuntimeError:  # no new thread at interpreter shutdown: the counts stay pending
            self.lock.release()
        return True

    def _write(self, runner: Runner) -> None:
        """Chunks of `FLUSH_CHUNK`, each its own transaction, with a pause between them: a
        read waiting for the connection goes in after one chunk, not the whole buffer (256
        rows held a SQLite connection 10-40 ms)."""
        chunk = partial(self.buffer.flush, limit=FLUSH_CHUNK)
        try:
            while runner(chunk) == FLUSH_CHUNK:  # a factory: the store's retry policy applies
                time.sleep(0.001)
        except Exception as exc:  # nobody to raise to; `AccessBuffer.flush` kept the counts
            logger.warning("Access counts not written, kept for the next flush: %r", exc)
        finally:
            self.lock.release()
