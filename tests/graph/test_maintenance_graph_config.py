"""The maintenance graph reads the run's `configurable`: `tenant_id` and `memory_model`.

Run with `{}` as input and the tenant in `configurable` (as a LangGraph cron or SDK run
configures it), maintenance covers that tenant only, and the configured model writes the
compaction summaries.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.maintenance import create_memory_maintenance_graph
from langgraph_typed_memory.nodes._common import MODEL_ENV
from langgraph_typed_memory.store.sqlite.store import connect_sqlite
from tests.conftest import FakeClock, hash_index
from tests.fake_models import ScriptedChatModel

ACME = ("tenant:acme", "user:alice", "episode")
GLOBEX = ("tenant:globex", "episode")


def two_tenants(clock: FakeClock) -> SqliteMemoryStore:
    """A store with one old episode in each of two tenants: both due for compaction."""
    store = SqliteMemoryStore(connect_sqlite(":memory:"), index=hash_index(), clock=clock)
    store.setup()
    when = (clock.now - timedelta(days=40)).isoformat()
    for ns, name in ((ACME, "Acme"), (GLOBEX, "Globex")):
        store.put(ns, "e", {"title": name, "summary": f"{name} work.", "occurred_at": when})
    return store


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_tenant_and_model_from_configurable(clock, monkeypatch, use_async):
    monkeypatch.delenv(MODEL_ENV, raising=False)
    store = two_tenants(clock)
    model = ScriptedChatModel.of("Acme work, summarized by the configured model.")
    config: dict[str, Any] = {"configurable": {"tenant_id": "acme", "memory_model": model}}
    graph = create_memory_maintenance_graph(store)
    if use_async:
        out = asyncio.run(graph.ainvoke({}, config))
    else:
        out = graph.invoke({}, config)
    assert out["tenant_id"] == "acme" and out["report"]["tenant_id"] == "acme"
    assert out["report"]["steps"][0]["counts"]["weekly_groups"] == 1
    assert store.get(ACME, "e").memory["status"] == "compacted"
    assert store.get(GLOBEX, "e").memory["status"] == "active"
    [weekly] = [item for item in store.search(ACME, limit=10) if item.key != "e"]
    assert weekly.value["summary"] == "Acme work, summarized by the configured model."
