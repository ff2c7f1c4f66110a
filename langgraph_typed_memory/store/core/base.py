"""What every store class shares: configuration, the engine, and the public surface.

Backends only execute: each subclass supplies a way to run the engine's plans (sync and
async) on its connection. Every convenience call goes through `batch`/`abatch`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Self, TypedDict, TypeVar

from langgraph.store.base import (
    IndexConfig,
    Op,
    Result,
    TTLConfig,
)

from langgraph_typed_memory.config import (
    LifecycleConfig,
    RetrievalConfig,
    normalize_index,
    normalize_lifecycle,
    normalize_retrieval,
    normalize_ttl,
)
from langgraph_typed_memory.errors import ConfigurationError, InvalidQuery
from langgraph_typed_memory.gate import GateConfig, Outcome, Proposal, normalize_gate
from langgraph_typed_memory.namespaces import Scope
from langgraph_typed_memory.results import MemoryItem
from langgraph_typed_memory.store.core.access import BackgroundFlush
from langgraph_typed_memory.store.core.engine import Engine
from langgraph_typed_memory.store.core.langgraph_api import LangGraphApi
from langgraph_typed_memory.store.core.ops import HistoryOp, PromoteOp, batch_ops
from langgraph_typed_memory.store.core.protocol import Plan
from langgraph_typed_memory.store.core.records import Dialect, Records
from langgraph_typed_memory.store.core.retry import PlanSource, RetryPolicy
from langgraph_typed_memory.store.core.sweeper import AsyncTtlSweeper, TtlSweeper, sweep_interval
from langgraph_typed_memory.store.governance.api import GovernanceApi
from langgraph_typed_memory.store.governance.threads import SeenThreads

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from langgraph_typed_memory.maintenance.feedback import FeedbackResult, Verdict
    from langgraph_typed_memory.maintenance.report import MaintenanceReport, Progress
    from langgraph_typed_memory.maintenance.settings import MaintenanceConfig

__all__ = ["AsyncMemoryStore", "MemoryStoreBase", "StoreOptions", "SyncMemoryStore", "index_dims",
           "checked_options", "utc_now"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


class StoreOptions(TypedDict, total=False):
    """The keyword options every store class takes (each class's docstring says what they
    do); a backend's own options extend it."""

    index: IndexConfig | Mapping[str, Any] | None
    ttl: TTLConfig | Mapping[str, Any] | None
    retrieval: RetrievalConfig | Mapping[str, Any] | None
    clock: Callable[[], datetime] | None
    gate: GateConfig | Mapping[str, Any] | None
    lifecycle: LifecycleConfig | Mapping[str, Any] | None
    cache_bytes: int


def index_dims(options: StoreOptions) -> int | None:
    """The vectors' size the options' index declares (None: no index).

    Example:
        >>> index_dims({"index": {"dims": 384, "embed": None}}), index_dims({})
        (384, None)
    """
    index = options.get("index")
    return None if not index or index.get("dims") is None else int(index["dims"])


def checked_options(options: Mapping[str, Any], allowed: type, owner: str) -> None:
    """Refuse an option `allowed` (a TypedDict of options) does not name, as a signature
    would.

    Example:
        >>> checked_options({"index": None, "indx": 1}, StoreOptions, "SqliteMemoryStore")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: SqliteMemoryStore got an unknown ...
    """
    known = allowed.__annotations__
    unknown = [name for name in options if name not in known]
    if unknown:
        raise ConfigurationError(
            f"{owner} got an unknown option {unknown[0]!r}; it takes "
            f"{', '.join(sorted(known))}.")


