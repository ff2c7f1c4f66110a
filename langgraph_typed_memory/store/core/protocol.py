"""Sans-I/O plumbing: the engine yields requests, a sync or an async driver executes them.

The decisions of a batch live once, in `engine.py`, as a generator. `drive_sync` and
`drive_async` only carry its requests to a connection or an embedder and send the answers
back, so the sync and async store classes cannot drift apart.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from langgraph_typed_memory.embeddings import LocalEmbeddings
from langgraph_typed_memory.errors import StoreClosed, StoreNotSetUp

__all__ = ["Sql", "Reads", "Embed", "Wait", "Begin", "Commit", "EmbedError", "Plan",
           "drive_sync", "drive_async", "interleave", "timed_out"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sql:
    """Run one statement; the answer is the list of result rows (tuples)."""

    text: str
    params: Sequence[Any] = ()
    many: Sequence[Sequence[Any]] | None = field(default=None)
    """If set, executemany over these parameter rows (answer: [])."""
    prepare: bool | None = None
    """For drivers that prepare statements (psycopg): False has the server plan each call with
    its parameters, for statements whose best plan depends on them; None: the driver decides."""
    binary: bool = False
    """For drivers that can return rows in the database's binary format (psycopg): set on
    reads of many rows of wide values (a cell's vectors and lexemes), which then arrive and
    decode faster (docs/backends.md)."""
    shared: bool = False
    """A read without side effects whose answer any plan may use: asked more than once in one
    turn of `interleave` (same text and parameters, which must then be hashable or lists of
    hashable values), it goes out once and every plan that asked gets its rows."""


@dataclass(frozen=True, slots=True)
class Reads:
    """Run independent read statements (outside any transaction), in order; the answer has
    one entry per statement: its rows, or the `Exception` it raised. A driver may send them
    in one round trip (psycopg's pipeline mode) or one after another."""

    steps: tuple[Sql, ...]


@dataclass(frozen=True, slots=True)
class Embed:
    """Embed texts; the answer is a list of vectors, or an `EmbedError`.

    With `wait=False` the driver starts the call (after loading the bundled model, which is
    not timed) and answers at once with a `Future` of that answer, never of an exception: the
    plan goes on with its statements while the embedder works, and `Wait`s for the vectors,
    with the call's deadline, where it needs them. Without a timeout the call runs where it
    would have, in the caller's thread (or task), before the answer."""

    texts: Sequence[str]
    query: bool = False
    wait: bool = True


@dataclass(frozen=True, slots=True)
class Wait:
    """Wait for work the plan started in the background (a vector ranking in a worker
    thread); the answer is its result, or its exception thrown into the plan. A plan asks
    instead of blocking on the future itself, so that plans run together (`interleave`)
    all start their work before any waits, and an async driver awaits without blocking
    its event loop."""

    future: Future[Any]
    deadline: float | None = None
    """`time.monotonic()` by which the future must be done; past it the plan gets a
    `TimeoutError` instead (None: no limit)."""


@dataclass(frozen=True, slots=True)
class Begin:
    """Open the batch's write transaction."""

    read_committed: bool = False
    """Each statement sees what was committed before it (Postgres READ COMMITTED), not one
    snapshot of the transaction's start: for plans that first wait on a lock (migrations,
    erasure) and must then see what its holder committed."""


@dataclass(frozen=True, slots=True)
class Commit:
    """Commit the batch's write transaction."""


@dataclass(frozen=True, slots=True)
class EmbedError:
    """The embedder raised; the engine decides whether to degrade or to fail."""

    error: BaseException


Request = Sql | Reads | Embed | Wait | Begin | Commit
Plan = Generator[Request, Any, T]


def timed_out(timeout: float) -> EmbedError:
    """The answer to an embedding call that took longer than `timeout` seconds."""
    return EmbedError(TimeoutError(
        f"the embedder did not answer within {timeout:g} s (index config 'embed_timeout')"
    ))


class _DaemonThreads:
    """Daemon threads that run calls and wait for the next: a call starts a thread only when
    none is idle (starting one cost ~0.3-0.8 ms of a fan-out on a busy machine). A call that
    overruns keeps its thread until it returns; a daemon thread never holds the interpreter
    open at exit."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, call: Callable[[], None]) -> None:
        with self._lock:
            start = not self._idle
            self._idle -= not start
        self._calls.put(call)
        if start:
            threading.Thread(target=self._serve, name="typed-memory-embed", daemon=True).start()

    def _serve(self) -> None:
        while True:
            self._calls.get()()  # the call catches its own errors
            with self._lock:
                self._idle += 1


_EMBED_THREADS = _DaemonThreads()


def _embed_threads_after_fork() -> None:
    global _EMBED_THREADS
    _EMBED_THREADS = _DaemonThreads()  # a child inherits none of the parent's threads


os.register_at_fork(after_in_child=_embed_threads_after_fork)


def _call_with_timeout(fn: Callable[[], T], timeout: float | None) -> T:
    """Call `fn` in a daemon thread (`_DaemonThreads`) and wait at most `timeout` seconds
    (None: inline).

    A call that overruns keeps running in its thread (Python cannot stop it), but the caller
    moves on.
    """
    if timeout is None:
        return fn()
    done = threading.Event()
    outcome: list[Any] = []

    context = contextvars.copy_context()  # callbacks and tracing follow the call

    def call() -> None:
        try:
            outcome.append((True, context.run(fn)))
        except BaseException as exc:  # carried to the caller's thread
            outcome.append((False, exc))
        finally:
            done.set()

    _EMBED_THREADS.submit(call)
    if not done.wait(timeout):
        raise _EmbedTimeout
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


class _EmbedTimeout(Exception):
    pass


def _vectors(answer: Any) -> list[Sequence[float]]:
    """The embedder's answer as vectors of floats; a wrong shape is an embedder failure.

    Counts and dimensions are the engine's to check (it knows the config); here only the
    shape: a sequence of sequences of real numbers (lists, tuples, numpy arrays). Vectors of
    one length become the rows of one float64 matrix, converted in C (a bulk load's 2,000
    vectors of 384 floats, one by one in Python, took ~50 ms).

    Example:
        >>> [v.tolist() for v in _vectors([[1, 2], (3.5, 4)])]
        [[1.0, 2.0], [3.5, 4.0]]
        >>> _vectors([[1, 2], [3]])
        [[1.0, 2.0], [3.0]]
    """
    if isinstance(answer, (str, bytes)) or not hasattr(answer, "__len__"):
        raise TypeError(f"the embedder returned {type(answer).__name__}, not a list of vectors")
    try:
        matrix = np.asarray(answer, dtype=np.float64)
    except (TypeError, ValueError):  # ragged, or not numbers: told apart below
        matrix = None
    if matrix is not None and matrix.ndim == 2:
        return list(matrix)
    out: list[Sequence[float]] = []
    for vector in answer:
        if isinstance(vector, (str, bytes)) or not hasattr(vector, "__len__"):
            raise TypeError(f"the embedder returned a {type(vector).__name__} as a vector")
        try:
            out.append([float(x) for x in vector])
        except (TypeError, ValueError) as exc:
            raise TypeError(f"the embedder returned a vector with a non-number: {exc}") from exc
    return out


def _loader(embeddings: Embeddings) -> Callable[[], Any] | None:
    """`LocalEmbeddings.load` (the bundled model loads separately, in seconds). The drivers
    call it before each embedding call and outside `embed_timeout`, which times answering,
    not loading; after the first call it returns at once. Any other embedder loads however
    it likes: a `load` method of its own is never called (it may mean something else)."""
    return embeddings.load if isinstance(embeddings, LocalEmbeddings) else None


def _embed_sync(embeddings: Embeddings | None, req: Embed, timeout: float | None = None) -> Any:
    if embeddings is None:
        return EmbedError(RuntimeError("no embedder configured"))
    texts = list(req.texts)
    try:
        if (load := _loader(embeddings)) is not None:
            load()
        if req.query:
            answer = _call_with_timeout(
                lambda: [embeddings.embed_query(t) for t in texts], timeout)
        else:
            answer = _call_with_timeout(lambda: embeddings.embed_documents(texts), timeout)
        return _vectors(answer)
    except _EmbedTimeout:
        assert timeout is not None
        return timed_out(timeout)
    except Exception as exc:  # degrade or fail is the engine's decision
        return EmbedError(exc)


def _embed_started(embeddings: Embeddings | None, req: Embed) -> Future[Any]:
    """`_embed_sync`'s answer as a future: the call runs in a daemon thread (the bundled
    model loaded first, here); the plan's `Wait` applies the timeout."""
    future: Future[Any] = Future()
    if embeddings is None:
        future.set_result(EmbedError(RuntimeError("no embedder configured")))
        return future
    texts = list(req.texts)
    try:
        if (load := _loader(embeddings)) is not None:
            load()
    except Exception as exc:
        future.set_result(EmbedError(exc))
        return future
    context = contextvars.copy_context()  # callbacks and tracing follow the call

    def call() -> None:
        try:
            answer = context.run(lambda: [embeddings.embed_query(t) for t in texts]
                                 if req.query else embeddings.embed_documents(texts))
            future.set_result(_vectors(answer))
        except Exception as exc:  # degrade or fail is the engine's decision
            future.set_result(EmbedError(exc))
        except BaseException as exc:  # carried to the thread that waits
            future.set_exception(exc)

    _EMBED_THREADS.submit(call)
    return future


def _done(answer: Any) -> Future[Any]:
    """A future already holding `answer`."""
    future: Future[Any] = Future()
    future.set_result(answer)
    return future


def _left(deadline: float | None) -> float | None:
    """Seconds until `deadline` (`time.monotonic()`), none below 0; None: no limit."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


async def _embed_async(
    embeddings: Embeddings | None, req: Embed, timeout: float | None = None
) -> Any:
    if embeddings is None:
        return EmbedError(RuntimeError("no embedder configured"))
    texts = list(req.texts)

    async def call() -> Any:
        try:
            if req.query:
                return _vectors(await asyncio.gather(*(embeddings.aembed_query(t) for t in texts)))
            return _vectors(await embeddings.aembed_documents(texts))
        except Exception as exc:  # the embedder's own error, told apart from our timeout
            return EmbedError(exc)

    if (load := _loader(embeddings)) is not None:
        try:
            await asyncio.to_thread(load)  # off the event loop, before the clock starts
        except Exception as exc:
            return EmbedError(exc)
    try:
        return await asyncio.wait_for(call(), timeout)
    except TimeoutError:
        assert timeout is not None
        return timed_out(timeout)


async def _aembed_started(
    embeddings: Embeddings | None, req: Embed, timeout: float | None = None
) -> Future[Any]:
    """`_embed_async`'s answer as a future: the call runs as a task of the running loop
    (the bundled model loaded first, here, off the loop)."""
    future: Future[Any] = Future()
    if embeddings is not None and (load := _loader(embeddings)) is not None:
        try:
            await asyncio.to_thread(load)
        except Exception as exc:
            future.set_result(EmbedError(exc))
            return future
    task = asyncio.ensure_future(_embed_async(embeddings, req, timeout))

    def done(finished: asyncio.Future[Any]) -> None:
        if finished.cancelled():
            future.set_result(EmbedError(asyncio.CancelledError("the embedding was cancelled")))
        elif (error := finished.exception()) is not None:
            future.set_result(EmbedError(error))
        else:
            future.set_result(finished.result())

    task.add_done_callback(done)
    return future


def interleave(plans: Sequence[Plan[Any]]) -> Plan[list[Any]]:
    """Run plans together, one step of each in turn; their values in order.

    Work a plan starts in the background (the query's embedding) then runs
    while the other plans' statements do, instead of after them. The plain statements of one
    turn, and the statements of a plan's own `Reads`, go out together as one `Reads` (one
    round trip where the driver can), in the plans' order, a `shared` statement asked twice
    sent once; the turn's `Wait`s are answered
    after them, in the plans' order, so no plan waits before every plan has had its turn.
    Each plan sees its own steps in its own order; a failed step is thrown into the plan
    that asked (a `Reads` answers with its errors in place, as always); a plan's transaction
    (`Begin` ... `Commit`) runs alone, its steps one after another, after the reads asked
    before it.

    Example:
        >>> def plan(name):
        ...     first = yield Sql(f"{name} 1")
        ...     second = yield Sql(f"{name} 2")
        ...     return first + second
        >>> run = interleave([plan("a"), plan("b")])
        >>> steps, answer = [], None
        >>> try:
        ...     while True:
        ...         step = run.send(answer)
        ...         steps.append([read.text for read in step.steps])
        ...         answer = [[read.text] for read in step.steps]
        ... except StopIteration as done:
        ...     values = done.value
        >>> steps, values
        ([['a 1', 'b 1'], ['a 2', 'b 2']], [['a 1', 'a 2'], ['b 1', 'b 2']])
    """
    values: list[Any] = [None] * len(plans)
    replies: list[tuple[Any, Exception | None]] = [(None, None)] * len(plans)
    pending = list(range(len(plans)))
    while pending:
        waiting = []
        reads: list[tuple[int, Sql | Reads]] = []  # this turn's reads, not yet sent
        waits: list[tuple[int, Wait]] = []  # answered after the reads
        for i in pending:
            in_txn = False
            while True:
                answer, error = replies[i]
                try:
                    step = plans[i].throw(error) if error is not None else plans[i].send(answer)
                except StopIteration as done:
                    values[i] = done.value
                    break
                if isinstance(step, Wait) and not in_txn:
                    waits.append((i, step))
                    waiting.append(i)
                    break
                if not in_txn and (isinstance(step, Reads)
                                   or isinstance(step, Sql) and step.many is None):
                    reads.append((i, step))
                    waiting.append(i)
                    break
                yield from _send(reads, replies)  # the earlier plans' reads go first
                try:
                    replies[i] = ((yield step), None)
                except Exception as exc:
                    replies[i] = (None, exc)
                in_txn = isinstance(step, Begin) or (in_txn and not isinstance(step, Commit))
                if not in_txn:
                    waiting.append(i)
                    break
        yield from _send(reads, replies)
        for i, wait in waits:
            try:
                replies[i] = ((yield wait), None)
            except Exception as exc:
                replies[i] = (None, exc)
        pending = waiting
    return values


def _send(
    reads: list[tuple[int, Sql | Reads]], replies: list[tuple[Any, Exception | None]]
) -> Generator[Any, Any, None]:
    """Send the plans' pending reads (one alone, several as one `Reads`: a plan's own
    `Reads` joins it), keep each answer or error for its plan, and empty `reads`."""
    if len(reads) == 1:
        i, step = reads[0]
        try:
            replies[i] = ((yield step), None)
        except Exception as exc:
            replies[i] = (None, exc)
    elif reads:
        steps = [s for _, step in reads
                 for s in (step.steps if isinstance(step, Reads) else (step,))]
        sent: list[Sql] = []
        at: list[int] = []  # each step's place among those sent
        first: dict[tuple[str, tuple[Any, ...]], int] = {}
        for s in steps:
            key = (s.text, tuple(tuple(p) if isinstance(p, list) else p for p in s.params)
                   ) if s.shared else None
            if key is None or key not in first:
                if key is not None:
                    first[key] = len(sent)
                sent.append(s)
            at.append(first[key] if key is not None else len(sent) - 1)
        got = yield Reads(tuple(sent))
        answers = iter([got[i] for i in at])
        for i, step in reads:
            if isinstance(step, Reads):
                replies[i] = ([next(answers) for _ in step.steps], None)
            else:
                answer = next(answers)
                replies[i] = (None, answer) if isinstance(answer, Exception) else (answer, None)
    reads.clear()


ReadsSync = Callable[[Sequence[Sql]], list[list[tuple[Any, ...]]]]
"""A driver's way to run several reads in one round trip; it raises if any of them fails."""
ReadsAsync = Callable[[Sequence[Sql]], Awaitable[list[list[tuple[Any, ...]]]]]


