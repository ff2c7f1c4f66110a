"""Entities as memory through the chat loop, on every backend: the records the write path
keeps, the ids what it writes carries, an alias that updates a record, scopes kept apart."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_typed_memory.conversation_import import TurnWriter
from langgraph_typed_memory.graph import create_memory_chat_graph
from langgraph_typed_memory.nodes import create_extract_node

ALICE = ("tenant:acme", "user:alice")
DAY = datetime(2025, 3, 1, tzinfo=UTC)


def chat(graph: Any, user: str, *texts: str, thread: str = "t1") -> list[dict[str, Any]]:
    config = {"configurable": {"tenant_id": "acme", "user_id": user, "thread_id": thread}}
    return [graph.invoke({"messages": [HumanMessage(t)]}, config) for t in texts]


def entities(store: Any, scope: tuple[str, ...] = ALICE) -> dict[str, dict[str, Any]]:
    return {i.value["name"]: {"id": i.key, **i.value} for i in store.search((*scope, "entity"))}


def test_the_loop_keeps_entities_and_stamps_their_ids(store: Any) -> None:
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    first, _ = chat(graph, "alice", "My sister Lena lives in Vienna. I work at Volkswagen.",
                    "She just moved to Graz.")
    known = entities(store)
    assert set(known) == {"Lena", "Vienna", "Volkswagen", "Graz"}
    lena = known["Lena"]
    assert (lena["type"], lena["roles"], lena["pronoun"]) == ("person", [["sister", "user"]],
                                                            "she")
    assert [(r, o) for r, o in lena["links"]] == [("sister_of", "user"),
                                                 ("lives_in", known["Graz"]["id"])]
    assert first["memory_trace"]["extraction"]["entities"] == {"mentioned": 3, "proposed": 3}
    turns = {i.value["summary"]: i.value["metadata"]["entities"]
             for i in store.search((*ALICE, "episode"), limit=10)}
    assert turns["user: She just moved to Graz."] == [lena["id"], known["Graz"]["id"]]
    [home] = store.search((*ALICE, "fact"), filter={"predicate": "home_city"})
    assert home.value["metadata"]["entities"][0] == lena["id"]


def test_a_new_alias_supersedes_the_record_and_keeps_the_turns(store: Any) -> None:
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    first, second = chat(graph, "alice", "I started a new job at Volkswagen.",
                         "Volkswagen, VW for short, has a great canteen.")
    vw = entities(store)["Volkswagen"]
    assert vw["aliases"] == ["VW"]
    [old, new] = sorted(store.history((*ALICE, "entity"), vw["id"]),
                        key=lambda i: i.memory["status"] == "active")
    assert old.memory["status"] == "superseded" and old.value["aliases"] == []
    assert [p["outcome"] for p in second["memory_trace"]["promotions"]
            if p["kind"] == "entity"] == ["superseded"]
    # the turn that first named it stays: an entity record is no statement a turn made
    logged = [i.value["summary"] for i in store.search((*ALICE, "episode"), limit=10)]
    assert "user: I started a new job at Volkswagen." in logged
    assert first["memory_trace"]["extraction"]["entities"]["proposed"] == 1


def test_each_scope_keeps_its_own_entities(store: Any) -> None:
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    chat(graph, "alice", "My sister Lena lives in Vienna.")
    chat(graph, "bob", "My colleague Lena lives in Oslo.", thread="t2")
    alice, bob = entities(store), entities(store, ("tenant:acme", "user:bob"))
    assert set(alice) == {"Lena", "Vienna"} and set(bob) == {"Lena", "Oslo"}
    assert alice["Lena"]["id"] != bob["Lena"]["id"]
    assert bob["Lena"]["roles"] == [["colleague", "user"]]
    assert entities(store, ("tenant:acme",)) == {}  # nothing tenant-wide


def test_named_speakers_are_entities_of_their_turns(store: Any) -> None:
    writer = TurnWriter(store, tenant_id="acme", user_id="alice", session_id="s1")
    writer.write(HumanMessage("Hey Mel! I went to a support group yesterday.", name="Caroline"),
                 at=DAY)
    writer.write(HumanMessage("That's great, Caroline! My dog Bailey loves the beach.",
                              name="Melanie"), at=DAY)
    known = entities(store)
    assert {"Caroline", "Melanie", "Bailey"} <= set(known)
    turns = {i.value["summary"][:8]: i.value["metadata"]["entities"]
             for i in store.search((*ALICE, "episode"), limit=10)}
    assert turns["Melanie:"][0] == known["Melanie"]["id"]
    assert known["Caroline"]["id"] in turns["Melanie:"]  # named in the turn
    assert known["Bailey"]["links"] == [["dog_of", known["Melanie"]["id"]]]


def test_extract_reads_no_entities_without_a_store_or_when_switched_off(store: Any) -> None:
    config = {"configurable": {"tenant_id": "acme", "user_id": "alice"}}
    state = {"messages": [HumanMessage("I live in Lyon now.")]}
    for node in (create_extract_node(extraction="rules"),
                 create_extract_node(extraction="rules", store=store, entities=False)):
        out = node.invoke(state, config)
        assert [c["kind"] for c in out["memory_candidates"]] == ["fact"]
        assert out["memory_entities"]["mentioned"] == []
    out = create_extract_node(extraction="rules", store=store).invoke(state, config)
    assert [c["kind"] for c in out["memory_candidates"]] == ["fact", "entity"]


def test_a_failing_entity_read_degrades_the_turn(store: Any, monkeypatch: Any) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk gone")

    monkeypatch.setattr(store, "batch", broken)
    out = create_extract_node(extraction="rules", store=store).invoke(
        {"messages": [HumanMessage("I live in Lyon now.")]},
        {"configurable": {"tenant_id": "acme", "user_id": "alice"}})
    assert [c["kind"] for c in out["memory_candidates"]] == ["fact"]
    assert any("entities not read" in d for d in out["memory_trace"]["degraded"])


def test_the_gate_refuses_an_entity_without_a_name_or_a_run(store: Any) -> None:
    outcomes = store.promote([
        {"kind": "entity", "key": "e1", "value": {"type": "person"}, "grounding": "x"},
        {"kind": "entity", "value": {"name": "Lena"}, "grounding": "x"},
    ], tenant_id="acme", user_id="alice", run_id="r1")
    assert [o.outcome for o in outcomes] == ["rejected", "rejected"]
    assert "name" in outcomes[0].reason
    [no_run] = store.promote([{"kind": "entity", "key": "e1", "value": {"name": "Lena"}}],
                             tenant_id="acme", user_id="alice")
    assert no_run.outcome == "rejected" and "source run" in no_run.reason