class MemoryStoreBase(LangGraphApi, GovernanceApi):
    """Shared configuration of the SQLite and Postgres stores, sync and async."""

    supports_ttl = True
    retry_policy: RetryPolicy = RetryPolicy()
    """How plans are retried when the database asks (lock timeouts, write races)."""

    def __init__(self, dialect: Dialect, options: StoreOptions) -> None:
        """`options` as checked by the backend's class (`cache_bytes` sized its dialect)."""
        index, ttl = options.get("index"), options.get("ttl")
        settings = normalize_index(index)
        self.index_config = dict(index) if index is not None else None
        self.embeddings = settings.embeddings if settings else None
        self.ttl_config = dict(ttl) if ttl is not None else None  # type: ignore[assignment]
        self.retrieval = normalize_retrieval(options.get("retrieval"))
        self._engine = Engine(
            dialect,
            index=settings,
            retrieval=self.retrieval,
            ttl=normalize_ttl(ttl),
            clock=options.get("clock") or utc_now,
            gate=normalize_gate(options.get("gate")),
            lifecycle=normalize_lifecycle(options.get("lifecycle")),
        )
        self._threads_seen = SeenThreads()
        self._sweeper = TtlSweeper()
        self._asweeper = AsyncTtlSweeper()
        self._flusher = BackgroundFlush(self._engine.access)
        self._closed = False
        self._flushing = self._flusher.lock
        """Held while access counts are being written."""
        # A read that makes a flush due starts it in a thread (False: no safe way, it flushes)
        self._engine.access.on_due = lambda: self._flusher.start(self._background_runner())

    @property
    def clock(self) -> Callable[[], datetime]:
        """The store's clock (`clock=` at construction, else UTC now): what records are
        stamped with, and the time the chat graph's turn log gives a turn.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.clock().tzinfo is not None
            True
        """
        return self._engine.clock

    def _run(self, plan: PlanSource[Any]) -> Any:
        """Execute an engine plan on this store's connection (each backend supplies it).

        Given a plan factory, the backend rebuilds the plan and retries it when the database
        asks (see `retry.py`); a plan object runs once.
        """
        raise NotImplementedError

    def on_forget(self, forget: Callable[[], None]) -> None:
        """Have `forget()` called whenever the store drops what it caches of its records
        (after an erasure): a cache kept outside the store, of what it read from it, drops
        its copies too (the nodes' entity directories do).

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     dropped = []
            ...     store.on_forget(lambda: dropped.append(True))
            ...     _ = store.erase("acme", "alice")
            ...     dropped
            [True]
        """
        self._engine.dialect.cache.on_forget(forget)

    @property
    def records(self) -> Records:
        """The store's settings and the record operations its plans are built on: what an
        extension such as the maintenance jobs builds plans with (see `run_plan`)."""
        return self._engine

    def run_plan(self, plan: PlanSource[T], *, after_access_flush: bool = False) -> T:
        """Run a plan (a generator of SQL requests, see `store/core/protocol.py`) on this store's
        connection, as the store runs its own operations: given a factory, the plan is
        rebuilt and retried when the database asks. With `after_access_flush`, a background
        write of access counts under way lands first (plans that read the counts).

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> from langgraph_typed_memory.store.core.protocol import Sql
            >>> def count():
            ...     rows = yield Sql("SELECT count(*) FROM memories")
            ...     return rows[0][0]
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     print(store.run_plan(count))
            0
        """
        if not after_access_flush:
            return self._run(plan)  # type: ignore[no-any-return]
        with self._flushing:
            return self._run(plan)  # type: ignore[no-any-return]

    async def arun_plan(self, plan: PlanSource[T], *, after_access_flush: bool = False) -> T:
        """Async `run_plan`: driven on the store's event loop by an async backend, else in a
        worker thread."""
        if not after_access_flush:
            return await self._arun(plan)  # type: ignore[no-any-return]
        async with self._aflushing():
            return await self._arun(plan)  # type: ignore[no-any-return]

    async def _arun(self, plan: PlanSource[Any]) -> Any:
        """Execute an engine plan from async code: in a worker thread by default (the
        backend's driver is synchronous); an async backend drives it on its event loop."""
        return await asyncio.to_thread(self._run, plan)

    @asynccontextmanager
    async def _aflushing(self) -> AsyncIterator[None]:
        """Hold `_flushing` from async code without blocking the event loop (an async
        backend's background flush needs that loop to finish), and without leaving it held
        if the caller is cancelled while waiting."""
        while not self._flushing.acquire(blocking=False):
            await asyncio.sleep(0.001)
        try:
            yield
        finally:
            self._flushing.release()

    def _background_runner(self) -> Callable[[PlanSource[Any]], Any] | None:
        """How a background thread runs a plan; None: it cannot, and reads flush inline.
        `_run` by default: a psycopg connection closed while another thread runs a statement
        on it raises in that thread (measured), and the counts are kept."""
        return self._run

    def _release_connection(self) -> None:
        """Close the connection when the store owns it (a backend's own helper opened it);
        a connection or pool the application opened is left to the application."""

    def _flush_quietly(self) -> None:
        """Write what reads left pending, logging a failure rather than raising it over
        the caller's own exception: `from_conn_string`'s exit."""
        try:
            self.flush_access()
        except Exception as exc:
            logger.warning("Access counts not written at close: %r", exc)

    def flush_access(self) -> int:
        """Write the buffered access counts now and fold the access log into the records'
        counts; returns how many records the buffered counts were for.

        Reads count their uses in memory and append them to the access log in one batch once
        enough are pending or enough time has passed, and before a sweep, so a process that
        exits may leave some unwritten: call this before it exits (after the last read,
        before the connection closes). A background flush under way is waited for first.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     ns = ("tenant:acme", "user:alice", "preference")
            ...     store.put(ns, "tone", {"value": "terse"})
            ...     _ = store.get(ns, "tone")
            ...     print(store.flush_access(), store.flush_access())
            1 0
        """
        return int(self.run_plan(self._engine.access.flushed_and_folded,
                                 after_access_flush=True))

    async def aflush_access(self) -> int:
        """Async `flush_access`."""
        return int(await self.arun_plan(self._engine.access.flushed_and_folded,
                                        after_access_flush=True))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute operations (reads first, then writes in one transaction).

        Example:
            >>> from langgraph.store.base import GetOp, PutOp
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     results = store.batch([PutOp(("notes",), "n1", {"text": "hi"}),
            ...                            GetOp(("notes",), "n1")])
            >>> results[0], results[1]  # reads run before the writes of the same batch
            (None, None)
        """
        ops = batch_ops(ops)
        return list(self._run(lambda: self._engine.run(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute operations (reads first, then writes in one transaction), off the event
        loop."""
        ops = batch_ops(ops)
        return list(await self._arun(lambda: self._engine.run(ops)))

    def history(self, namespace: tuple[str, ...], key: str) -> list[MemoryItem]:
        """Every version of a typed record, newest first, superseded and revoked included.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     ns = ("tenant:acme", "user:alice", "preference")
            ...     store.put(ns, "tone", {"value": "formal"})
            ...     store.put(ns, "tone", {"value": "terse"})
            ...     [(v.value["value"], v.status) for v in store.history(ns, "tone")]
            [('terse', 'active'), ('formal', 'superseded')]
        """
        return self.batch([HistoryOp(namespace, key)])[0]  # type: ignore[list-item,return-value]

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[MemoryItem]:
        """Async `history`."""
        return (await self.abatch([HistoryOp(namespace, key)]))[0]  # type: ignore[list-item,return-value]

    def audit(self, namespace: tuple[str, ...], key: str) -> list[dict[str, Any]]:
        """The audit trail of a typed record: every lifecycle transition, oldest first.

        Each event says which version (`memory_id`), when (`at`), who or what (`actor`:
        `store.put`, `store.delete`, `gate:<source>`...), from which status to which, why
        (`reason`) and in which run: "why did the agent forget that?" has an answer.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     ns = ("tenant:acme", "user:alice", "preference")
            ...     store.put(ns, "tone", {"value": "formal"})
            ...     store.delete(ns, "tone")
            ...     events = store.audit(ns, "tone")
            ...     [(e["from_status"], e["to_status"], e["actor"]) for e in events]
            [(None, 'active', 'store.put'), ('active', 'revoked', 'store.delete')]
        """
        return self.batch([HistoryOp(namespace, key, audit=True)])[0]  # type: ignore[list-item,return-value]

    async def aaudit(self, namespace: tuple[str, ...], key: str) -> list[dict[str, Any]]:
        """Async `audit`."""
        op = HistoryOp(namespace, key, audit=True)
        return (await self.abatch([op]))[0]  # type: ignore[list-item,return-value]

    def promote(
        self,
        proposals: Sequence[Proposal | Mapping[str, Any]],
        *,
        tenant_id: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        turn: int | None = None,
        source: str | None = None,
    ) -> list[Outcome]:
        """Offer candidate memories to the promotion gate; one transaction for the batch.

        Each proposal is scoped (never wider than the caller's tenant; tenant scope only for
        facts about the tenant, provisional until a second independent source), verified
        against per-kind thresholds, deduplicated, and may supersede or contradict what is
        current. Returns one `Outcome` per proposal (written, deduplicated, confirmed,
        superseded, contradicted, or rejected with the reason).

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     out = store.promote(
            ...         [{"kind": "preference", "key": "tone", "value": "terse",
            ...           "confidence": 0.9},
            ...          {"kind": "fact", "subject": "user", "predicate": "home_city",
            ...           "content": "The user lives in Lyon.", "confidence": 0.4}],
            ...         tenant_id="acme", user_id="alice", run_id="run-1", turn=1)
            ...     [(o.kind, o.outcome) for o in out]
            [('preference', 'written'), ('fact', 'rejected')]
        """
        op = _promote_op(proposals, tenant_id, user_id, agent_id, run_id, turn, source)
        return self.batch([op])[0]  # type: ignore[list-item,return-value]

    async def apromote(
        self,
        proposals: Sequence[Proposal | Mapping[str, Any]],
        *,
        tenant_id: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        turn: int | None = None,
        source: str | None = None,
    ) -> list[Outcome]:
        """Async `promote`."""
        op = _promote_op(proposals, tenant_id, user_id, agent_id, run_id, turn, source)
        return (await self.abatch([op]))[0]  # type: ignore[list-item,return-value]

    def maintain(
        self,
        *,
        tenant_id: str | None = None,
        model: BaseChatModel | None = None,
        progress: Progress | None = None,
        config: MaintenanceConfig | Mapping[str, Any] | None = None,
    ) -> MaintenanceReport:
        """Run maintenance in its fixed order: compaction, consolidation, detection,
        promotion, sweeps. Each step runs in short transactions of its own and
        is idempotent; a chat graph may keep serving meanwhile. See docs/maintenance.md.

        Args:
            tenant_id: Maintain one tenant (default: every tenant).
            model: A chat model for compaction summaries and pattern detection (default: the
                extractive summary and the deterministic detector).
            progress: Called as `(step, done, total)` while a step advances.
            config: A `MaintenanceConfig` (windows and thresholds).

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     [step.name for step in store.maintain().steps][:3]
            ['compaction', 'consolidation', 'detection']
        """
        from langgraph_typed_memory.maintenance.runner import run_maintenance

        return run_maintenance(self, tenant_id=tenant_id, model=model, progress=progress,
                               config=config)

    async def amaintain(
        self,
        *,
        tenant_id: str | None = None,
        model: BaseChatModel | None = None,
        progress: Progress | None = None,
        config: MaintenanceConfig | Mapping[str, Any] | None = None,
    ) -> MaintenanceReport:
        """Async `maintain`, off the event loop."""
        from langgraph_typed_memory.maintenance.runner import run_maintenance

        return await asyncio.to_thread(run_maintenance, self, tenant_id=tenant_id,
                                       model=model, progress=progress, config=config)

    def feedback(
        self,
        namespace: tuple[str, ...],
        key: str,
        verdict: Verdict,
        *,
        actor: str = "api",
        reason: str | None = None,
        config: MaintenanceConfig | Mapping[str, Any] | None = None,
    ) -> FeedbackResult:
        """Give feedback on an observation or a procedure, in one transaction.

        `"correct"` raises an observation's confidence (and promotes it to a procedure once
        it is high) or confirms a procedure; `"wrong"` rejects the observation (kept as the
        counter-signal that stops it being detected again, its embedding dropped) and revokes
        the procedures promoted from it; `"dismissed"` keeps the observation but never
        promotes it. Every change is in the audit log under `actor`.

        Raises:
            InvalidVerdict: a verdict other than "correct", "wrong", "dismissed".
            UnknownMemory: no current record at `key`.
            InvalidRecord: the namespace holds neither observations nor procedures.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     ns = ("tenant:acme", "user:alice", "observation")
            ...     store.put(ns, "o1", {"category": "format", "quote": "Asks for CSV.",
            ...                          "confidence": 0.6})
            ...     result = store.feedback(ns, "o1", "correct")
            ...     result.confidence, len(result.promoted)
            (0.8, 1)
        """
        return self._run(  # type: ignore[no-any-return]
            self._feedback_plan(namespace, key, verdict, actor, reason, config))

    async def afeedback(
        self,
        namespace: tuple[str, ...],
        key: str,
        verdict: Verdict,
        *,
        actor: str = "api",
        reason: str | None = None,
        config: MaintenanceConfig | Mapping[str, Any] | None = None,
    ) -> FeedbackResult:
        """Async `feedback`."""
        return await self._arun(  # type: ignore[no-any-return]
            self._feedback_plan(namespace, key, verdict, actor, reason, config))

    def _feedback_plan(
        self, namespace: tuple[str, ...], key: str, verdict: Verdict, actor: str,
        reason: str | None, config: MaintenanceConfig | Mapping[str, Any] | None,
    ) -> Plan[FeedbackResult]:
        from langgraph_typed_memory.maintenance.feedback import check_verdict
        from langgraph_typed_memory.maintenance.plans import feedback_plan
        from langgraph_typed_memory.maintenance.settings import normalize_maintenance

        return feedback_plan(self._engine, tuple(namespace), key, check_verdict(verdict),
                             actor=actor, reason=reason, settings=normalize_maintenance(config))