def _one(execute: Callable[[Sql], list[tuple[Any, ...]]], step: Sql) -> Any:
    try:
        return execute(step)
    except Exception as exc:
        return exc


def _reads_sync(
    req: Reads, execute: Callable[[Sql], list[tuple[Any, ...]]], together: ReadsSync | None
) -> list[Any]:
    """A `Reads` answer: in one round trip if the driver can, else (or if one of them
    failed: each plan must get its own error) one statement after another."""
    if together is not None:
        try:
            return list(together(req.steps))
        except Exception:
            pass  # run again one by one: reads, outside any transaction
    return [_one(execute, step) for step in req.steps]


async def _reads_async(
    req: Reads, execute: Callable[[Sql], Awaitable[list[tuple[Any, ...]]]],
    together: ReadsAsync | None,
) -> list[Any]:
    """`_reads_sync` with awaited I/O."""
    if together is not None:
        try:
            return list(await together(req.steps))
        except Exception:
            pass
    out: list[Any] = []
    for step in req.steps:
        try:
            out.append(await execute(step))
        except Exception as exc:
            out.append(exc)
    return out


def not_set_up(exc: Exception, missing: str) -> StoreNotSetUp:
    """The error for a driver's `exc` saying a table (`missing`: "table": never set up) or
    a column ("column": set up by an older version, not migrated since) does not exist:
    how to fix it. Each backend's driver tells which of its errors these are.

    Example:
        >>> import sqlite3
        >>> error = not_set_up(sqlite3.OperationalError("no such column: m.tokens"), "column")
        >>> str(error).split(":")[0]
        "The store's schema in this database is older than this version of the package"
    """
    error = StoreNotSetUp(
        "The store's tables do not exist in this database: call store.setup() once (await "
        f"store.setup() on an async store) before the first read or write. ({exc})"
        if missing == "table" else
        "The store's schema in this database is older than this version of the package: "
        "call store.setup() once (await store.setup() on an async store) to migrate it "
        f"before the first read or write. ({exc})")
    error.__cause__ = exc
    return error


