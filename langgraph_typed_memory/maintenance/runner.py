"""Running maintenance on a store: the six maintenance steps, in their fixed order.

Each step reads what it needs, decides with the pure functions of this package, and writes
through the store's plans (`maintenance/plans.py`), one short transaction per group, merge,
observation or promotion: a chat graph serving on the same database waits milliseconds at
most. Every step is idempotent: a second run right after the first changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from langgraph_typed_memory.maintenance import plans
from langgraph_typed_memory.maintenance.compaction import (
    CompactionGroup,
    extractive_group_summary,
    monthly_groups,
    session_groups,
    weekly_groups,
)
from langgraph_typed_memory.maintenance.consolidation import (
    CONSOLIDATED_KINDS,
    duplicate_clusters,
)
from langgraph_typed_memory.maintenance.patterns import (
    Detector,
    detect_patterns,
    evidence_from_rows,
    model_detector,
    promotion_due,
    select_new,
)
from langgraph_typed_memory.maintenance.report import (
    STEPS,
    MaintenanceReport,
    Progress,
    StepReport,
)
from langgraph_typed_memory.maintenance.settings import (
    MaintenanceConfig,
    normalize_maintenance,
)
from langgraph_typed_memory.store.core.protocol import Plan
from langgraph_typed_memory.store.core.retry import PlanSource, is_retryable

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from langgraph_typed_memory.store.core.records import Records

__all__ = ["PlanHost", "run_maintenance", "run_step", "COMPACTION_PROMPT"]

COMPACTION_PROMPT = (
    "Summarize these episodes of one user's past work into a few short factual sentences, "
    "oldest first: what was done, decided and left open. Keep names, numbers and ids. "
    "No preamble."
)


@runtime_checkable
class PlanHost(Protocol):
    """What maintenance needs of a store: its records (to build plans on) and a way to run
    plans on its connection. Every memory store is one."""

    @property
    def records(self) -> Records: ...

    def run_plan(self, plan: PlanSource[Any], *, after_access_flush: bool = False) -> Any: ...


@dataclass(slots=True)
class _Run:
    """What every step needs: the store's records, a way to run plans, and the options."""

    records: Records
    execute: Callable[[PlanSource[Any]], Any]
    """Runs a plan, or a plan factory (rebuilt and retried when the database asks)."""
    settings: MaintenanceConfig
    tenant_id: str | None
    model: BaseChatModel | None
    progress: Progress | None
    step: StepReport = field(default_factory=lambda: StepReport(""))

    def tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(self.step.name, done, total)

    def tenant(self, where: str, params: list[Any]) -> tuple[str, list[Any]]:
        if self.tenant_id is None:
            return where, params
        return f"{where} AND m.tenant_id = ?", [*params, self.tenant_id]

    @property
    def now(self) -> float:
        return self.records.clock().timestamp()

    def write(self, plan: Plan[Any]) -> Any:
        """Run a write plan; a concurrent change (seen by the plan, or a writer the database
        made this transaction yield to, rolled back) skips it (counted) until the next run."""
        try:
            return self.execute(plan)
        except Exception as exc:
            if not isinstance(exc, plans.ConcurrentChange) and not is_retryable(exc):
                raise
            self.step.add("skipped_concurrent_change")
            return None


def _summarizer(run: _Run) -> Callable[[CompactionGroup], str]:
    limit = run.settings.summary_tokens
    if run.model is None:
        return lambda group: extractive_group_summary(group, limit)
    from langchain_core.messages import HumanMessage, SystemMessage

    from langgraph_typed_memory.turns import message_text

    chat = run.model

    def summarize(group: CompactionGroup) -> str:
        lines = "\n".join(f"- {r.when.date()}: {r.value.get('title', '')}: "
                          f"{r.value.get('summary', '')}" for r in group.sources)
        try:
            text = message_text(chat.invoke([SystemMessage(COMPACTION_PROMPT),
                                             HumanMessage(lines)])).strip()
            if text:
                return text
        except Exception as exc:  # model failed: the extractive summary still compacts
            note = f"summary model failed, extractive summary used: {exc!r:.120}"
            if note not in run.step.notes:
                run.step.notes.append(note)
        return extractive_group_summary(group, limit)

    return summarize


def _compaction(run: _Run) -> None:
    where, params = run.tenant("m.kind = 'episode' AND m.status = 'active' "
                               "AND m.expires_at IS NULL", [])
    summarize = _summarizer(run)
    done = 0
    for phase, grouper in (("session", session_groups), ("weekly", weekly_groups),
                           ("monthly", monthly_groups)):
        rows = run.execute(plans.rows_plan(run.records, where, params))
        groups = grouper(rows, run.now, run.settings)
        total = done + len(groups)
        for group in groups:
            written = run.write(plans.compact_plan(run.records, group, summarize(group)))
            done += 1
            run.tick(done, total)
            if written is None:
                continue
            run.step.add(f"{phase}_groups")
            run.step.add("episodes_compacted", len(group.sources))
            if written[1] and written[1] not in run.step.notes:
                run.step.notes.append(written[1])


def _consolidation(run: _Run) -> None:
    kinds = ", ".join(f"'{k}'" for k in CONSOLIDATED_KINDS)
    where, params = run.tenant(f"m.kind IN ({kinds}) AND m.status = 'active' "
                               "AND m.expires_at IS NULL", [])
    clusters = duplicate_clusters(run.execute(plans.rows_plan(run.records, where, params)))
    for i, (survivor, merged) in enumerate(clusters, 1):
        if run.write(plans.merge_plan(run.records, survivor, merged)):
            run.step.add("clusters")
            run.step.add("records_merged", len(merged))
        run.tick(i, len(clusters))


