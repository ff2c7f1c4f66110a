"""The store's governance methods: lifecycle sweeps, the invariant checker, erasure, and
encrypted export and import, each a plan of this room run through the store's public
`run_plan` / `arun_plan` on its `records`."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph_typed_memory.namespaces import Scope
from langgraph_typed_memory.store.governance.erasure import ErasureReport, erase_plan, purge_plan
from langgraph_typed_memory.store.governance.invariants import InvariantReport, check_plan
from langgraph_typed_memory.store.governance.portability import (
    DEFAULT_SCRYPT_N,
    ExportReport,
    ImportReport,
    export_to_file,
    import_from_file,
)
from langgraph_typed_memory.store.governance.portability import Progress as TransferProgress
from langgraph_typed_memory.store.governance.review import PendingFact, pending_plan, review_plan
from langgraph_typed_memory.store.governance.sweeps import SweepReport, sweep_plan
from langgraph_typed_memory.store.governance.threads import (
    SeenThreads,
    anonymous_scopes_plan,
    anonymous_thread,
    forget_threads_plan,
    legacy_lookups,
    owned_by,
    record_thread_plan,
    scope_label,
    threads_plan,
)

if TYPE_CHECKING:
    from langgraph_typed_memory.store.core.records import Records
    from langgraph_typed_memory.store.core.retry import PlanSource

__all__ = ["GovernanceApi"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class GovernanceApi:
    """Sweeps, invariants, erasure, export and import, for a store class that provides
    `records`, `run_plan` and `arun_plan` (`MemoryStoreBase`)."""

    _threads_seen: SeenThreads
    """The threads this process has recorded (`record_thread`)."""

    if TYPE_CHECKING:
        @property
        def records(self) -> Records: ...

        def run_plan(self, plan: PlanSource[T], *, after_access_flush: bool = False) -> T: ...

        async def arun_plan(self, plan: PlanSource[T], *,
                            after_access_flush: bool = False) -> T: ...

    def sweep(
        self, *, freshness: bool = True, gc: bool = True, retention: bool = True
    ) -> SweepReport:
        """Run the lifecycle sweeps, each in one transaction, every transition audited
        with actor ``maintenance``: expire active facts and observations whose freshness fell
        below the floor, forget long-expired low-confidence records (garbage collection), and
        forget records older than their retention class allows. Settings: `lifecycle=` (see
        `LifecycleConfig`); half-lives: `retrieval=`. Returns the counts. A background access
        flush under way is waited for, so the uses it carries count.

        Example:
            >>> from datetime import UTC, datetime, timedelta
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> now = [datetime(2026, 1, 1, tzinfo=UTC)]
            >>> with SqliteMemoryStore.from_conn_string(":memory:", clock=lambda: now[0]) as store:
            ...     store.setup()
            ...     ns = ("tenant:acme", "user:alice", "fact")
            ...     store.put(ns, "f", {"subject": "alice", "predicate": "city",
            ...                         "content": "Alice lives in Lyon", "confidence": 0.3})
            ...     now[0] += timedelta(days=800)
            ...     print(store.sweep().expired, len(store.search(ns, query="Lyon")))
            ...     now[0] += timedelta(days=200)
            ...     print(store.sweep().forgotten, store.get(ns, "f"))
            1 0
            1 None
        """
        plan = partial(sweep_plan, self.records, freshness=freshness, gc=gc, retention=retention)
        report: SweepReport = self.run_plan(plan, after_access_flush=True)
        return report

    async def asweep(
        self, *, freshness: bool = True, gc: bool = True, retention: bool = True
    ) -> SweepReport:
        """Async `sweep`."""
        plan = partial(sweep_plan, self.records, freshness=freshness, gc=gc, retention=retention)
        report: SweepReport = await self.arun_plan(plan, after_access_flush=True)
        return report

    def check_invariants(self) -> InvariantReport:
        """Verify the database's invariants; `report.ok` is True when all hold.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     store.put(("tenant:acme", "user:alice", "preference"), "tone", {"value": 1})
            ...     print(store.check_invariants().ok)
            True
        """
        return self.run_plan(lambda: check_plan(self.records.has_vector_table))

    async def acheck_invariants(self) -> InvariantReport:
        """Async `check_invariants`."""
        return await self.arun_plan(lambda: check_plan(self.records.has_vector_table))

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
        """Erase a user (or, without `user_id`, a whole tenant) everywhere.

        In one transaction: every typed record of the scope (all kinds, all statuses, user and
        user+agent records), their vectors and full-text entries, their audit trail, this
        user's entries in the evidence of wider records (records only they sourced are
        deleted), the untyped namespaces under `untyped_prefixes`, and a deletion event with
        the counts. Then, given the `checkpointer`, the scope's conversation threads are
        deleted from it: those the memory nodes recorded for the scope they computed (the
        server's authenticated user, never a name the client merely sent; any id shape), and
        those written before the nodes recorded threads whose checkpoint metadata reads as the
        scope's. Without a checkpointer they are kept (`report.threads_kept`, and a warning):
        erase again with one to delete them. On SQLite the full-text index is compacted and
        the WAL emptied, and `secure_delete` zeroes freed pages, so the erased text is gone
        from the file too.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     store.put(("tenant:acme", "user:alice", "preference"), "tone", {"value": 1})
            ...     store.erase("acme", "alice").records
            {'preference': 1}
        """
        plan = partial(erase_plan, self.records, tenant_id, user_id, actor=actor, reason=reason,
                       untyped_prefixes=[tuple(p) for p in untyped_prefixes])
        report: ErasureReport = self.run_plan(plan)
        try:
            recorded = self.run_plan(partial(threads_plan, tenant_id, user_id))
            if checkpointer is None:
                _kept(report, recorded)
            else:
                found = [(c.config["configurable"]["thread_id"], c.metadata)
                         for config, where in legacy_lookups(tenant_id, user_id)
                         for c in checkpointer.list(config, filter=where)]
                report.threads = _owned(recorded, found, tenant_id, user_id)
                for thread in report.threads:
                    checkpointer.delete_thread(thread)
                self.run_plan(partial(forget_threads_plan, tenant_id, user_id, recorded))
        finally:  # erased text leaves this process's memory and the file whatever happens
            self._threads_seen.clear()
            self.run_plan(partial(purge_plan, self.records))
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
        plan = partial(erase_plan, self.records, tenant_id, user_id, actor=actor, reason=reason,
                       untyped_prefixes=[tuple(p) for p in untyped_prefixes])
        report: ErasureReport = await self.arun_plan(plan)
        try:
            recorded = await self.arun_plan(partial(threads_plan, tenant_id, user_id))
            if checkpointer is None:
                _kept(report, recorded)
            else:
                found = [(c.config["configurable"]["thread_id"], c.metadata)
                         for config, where in legacy_lookups(tenant_id, user_id)
                         async for c in checkpointer.alist(config, filter=where)]
                report.threads = _owned(recorded, found, tenant_id, user_id)
                for thread in report.threads:
                    await checkpointer.adelete_thread(thread)
                await self.arun_plan(partial(forget_threads_plan, tenant_id, user_id, recorded))
        finally:
            self._threads_seen.clear()
            await self.arun_plan(partial(purge_plan, self.records))
        return report

    def erase_abandoned(
        self,
        checkpointer: BaseCheckpointSaver[Any],
        *,
        tenant_id: str | None = None,
        actor: str = "api",
        reason: str = "its thread was deleted",
    ) -> list[ErasureReport]:
        """Erase the memory of callers that named no user whose thread is gone from the
        checkpointer: such a caller's scope is its thread's (`thread-<thread_id>`), and once
        the thread is deleted (a stateless run's temporary thread, a thread deleted through
        the API) nobody can read that memory again. One `erase` per such scope, in one tenant
        or all; returns their reports.

        Example:
            >>> from langgraph.checkpoint.memory import InMemorySaver
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     store.put(("tenant:acme", "user:thread-t1", "preference"), "tone",
            ...               {"value": "terse"})
            ...     [(r.user_id, r.records) for r in store.erase_abandoned(InMemorySaver())]
            [('thread-t1', {'preference': 1})]
        """
        reports = []
        for tenant, user in self.run_plan(partial(anonymous_scopes_plan, tenant_id)):
            thread = anonymous_thread(user)
            if thread is None or checkpointer.get_tuple(
                    {"configurable": {"thread_id": thread}}) is not None:
                continue
            reports.append(self.erase(tenant, user, checkpointer=checkpointer, actor=actor,
                                      reason=reason))
        return reports

    async def aerase_abandoned(
        self,
        checkpointer: BaseCheckpointSaver[Any],
        *,
        tenant_id: str | None = None,
        actor: str = "api",
        reason: str = "its thread was deleted",
    ) -> list[ErasureReport]:
        """Async `erase_abandoned` (the checkpointer's async API)."""
        reports = []
        for tenant, user in await self.arun_plan(partial(anonymous_scopes_plan, tenant_id)):
            thread = anonymous_thread(user)
            if thread is None or await checkpointer.aget_tuple(
                    {"configurable": {"thread_id": thread}}) is not None:
                continue
            reports.append(await self.aerase(tenant, user, checkpointer=checkpointer,
                                             actor=actor, reason=reason))
        return reports

    def pending_reviews(self, tenant_id: str) -> list[PendingFact]:
        """The facts users proposed for the whole tenant that await an operator's review
        (with the gate's `tenant_sharing="review"`), oldest first; no read shows them
        until `review` accepts one.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(
            ...         ":memory:", gate={"tenant_sharing": "review"}) as store:
            ...     store.setup()
            ...     _ = store.promote([{"kind": "fact", "scope": "tenant", "subject": "acme",
            ...                         "predicate": "hosting", "confidence": 0.9,
            ...                         "content": "Acme hosts on Azure."}],
            ...                       tenant_id="acme", user_id="alice", run_id="r1")
            ...     [(p.content, p.proposed_by) for p in store.pending_reviews("acme")]
            [('Acme hosts on Azure.', ['alice'])]
        """
        return self.run_plan(partial(pending_plan, self.records, tenant_id))

    async def apending_reviews(self, tenant_id: str) -> list[PendingFact]:
        """Async `pending_reviews`."""
        return await self.arun_plan(partial(pending_plan, self.records, tenant_id))

    def review(self, tenant_id: str, key: str, *, approve: bool, actor: str = "api",
               reason: str = "operator review") -> str:
        """Accept (`approve=True`: every user of the tenant is shown it from now on) or
        reject (revoked) a fact proposed for the tenant; returns its new status. Audited
        with `actor` and `reason`.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(
            ...         ":memory:", gate={"tenant_sharing": "review"}) as store:
            ...     store.setup()
            ...     fact = {"kind": "fact", "scope": "tenant", "subject": "acme",
            ...             "predicate": "fiscal_year_start", "confidence": 0.9,
            ...             "content": "Acme's fiscal year starts on April 1."}
            ...     _ = store.promote([fact], tenant_id="acme", user_id="alice", run_id="r1")
            ...     _ = store.promote([fact], tenant_id="acme", user_id="bob", run_id="r2")
            ...     ns = ("tenant:acme", "fact")
            ...     [p.proposed_by for p in store.pending_reviews("acme")], store.search(ns)
            ...     store.review("acme", store.pending_reviews("acme")[0].key, approve=True)
            ...     [i.value["content"] for i in store.search(ns)]
            ([['alice', 'bob']], [])
            'active'
            ["Acme's fiscal year starts on April 1."]

        Raises:
            UnknownMemory: no proposal awaits review at `key`.
        """
        return self.run_plan(partial(review_plan, self.records, tenant_id, key,
                                     approve=approve, actor=actor, reason=reason))

    async def areview(self, tenant_id: str, key: str, *, approve: bool, actor: str = "api",
                      reason: str = "operator review") -> str:
        """Async `review`."""
        return await self.arun_plan(partial(review_plan, self.records, tenant_id, key,
                                            approve=approve, actor=actor, reason=reason))

    def record_thread(self, thread_id: str, scope: Scope) -> None:
        """Record that a run of `scope` used the checkpointer thread `thread_id`, so that
        `erase` of the scope's user (or tenant) deletes the thread. The memory nodes call it
        with the scope they computed; once per thread and scope in a process, later calls
        write nothing.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> from langgraph_typed_memory.namespaces import Scope
            >>> from langgraph.checkpoint.memory import InMemorySaver
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     store.record_thread("t1", Scope("acme", "42"))
            ...     store.erase("acme", "42", checkpointer=InMemorySaver()).threads
            ['t1']
        """
        if self._threads_seen.first(thread_id, scope_label(scope)):
            try:
                self.run_plan(partial(record_thread_plan, thread_id, scope,
                                      self.records.clock().timestamp()))
            except BaseException:
                self._threads_seen.forget(thread_id, scope_label(scope))
                raise

    async def arecord_thread(self, thread_id: str, scope: Scope) -> None:
        """Async `record_thread`."""
        if self._threads_seen.first(thread_id, scope_label(scope)):
            try:
                await self.arun_plan(partial(record_thread_plan, thread_id, scope,
                                             self.records.clock().timestamp()))
            except BaseException:
                self._threads_seen.forget(thread_id, scope_label(scope))
                raise

    def export_scope(
        self,
        path: str | os.PathLike[str],
        passphrase: str | bytes,
        *,
        tenant_id: str,
        user_id: str | None = None,
        untyped_prefixes: Sequence[tuple[str, ...]] = (),
        progress: TransferProgress | None = None,
        scrypt_n: int = DEFAULT_SCRYPT_N,
        allow_empty: bool = False,
    ) -> ExportReport:
        """Export a user (or, without `user_id`, a tenant) to an encrypted file.

        The scope is the one `erase` removes: every typed record (all kinds and statuses,
        history included) with its vectors, its audit trail and the scope's deletion events,
        plus the untyped namespaces under `untyped_prefixes`, read in one snapshot. The file is
        AES-256-GCM with a key derived by scrypt (`scrypt_n`, default 2**15; lower it only in
        tests) from `passphrase`, which is never stored. `progress(step, done, total)` is
        called as it goes. See docs/governance.md for the format.

        A scope the store holds nothing of (no record, audit event or deletion event: a
        mistyped id, most often) raises `NothingToExport` and writes no file, unless
        `allow_empty`.

        Example:
            >>> import os, tempfile
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> path = os.path.join(tempfile.mkdtemp(), "alice.lgtm")
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     store.put(("tenant:acme", "user:alice", "preference"), "tone", {"value": 1})
            ...     store.export_scope(path, "a long passphrase", tenant_id="acme",
            ...                        user_id="alice").records
            {'preference': 1}
        """
        return export_to_file(self.run_plan, self.records, path, passphrase, tenant_id=tenant_id,
                              user_id=user_id, untyped_prefixes=untyped_prefixes,
                              progress=progress, scrypt_n=scrypt_n, allow_empty=allow_empty)

    async def aexport_scope(
        self,
        path: str | os.PathLike[str],
        passphrase: str | bytes,
        *,
        tenant_id: str,
        user_id: str | None = None,
        untyped_prefixes: Sequence[tuple[str, ...]] = (),
        progress: TransferProgress | None = None,
        scrypt_n: int = DEFAULT_SCRYPT_N,
        allow_empty: bool = False,
    ) -> ExportReport:
        """Async `export_scope` (the key derivation and the file run in a worker thread)."""
        return await asyncio.to_thread(
            self.export_scope, path, passphrase, tenant_id=tenant_id, user_id=user_id,
            untyped_prefixes=untyped_prefixes, progress=progress, scrypt_n=scrypt_n,
            allow_empty=allow_empty)

    def import_scope(
        self,
        path: str | os.PathLike[str],
        passphrase: str | bytes,
        *,
        progress: TransferProgress | None = None,
        max_scrypt_n: int = DEFAULT_SCRYPT_N,
    ) -> ImportReport:
        """Import a scope written by `export_scope`, in one transaction.

        Ids, keys, values, statuses, timestamps, history, audit and vectors come back as they
        were. Raises `ExportDecryptError` (wrong passphrase, modified or truncated file),
        `ExportFormatError` (not an export, another format version), `ImportCollision` (this
        store already holds part of the scope: import never merges) or
        `EmbeddingDimensionMismatch` (the vectors do not fit this store's index); in every
        case nothing is written. A `progress` callback that raises aborts the import too.
        Every record is checked as the write path checks it before anything is written
        (docs/governance.md). The file's key-derivation cost is read before the file can be
        authenticated, so a cost above `max_scrypt_n` (default: what `export_scope` writes
        by default) is refused before any key derivation; raise it for a file you trust.

        Example:
            >>> import os, tempfile
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> path = os.path.join(tempfile.mkdtemp(), "alice.lgtm")
            >>> ns = ("tenant:acme", "user:alice", "preference")
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as source:
            ...     source.setup()
            ...     source.put(ns, "tone", {"value": "terse"})
            ...     _ = source.export_scope(path, "pw: horse staple", tenant_id="acme")
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as target:
            ...     target.setup()
            ...     report = target.import_scope(path, "pw: horse staple")
            ...     report.records, target.get(ns, "tone").value["value"]
            ({'preference': 1}, 'terse')
        """
        return import_from_file(self.run_plan, self.records, path, passphrase, progress=progress,
                                max_scrypt_n=max_scrypt_n)

    async def aimport_scope(
        self,
        path: str | os.PathLike[str],
        passphrase: str | bytes,
        *,
        progress: TransferProgress | None = None,
        max_scrypt_n: int = DEFAULT_SCRYPT_N,
    ) -> ImportReport:
        """Async `import_scope` (decryption and the writes run in a worker thread)."""
        return await asyncio.to_thread(self.import_scope, path, passphrase, progress=progress,
                                       max_scrypt_n=max_scrypt_n)


def _owned(recorded: list[str], found: list[tuple[str, Any]], tenant_id: str,
           user_id: str | None) -> list[str]:
    """The threads to delete: those the nodes recorded for the scope, and those with a
    checkpoint (thread, metadata) whose metadata (written before the nodes recorded threads)
    reads as the scope's.

    Example:
        >>> _owned(["t1"], [("t2", {"user_id": "bob"}), ("t3", {"user_id": "bob",
        ...        "langgraph_auth_user_id": "carol"})], "default", "bob")
        ['t1', 't2']
    """
    legacy = {t for t, meta in found if owned_by(meta, t, tenant_id, user_id)}
    return sorted({*recorded, *legacy})


def _kept(report: ErasureReport, recorded: list[str]) -> None:
    """Without a checkpointer the scope's threads stay: say so, and keep their records for
    an erasure that is given one."""
    report.threads_kept = recorded
    if recorded:
        logger.warning("erase %s/%s: no checkpointer given, so its %d conversation thread(s) "
                       "were kept; erase again with checkpointer= to delete them",
                       report.tenant_id, report.user_id, len(recorded))
