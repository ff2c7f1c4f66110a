"""The maintenance graph: one node per step, in the fixed order, the report in the state.

Graph id `memory_maintenance` (langgraph.json); schedule it with LangGraph cron
(docs/maintenance.md). The store comes from the factory argument or the graph's runtime, like
the chat graph's nodes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.maintenance.report import STEPS, MaintenanceReport
from langgraph_typed_memory.maintenance.runner import PlanHost, run_step
from langgraph_typed_memory.maintenance.settings import MaintenanceConfig, normalize_maintenance

__all__ = ["MaintenanceState", "create_memory_maintenance_graph"]


class MaintenanceState(TypedDict, total=False):
    """State of the maintenance graph."""

    tenant_id: str | None
    """Maintain one tenant (default: `configurable["tenant_id"]`, else every tenant)."""
    report: dict[str, Any]
    """`MaintenanceReport.dict()`: one entry per step run so far."""


def _step_node(name: str, store: BaseStore | None, model: BaseChatModel | str | None,
               settings: Any) -> RunnableLambda:
    from langgraph_typed_memory.nodes._common import resolve_model, resolve_store

    # `RunnableLambda` passes the run's config only to a parameter named `config`.
    def run(state: MaintenanceState, config: RunnableConfig | None = None) -> dict[str, Any]:
        target = resolve_store(store)
        if not isinstance(target, PlanHost):
            raise ConfigurationError(
                f"the maintenance graph needs a typed memory store, got "
                f"{type(target).__name__}; compile it with store=SqliteMemoryStore(...).")
        configurable = (config or {}).get("configurable") or {}
        tenant = state.get("tenant_id") or configurable.get("tenant_id")
        report = MaintenanceReport.from_dict(state.get("report") or {"tenant_id": tenant})
        report.steps.append(run_step(target, name, tenant_id=tenant,
                                     model=resolve_model(model, config), config=settings))
        return {"report": report.dict(), "tenant_id": tenant}

    async def arun(state: MaintenanceState, config: RunnableConfig | None = None
                   ) -> dict[str, Any]:
        return await asyncio.to_thread(run, state, config)  # the store's I/O, off the loop

    return RunnableLambda(run, afunc=arun, name=name)


def create_memory_maintenance_graph(
    store: BaseStore | None = None,
    /,
    *,
    model: BaseChatModel | str | None = None,
    config: MaintenanceConfig | Mapping[str, Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled maintenance graph: compaction -> consolidation -> detection ->
    promotion -> sweeps, each step in its own transactions.

    Args:
        store: The memory store; default: the graph's runtime store.
        model: A chat model (or `init_chat_model` string) that writes compaction summaries and
            detects patterns; default `configurable["memory_model"]`, `TYPED_MEMORY_MODEL`,
            else the offline extractive summary and deterministic detector.
        config: A `MaintenanceConfig` (windows, thresholds).

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> out = create_memory_maintenance_graph(store).invoke({"tenant_id": "acme"})
        >>> [step["name"] for step in out["report"]["steps"]]
        ['compaction', 'consolidation', 'detection', 'promotion', 'sweeps']
    """
    settings = normalize_maintenance(config)
    builder = StateGraph(MaintenanceState)
    previous = START
    for name in STEPS:
        builder.add_node(name, _step_node(name, store, model, settings))
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile(store=store, name="memory_maintenance")
