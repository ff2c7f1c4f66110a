"""The agent tools: scope from the run, proposals through the gate, one schema per kind."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import ValidationError

from langgraph_typed_memory import ConfigurationError
from langgraph_typed_memory.tools import (
    create_memory_tools,
    create_propose_fact_tool,
    create_propose_memory_tool,
    create_propose_preference_tool,
    create_search_memory_tool,
)

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


@pytest.mark.parametrize("tool", [create_propose_memory_tool, create_propose_preference_tool])
def test_a_tool_call_naming_no_user_writes_nothing_tenant_wide(store, tool):
    """A run with no user, agent or thread would write for the whole tenant, which every
    user is shown: the tool refuses, as the promote node does."""
    args = LYON if tool is create_propose_memory_tool else {**TERSE, "key": "tone"}
    with pytest.raises(ConfigurationError, match="names none"):
        tool(store).invoke(args, {"configurable": {"tenant_id": "acme"}})
    assert store.list_namespaces(prefix=("tenant:acme",)) == []


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


# One tool per kind: the JSON schema the model receives requires what the gate needs.

FACT = {k: v for k, v in LYON.items() if k != "kind"}
TERSE = {"key": "tone", "value": "terse", "content": "The user wants terse answers.",
         "confidence": 0.9}


@pytest.mark.parametrize(("factory", "required"), [
    (create_propose_fact_tool, ["subject", "predicate", "content"]),
    (create_propose_preference_tool, ["key", "value", "content"]),
])
def test_each_kinds_schema_requires_what_the_gate_needs(factory, required):
    tool = factory()
    assert tool.tool_call_schema.model_json_schema()["required"] == required
    parameters = convert_to_openai_tool(tool)["function"]["parameters"]
    assert parameters["required"] == required
    assert not {"kind", "status", "scope", "tenant_id", "user_id"} & set(parameters["properties"])


def test_a_fact_missing_its_subject_is_refused_before_the_gate():
    with pytest.raises(ValidationError, match="subject"):
        create_propose_fact_tool().invoke({k: v for k, v in FACT.items() if k != "subject"},
                                          ALICE)


def test_valid_calls_to_the_per_kind_tools_write(store):
    fact, preference = create_propose_fact_tool(store), create_propose_preference_tool(store)
    assert fact.invoke(FACT, ALICE) == "written: fact 'fact:user:home_city' (new memory)"
    assert preference.invoke(TERSE, ALICE) == "written: preference 'tone' (new memory)"
    [found] = store.search(("tenant:acme", "user:alice", "fact"), query="Lyon")
    assert found.value["subject"] == "user" and found.value["predicate"] == "home_city"
    assert store.search(("tenant:acme", "user:alice", "preference"))[0].value["value"] == "terse"
    assert not store.search(("tenant:acme", "user:bob", "fact"), query="Lyon")


async def test_per_kind_tools_async(store):
    assert (await create_propose_fact_tool(store).ainvoke(FACT, ALICE)).startswith("written")


@pytest.mark.parametrize("extra", [{"kind": "preference"}, {"status": "active"},
                                   {"user_id": "bob"}, {"scope": "tenant"}])
def test_per_kind_tools_cannot_set_kind_status_or_scope(extra):
    with pytest.raises(ValidationError):
        create_propose_fact_tool().invoke({**FACT, **extra}, ALICE)


def test_memory_tools_in_a_tool_node_find_the_graphs_store(store):
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(create_memory_tools()))
    builder.add_edge(START, "tools")
    graph = builder.compile(store=store)
    calls = [{"name": "propose_fact", "args": FACT, "id": "c1"},
             {"name": "propose_preference", "args": TERSE, "id": "c2"}]
    out = graph.invoke({"messages": [AIMessage("", tool_calls=calls)]}, ALICE)
    assert [m.content.split(":")[0] for m in out["messages"][1:]] == ["written", "written"]
    search = [{"name": "search_memory", "args": {"query": "where does the user live"},
               "id": "c3"}]
    out = graph.invoke({"messages": [AIMessage("", tool_calls=search)]}, ALICE)
    assert "Lyon" in out["messages"][-1].content


def test_the_two_kind_tool_says_what_each_kind_needs():
    properties = convert_to_openai_tool(create_propose_memory_tool())["function"]["parameters"][
        "properties"]
    assert "Required for a fact" in properties["subject"]["description"]
    assert "Required for a fact" in properties["predicate"]["description"]
    assert "Required for a preference" in properties["key"]["description"]