def closed(exc: Exception) -> StoreClosed:
    """The error for a driver's `exc` raised because the store's connection or pool was
    closed (each backend's driver tells which of its errors these are: a connection lost at
    run time is a failure, not this).

    Example:
        >>> import sqlite3
        >>> type(closed(sqlite3.ProgrammingError("Cannot operate on a closed database."))).__name__
        'StoreClosed'
    """
    error = StoreClosed(
        f"The store's connection is closed ({exc}): a store opened with `with "
        "...from_conn_string(...) as store:` works inside that block only; keep the graph's "
        "runs inside it, or open the store for the life of the app.")
    error.__cause__ = exc
    return error


class _Steps:
    """The decisions both drivers share, around a plan: which request failed in a way the
    plan may answer (a read outside a transaction, a wait), and whether a transaction is
    open (to roll back if the run ends early). The drivers only perform the requests."""

    def __init__(self, plan: Plan[Any]) -> None:
        self.plan = plan
        self.in_txn = False

    def first(self) -> Any:
        return self.plan.send(None)

    def answered(self, req: Any, answer: Any) -> Any:
        """The plan's next request, after `req` was performed and gave `answer`."""
        if isinstance(req, (Sql, Begin, Commit)):
            self.in_txn = isinstance(req, Begin) or (self.in_txn and not isinstance(req, Commit))
        return self.plan.send(answer)

    def failed(self, req: Any, exc: Exception) -> Any:
        """The plan's next request after performing `req` raised `exc`: a failed read or
        wait is the plan's to degrade on; anything else ends the run."""
        if isinstance(req, Wait) or (isinstance(req, Sql) and not self.in_txn):
            return self.plan.throw(exc)
        raise exc


