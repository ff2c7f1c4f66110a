"""The store's governance methods: lifecycle sweeps, the invariant checker, erasure, and
encrypted export and import, each a plan of this room run through the store's public
`run_plan` / `arun_plan` on its `records`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph_typed_memory.namespaces import THREAD_USER
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
from langgraph_typed_memory.store.governance.sweeps import SweepReport, sweep_plan

if TYPE_CHECKING:
    from langgraph_typed_memory.store.core.records import Records
    from langgraph_typed_memory.store.core.retry import PlanSource

__all__ = ["GovernanceApi"]

T = TypeVar("T")


class GovernanceApi:
    """Sweeps, invariants, erasure, export and import, for a store class that provides
    `records`, `run_plan` and `arun_plan` (`MemoryStoreBase`)."""

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
        plan = partial(erase_plan, self.records, tenant_id, user_id, actor=actor, reason=reason,
                       untyped_prefixes=[tuple(p) for p in untyped_prefixes])
        report: ErasureReport = self.run_plan(plan)
        try:
            if checkpointer is not None:
                own = _anonymous_thread(user_id)
                report.threads = _threads([
                    *checkpointer.list(None, filter=_thread_filter(tenant_id, user_id)),
                    *(_anonymous(checkpointer.list(_thread_config(own)), tenant_id)
                      if own else [])])
                for thread in report.threads:
                    checkpointer.delete_thread(thread)
        finally:  # erased text leaves this process's memory and the file whatever happens
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
            if checkpointer is not None:
                found = [c async for c in checkpointer.alist(
                    None, filter=_thread_filter(tenant_id, user_id))]
                if own := _anonymous_thread(user_id):
                    found += _anonymous([c async for c in checkpointer.alist(
                        _thread_config(own))], tenant_id)
                report.threads = _threads(found)
                for thread in report.threads:
                    await checkpointer.adelete_thread(thread)
        finally:
            await self.arun_plan(partial(purge_plan, self.records))
        return report

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
    ) -> ExportReport:
        """Export a user (or, without `user_id`, a tenant) to an encrypted file.

        The scope is the one `erase` removes: every typed record (all kinds and statuses,
        history included) with its vectors, its audit trail and the scope's deletion events,
        plus the untyped namespaces under `untyped_prefixes`, read in one snapshot. The file is
        AES-256-GCM with a key derived by scrypt (`scrypt_n`, default 2**15; lower it only in
        tests) from `passphrase`, which is never stored. `progress(step, done, total)` is
        called as it goes. See docs/governance.md for the format.

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
                              progress=progress, scrypt_n=scrypt_n)

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
    ) -> ExportReport:
        """Async `export_scope` (the key derivation and the file run in a worker thread)."""
        return await asyncio.to_thread(
            self.export_scope, path, passphrase, tenant_id=tenant_id, user_id=user_id,
            untyped_prefixes=untyped_prefixes, progress=progress, scrypt_n=scrypt_n)

    def import_scope(
        self,
        path: str | os.PathLike[str],
        passphrase: str | bytes,
        *,
        progress: TransferProgress | None = None,
    ) -> ImportReport:
        """Import a scope written by `export_scope`, in one transaction.

        Ids, keys, values, statuses, timestamps, history, audit and vectors come back as they
        were. Raises `ExportDecryptError` (wrong passphrase, modified or truncated file),
        `ExportFormatError` (not an export, another format version), `ImportCollision` (this
        store already holds part of the scope: import never merges) or
        `EmbeddingDimensionMismatch` (the vectors do not fit this store's index); in every
        case nothing is written. A `progress` callback that raises aborts the import too.

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
        return import_from_file(self.run_plan, self.records, path, passphrase, progress=progress)

    async def aimport_scope(
        self,
        path: str | os.PathLike[str],
        passphrase: str | bytes,
        *,
        progress: TransferProgress | None = None,
    ) -> ImportReport:
        """Async `import_scope` (decryption and the writes run in a worker thread)."""
        return await asyncio.to_thread(self.import_scope, path, passphrase, progress=progress)


def _thread_filter(tenant_id: str, user_id: str | None) -> dict[str, Any]:
    return {"tenant_id": tenant_id} if user_id is None else {
        "tenant_id": tenant_id, "user_id": user_id}


def _anonymous_thread(user_id: str | None) -> str | None:
    """The thread whose own scope `user_id` is (`thread-<thread_id>`: a caller that named no
    user), else None."""
    if user_id is None or not user_id.startswith(THREAD_USER):
        return None
    return user_id[len(THREAD_USER):] or None


def _thread_config(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


def _anonymous(checkpoints: Iterable[Any], tenant_id: str) -> list[Any]:
    """The checkpoints of runs that named no user, in `tenant_id` (runs naming no tenant are
    the "default" tenant's): a thread-scoped user's own conversation.

    Example:
        >>> from types import SimpleNamespace as C
        >>> runs = [C(metadata={"tenant_id": "acme"}), C(metadata={"user_id": "bob"}),
        ...         C(metadata={"tenant_id": "globex"})]
        >>> len(_anonymous(runs, "acme")), len(_anonymous(runs, "default"))
        (1, 0)
    """
    return [c for c in checkpoints
            if not (c.metadata or {}).get("user_id")
            and not (c.metadata or {}).get("langgraph_auth_user_id")
            and ((c.metadata or {}).get("tenant_id") or "default") == tenant_id]


def _threads(checkpoints: Iterable[Any]) -> list[str]:
    return sorted({c.config["configurable"]["thread_id"] for c in checkpoints})
