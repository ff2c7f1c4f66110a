"""What every store class shares: configuration, the engine, and the public surface.

Backends only execute: each subclass supplies a way to run the engine's plans (sync and
async) on its connection. Every convenience call goes through `batch`/`abatch`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import BaseStore, IndexConfig, TTLConfig

from langgraph_typed_memory.config import (
    RetrievalConfig,
    normalize_index,
    normalize_retrieval,
    normalize_ttl,
)
from langgraph_typed_memory.results import MemoryItem
from langgraph_typed_memory.store.engine import Dialect, Engine, HistoryOp

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
        )

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