def _perform_sync(
    req: Any, execute: Callable[[Sql | Begin | Commit], list[tuple[Any, ...]]],
    embeddings: Embeddings | None, embed_timeout: float | None, reads: ReadsSync | None,
) -> Any:
    if isinstance(req, Embed):
        if req.wait:
            return _embed_sync(embeddings, req, embed_timeout)
        if embed_timeout is None:  # no limit: in this thread, as ever
            return _done(_embed_sync(embeddings, req))
        return _embed_started(embeddings, req)
    if isinstance(req, Reads):
        return _reads_sync(req, execute, reads)
    if isinstance(req, Wait):
        return req.future.result(_left(req.deadline))
    return execute(req)


async def _perform_async(
    req: Any, execute: Callable[[Sql | Begin | Commit], Awaitable[list[tuple[Any, ...]]]],
    embeddings: Embeddings | None, embed_timeout: float | None, reads: ReadsAsync | None,
) -> Any:
    """`_perform_sync` with awaited I/O."""
    if isinstance(req, Embed):
        if req.wait:
            return await _embed_async(embeddings, req, embed_timeout)
        if embed_timeout is None:  # no limit: in this task, as ever
            return _done(await _embed_async(embeddings, req))
        return await _aembed_started(embeddings, req, embed_timeout)
    if isinstance(req, Reads):
        return await _reads_async(req, execute, reads)
    if isinstance(req, Wait):
        return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(req.future)),
                                      _left(req.deadline))
    return await execute(req)


