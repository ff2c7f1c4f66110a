"""What a maintenance run did, step by step."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["STEPS", "StepReport", "MaintenanceReport", "Progress"]

STEPS = ("compaction", "consolidation", "detection", "promotion", "sweeps")
"""The fixed order of a maintenance run."""

Progress = Callable[[str, int, int], None]
"""`(step, done, total) -> None`, called as a step advances (a CLI renders a bar)."""


@dataclass(slots=True)
class StepReport:
    """One step's counts (what it changed) and notes (what it skipped, and why).

    Example:
        >>> step = StepReport("compaction")
        >>> step.add("weekly_groups", 2)
        >>> step.counts, step.changed
        ({'weekly_groups': 2}, 2)
    """

    name: str
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, name: str, n: int = 1) -> None:
        """Count `n` more of `name`.

        Example:
            >>> step = StepReport("sweeps")
            >>> step.add("expired"); step.add("expired")
            >>> step.counts
            {'expired': 2}
        """
        self.counts[name] = self.counts.get(name, 0) + n

    @property
    def changed(self) -> int:
        """How many records this step wrote or deleted (skips are not counted)."""
        return sum(n for k, n in self.counts.items() if not k.startswith("skipped"))

    def dict(self) -> dict[str, Any]:
        return {"name": self.name, "counts": dict(self.counts), "notes": list(self.notes),
                "seconds": round(self.seconds, 4)}


@dataclass(slots=True)
class MaintenanceReport:
    """The report of `store.maintain()`: one `StepReport` per step, in the order run.

    Example:
        >>> report = MaintenanceReport(tenant_id=None)
        >>> report.steps.append(StepReport("compaction", {"weekly_groups": 2}))
        >>> report.step("compaction").counts, report.changed
        ({'weekly_groups': 2}, 2)
    """

    tenant_id: str | None
    steps: list[StepReport] = field(default_factory=list)

    def step(self, name: str) -> StepReport:
        """The report of step `name`.

        Example:
            >>> from langgraph_typed_memory import SqliteMemoryStore
            >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     report = store.maintain()
            >>> [s.name for s in report.steps][:2], report.step("sweeps").changed
            (['compaction', 'consolidation'], 0)
        """
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(f"no step {name!r} in this report; steps: {[s.name for s in self.steps]}")

    @property
    def changed(self) -> int:
        """Records written or deleted by the whole run: 0 when there was nothing to do."""
        return sum(s.changed for s in self.steps)

    def dict(self) -> dict[str, Any]:
        """JSON-ready form (the maintenance graph's state carries it)."""
        return {"tenant_id": self.tenant_id, "steps": [s.dict() for s in self.steps]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MaintenanceReport:
        """Rebuild a report from `dict()`."""
        return cls(data.get("tenant_id"), [
            StepReport(s["name"], dict(s["counts"]), list(s["notes"]), s.get("seconds", 0.0))
            for s in data.get("steps", [])])

    def __str__(self) -> str:
        lines = []
        for s in self.steps:
            counts = ", ".join(f"{k}={v}" for k, v in s.counts.items()) or "nothing to do"
            lines.append(f"{s.name}: {counts}" + (f" ({'; '.join(s.notes)})" if s.notes else ""))
        return "\n".join(lines)
