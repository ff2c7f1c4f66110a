"""The rows maintenance reads, as plain values its pure decisions work on."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["MemoryRow"]


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """One typed record as maintenance sees it.

    Example:
        >>> row = MemoryRow(1, "id1", "tenant:acme.user:alice.episode", "e1", "episode",
        ...                 "acme", "alice", None, "active", {"title": "t", "summary": "s"},
        ...                 1.0, 0.0)
        >>> row.tier, row.when.year
        (0, 1970)
    """

    seq: int
    id: str
    ns: str
    key: str
    kind: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    status: str
    value: dict[str, Any]
    confidence: float
    time: float
    """When the remembered thing happened (occurred_at, else created_at), epoch seconds."""
    created_at: float = 0.0
    source_run_id: str | None = None
    repetitions: int = 1
    evidence: list[Any] = field(default_factory=list)

    @property
    def when(self) -> datetime:
        """`time` as an aware UTC datetime."""
        return datetime.fromtimestamp(self.time, tz=UTC)

    @property
    def tier(self) -> int:
        """An episode's compaction tier (0 raw, 1 weekly, 2 monthly)."""
        return int(self.value.get("compaction_tier") or 0)

    @property
    def scope(self) -> tuple[str, str | None, str | None]:
        return (self.tenant_id, self.user_id, self.agent_id)
