"""What every store class shares: configuration, the engine, and the public surface.

Backends only execute: each subclass supplies a way to run the engine's plans (sync and
async) on its connection. Every convenience call goes through `batch`/`abatch`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore, IndexConfig, Op, Result, TTLConfig

from langgraph_typed_memory.config import (
    RetrievalConfig,
    normalize_index,
    normalize_retrieval,
    normalize_ttl,
)
from langgraph_typed_memory.errors import InvalidQuery
from langgraph_typed_memory.gate import GateConfig, Outcome, Proposal, normalize_gate
from langgraph_typed_memory.namespaces import Scope
from langgraph_typed_memory.results import MemoryItem
from langgraph_typed_memory.store.engine import Dialect, Engine, HistoryOp
from langgraph_typed_memory.store.erasure import ErasureReport, erase_plan, purge_plan
from langgraph_typed_memory.store.invariants import InvariantReport, check_plan
from langgraph_typed_memory.store.promotion import PromoteOp
from langgraph_typed_memory.store.protocol import Plan

__all__ = ["MemoryStoreBase", "utc_now"]


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


class MemoryStoreBase(BaseStore):
    """Shared configuration of the SQLite and Postgres stores, sync and async."""

    supports_ttl = True

    def __init__(
        self,
        dialect: Dialect,
        *,
        index: IndexConfig | Mapping[str, Any] | None = None,
        ttl: TTLConfig | Mapping[str, Any] | None = None,
        retrieval: RetrievalConfig | Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
        gate: GateConfig | Mapping[str, Any] | None = None,
    ) -> None:
        settings = normalize_index(index)
        self.index_config = dict(index) if index is not None else None
        self.embeddings = settings.embeddings if settings else None
        self.ttl_config = dict(ttl) if ttl is not None else None  # type: ignore[assignment]
        self.retrieval = normalize_retrieval(retrieval)
        self._engine = Engine(
            dialect,
            index=settings,
            retrieval=self.retrieval,
            ttl=normalize_ttl(ttl),
            clock=clock or utc_now,
            gate=normalize_gate(gate),
        )

    def _run(self, plan: Plan[Any]) -> Any:
        """Execute an engine plan on this store's connection (each backend supplies it)."""
        raise NotImplementedError

    def setup(self) -> None:
        """Create or migrate the schema. Idempotent; each migration runs in a transaction."""
        self._run(self._engine.setup())

    def sweep_ttl(self) -> int:
        """Delete items whose TTL has passed; returns how many were deleted."""
        return int(self._run(self._engine.sweep_ttl()))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute operations (reads first, then writes in one transaction)."""
        return list(self._run(self._engine.run(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute operations in a worker thread, off the event loop."""
        return await asyncio.to_thread(self.batch, list(ops))

    def check_invariants(self) -> InvariantReport:
        """Verify the database's invariants (I3); `report.ok` is True when all hold.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     store.put(("tenant:acme", "user:alice", "preference"), "tone", {"value": 1})
            ...     print(store.check_invariants())
            all 7 invariants hold
        """
        return self._run(check_plan(self._engine.has_vector_table))  # type: ignore[no-any-return]

    async def acheck_invariants(self) -> InvariantReport:
        """Async `check_invariants`."""
        return await asyncio.to_thread(self.check_invariants)

    def erase(
        self,
        tenant_id: str,
        user_id: str | None = None,
        *,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        untyped_prefixes: Sequence[tuple[str, ...]] = (),
        actor: str = "api",
        reason: str = "erasure request",
    ) -> ErasureReport:
        """Erase a user (or, without `user_id`, a whole tenant) everywhere (G1).

        In one transaction: every typed record of the scope (all kinds, all statuses, user and
        user+agent records), their vectors and full-text entries, their audit trail, this
        user's entries in the evidence of wider records (records only they sourced are
        deleted), the untyped namespaces under `untyped_prefixes`, and a deletion event with
        the counts. Then the checkpointer's threads whose metadata carries this scope (the
        memory graph's runs record `tenant_id` and `user_id`) are deleted. On SQLite the
        full-text index is compacted and the WAL emptied, and `secure_delete` zeroes freed
        pages, so the erased text is gone from the file too.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     store.put(("tenant:acme", "user:alice", "preference"), "tone", {"value": 1})
            ...     store.erase("acme", "alice").records
            {'preference': 1}
        """
        plan = erase_plan(self._engine, tenant_id, user_id, actor=actor, reason=reason,
                          untyped_prefixes=[tuple(p) for p in untyped_prefixes])
        report: ErasureReport = self._run(plan)
        if checkpointer is not None:
            report.threads = _threads(checkpointer.list(None, filter=_thread_filter(
                tenant_id, user_id)))
            for thread in report.threads:
                checkpointer.delete_thread(thread)
        self._run(purge_plan(self._engine))
        return report

    async def aerase(
        self,
        tenant_id: str,
        user_id: str | None = None,
        *,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        untyped_prefixes: Sequence[tuple[str, ...]] = (),
        actor: str = "api",
        reason: str = "erasure request",
    ) -> ErasureReport:
        """Async `erase` (the checkpointer's async API for its threads)."""
        plan = erase_plan(self._engine, tenant_id, user_id, actor=actor, reason=reason,
                          untyped_prefixes=[tuple(p) for p in untyped_prefixes])
        report: ErasureReport = await asyncio.to_thread(self._run, plan)
        if checkpointer is not None:
            found = [c async for c in checkpointer.alist(
                None, filter=_thread_filter(tenant_id, user_id))]
            report.threads = _threads(found)
            for thread in report.threads:
                await checkpointer.adelete_thread(thread)
        await asyncio.to_thread(self._run, purge_plan(self._engine))
        return report

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
        """The audit trail of a typed record: every lifecycle transition, oldest first (F1).

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


def _thread_filter(tenant_id: str, user_id: str | None) -> dict[str, Any]:
    return {"tenant_id": tenant_id} if user_id is None else {
        "tenant_id": tenant_id, "user_id": user_id}


def _threads(checkpoints: Iterable[Any]) -> list[str]:
    return sorted({c.config["configurable"]["thread_id"] for c in checkpoints})


def _promote_op(
    proposals: Any, tenant_id: str, user_id: str | None, agent_id: str | None,
    run_id: str | None, turn: int | None, source: str | None,
) -> PromoteOp:
    if isinstance(proposals, (str, bytes, Mapping)) or not isinstance(proposals, Sequence):
        raise InvalidQuery(
            f"proposals must be a list of dicts or Proposal objects, got {proposals!r:.80}."
        )
    return PromoteOp(Scope(tenant_id, user_id, agent_id), list(proposals), run_id, turn, source)
