"""What typed reads return: LangGraph items carrying the memory's metadata.

`MemoryItem` is a `SearchItem` (so also an `Item`): code written for LangGraph's stores reads
`value`, `key`, `namespace`, `score` as usual, and memory-aware code reads `item.memory`
(id, kind, scope, status, confidence, provenance, and for ranked results the relevance tier
and the retrieval mode). `SearchResults` is a plain list with the mode of the whole search.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from functools import lru_cache
from typing import Any

from langgraph.store.base import Item, SearchItem

__all__ = ["MemoryItem", "SearchResults", "iso_text"]


class MemoryItem(SearchItem):
    """An item of typed memory.

    Example:
        >>> from datetime import datetime, UTC
        >>> now = datetime.now(UTC)
        >>> item = MemoryItem(("tenant:acme", "fact"), "k", {"content": "x"}, now, now,
        ...                   memory={"status": "active", "tier": "high"})
        >>> item.memory["tier"], item.dict()["memory"]["status"]
        ('high', 'active')
    """

    __slots__ = ("memory",)

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime,
        updated_at: datetime,
        score: float | None = None,
        *,
        memory: dict[str, Any],
    ) -> None:
        super().__init__(namespace, key, value, created_at, updated_at, score)
        self.memory = memory

    @property
    def status(self) -> str | None:
        """The computed lifecycle status."""
        return self.memory.get("status")

    @property
    def tier(self) -> str | None:
        """Relevance tier (high, standard, low) of a ranked result."""
        return self.memory.get("tier")

    def dict(self) -> dict[str, Any]:
        """JSON-ready form (LangGraph's `SearchItem.dict()`), with the memory metadata under
        `memory`."""
        return {"namespace": list(self.namespace), "key": self.key, "value": self.value,
                "created_at": iso_text(self.created_at),
                "updated_at": iso_text(self.updated_at),
                "score": self.score,
                "memory": dict(self.memory)}


def iso_text(moment: datetime) -> str:
    """`moment.isoformat()`, remembered: the records a user's searches return come back turn
    after turn, with the same times.

    Example:
        >>> from datetime import UTC
        >>> iso_text(datetime(2026, 1, 1, tzinfo=UTC))
        '2026-01-01T00:00:00+00:00'
    """
    return _isoformat(moment, moment.tzinfo)


@lru_cache(maxsize=16384)
def _isoformat(moment: datetime, zone: Any) -> str:
    """`zone` is `moment`'s `tzinfo`: one instant in two zones is one key to a datetime, and
    two texts."""
    return moment.isoformat()


class SearchResults(list[Item]):
    """A list of search results that also says how they were found.

    Attributes:
        retrieval_mode: ``exact`` (known-scope lookup), ``list`` (no query), ``hybrid``, ``vector``,
            ``lexical`` or ``like`` (the fallback cascade, best to last resort); a ranked
            mode ends in ``+database`` where a scope too large for the search caches was
            ranked by the database (Postgres), ``+sketch`` where it was ranked by its
            vectors' sign bits and the nearest rescored exactly (docs/large-scopes.md).
        degraded: why a component was skipped (embedder failure...), empty when none was.
        version: of a ``newest`` listing, what a later listing of the namespace passes as
            ``filter={"$newest": True, "$if_changed": version}`` to get nothing back (mode
            ``unchanged``) while the namespace's records are as they were; None otherwise.

    Example:
        >>> SearchResults([], retrieval_mode="lexical").retrieval_mode
        'lexical'
    """

    def __init__(
        self, items: Iterable[Item] = (), *, retrieval_mode: str, degraded: list[str] | None = None,
        version: str | None = None,
    ) -> None:
        super().__init__(items)
        self.retrieval_mode = retrieval_mode
        self.degraded = list(degraded or [])
        self.version = version