def drive_sync(
    plan: Plan[T],
    execute: Callable[[Sql | Begin | Commit], list[tuple[Any, ...]]],
    embeddings: Embeddings | None,
    rollback: Callable[[], None],
    *,
    embed_timeout: float | None = None,
    reads: ReadsSync | None = None,
) -> T:
    """Run a plan to completion with blocking I/O; roll back if it fails mid-transaction.

    An embedding call that raises, or takes longer than `embed_timeout` seconds, answers the
    plan with an `EmbedError` (the plan degrades or fails, as it decides). `reads`, if
    given, runs a `Reads` request's statements in one round trip.
    """
    steps = _Steps(plan)
    try:
        req = steps.first()
        while True:
            try:
                answer = _perform_sync(req, execute, embeddings, embed_timeout, reads)
            except Exception as exc:
                req = steps.failed(req, exc)
            else:
                req = steps.answered(req, answer)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    except BaseException:
        if steps.in_txn:
            rollback()
        raise


async def drive_async(
    plan: Plan[T],
    execute: Callable[[Sql | Begin | Commit], Awaitable[list[tuple[Any, ...]]]],
    embeddings: Embeddings | None,
    rollback: Callable[[], Awaitable[None]],
    *,
    embed_timeout: float | None = None,
    reads: ReadsAsync | None = None,
) -> T:
    """`drive_sync` with awaited I/O."""
    steps = _Steps(plan)
    try:
        req = steps.first()
        while True:
            try:
                answer = await _perform_async(req, execute, embeddings, embed_timeout, reads)
            except Exception as exc:
                req = steps.failed(req, exc)
            else:
                req = steps.answered(req, answer)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    except BaseException:
        if steps.in_txn:
            await rollback()
        raise
