"""The entity graph retriever in the retrieve node, on every backend: a question's entities
by any name the scope knows, one hop through relations, the switch, and isolation (no
entity and no record of another scope, ever)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_typed_memory.conversation_import import TurnWriter
from langgraph_typed_memory.entities.directories import DIRECTORIES
from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.nodes import create_retrieve_node

DAY = datetime(2025, 3, 1, tzinfo=UTC)
FILLER = [f"The library is a good place to work on rainy day number {i}." for i in range(12)]


def said(store: Any, user: str, *texts: str) -> None:
    writer = TurnWriter(store, tenant_id="acme", user_id=user, session_id=f"{user}-chat")
    for i, text in enumerate(texts):
        writer.write(HumanMessage(text), at=DAY + timedelta(minutes=i))


def ask(store: Any, user: str, question: str, **options: Any) -> tuple[list[str], dict]:
    node = create_retrieve_node(store, **options)
    out = node.invoke({"messages": [HumanMessage(question)]},
                      {"configurable": {"tenant_id": "acme", "user_id": user}})
    episodes = [e["value"]["summary"] for e in out["memory_context"]["episodes"]]
    return episodes, out["memory_trace"]["retrieval"]


def test_an_alias_finds_what_was_said_under_the_full_name(backend_store_factory: Any) -> None:
    store = backend_store_factory(None)  # words alone: what finds what is plain to see
    said(store, "alice", "I started a new job at Volkswagen.",
         "Volkswagen, VW for short, pays for the canteen.", *FILLER)
    question = "Is VW a good place to work?"
    without, _ = ask(store, "alice", question, episodes=3, entity_graph=False)
    episodes, retrieval = ask(store, "alice", question, episodes=3)
    assert "user: I started a new job at Volkswagen." not in without
    assert "user: I started a new job at Volkswagen." in episodes
    assert retrieval["entities"] == {"named": ["Volkswagen"], "related": [],
                                     "query": f"{question} Volkswagen"}
    assert retrieval["modes"]["episodes"].endswith("+entities")


PLACES = ["library", "cafe", "park bench", "train", "office", "kitchen table", "garden",
          "hotel lobby", "airport lounge", "coworking space", "balcony", "bus"]


def test_an_alias_finds_its_records_past_a_full_slot(backend_store_factory: Any) -> None:
    store = backend_store_factory(None)
    said(store, "alice", "I started a new job at Volkswagen.",
         "Volkswagen, VW for short, pays for the canteen.",
         *(f"The {place} was a good place to work today." for place in PLACES))
    question = "Is VW a good place to work?"
    without, _ = ask(store, "alice", question, episodes=4, entity_graph=False)
    assert len(without) == 4 and "user: I started a new job at Volkswagen." not in without
    episodes, _ = ask(store, "alice", question, episodes=4)
    # found by the name the question did not use, it counts as much as the question's own
    assert "user: I started a new job at Volkswagen." in episodes


def test_the_entity_weight_sets_how_far_records_about_the_entities_rise(
        backend_store_factory: Any) -> None:
    store = backend_store_factory(None)
    said(store, "alice", "We spent a weekend in Graz.",
         *(f"The {place} was a good place to work today." for place in PLACES),
         "The museum in Graz reopened.")
    question = "Is Graz a good place to work?"  # no other name: the question's own search
    ask(store, "alice", question)  # the directory is held from now on
    alone, _ = ask(store, "alice", question, episodes=4, entity_graph=False)
    unweighted, _ = ask(store, "alice", question, episodes=4, entity_weight=0.0)
    at_par, _ = ask(store, "alice", question, episodes=4, entity_weight=1.0)
    assert unweighted == alone
    assert set(at_par[:2]) == {"user: We spent a weekend in Graz.",
                               "user: The museum in Graz reopened."}
    with pytest.raises(ConfigurationError, match="entity_weight=1.5"):
        create_retrieve_node(store, entity_weight=1.5)


def test_one_hop_brings_what_a_related_entity_did(store: Any) -> None:
    said(store, "alice", "Sarah leads the platform team.", *FILLER,
         "The platform team ships the billing service next week.")
    episodes, retrieval = ask(store, "alice", "What is Sarah busy with?", episodes=3)
    assert retrieval["entities"]["related"] == ["platform team"]
    assert "user: The platform team ships the billing service next week." in episodes


def test_one_batch_unless_the_entities_go_by_names_not_yet_known(store: Any,
                                                                 monkeypatch: Any) -> None:
    said(store, "alice", "My sister Lena lives in Vienna.", "The museum in Graz reopened.")
    DIRECTORIES.forget(store)  # as in a process that never read this scope's entities
    batches: list[int] = []
    batch = store.batch

    def counted(ops: Any) -> Any:
        batches.append(len(ops))
        return batch(ops)

    monkeypatch.setattr(store, "batch", counted)
    _, retrieval = ask(store, "alice", "Where does Lena live?", entity_graph=False)
    assert retrieval["entities"] is None and batches == [5]  # the five slots
    _, retrieval = ask(store, "alice", "where do i live?")  # names nothing
    assert retrieval["entities"] is None and batches[1:] == [5]
    _, retrieval = ask(store, "alice", "Is Graz worth a visit?")
    assert retrieval["entities"]["query"] == "Is Graz worth a visit?"
    # and the entity records; the deeper episodes search, for the question's own words,
    # is the episodes slot's search too (cut to the slot)
    assert batches[2:] == [6]
    # the directory is held now: the names the entities go by are known before the batch
    _, retrieval = ask(store, "alice", "Where does Lena live?")  # related: Vienna
    assert retrieval["entities"]["query"] == "Where does Lena live? Vienna"
    assert batches[3:] == [7]
    DIRECTORIES.forget(store)  # not held: the deeper search again, with Vienna's name
    _, again = ask(store, "alice", "Where does Lena live?")
    assert again == retrieval and batches[4:] == [6, 1]
    # an entity written after the directory was read: the held one names nothing, so no
    # deeper search goes with the first batch; the directory read finds Priya
    said(store, "alice", "I had lunch with Priya from accounting.")
    before = len(batches)
    _, retrieval = ask(store, "alice", "What does Priya do?")
    assert retrieval["entities"]["named"] == ["Priya"] and batches[before:] == [6, 1]


def test_the_deeper_search_for_the_question_itself_serves_its_slot(store: Any) -> None:
    said(store, "alice", "We spent a weekend in Graz.", *FILLER, "The museum in Graz reopened.")
    question = "Is Graz a good place to work?"  # names no alias, no related entity
    ask(store, "alice", question)  # the directory is held from now on
    episodes, retrieval = ask(store, "alice", question, episodes=2)
    assert retrieval["entities"]["query"] == question  # one search serves slot and pool
    assert len(episodes) == 2 and "user: The museum in Graz reopened." in episodes
    assert retrieval["modes"]["episodes"].endswith("+entities")


def test_a_name_the_scope_does_not_know_changes_nothing(store: Any) -> None:
    said(store, "alice", "My sister Lena lives in Vienna.")
    episodes, retrieval = ask(store, "alice", "Where does Toyota build cars?")
    assert retrieval["entities"] == {"named": [], "related": [],
                                     "query": "Where does Toyota build cars?"}
    assert "+entities" not in retrieval["modes"]["episodes"]
    assert episodes  # the question's own ranking still answers


def test_another_scopes_entities_and_records_never_reach_a_question(store: Any) -> None:
    said(store, "alice", "My sister Lena lives in Vienna.")
    said(store, "bob", "My colleague Lena moved to Oslo.", "Lena, Lenny for short, skis.")
    lena = next(i for i in store.search(("tenant:acme", "user:alice", "entity"))
                if i.value["name"] == "Lena")
    # a record of bob's that even carries alice's entity id stays bob's
    store.put(("tenant:acme", "user:bob", "episode"), "forged", {
        "title": "bob", "summary": "bob: Lena Lenny lives in Oslo now.",
        "metadata": {"entities": [lena.key]}})
    for question in ("Where does Lena live?", "Where does Lenny live?"):
        episodes, retrieval = ask(store, "alice", question)
        assert all(e.startswith("user: ") and "Oslo" not in e for e in episodes), question
        assert retrieval["entities"]["named"] in (["Lena"], []), question
    _, retrieval = ask(store, "alice", "Where does Lenny live?")
    assert retrieval["entities"]["named"] == []  # bob's alias is not alice's
    episodes, retrieval = ask(store, "bob", "Where does Lenny live?")
    assert retrieval["entities"]["named"] == ["Lena"]
    assert "Vienna" not in " ".join(episodes)


async def test_the_async_path_fuses_the_same(store: Any) -> None:
    said(store, "alice", "I started a new job at Volkswagen.",
         "Volkswagen, VW for short, pays for the canteen.", *FILLER)
    node = create_retrieve_node(store, episodes=2)
    config = {"configurable": {"tenant_id": "acme", "user_id": "alice"}}
    state = {"messages": [HumanMessage("Is VW a good place to work?")]}
    sync = node.invoke(state, config)["memory_context"]["episodes"]
    got = (await node.ainvoke(state, config))["memory_context"]["episodes"]
    assert [e["key"] for e in got] == [e["key"] for e in sync]


def test_a_failing_store_degrades_the_entity_path_too(store: Any, monkeypatch: Any) -> None:
    said(store, "alice", "My sister Lena lives in Vienna.")
    calls: list[int] = []
    batch = store.batch

    def second_fails(ops: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise OSError("connection lost")
        return batch(ops)

    monkeypatch.setattr(store, "batch", second_fails)
    episodes, retrieval = ask(store, "alice", "Where does Lena live?")
    assert episodes == [] and retrieval["retrieval_mode"] == "failed"
