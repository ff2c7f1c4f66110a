"""Memory maintenance: compaction, consolidation, the observation engine, feedback.

`store.maintain()` runs the steps in their fixed order (`STEPS`) and returns a
`MaintenanceReport`; `create_memory_maintenance_graph()` is the same as a LangGraph graph
(graph id `memory_maintenance`, schedulable with LangGraph cron); `store.feedback()` applies a
verdict to an observation or a procedure. The decisions are pure functions in this package;
the store plans that execute them live in `langgraph_typed_memory.maintenance.plans`.
"""

from langgraph_typed_memory.errors import InvalidVerdict, UnknownMemory
from langgraph_typed_memory.maintenance.feedback import VERDICTS, FeedbackResult, Verdict
from langgraph_typed_memory.maintenance.graph import create_memory_maintenance_graph
from langgraph_typed_memory.maintenance.patterns import Detector, detect_patterns, model_detector
from langgraph_typed_memory.maintenance.report import (
    STEPS,
    MaintenanceReport,
    Progress,
    StepReport,
)
from langgraph_typed_memory.maintenance.settings import MaintenanceConfig, normalize_maintenance

__all__ = [
    "STEPS",
    "MaintenanceConfig",
    "normalize_maintenance",
    "MaintenanceReport",
    "StepReport",
    "Progress",
    "create_memory_maintenance_graph",
    "Detector",
    "detect_patterns",
    "model_detector",
    "Verdict",
    "VERDICTS",
    "FeedbackResult",
    "InvalidVerdict",
    "UnknownMemory",
]
