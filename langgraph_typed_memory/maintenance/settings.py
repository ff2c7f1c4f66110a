"""Maintenance configuration: keys defined once, validated by one normalizer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from langgraph_typed_memory.config import check_number, reject_unknown_keys
from langgraph_typed_memory.errors import ConfigurationError

__all__ = ["MaintenanceConfig", "MaintenanceSettings", "normalize_maintenance"]


class MaintenanceConfig(TypedDict, total=False):
    """How `store.maintain` compacts, detects and promotes.

    Example:
        >>> normalize_maintenance({"tier1_after_days": 14}).tier1_after_days
        14.0
    """

    session_idle_minutes: float
    """A session (the raw episodes of one run) is finished, and summarized, once its newest
    episode is this old. Default 60."""
    tier1_after_days: float
    """Raw episodes older than this are grouped by ISO week into tier-1 episodes. Default 30."""
    tier2_after_days: float
    """Tier-1 episodes older than this are grouped by month into tier-2 episodes. Default 90."""
    summary_tokens: int
    """Token budget of an extractive compaction summary. Default 300."""
    min_occurrences: int
    """Distinct sessions a pattern needs before it becomes an observation. Default 3."""
    max_new_observations: int
    """New observations written per scope per run, at most. Default 3."""
    detection_lookback_days: float
    """Records older than this are not read by the detector. Default 30."""
    promotion_delay_hours: float
    """An observation becomes a procedure this long after its detection, unless rejected or
    dismissed meanwhile ("correct" feedback promotes at once). Default 48."""
    promotion_confidence: float
    """Confidence at or above which an observation is a promotion candidate. Default 0.8."""
    feedback_boost: float
    """How much "correct" feedback raises an observation's confidence. Default 0.2."""


@dataclass(frozen=True, slots=True)
class MaintenanceSettings:
    """Validated `MaintenanceConfig` with defaults filled."""

    session_idle_minutes: float = 60.0
    tier1_after_days: float = 30.0
    tier2_after_days: float = 90.0
    summary_tokens: int = 300
    min_occurrences: int = 3
    max_new_observations: int = 3
    detection_lookback_days: float = 30.0
    promotion_delay_hours: float = 48.0
    promotion_confidence: float = 0.8
    feedback_boost: float = 0.2


_COUNTS = {"summary_tokens": (20, 8000), "min_occurrences": (2, 1000),
           "max_new_observations": (0, 1000)}
_DURATIONS = ("session_idle_minutes", "tier1_after_days", "tier2_after_days",
              "detection_lookback_days", "promotion_delay_hours")
_UNITS = ("promotion_confidence", "feedback_boost")


def normalize_maintenance(
    config: MaintenanceConfig | Mapping[str, Any] | None,
) -> MaintenanceSettings:
    """Validate a maintenance config and fill defaults.

    Raises:
        ConfigurationError: an unknown key or an out-of-range value, named.

    Example:
        >>> normalize_maintenance({"tier1_after_days": 14}).tier1_after_days
        14.0
    """
    config = dict(config or {})
    reject_unknown_keys("maintenance", config, MaintenanceConfig.__annotations__)
    out: dict[str, Any] = {}
    ranges = {**{n: (low, high, f"use an int in [{low}, {high}]", True)
                 for n, (low, high) in _COUNTS.items()},
              **{n: (0, 1e6, "use a non-negative number", False) for n in _DURATIONS},
              **{n: (0, 1, "use a number in [0, 1]", False) for n in _UNITS}}
    for name, (low, high, fix, integer) in ranges.items():
        if name in config:
            out[name] = check_number(f"maintenance config {name}", config[name], low, high, fix,
                                     integer=integer)
    settings = MaintenanceSettings(**out)
    if settings.tier2_after_days < settings.tier1_after_days:
        raise ConfigurationError(
            f"maintenance config tier2_after_days={settings.tier2_after_days} is below "
            f"tier1_after_days={settings.tier1_after_days}; monthly groups come after weekly ones.")
    return settings
