"""The agent tools (J3): scope from the run, proposals through the gate."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from langgraph_typed_memory.tools import create_propose_memory_tool, create_search_memory_tool

ALICE = {"configurable": {"tenant_id": "acme", "user_id": "alice", "run_id": "r1"}}
BOB = {"configurable": {"tenant_id": "acme", "user_id": "bob", "run_id": "r2"}}
LYON = {"kind": "fact", "subject": "user", "predicate": "home_city", "value": "Lyon",
        "content": "The user lives in Lyon.", "confidence": 0.9, "grounding": "I live in Lyon"}


def test_propose_then_search_in_the_callers_scope(store):
    propose, search = create_propose_memory_tool(store), create_search_memory_tool(store)
    assert propose.invoke(LYON, ALICE).startswith("written: fact")
    assert propose.invoke(LYON, ALICE).startswith("deduplicated")
    assert "Lyon" in search.invoke({"query": "where does the user live"}, ALICE)
    assert search.invoke({"query": "where does the user live"}, BOB) == "No memory found."


def test_gate_rejections_are_reported_to_the_model(store):
    propose = create_propose_memory_tool(store)
    weak = propose.invoke({**LYON, "confidence": 0.3}, ALICE)
    assert weak.startswith("rejected") and "threshold" in weak


@pytest.mark.parametrize("extra", [{"status": "active"}, {"user_id": "bob"},
                                   {"tenant_id": "other"}, {"scope": "tenant"}])
def test_a_tool_call_cannot_set_status_or_scope(store, extra):
    with pytest.raises(ValidationError):
        create_propose_memory_tool(store).invoke({**LYON, **extra}, ALICE)


async def test_async_tools(store):
    propose, search = create_propose_memory_tool(store), create_search_memory_tool(store)
    assert (await propose.ainvoke(LYON, ALICE)).startswith("written")
    listed = await search.ainvoke({"query": "", "kind": "preference"}, ALICE)
    assert listed == "No memory found."
