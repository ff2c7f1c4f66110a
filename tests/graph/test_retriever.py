"""`TypedMemoryRetriever`: typed fact and episode memory as LangChain documents, every backend."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from pydantic import ValidationError

from langgraph_typed_memory.retriever import TypedMemoryRetriever
from tests.fake_models import ScriptedChatModel

ACME = "tenant:acme"
ALICE_FACTS = (ACME, "user:alice", "fact")
ALICE_EPISODES = (ACME, "user:alice", "episode")
QUERY = "does alice live in lyon"
METADATA_KEYS = {"id", "kind", "key", "namespace", "score", "tier", "retrieval_mode",
                 "confidence"}


def fact(content: str, confidence: float = 0.8) -> dict[str, Any]:
    return {"subject": "alice", "predicate": "note", "content": content,
            "confidence": confidence}


def seed(store: Any) -> None:
    """Alice's memory, the wider scopes she sees, and the neighbours she must not see."""
    store.put(ALICE_FACTS, "city", fact("Alice lives in Lyon.", 0.95))
    store.put(ALICE_FACTS, "job", fact("Alice works as a nurse at a hospital in Lyon."))
    store.put(ALICE_FACTS, "pet", fact("Alice has a cat named Miso."))
    store.put(ALICE_FACTS, "lang", fact("Alice speaks French and some Italian."))
    store.put(ALICE_FACTS, "sport", fact("Alice runs along the river on Sundays.", 0.6))
    store.put(ALICE_FACTS, "food", fact("Alice is vegetarian."))
    store.put(ALICE_EPISODES, "move", {"title": "Moving to Lyon",
                                       "summary": "Alice asked which movers serve Lyon."})
    store.put(ALICE_EPISODES, "bill", {"title": "Billing question",
                                       "summary": "Alice asked why her invoice doubled."})
    # Tenant-wide: an episode (a new tenant-wide fact stays provisional, invisible, until
    # confirmed; see docs/kinds.md).
    store.put((ACME, "episode"), "office", {"title": "Lyon office",
                                            "summary": "Acme opened an office in Lyon."})
    store.put((ACME, "user:alice", "agent:support", "fact"), "ticket", fact(
        "Alice reported that the Lyon office printer is broken."))
    store.put((ACME, "user:bob", "fact"), "city", fact("Bob lives in Lyon. Alice is his friend."))
    store.put(("tenant:globex", "user:alice", "fact"), "city", fact("Alice lives in Lyon."))
    store.put(("memories", "alice"), "city", {"text": "Alice lives in Lyon."})


def retriever(store: Any, **fields: Any) -> TypedMemoryRetriever:
    return TypedMemoryRetriever(store=store, **{"tenant_id": "acme", "user_id": "alice", **fields})


def keys(docs: list[Document]) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(d.metadata["namespace"]), d.metadata["key"]) for d in docs]


def test_returns_only_the_callers_scope(store):
    seed(store)
    seen = set(keys(retriever(store, k=50).invoke(QUERY)))
    assert ((ACME, "episode"), "office") in seen  # tenant-wide records are shared
    assert (ALICE_FACTS, "city") in seen and (ALICE_EPISODES, "move") in seen
    assert {ns for ns, _ in seen} == {(ACME, "episode"), ALICE_FACTS, ALICE_EPISODES}

    with_agent = set(keys(retriever(store, k=50, agent_id="support").invoke(QUERY)))
    assert with_agent == seen | {((ACME, "user:alice", "agent:support", "fact"), "ticket")}

    bob = set(keys(retriever(store, k=50, user_id="bob").invoke(QUERY)))
    assert bob == {((ACME, "episode"), "office"), ((ACME, "user:bob", "fact"), "city")}

    other_tenant = retriever(store, k=50, tenant_id="globex").invoke(QUERY)
    assert [d.page_content for d in other_tenant] == ["Alice lives in Lyon."]
    assert retriever(store, tenant_id="nobody").invoke(QUERY) == []


def test_documents_carry_the_memory_metadata(store):
    seed(store)
    docs = retriever(store, kinds=("fact",)).invoke("alice lives in lyon")
    city = next(d for d in docs if d.metadata["key"] == "city")
    stored = store.get(ALICE_FACTS, "city")
    assert set(city.metadata) == METADATA_KEYS
    assert city.page_content == "Alice lives in Lyon."
    assert city.id == city.metadata["id"] == stored.memory["id"]
    assert city.metadata["namespace"] == list(ALICE_FACTS)
    assert city.metadata["kind"] == "fact" and city.metadata["confidence"] == 0.95
    assert city.metadata["retrieval_mode"] == "hybrid" and city.metadata["tier"] == "high"
    assert 0 < city.metadata["score"] <= 1


