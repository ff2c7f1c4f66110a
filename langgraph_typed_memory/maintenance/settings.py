"""Maintenance configuration, declared once: each field with its default and its check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from langgraph_typed_memory.config import UNIT, Options, number, option
from langgraph_typed_memory.errors import ConfigurationError

__all__ = ["MaintenanceConfig", "normalize_maintenance"]

_DURATION = number(0, 1e6, "use a non-negative number")


@dataclass(frozen=True, slots=True)
class MaintenanceConfig(Options):
    """How `store.maintain` compacts, detects and promotes (pass a dict with these keys, or
    this class).

    Example:
        >>> normalize_maintenance({"tier1_after_days": 14}).tier1_after_days
        14.0
    """

    what: ClassVar[str] = "maintenance"
    session_idle_minutes: float = option(60.0, _DURATION)
    """A session (the raw episodes of one run) is finished, and summarized, once its newest
    episode is this old. Default 60."""
    tier1_after_days: float = option(30.0, _DURATION)
    """Raw episodes older than this are grouped by ISO week into tier-1 episodes. Default 30."""
    tier2_after_days: float = option(90.0, _DURATION)
    """Tier-1 episodes older than this are grouped by month into tier-2 episodes. Default 90."""
    summary_tokens: int = option(300, number(20, 8000, integer=True))
    """Token budget of an extractive compaction summary. Default 300."""
    min_occurrences: int = option(3, number(2, 1000, integer=True))
    """Distinct sessions a pattern needs before it becomes an observation. Default 3."""
    max_new_observations: int = option(3, number(0, 1000, integer=True))
    """New observations written per scope per run, at most. Default 3."""
    detection_lookback_days: float = option(30.0, _DURATION)
    """Records older than this are not read by the detector. Default 30."""
    promotion_delay_hours: float = option(48.0, _DURATION)
    """An observation becomes a procedure this long after its detection, unless rejected or
    dismissed meanwhile ("correct" feedback promotes at once). Default 48."""
    promotion_confidence: float = option(0.8, UNIT)
    """Confidence at or above which an observation is a promotion candidate. Default 0.8."""
    feedback_boost: float = option(0.2, UNIT)
    """How much "correct" feedback raises an observation's confidence. Default 0.2."""

    def _check_together(self) -> None:
        """Monthly groups come after weekly ones."""
        if self.tier2_after_days < self.tier1_after_days:
            raise ConfigurationError(
                f"maintenance config tier2_after_days={self.tier2_after_days} is below "
                f"tier1_after_days={self.tier1_after_days}; monthly groups come after weekly "
                "ones.")


def normalize_maintenance(config: MaintenanceConfig | Mapping[str, Any] | None
                          ) -> MaintenanceConfig:
    """A maintenance configuration from what an app passed (`MaintenanceConfig.of`).

    Raises:
        ConfigurationError: an unknown key or an out-of-range value, named.

    Example:
        >>> normalize_maintenance({"tier1_after_days": 14}).tier1_after_days
        14.0
    """
    return MaintenanceConfig.of(config)
