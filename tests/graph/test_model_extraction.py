"""With a chat model, one structured-output call per kept turn proposes its facts,
preferences, corrections, entities and relations, checked by the same grounding gates; the
rules are the fallback (a model error or an unusable answer is recorded), and the run
chooses (`extraction="model" | "rules" | "auto"`)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, StateGraph

from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.nodes import create_extract_node, create_promote_node
from langgraph_typed_memory.state import MemoryState
from tests.fake_models import FailingChatModel, ScriptedChatModel, tool_reply

ALICE = {"configurable": {"tenant_id": "acme", "user_id": "alice", "thread_id": "t1"}}
FIRST = "My sister Lena works at Volkswagen (VW). Please always answer in French."
LATER = "Actually Lena left, she is at Siemens now."


def answer(**parts: Any) -> AIMessage:
    return tool_reply("ExtractionResult", {"candidates": [], "entities": [], "relations": [],
                                           **parts})


FIRST_ANSWER = answer(
    candidates=[
        {"kind": "preference", "key": "language", "value": "French", "confidence": 0.9,
         "content": "The user wants answers in French.",
         "grounding": "Please always answer in French."},
        {"kind": "fact", "subject": "Lena", "predicate": "employer", "value": "Volkswagen",
         "stateful": True, "confidence": 0.9, "content": "Lena works at Volkswagen.",
         "grounding": "My sister Lena works at Volkswagen (VW)."},
        {"kind": "fact", "subject": "user", "predicate": "sister_name", "value": "Lena",
         "stateful": False, "confidence": 0.9, "content": "The user's sister is Lena.",
         "grounding": "My sister Lena"}],
    entities=[{"name": "Lena", "type": "person", "pronoun": "she", "role": "sister"},
              {"name": "Volkswagen", "type": "organisation", "aliases": ["VW"]}],
    relations=[{"subject": "Lena", "relation": "works_at", "object": "Volkswagen"}])
LATER_ANSWER = answer(
    candidates=[{"kind": "fact", "subject": "Lena", "predicate": "employer", "value": "Siemens",
                 "stateful": True, "correction": True, "replaces": "Volkswagen",
                 "confidence": 0.9, "content": "Lena works at Siemens.",
                 "grounding": "she is at Siemens now"}],
    entities=[{"name": "Lena", "type": "person"}, {"name": "Siemens", "type": "organisation"}],
    relations=[{"subject": "Lena", "relation": "works_at", "object": "Siemens"}])


def write_path(model: Any, extraction: str = "model") -> tuple[Any, Any]:
    """The chat graph's write nodes (extract, promote) on a fresh store."""
    store = SqliteMemoryStore(connect_sqlite(":memory:"))
    store.setup()
    builder = StateGraph(MemoryState)
    builder.add_node("extract", create_extract_node(model, extraction=extraction))  # type: ignore[arg-type]
    builder.add_node("promote", create_promote_node())
    builder.add_edge(START, "extract")
    builder.add_edge("extract", "promote")
    return store, builder.compile(store=store)


def say(graph: Any, text: str) -> dict[str, Any]:
    return graph.invoke({"messages": [HumanMessage(text)]}, ALICE)


def entities(store: Any) -> dict[str, dict[str, Any]]:
    return {i.value["name"]: i.value
            for i in store.search(("tenant:acme", "user:alice", "entity"))}


def test_one_call_proposes_facts_preferences_entities_and_relations():
    model = ScriptedChatModel.of(FIRST_ANSWER)
    store, graph = write_path(model)
    out = say(graph, FIRST)
    assert len(model.prompts) == 1  # one structured call for the whole turn
    written = {(p["kind"], p["outcome"], p.get("proposed_by"))
               for p in out["memory_trace"]["promotions"]}
    assert ("preference", "written", "model") in written
    assert ("fact", "written", "model") in written
    assert ("entity", "written", "model") in written
    [language] = store.search(("tenant:acme", "user:alice", "preference"))
    assert language.value["value"] == "French" and language.value["proposed_by"] == "model"
    found = entities(store)
    assert found["Lena"]["type"] == "person" and found["Lena"]["pronoun"] == "she"
    assert found["Volkswagen"]["aliases"] == ["VW"]
    [(relation, target)] = found["Lena"]["links"]
    assert relation == "works_at" and target == store.search(
        ("tenant:acme", "user:alice", "entity"), filter={"name": "Volkswagen"})[0].key


def test_a_models_correction_supersedes_and_moves_the_relation():
    store, graph = write_path(ScriptedChatModel.of(FIRST_ANSWER, LATER_ANSWER))
    say(graph, FIRST)
    out = say(graph, LATER)
    outcomes = {(p["kind"], p["outcome"]) for p in out["memory_trace"]["promotions"]}
    assert ("fact", "superseded") in outcomes
    facts = [f.value["value"] for f in store.search(("tenant:acme", "user:alice", "fact"),
                                                    query="Lena employer")]
    assert "Siemens" in facts and "Volkswagen" not in facts
    found = entities(store)
    siemens = store.search(("tenant:acme", "user:alice", "entity"),
                           filter={"name": "Siemens"})[0].key
    assert found["Lena"]["links"] == [["works_at", siemens]]  # one employer at a time


def test_what_the_turn_does_not_say_is_dropped_and_counted():
    model = ScriptedChatModel.of(answer(
        candidates=[{"kind": "fact", "subject": "user", "predicate": "home_city",
                     "value": "Rome", "confidence": 0.9, "content": "The user lives in Rome.",
                     "grounding": "I live in Rome"}],
        entities=[{"name": "Lena", "type": "person"}, {"name": "Rome", "type": "place"}],
        relations=[{"subject": "Lena", "relation": "lives_in", "object": "Rome"}]))
    store, graph = write_path(model)
    out = say(graph, "My sister Lena is visiting next week, can't wait to see her.")
    extraction = out["memory_trace"]["extraction"]
    assert extraction["method"] == "model" and extraction["dropped"] == 3
    assert store.search(("tenant:acme", "user:alice", "fact")) == []
    assert set(entities(store)) == {"Lena"} and entities(store)["Lena"]["links"] == []


def test_a_failing_model_degrades_to_the_rules_recorded():
    store, graph = write_path(FailingChatModel())
    out = say(graph, "I live in Lyon.")
    assert any("extraction model failed" in d for d in out["memory_trace"]["degraded"])
    assert out["memory_trace"]["extraction"]["method"] == "rules"
    [fact] = store.search(("tenant:acme", "user:alice", "fact"))
    assert fact.value["value"] == "Lyon" and fact.value["proposed_by"].startswith("rule:")


def test_rules_never_call_the_model():
    model = ScriptedChatModel.of(FIRST_ANSWER)
    store, graph = write_path(model, extraction="rules")
    out = say(graph, "I live in Lyon.")
    assert model.prompts == [] and out["memory_trace"]["extraction"]["method"] == "rules"


def test_model_extraction_without_a_model_fails_at_the_first_call(monkeypatch):
    monkeypatch.delenv("TYPED_MEMORY_MODEL", raising=False)
    _, graph = write_path(None)
    with pytest.raises(ConfigurationError, match='extraction="model" but this run names no'):
        say(graph, "hi")
    with pytest.raises(ConfigurationError, match="use \"auto\""):
        create_extract_node(extraction="models")  # type: ignore[arg-type]


async def test_the_async_path_reads_the_models_entities_too():
    store, graph = write_path(ScriptedChatModel.of(FIRST_ANSWER))
    await graph.ainvoke({"messages": [HumanMessage(FIRST)]}, ALICE)
    assert set(entities(store)) == {"Lena", "Volkswagen"}
