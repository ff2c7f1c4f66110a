"""Access tracking: retrievals counted in memory, appended to a log, folded into per-record uses.

A read notes the typed records it used; the counts wait in the buffer until enough are
pending or enough time has passed, then the store appends them to the access log: in a
background thread (the store's `on_due` hook) or with a write transaction that comes first;
also before a sweep and when asked (`flush_access`). A flush that fails puts its counts back,
and reads wait a period before they try again (a read-only replica would otherwise fail a
flush on every read).

The log is folded, many entries at a time, into `memory_access`: one narrow row per record
holding its uses (count and last time) beyond those of its own row (`queries.ACCESS_COUNT`,
`queries.LAST_ACCESS` read both). An append writes the end of a small table, and a fold of a
chunk in record order shares the pages of the narrow table, where updating the records'
wide rows rewrote a page of the database per record. What reads the counts folds first (the
sweeps, an export, `flush_access`); the background thread folds once this process has logged
`access_log_rows` entries since the last fold.

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
from itertools import islice
from typing import Any

from langgraph_typed_memory.config import LifecycleConfig
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Plan, Sql

__all__ = ["AccessBuffer", "BackgroundFlush", "FLUSH_CHUNK"]

logger = logging.getLogger(__name__)

FLUSH_CHUNK = 2048
"""Access counts logged per transaction by the background thread."""
FOLD_CHUNK = 8192
"""Log entries folded per transaction by the background thread."""


class AccessBuffer:
    """Retrievals not yet written: record id -> (count, last access time).

    Example:
        >>> from datetime import UTC, datetime
        >>> buffer = AccessBuffer(LifecycleConfig(), lambda: datetime(2026, 1, 1, tzinfo=UTC))
        >>> plan = buffer.note(["m1", "m1"])
        >>> next(plan, None) is None, len(buffer)  # nothing due: nothing written
        (True, 1)
    """

    def __init__(
        self, lifecycle: LifecycleConfig, clock: Callable[[], datetime],
        bulk: Callable[[q.Bulk, list[list[Any]]], Sql] | None = None,
        lazy_commit: Sequence[Sql] = (),
    ) -> None:
        self.lifecycle = lifecycle
        self.clock = clock
        """Stamps the accesses (`last_accessed_at`)."""
        self.timer: Callable[[], float] = time.monotonic
        """Times the flushes: when one is due, and the pause after a failed one."""
        self.bulk = bulk or (lambda statement, rows: Sql(statement.value, many=rows))
        """Turns the update and its rows into one request (the dialect's `bulk`)."""
        self.lazy_commit = tuple(lazy_commit)
        """Opens the transactions of the background thread (the dialect's `lazy_commit`):
        uses noted in the last moments before a crash may be lost, a commit need not wait
        for the disk."""
        self.on_due: Callable[[], bool] | None = None
        """Called when a read makes a flush due; True: the store writes in the background."""
        self._pending: dict[str, tuple[int, float]] = {}
        self.logged = 0
        """Entries this buffer appended to the log since it last folded it whole."""
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
        """Append the buffered counts and times to the access log (one batched insert), the
        oldest `limit` if given, in the caller's transaction; returns how many records they
        are for."""
        pending = self._take(limit)
        if not pending:
            return 0
        try:
            yield self._rows(pending)
        except BaseException:
            self._put_back(pending)
            raise
        with self._lock:
            self.logged += len(pending)
        return len(pending)

    def _take(self, limit: int | None) -> dict[str, tuple[int, float]]:
        """The oldest `limit` buffered counts (all: None), out of the buffer."""
        with self._lock:
            if limit is None or len(self._pending) <= limit:
                pending, self._pending = self._pending, {}
            else:
                pending = {k: self._pending.pop(k) for k in list(islice(self._pending, limit))}
            self._flushed = self.timer()
        return pending

    def _rows(self, pending: dict[str, tuple[int, float]]) -> Sql:
        return self.bulk(q.Bulk.NOTE_ACCESS, [
            [ident, count, at] for ident, (count, at) in pending.items()])

    def _put_back(self, pending: dict[str, tuple[int, float]]) -> None:
        """Counts whose flush failed, back in the buffer (merged with newer ones); reads wait
        `access_flush_seconds` before they try again."""
        with self._lock:
            self._retry_at = self._flushed + self.lifecycle.access_flush_seconds
            for ident, (count, at) in pending.items():
                newer, last = self._pending.get(ident, (0, at))
                self._pending[ident] = (count + newer, max(at, last))

    def _begin(self) -> Plan[None]:
        """Open a transaction of the background thread's (`lazy_commit`)."""
        yield Begin()
        for statement in self.lazy_commit:  # noqa: UP028 - a tuple cannot take send()
            yield statement

    def fold_due(self) -> bool:
        """Whether this buffer logged `access_log_rows` entries since the log was last
        folded whole."""
        return self.logged >= self.lifecycle.access_log_rows

    def fold(self, limit: int | None = None) -> Plan[int]:
        """Add the access log's entries to their records' uses and drop them: all of them,
        or the oldest `limit`; returns how many entries were folded (entry numbers: a
        rolled-back append leaves a gap). Runs in the caller's transaction (two statements
        that belong together)."""
        first, last = (yield Sql(q.SQL_ACCESS_LOG_SPAN))[0]
        if first is None:
            with self._lock:
                self.logged = 0
            return 0
        upto = last if limit is None else min(last, first + limit - 1)
        yield Sql(q.SQL_FOLD_ACCESS, [upto])
        yield Sql(q.SQL_DROP_FOLDED, [upto])
        if upto == last:
            with self._lock:
                self.logged = 0
        return int(upto - first + 1)

    def flushed_and_folded(self) -> Plan[int]:
        """Log what is buffered and fold the whole log, in one transaction; returns how many
        records the buffered counts were for."""
        yield Begin()
        written = yield from self.flush()
        yield from self.fold()
        yield Commit()
        return written

    def fold_chunk(self) -> Plan[int]:
        """Fold the log's oldest `FOLD_CHUNK` entries in a transaction of their own."""
        yield from self._begin()
        folded = yield from self.fold(FOLD_CHUNK)
        yield Commit()
        return folded

    def flush_chunk(self) -> Plan[int]:
        """Log the oldest `FLUSH_CHUNK` buffered counts in a transaction of their own
        (`lazy_commit`); when they are the last and the log is then due a fold (`fold_due`),
        fold its oldest `FOLD_CHUNK` entries in the same transaction, so that a read waits
        for the connection once, not once for the flush and again for the fold. Returns how
        many records the logged counts were for; a failure puts them back."""
        pending = self._take(FLUSH_CHUNK)
        added = 0
        try:
            yield from self._begin()
            if pending:
                yield self._rows(pending)
                with self._lock:
                    self.logged, added = self.logged + len(pending), len(pending)
            if len(pending) < FLUSH_CHUNK and self.fold_due():
                yield from self.fold(FOLD_CHUNK)
            yield Commit()
        except BaseException:
            with self._lock:
                self.logged = max(0, self.logged - added)
            self._put_back(pending)
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
        >>> flush = BackgroundFlush(AccessBuffer(LifecycleConfig(), lambda: datetime.now(UTC)))
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
        read waiting for the connection goes in after one chunk, not a whole backlog. When
        the buffer logged enough since the last fold, the last chunk's transaction folds
        `FOLD_CHUNK` entries of the log, and further transactions fold the rest the same way.

        The chunks are large because what a read pays for a background write is mostly per
        transaction, not per row: the read waits for the connection, or for the interpreter
        while this thread takes its turn, once per transaction (measured in
        docs/lifecycle.md)."""
        try:
            # factories: the store's retry policy applies
            while runner(self.buffer.flush_chunk) == FLUSH_CHUNK:
                time.sleep(0.001)
            if self.buffer.fold_due():  # more than the last chunk's transaction folded
                while runner(self.buffer.fold_chunk) == FOLD_CHUNK:
                    time.sleep(0.001)
        except Exception as exc:  # nobody to raise to; the buffer kept the counts
            logger.warning("Access counts not written, kept for the next flush: %r", exc)
        finally:
            self.lock.release()
