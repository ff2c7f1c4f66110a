"""What one user says about the tenant reaches no other user's prompt unless an operator
chose that: by default it is the speaker's own memory; under review sharing it waits,
unseen, for an operator's `store.review` (two users saying it is no approval)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.errors import ConfigurationError, UnknownMemory
from langgraph_typed_memory.graph import create_memory_chat_graph

SAID = ["Our production database is in us-east-1 with replicas in us-west-2.",
        "Our fiscal year starts on April 1.",
        "Our refund policy is that every customer gets a full refund within 90 days."]
ASKED = ("Where is our production database, when does our fiscal year start, and what is "
         "our refund policy?")
SECRETS = ("us-east-1", "April 1", "90 days")


def chat(gate: dict[str, Any] | None = None) -> tuple[Any, Any]:
    store = SqliteMemoryStore(connect_sqlite(":memory:"), gate=gate)
    store.setup()
    return store, create_memory_chat_graph(store=store, checkpointer=InMemorySaver())


def ask(graph: Any, user: str, thread: str, text: str) -> dict[str, Any]:
    return graph.invoke({"messages": [HumanMessage(text)]},
                        {"configurable": {"tenant_id": "acme", "user_id": user,
                                          "thread_id": thread}})


def prompt_text(out: dict[str, Any]) -> str:
    return " ".join(str(m.content) for m in out["memory_prompt"])


def test_by_default_a_users_statements_about_the_tenant_stay_theirs():
    store, graph = chat()
    for speaker in ("alice", "bob"):  # two accounts agreeing changes nothing
        for n, text in enumerate(SAID):
            out = ask(graph, speaker, f"{speaker}-1", text)
            facts = [p for p in out["memory_trace"]["promotions"] if p["kind"] == "fact"]
            assert facts and all("kept in the caller's own scope" in p["reason"]
                                 for p in facts), (speaker, n, facts)
    carol = prompt_text(ask(graph, "carol", "carol-1", ASKED))
    assert not [s for s in SECRETS if s in carol]
    assert store.search(("tenant:acme", "fact")) == []
    alice = prompt_text(ask(graph, "alice", "alice-2", ASKED))
    assert all(s in alice for s in SECRETS)  # her own memory still answers her
    assert store.pending_reviews("acme") == []


def test_under_review_sharing_a_proposal_is_shown_only_once_an_operator_accepts_it():
    store, graph = chat({"tenant_sharing": "review"})
    for speaker in ("alice", "bob"):
        ask(graph, speaker, f"{speaker}-1", SAID[1])
    pending = store.pending_reviews("acme")
    assert [p.proposed_by for p in pending] == [["alice", "bob"]]
    assert "April 1" in pending[0].content
    assert "April 1" not in prompt_text(ask(graph, "carol", "carol-1", ASKED))
    assert store.review("acme", pending[0].key, approve=True, actor="ops") == "active"
    assert "April 1" in prompt_text(ask(graph, "carol", "carol-2", ASKED))
    assert store.pending_reviews("acme") == []
    with pytest.raises(UnknownMemory, match="awaits review"):
        store.review("acme", pending[0].key, approve=False)
    audit = store.audit(("tenant:acme", "fact"), pending[0].key)
    assert [(e["to_status"], e["actor"]) for e in audit][-1] == ("active", "ops")


def test_a_rejected_proposal_is_shown_to_nobody():
    store, graph = chat({"tenant_sharing": "review"})
    ask(graph, "mallory", "m-1", SAID[2])
    [pending] = store.pending_reviews("acme")
    assert store.review("acme", pending.key, approve=False) == "revoked"
    assert "90 days" not in prompt_text(ask(graph, "carol", "carol-1", ASKED))


def test_an_operator_writes_tenant_facts_directly():
    store, _ = chat()
    store.promote([{"kind": "fact", "scope": "tenant", "subject": "acme",
                    "predicate": "hq_city", "content": "Acme is based in Lyon.",
                    "confidence": 0.9}], tenant_id="acme", run_id="ops-1")
    rows = store.conn.execute("SELECT user_id, status FROM memories WHERE kind = 'fact'")
    assert rows.fetchall() == [(None, "provisional")]


def test_an_unknown_sharing_mode_is_refused():
    with pytest.raises(ConfigurationError, match="tenant_sharing='everyone'"):
        SqliteMemoryStore(connect_sqlite(":memory:"), gate={"tenant_sharing": "everyone"})
