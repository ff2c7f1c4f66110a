"""LangGraph's convenience calls (`get`, `search`, `put`, `delete`, `list_namespaces`, sync
and async) for typed namespaces.

LangGraph's `BaseStore` refuses "." in every label before it builds the batch. The ids of a
typed namespace may hold it (`user:alice@example.com`, `tenant:acme.io`; stored reversibly,
see `namespaces.encode_namespace`), so a typed call goes straight to `batch`, whose
validation applies the typed grammar; an untyped one keeps LangGraph's checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NamespacePath,
    NotProvided,
    PutOp,
    SearchItem,
    SearchOp,
)

from langgraph_typed_memory.namespaces import is_typed

__all__ = ["LangGraphApi"]


class LangGraphApi(BaseStore):
    """LangGraph's store API over `batch`/`abatch`, typed ids allowed to hold "."."""

    def get(self, namespace: tuple[str, ...], key: str, *,
            refresh_ttl: bool | None = None) -> Item | None:
        """Get one item; see LangGraph's `BaseStore.get`.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     ns = ("tenant:acme.io", "user:alice@example.com", "preference")
            ...     store.put(ns, "tone", {"value": "terse"})
            ...     print(store.get(ns, "tone").namespace)
            ('tenant:acme.io', 'user:alice@example.com', 'preference')
        """
        if not is_typed(namespace):
            return super().get(namespace, key, refresh_ttl=refresh_ttl)
        op = GetOp(namespace, str(key), self._refresh(refresh_ttl))
        return cast(Item | None, self.batch([op])[0])

    async def aget(self, namespace: tuple[str, ...], key: str, *,
                   refresh_ttl: bool | None = None) -> Item | None:
        """Async `get`."""
        if not is_typed(namespace):
            return await super().aget(namespace, key, refresh_ttl=refresh_ttl)
        op = GetOp(namespace, str(key), self._refresh(refresh_ttl))
        return cast(Item | None, (await self.abatch([op]))[0])

    def search(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
               filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
               refresh_ttl: bool | None = None) -> list[SearchItem]:
        """Search a namespace prefix; see LangGraph's `BaseStore.search`.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     ns = ("tenant:acme.io", "user:alice@example.com", "preference")
            ...     store.put(ns, "tone", {"value": "terse"})
            ...     print([item.value["value"] for item in store.search(ns)])
            ['terse']
        """
        if not is_typed(namespace_prefix):
            return super().search(namespace_prefix, query=query, filter=filter, limit=limit,
                                  offset=offset, refresh_ttl=refresh_ttl)
        op = SearchOp(namespace_prefix, filter, limit, offset, query,
                      self._refresh(refresh_ttl))
        return cast(list[SearchItem], self.batch([op])[0])

    async def asearch(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
                      filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
                      refresh_ttl: bool | None = None) -> list[SearchItem]:
        """Async `search`."""
        if not is_typed(namespace_prefix):
            return await super().asearch(namespace_prefix, query=query, filter=filter,
                                         limit=limit, offset=offset, refresh_ttl=refresh_ttl)
        op = SearchOp(namespace_prefix, filter, limit, offset, query,
                      self._refresh(refresh_ttl))
        return cast(list[SearchItem], (await self.abatch([op]))[0])

    def put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
            index: Literal[False] | list[str] | None = None, *,
            ttl: float | None | NotProvided = NOT_PROVIDED) -> None:
        """Store an item; see LangGraph's `BaseStore.put`.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     ns = ("tenant:acme.io", "user:alice@example.com", "preference")
            ...     store.put(ns, "tone", {"value": "terse"})
            ...     print(store.get(ns, "tone").value["value"])
            terse
        """
        if not is_typed(namespace):
            return super().put(namespace, key, value, index, ttl=ttl)
        self.batch([PutOp(namespace, str(key), value, index=index, ttl=self._ttl(ttl))])

    async def aput(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
                   index: Literal[False] | list[str] | None = None, *,
                   ttl: float | None | NotProvided = NOT_PROVIDED) -> None:
        """Async `put`."""
        if not is_typed(namespace):
            return await super().aput(namespace, key, value, index, ttl=ttl)
        await self.abatch([PutOp(namespace, str(key), value, index=index, ttl=self._ttl(ttl))])

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete an item; see LangGraph's `BaseStore.delete`.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     ns = ("tenant:acme.io", "user:alice@example.com", "preference")
            ...     store.put(ns, "tone", {"value": "terse"})
            ...     store.delete(ns, "tone")
            ...     print(store.get(ns, "tone"))
            None
        """
        if not is_typed(namespace):
            return super().delete(namespace, key)
        self.batch([PutOp(namespace, str(key), None, ttl=None)])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Async `delete`."""
        if not is_typed(namespace):
            return await super().adelete(namespace, key)
        await self.abatch([PutOp(namespace, str(key), None, ttl=None)])

    def list_namespaces(self, *, prefix: NamespacePath | None = None,
                        suffix: NamespacePath | None = None, max_depth: int | None = None,
                        limit: int = 100, offset: int = 0) -> list[tuple[str, ...]]:
        """List namespaces; see LangGraph's `BaseStore.list_namespaces`.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     ns = ("tenant:acme.io", "user:alice@example.com", "preference")
            ...     store.put(ns, "tone", {"value": "terse"})
            ...     print(store.list_namespaces(prefix=("tenant:acme.io",)))
            [('tenant:acme.io', 'user:alice@example.com', 'preference')]
        """
        if not is_typed(tuple(prefix or ())):
            return super().list_namespaces(prefix=prefix, suffix=suffix, max_depth=max_depth,
                                           limit=limit, offset=offset)
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        return cast(list[tuple[str, ...]], self.batch([op])[0])

    async def alist_namespaces(self, *, prefix: NamespacePath | None = None,
                               suffix: NamespacePath | None = None,
                               max_depth: int | None = None, limit: int = 100,
                               offset: int = 0) -> list[tuple[str, ...]]:
        """Async `list_namespaces`."""
        if not is_typed(tuple(prefix or ())):
            return await super().alist_namespaces(prefix=prefix, suffix=suffix,
                                                  max_depth=max_depth, limit=limit,
                                                  offset=offset)
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        return cast(list[tuple[str, ...]], (await self.abatch([op]))[0])

    def _refresh(self, refresh_ttl: bool | None) -> bool:
        """Whether a read refreshes TTLs, as LangGraph decides it."""
        if refresh_ttl is not None:
            return refresh_ttl
        return bool((self.ttl_config or {}).get("refresh_on_read", True))

    def _ttl(self, ttl: float | None | NotProvided) -> float | None:
        """A put's TTL in minutes, as LangGraph decides it (the configured default)."""
        if isinstance(ttl, NotProvided):
            return (self.ttl_config or {}).get("default_ttl")
        return ttl


def _list_op(prefix: NamespacePath | None, suffix: NamespacePath | None,
             max_depth: int | None, limit: int, offset: int) -> ListNamespacesOp:
    conditions = []
    if prefix:
        conditions.append(MatchCondition(match_type="prefix", path=prefix))
    if suffix:
        conditions.append(MatchCondition(match_type="suffix", path=suffix))
    return ListNamespacesOp(tuple(conditions), max_depth, limit, offset)