def _detector(run: _Run) -> tuple[Detector, str]:
    if run.model is None:
        return detect_patterns, "rules"
    return model_detector(run.model), "model"


def _detection(run: _Run) -> None:
    since = run.now - run.settings.detection_lookback_days * 86400.0
    sources = ("m.kind IN ('episode', 'fact', 'preference') "
               "AND m.status IN ('active', 'compacted') "
               "AND COALESCE(m.occurred_at, m.created_at) >= ?")
    where, params = run.tenant(sources, [since])
    scopes = run.execute(plans.scopes_plan(run.records, where, params))
    detector, name = _detector(run)
    for i, scope in enumerate(scopes, 1):
        scope_where, scope_params = plans.scope_sql(scope)
        rows = run.execute(plans.rows_plan(run.records, f"{scope_where} AND {sources}",
                                           [*scope_params, since]))
        patterns = detector(evidence_from_rows(rows), run.settings.min_occurrences)
        known = run.execute(plans.rows_plan(
            run.records, f"{scope_where} AND m.kind = 'observation' "
            "AND m.status NOT IN ('superseded', 'revoked')", scope_params))
        by_key = {r.key: r for r in known}
        new, again = select_new(patterns, {k: r.status for k, r in by_key.items()},
                                run.settings.max_new_observations)
        for pattern in new:
            written = run.write(plans.observe_plan(run.records, scope, pattern, run.settings,
                                                   name))
            if written and written[0]:
                run.step.add("observations_new")
                if written[1] and written[1] not in run.step.notes:
                    run.step.notes.append(written[1])
        for pattern in again:
            if run.write(plans.redetect_plan(run.records, by_key[pattern.key], pattern,
                                             run.settings)):
                run.step.add("observations_updated")
        run.tick(i, len(scopes))


def _promotion(run: _Run) -> None:
    where, params = run.tenant("m.kind = 'observation' AND m.status = 'active'", [])
    rows = run.execute(plans.rows_plan(run.records, where, params))
    now, delay = run.now, run.settings.promotion_delay_hours
    due = [r for r in rows if promotion_due(r.value, r.status, r.created_at, now,
                                            delay_hours=delay)]
    waiting = sum(1 for r in rows if r.value.get("promotion_candidate")
                  and r.value.get("feedback") is None and r not in due)
    if waiting:
        run.step.add("skipped_waiting_for_feedback_window", waiting)
    for i, row in enumerate(due, 1):
        if run.write(plans.promote_plan(run.records, row, run.settings)):
            run.step.add("procedures_promoted")
        run.tick(i, len(due))


def _sweeps(run: _Run) -> None:
    from langgraph_typed_memory.store.governance import sweeps

    if run.tenant_id is not None:
        run.step.notes.append("the lifecycle sweeps cover every tenant")
    # Factories, not plans: a sweep that meets a concurrent writer (a serialization failure)
    # is rebuilt and retried, as `store.sweep()`'s is.
    fresh = run.execute(partial(sweeps.freshness_plan, run.records))
    run.step.add("expired", fresh.total)
    run.tick(1, 4)
    run.step.add("gc_forgotten", run.execute(partial(sweeps.gc_plan, run.records)).total)
    run.tick(2, 4)
    retention = run.execute(partial(sweeps.retention_plan, run.records))
    run.step.add("retention_forgotten", retention.total)
    for name, n in retention.unknown_classes.items():
        run.step.notes.append(f"{n} record(s) name the unknown retention class {name!r}: kept")
    run.tick(3, 4)
    run.step.add("ttl_deleted", int(run.execute(partial(sweeps.ttl_plan, run.records))))
    run.tick(4, 4)


_STEP_FUNCTIONS: Mapping[str, Callable[[_Run], None]] = {
    "compaction": _compaction,
    "consolidation": _consolidation,
    "detection": _detection,
    "promotion": _promotion,
    "sweeps": _sweeps,
}


def run_step(
    store: PlanHost,
    name: str,
    *,
    tenant_id: str | None = None,
    model: BaseChatModel | None = None,
    progress: Progress | None = None,
    config: MaintenanceConfig | Mapping[str, Any] | None = None,
) -> StepReport:
    """Run one maintenance step (`STEPS`) on a memory store; returns its report.

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore
        >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
        ...     store.setup()
        ...     run_step(store, "sweeps").counts
        {'expired': 0, 'gc_forgotten': 0, 'retention_forgotten': 0, 'ttl_deleted': 0}
    """
    if name not in _STEP_FUNCTIONS:
        from langgraph_typed_memory.errors import ConfigurationError

        raise ConfigurationError(f"unknown maintenance step {name!r}; steps: {list(STEPS)}.")
    settings = normalize_maintenance(config)
    # The sweeps read access counts: a background flush under way lands first (as in sweep()).
    execute = partial(store.run_plan, after_access_flush=name == "sweeps")
    run = _Run(store.records, execute, settings, tenant_id, model, progress, StepReport(name))
    started = time.perf_counter()
    _STEP_FUNCTIONS[name](run)
    run.step.seconds = time.perf_counter() - started
    return run.step


def run_maintenance(
    store: PlanHost,
    *,
    tenant_id: str | None = None,
    model: BaseChatModel | None = None,
    progress: Progress | None = None,
    config: MaintenanceConfig | Mapping[str, Any] | None = None,
) -> MaintenanceReport:
    """Run every step in the fixed order (`STEPS`); see `store.maintain`."""
    settings = normalize_maintenance(config)
    report = MaintenanceReport(tenant_id)
    for name in STEPS:
        report.steps.append(run_step(store, name, tenant_id=tenant_id, model=model,
                                     progress=progress, config=settings))
    return report
