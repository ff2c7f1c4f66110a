"""A LangChain retriever over typed fact, episode and observation memory, for RAG chains."""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langgraph.store.base import BaseStore, Item, SearchOp
from pydantic import ConfigDict, model_validator

from langgraph_typed_memory.namespaces import RANKED_KINDS, Scope, parse_namespace

__all__ = ["TypedMemoryRetriever"]

Tier = Literal["high", "standard", "low"]
_TIER_RANK: dict[str | None, int] = {"high": 2, "standard": 1, "low": 0}
_TIER_FETCH_DEPTH = 50
"""Results fetched per kind when a tier floor applies (the store's default candidate depth)."""


def _content(kind: str, value: dict[str, Any]) -> str:
    if kind == "episode":
        return f"{value.get('title', '')}: {value.get('summary', '')}"
    text = value.get("content") if kind == "fact" else value.get("quote")
    return str(text if text is not None else value)


def _document(item: Item) -> Document:
    memory: dict[str, Any] = getattr(item, "memory", None) or {}
    kind = str(memory.get("kind", item.namespace[-1]))
    return Document(
        id=memory.get("id"),
        page_content=_content(kind, item.value),
        metadata={
            "id": memory.get("id"),
            "kind": kind,
            "key": item.key,
            "namespace": list(item.namespace),
            "score": getattr(item, "score", None),
            "tier": memory.get("tier"),
            "retrieval_mode": memory.get("retrieval_mode"),
            "confidence": memory.get("confidence"),
        },
    )


class TypedMemoryRetriever(BaseRetriever):
    """Retrieve a scope's fact and episode memory as LangChain `Document`s.

    One `store.batch` runs a ranked search (hybrid, or the fallback cascade) per kind in the scope
    `tenant_id` / `user_id` / `agent_id` (which also sees the wider shared scopes, as every
    typed read does). The results are merged by score, cut to those at or above `min_tier`,
    and the best `k` are returned. Scores and tiers are relative to each kind's own search
    (min-max fusion, docs/retrieval.md): the best match of every kind ranks near the top even
    when it is weak, so search one kind (`kinds=("fact",)`) when that matters.

    The scope comes from the fields only, never from the run's configuration: build one
    retriever per caller. A document's `page_content` is a fact's `content`, an episode's
    ``"title: summary"`` or an observation's `quote`; its `metadata` holds `id`, `kind`,
    `key`, `namespace` (a list), `score`, `tier`, `retrieval_mode` and `confidence`.

    Attributes:
        store: The memory store (any of this package's stores).
        tenant_id: The caller's tenant.
        user_id: The caller's user, if any.
        agent_id: The caller's agent, if any.
        kinds: Ranked kinds to search: `fact`, `episode`, `observation`.
        k: How many documents at most.
        min_tier: The lowest relevance tier kept (`low` keeps everything).

    Raises:
        pydantic.ValidationError: unranked or repeated `kinds`, `k` below 1, or an id the
            namespace grammar refuses (the message is `InvalidNamespace`'s).

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> store.put(("tenant:acme", "user:alice", "fact"), "city", {
        ...     "subject": "alice", "predicate": "home_city", "content": "Alice lives in Lyon."})
        >>> store.put(("tenant:acme", "user:alice", "episode"), "move", {
        ...     "title": "Moving to Lyon", "summary": "Alice asked for movers in Lyon."})
        >>> retriever = TypedMemoryRetriever(store=store, tenant_id="acme", user_id="alice")
        >>> for doc in retriever.invoke("where does alice live in lyon"):
        ...     print(doc.metadata["kind"], doc.metadata["tier"], round(doc.metadata["score"], 2),
        ...           doc.page_content)
        episode high 1.0 Moving to Lyon: Alice asked for movers in Lyon.
        fact high 0.96 Alice lives in Lyon.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: BaseStore
    tenant_id: str
    user_id: str | None = None
    agent_id: str | None = None
    kinds: tuple[str, ...] = ("fact", "episode")
    k: int = 5
    min_tier: Tier = "low"

    @model_validator(mode="after")
    def _check(self) -> TypedMemoryRetriever:
        if not self.kinds or set(self.kinds) - RANKED_KINDS or len(set(self.kinds)) < len(
            self.kinds
        ):
            raise ValueError(
                f"TypedMemoryRetriever: kinds={self.kinds!r} must be one or more distinct of "
                f"{sorted(RANKED_KINDS)}; read preferences, policies and procedures with "
                "store.search, which returns all of them."
            )
        if self.k < 1:
            raise ValueError(f"TypedMemoryRetriever: k={self.k} must be at least 1.")
        for op in self._ops("check"):
            parse_namespace(op.namespace_prefix)  # InvalidNamespace names the bad id
        return self

    def _ops(self, query: str) -> list[SearchOp]:
        labels = Scope(self.tenant_id, self.user_id, self.agent_id).labels()
        limit = self.k if self.min_tier == "low" else max(self.k, _TIER_FETCH_DEPTH)
        return [SearchOp((*labels, kind), None, limit, 0, query) for kind in self.kinds]

    def _merge(self, results: list[Any]) -> list[Document]:
        floor = _TIER_RANK[self.min_tier]
        items = [
            item
            for found in results
            for item in found
            if _TIER_RANK.get(getattr(item, "memory", {}).get("tier"), 0) >= floor
        ]
        items.sort(key=lambda item: -(item.score or 0.0))  # stable: kinds order breaks ties
        return [_document(item) for item in items[: self.k]]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self._merge(self.store.batch(self._ops(query)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self._merge(await self.store.abatch(self._ops(query)))
