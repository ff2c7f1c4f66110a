"""LangGraph's convenience calls (`get`, `search`, `put`, `delete`, `list_namespaces`, sync
and async) over `batch`/`abatch`, for typed and untyped namespaces alike.

LangGraph's `BaseStore` checks labels before it builds the batch, and raises its own
`InvalidNamespaceError` (or a bare `TypeError` for a namespace that is not a tuple). Here
each call builds its op as LangGraph does (a key given as an int or a UUID becomes text, the
TTL and TTL refresh come from the TTL config, a search prefix may be a list) and sends it
straight to `batch`, whose validation (`ops.validate_op`) checks every argument before any
I/O: a bad one raises the package's typed error naming the argument and the fix
(`InvalidNamespace` is LangGraph's `InvalidNamespaceError` too). The ids of a typed namespace
may hold "." (`user:alice@example.com`; stored reversibly, see `namespaces.encode_namespace`).
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

from langgraph_typed_memory.store.core.ops import key_argument, prefix_argument

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
        return cast(Item | None, self.batch([self._get_op(namespace, key, refresh_ttl)])[0])

    async def aget(self, namespace: tuple[str, ...], key: str, *,
                   refresh_ttl: bool | None = None) -> Item | None:
        """Async `get`."""
        op = self._get_op(namespace, key, refresh_ttl)
        return cast(Item | None, (await self.abatch([op]))[0])

    def search(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
               filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
               refresh_ttl: bool | None = None) -> list[SearchItem]:
        """Search a namespace prefix (a tuple, or a list as LangGraph's SQL stores take it);
        see LangGraph's `BaseStore.search`.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     ns = ("tenant:acme.io", "user:alice@example.com", "preference")
            ...     store.put(ns, "tone", {"value": "terse"})
            ...     print([item.value["value"] for item in store.search(ns)])
            ['terse']
        """
        op = self._search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl)
        return cast(list[SearchItem], self.batch([op])[0])

    async def asearch(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
                      filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
                      refresh_ttl: bool | None = None) -> list[SearchItem]:
        """Async `search`."""
        op = self._search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl)
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
        self.batch([self._put_op(namespace, key, value, index, ttl)])

    async def aput(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
                   index: Literal[False] | list[str] | None = None, *,
                   ttl: float | None | NotProvided = NOT_PROVIDED) -> None:
        """Async `put`."""
        await self.abatch([self._put_op(namespace, key, value, index, ttl)])

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
        self.batch([PutOp(namespace, key_argument(key), None, ttl=None)])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Async `delete`."""
        await self.abatch([PutOp(namespace, key_argument(key), None, ttl=None)])

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
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        return cast(list[tuple[str, ...]], self.batch([op])[0])

    async def alist_namespaces(self, *, prefix: NamespacePath | None = None,
                               suffix: NamespacePath | None = None,
                               max_depth: int | None = None, limit: int = 100,
                               offset: int = 0) -> list[tuple[str, ...]]:
        """Async `list_namespaces`."""
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        return cast(list[tuple[str, ...]], (await self.abatch([op]))[0])

    def _get_op(self, namespace: Any, key: Any, refresh_ttl: Any) -> GetOp:
        return GetOp(namespace, key_argument(key), self._refresh(refresh_ttl))

    def _search_op(self, namespace_prefix: Any, query: Any, filter: Any, limit: Any,
                   offset: Any, refresh_ttl: Any) -> SearchOp:
        return SearchOp(prefix_argument(namespace_prefix), filter, limit, offset, query,
                        self._refresh(refresh_ttl))

    def _put_op(self, namespace: Any, key: Any, value: Any, index: Any, ttl: Any) -> PutOp:
        return PutOp(namespace, key_argument(key), value, index=index, ttl=self._ttl(ttl))

    def _refresh(self, refresh_ttl: bool | None) -> bool:
        """Whether a read refreshes TTLs, as LangGraph decides it (a value that is not a
        bool is left for validation to refuse)."""
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
    """LangGraph's `list_namespaces` op; an empty prefix or suffix matches every namespace,
    as LangGraph reads it, and anything but None is left for validation to check."""
    conditions = []
    for match_type, path in (("prefix", prefix), ("suffix", suffix)):
        if path is None or (isinstance(path, (tuple, list)) and not path):
            continue
        conditions.append(MatchCondition(match_type=match_type, path=path))  # type: ignore[arg-type]
    return ListNamespacesOp(tuple(conditions), max_depth, limit, offset)