def test_respects_k_and_orders_by_score(store):
    seed(store)
    everything = retriever(store, k=50).invoke(QUERY)
    assert len(everything) == 9  # six facts, two episodes, the tenant-wide episode
    scores = [d.metadata["score"] for d in everything]
    assert scores == sorted(scores, reverse=True)
    top3 = retriever(store, k=3).invoke(QUERY)
    assert keys(top3) == keys(everything)[:3]
    assert len(retriever(store, k=1).invoke(QUERY)) == 1


@pytest.mark.parametrize("min_tier, kept", [("high", {"high"}), ("standard", {"high", "standard"}),
                                            ("low", {"high", "standard", "low"})])
def test_respects_min_tier(store, min_tier, kept):
    seed(store)
    everything = retriever(store, k=50).invoke(QUERY)
    tiers = {d.metadata["tier"] for d in everything}
    assert "high" in tiers and tiers - {"high"}, "the seed must give several tiers"
    expected = [d for d in everything if d.metadata["tier"] in kept]
    assert keys(retriever(store, k=50, min_tier=min_tier).invoke(QUERY)) == keys(expected)
    assert keys(retriever(store, k=2, min_tier=min_tier).invoke(QUERY)) == keys(expected)[:2]


def test_merges_kinds(store):
    seed(store)
    docs = retriever(store, k=50).invoke(QUERY)
    assert {d.metadata["kind"] for d in docs} == {"fact", "episode"}
    episodes = retriever(store, k=50, kinds=("episode",)).invoke(QUERY)
    assert [d.metadata["kind"] for d in episodes] == ["episode"] * 3
    move = next(d for d in episodes if d.metadata["key"] == "move")
    assert move.page_content == "Moving to Lyon: Alice asked which movers serve Lyon."
    assert keys(episodes) == [k for k in keys(docs) if k[0][-1] == "episode"]
    facts = retriever(store, k=50, kinds=("fact",)).invoke(QUERY)
    assert keys(facts) == [k for k in keys(docs) if k[0][-1] == "fact"]


def test_an_empty_query_lists_without_tiers(store):
    seed(store)
    listed = retriever(store, k=50).invoke("")
    assert len(listed) == 9
    assert {(d.metadata["retrieval_mode"], d.metadata["tier"]) for d in listed} == {("list", None)}
    assert retriever(store, k=50, min_tier="standard").invoke("") == []


def test_one_batch_per_query(store, monkeypatch):
    seed(store)
    calls: list[list[Any]] = []
    batch = store.batch

    def spy(ops: Any) -> Any:
        calls.append(list(ops))
        return batch(calls[-1])

    monkeypatch.setattr(store, "batch", spy)
    retriever(store, kinds=("fact", "episode", "observation")).invoke(QUERY)
    assert len(calls) == 1
    assert [op.namespace_prefix[-1] for op in calls[0]] == ["fact", "episode", "observation"]


async def test_async_path(store):
    seed(store)
    r = retriever(store, k=4, min_tier="low")
    docs = await r.ainvoke(QUERY)
    assert len(docs) == 4
    assert [(d.page_content, d.metadata) for d in docs] == [
        (d.page_content, d.metadata) for d in r.invoke(QUERY)]


def test_works_in_an_lcel_chain(store):
    seed(store)
    context = retriever(store, k=3) | (lambda docs: "\n".join(d.page_content for d in docs))
    assert "Alice lives in Lyon." in context.invoke("where does alice live")

    model = ScriptedChatModel.of("Alice lives in Lyon.")
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from memory:\n{context}"), ("human", "{question}")])
    chain = {"context": context, "question": RunnablePassthrough()} | prompt | model
    answer = (chain | StrOutputParser()).invoke("where does alice live")
    assert answer == "Alice lives in Lyon."
    shown = model.prompts[-1][0].content
    assert "Alice lives in Lyon." in shown and "Bob" not in shown


def test_rejects_unranked_kinds_and_bad_scopes(store):
    with pytest.raises(ValidationError, match="kinds"):
        retriever(store, kinds=("preference",))
    with pytest.raises(ValidationError, match="distinct"):
        retriever(store, kinds=("fact", "fact"))
    with pytest.raises(ValidationError, match="k=0"):
        retriever(store, k=0)
    with pytest.raises(ValidationError, match="invalid id 'a:b'"):
        retriever(store, user_id="a:b")