class SyncMemoryStore(MemoryStoreBase):
    """A store driven from synchronous code: `setup` and `sweep_ttl` return their result
    (the async methods of `BaseStore` are there too)."""

    def setup(self) -> None:
        """Create or migrate the schema. Idempotent; each migration runs in a transaction.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     store.setup()  # a second call applies nothing
        """
        self._run(self._engine.setup)

    def sweep_ttl(self) -> int:
        """Delete items whose TTL has passed; returns how many were deleted.

        Example:
            >>> from datetime import UTC, datetime, timedelta
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> now = [datetime(2026, 1, 1, tzinfo=UTC)]
            >>> with SqliteMemoryStore.from_conn_string(":memory:", clock=lambda: now[0]) as store:
            ...     store.setup()
            ...     store.put(("notes",), "n1", {"text": "call back"}, ttl=5)
            ...     now[0] += timedelta(minutes=6)
            ...     print(store.sweep_ttl())
            1
        """
        return int(self._run(self._engine.sweep_ttl))

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None
                          ) -> concurrent.futures.Future[None]:
        """Call `sweep_ttl` every `sweep_interval_minutes` (default: the TTL config's, else 5)
        in a background thread, as LangGraph's stores do; without a TTL config there is
        nothing to sweep and the returned future is already done. Cancelling the future, or
        `stop_ttl_sweeper`, stops it; so does leaving `from_conn_string`'s block.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(
            ...         ":memory:", ttl={"default_ttl": 60, "sweep_interval_minutes": 10}) as store:
            ...     store.setup()
            ...     running = store.start_ttl_sweeper()
            ...     print(running.done(), store.stop_ttl_sweeper(timeout=5))
            False True
        """
        if not self.ttl_config:
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        return self._sweeper.start(self.sweep_ttl, sweep_interval(
            sweep_interval_minutes, self.ttl_config.get("sweep_interval_minutes")))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the TTL sweeper; True when it stopped (or was not running) within `timeout`
        seconds.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.stop_ttl_sweeper(timeout=1)  # none running
            True
        """
        return self._sweeper.stop(timeout)

    def close(self) -> None:
        """Stop the TTL sweeper, write the pending access counts, and close the connection
        when it came from the package's own helper (`connect_sqlite`): a connection or pool
        the application opened itself stays open, the application closes it. Idempotent;
        `with store:` calls it on exit. A store used after `close` raises `StoreClosed`.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
            >>> with SqliteMemoryStore(connect_sqlite(":memory:")) as store:
            ...     store.setup()
            ...     store.put(("notes",), "n1", {"text": "hello"})
            >>> store.close()  # closed already: nothing to do
        """
        if self._closed:
            return
        self._closed = True
        self._sweeper.stop(timeout=5)
        self._flush_quietly()
        self._release_connection()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _flushed_on_exit(self) -> Iterator[Any]:
        with self:
            yield self


class AsyncMemoryStore(MemoryStoreBase):
    """A store driven from async code: `setup` and `sweep_ttl` are coroutines, as on
    LangGraph's async stores (the sync `BaseStore` methods work from other threads)."""

    async def setup(self) -> None:
        """Create or migrate the schema. Idempotent; each migration runs in a transaction.

        Example:
            >>> import asyncio
            >>> from langgraph_typed_memory import AsyncSqliteMemoryStore
            >>> async def main():
            ...     async with AsyncSqliteMemoryStore.from_conn_string(":memory:") as store:
            ...         await store.setup()
            ...         await store.setup()  # a second call applies nothing
            >>> asyncio.run(main())
        """
        await self._arun(self._engine.setup)

    async def sweep_ttl(self) -> int:
        """Delete items whose TTL has passed; returns how many were deleted.

        Example:
            >>> import asyncio
            >>> from datetime import UTC, datetime, timedelta
            >>> from langgraph_typed_memory import AsyncSqliteMemoryStore
            >>> now = [datetime(2026, 1, 1, tzinfo=UTC)]
            >>> async def main():
            ...     async with AsyncSqliteMemoryStore.from_conn_string(
            ...             ":memory:", clock=lambda: now[0]) as store:
            ...         await store.setup()
            ...         await store.aput(("notes",), "n1", {"text": "call back"}, ttl=5)
            ...         now[0] += timedelta(minutes=6)
            ...         return await store.sweep_ttl()
            >>> asyncio.run(main())
            1
        """
        return int(await self._arun(self._engine.sweep_ttl))

    async def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None
                                ) -> asyncio.Task[None]:
        """Await `sweep_ttl` every `sweep_interval_minutes` (default: the TTL config's, else
        5) in a task of the running event loop, as LangGraph's async stores do; without a
        TTL config there is nothing to sweep (a finished task is returned). The LangGraph
        server starts no sweeper for a custom store: the server's store factory
        (`graphs/store.py`) starts this one.

        Example:
            >>> import asyncio
            >>> from langgraph_typed_memory import AsyncSqliteMemoryStore
            >>> async def main():
            ...     async with AsyncSqliteMemoryStore.from_conn_string(
            ...             ":memory:", ttl={"default_ttl": 60}) as store:
            ...         await store.setup()
            ...         running = await store.start_ttl_sweeper()
            ...         return running.done(), await store.stop_ttl_sweeper(timeout=5)
            >>> asyncio.run(main())
            (False, True)
        """
        if not self.ttl_config:
            return asyncio.get_running_loop().create_task(asyncio.sleep(0))
        return self._asweeper.start(self.sweep_ttl, sweep_interval(
            sweep_interval_minutes, self.ttl_config.get("sweep_interval_minutes")))

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the TTL sweeper; True when it stopped (or was not running) within `timeout`
        seconds.

        Example:
            >>> import asyncio
            >>> from langgraph_typed_memory import AsyncSqliteMemoryStore
            >>> async def main():
            ...     async with AsyncSqliteMemoryStore.from_conn_string(":memory:") as store:
            ...         return await store.stop_ttl_sweeper(timeout=1)  # none running
            >>> asyncio.run(main())
            True
        """
        return await self._asweeper.stop(timeout)

    async def aclose(self) -> None:
        """Stop the TTL sweeper, write the pending access counts, and close the connection
        when it came from the package's own helper (`connect_sqlite`): a connection or pool
        the application opened itself stays open, the application closes it. Idempotent;
        `async with store:` calls it on exit.

        Example:
            >>> import asyncio
            >>> from langgraph_typed_memory import AsyncSqliteMemoryStore, connect_sqlite
            >>> from langgraph_typed_memory.errors import StoreClosed
            >>> async def main():
            ...     async with AsyncSqliteMemoryStore(connect_sqlite(":memory:")) as store:
            ...         await store.setup()
            ...         await store.aput(("notes",), "n1", {"text": "hello"})
            ...     await store.aclose()  # closed already: nothing to do
            ...     try:
            ...         await store.aget(("notes",), "n1")
            ...     except StoreClosed as exc:
            ...         return type(exc).__name__
            >>> asyncio.run(main())
            'StoreClosed'
        """
        if self._closed:
            return
        self._closed = True
        await self._asweeper.stop(timeout=5)
        try:
            await self.aflush_access()
        except Exception as exc:
            logger.warning("Access counts not written at close: %r", exc)
        await asyncio.to_thread(self._release_connection)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @asynccontextmanager
    async def _aflushed_on_exit(self) -> AsyncIterator[Any]:
        async with self:
            yield self


def _promote_op(
    proposals: Any, tenant_id: str, user_id: str | None, agent_id: str | None,
    run_id: str | None, turn: int | None, source: str | None,
) -> PromoteOp:
    if isinstance(proposals, (str, bytes, Mapping)) or not isinstance(proposals, Sequence):
        raise InvalidQuery(
            f"proposals must be a list of dicts or Proposal objects, got {proposals!r:.80}."
        )
    return PromoteOp(Scope(tenant_id, user_id, agent_id), list(proposals), run_id, turn, source)
