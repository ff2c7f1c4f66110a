"""The promotion gate (C1-C7) on every backend."""

from __future__ import annotations

import json

import pytest

from langgraph_typed_memory.gate import GateSettings, Proposal, decide
from langgraph_typed_memory.namespaces import Scope

ALICE = {"tenant_id": "acme", "user_id": "alice"}
FACTS = ("tenant:acme", "user:alice", "fact")


def city(name: str, confidence: float = 0.9, **extra):
    return {"kind": "fact", "subject": "user", "predicate": "home_city",
            "content": f"The user lives in {name}.", "value": name, "confidence": confidence,
            "grounding": f"I live in {name}", **extra}


def test_outcomes_are_json_ready(store):
    out = store.promote([city("Lyon")], run_id="r1", turn=1, **ALICE)
    assert json.loads(json.dumps([o.dict() for o in out]))[0]["outcome"] == "written"


def test_dedup_by_hash_and_scope(store):
    first = store.promote([city("Lyon")], run_id="r1", turn=1, **ALICE)
    again = store.promote([city("Lyon")], run_id="r2", turn=4, **ALICE)
    assert again[0].outcome == "deduplicated" and again[0].id == first[0].id
    item = store.get(FACTS, first[0].key)
    assert item.memory["repetitions"] == 2
    assert [e["run_id"] for e in item.memory["evidence"]] == ["r1", "r2"]
    bob = store.promote([city("Lyon")], run_id="r3", tenant_id="acme", user_id="bob")
    assert bob[0].outcome == "written" and bob[0].id != first[0].id
    assert len(store.search(FACTS, query="Lyon")) == 1


@pytest.mark.parametrize(
    ("proposal", "reason"),
    [
        ({"kind": "preference", "key": "tone", "value": "terse", "confidence": 0.4}, "threshold"),
        ({"kind": "preference", "value": "terse", "confidence": 0.9}, "needs a key"),
        ({"kind": "fact", "subject": "user", "predicate": "pet", "content": "Has a cat.",
          "confidence": 0.69}, "threshold"),
        ({"kind": "policy", "key": "refunds", "value": {"max": 5}}, "never promoted"),
        ({"kind": "episode", "content": "Fixed the build.", "task_complete": False},
         "task completion"),
        ({"kind": "fact", "subject": "user", "predicate": "pet", "content": "x",
          "status": "active"}, "status"),
        ({"kind": "fact", "subject": "user", "predicate": "pet", "content": "x",
          "user_id": "mallory"}, "user_id"),
        ({"kind": "fact", "subject": "user", "predicate": "pet", "content": "x",
          "confidence": float("nan")}, "confidence"),
        ({"kind": "gossip", "content": "x"}, "kind"),
    ],
)
def test_rejections_name_the_reason_and_write_nothing(store, proposal, reason):
    out = store.promote([proposal], run_id="r1", **ALICE)
    assert out[0].outcome == "rejected" and reason in out[0].reason
    assert store.search(FACTS) == []
    assert store.search(("tenant:acme", "user:alice", "preference")) == []


def test_fact_needs_a_source_run(store):
    assert store.promote([city("Lyon")], **ALICE)[0].reason == "a fact needs a source run"


def test_thresholds_are_configuration(backend_store_factory):
    strict = backend_store_factory(None, gate={"fact_min_confidence": 0.95})
    out = strict.promote([city("Lyon", 0.9)], run_id="r1", **ALICE)
    assert out[0].outcome == "rejected" and "0.95" in out[0].reason


def test_stateful_predicate_supersedes_and_readers_see_one_value(store):
    old = store.promote([city("Lyon")], run_id="r1", **ALICE)[0]
    new = store.promote([city("Paris", correction=True)], run_id="r2", **ALICE)[0]
    assert new.outcome == "superseded" and new.old_id == old.id and new.key == old.key
    hits = store.search(FACTS, query="where does the user live Lyon Paris")
    assert [h.value["value"] for h in hits] == ["Paris"]
    assert store.get(FACTS, old.key).value["value"] == "Paris"
    history = store.history(FACTS, old.key)
    assert [(h.value["value"], h.status) for h in history] == [
        ("Paris", "active"), ("Lyon", "superseded")]
    assert history[1].memory["superseded_by"] == new.id
    assert history[0].memory["provenance"]["policy_version"].startswith("gate-v1:")


def test_non_stateful_predicates_accumulate(store):
    pets = [{"kind": "fact", "subject": "user", "predicate": "pet", "content": f"Has a {p}.",
             "confidence": 0.9} for p in ("cat", "dog")]
    out = store.promote(pets, run_id="r1", **ALICE)
    assert [o.outcome for o in out] == ["written", "written"]
    assert len(store.search(FACTS, query="pet")) == 2


def test_a_correction_supersedes_a_fact_keyed_by_content(store):
    def color(name: str, **extra):
        return {"kind": "fact", "subject": "user", "predicate": "favorite_color",
                "content": f"The user's favorite color is {name}.", "value": name,
                "confidence": 0.9, **extra}

    old = store.promote([color("blue"), {**color("red"), "subject": "bob"}], run_id="r1",
                        **ALICE)[0]
    new = store.promote([color("green", correction=True)], run_id="r2", **ALICE)[0]
    assert new.outcome == "superseded" and new.old_id == old.id and new.key == old.key
    current = {h.value["subject"]: h.value["value"] for h in store.search(FACTS, limit=10)}
    assert current == {"user": "green", "bob": "red"}  # the other subject is untouched
    assert [h.status for h in store.history(FACTS, old.key)] == ["active", "superseded"]


def test_contradiction_links_and_needs_review(store):
    strong = store.promote([city("Lyon", 0.95)], run_id="r1", **ALICE)[0]
    weak = store.promote([city("Nice", 0.72)], run_id="r2", **ALICE)[0]
    assert weak.outcome == "contradicted" and weak.old_id == strong.id
    current = store.get(FACTS, strong.key)
    assert current.value["value"] == "Lyon"
    assert current.memory["contradicts"] == [weak.id] and current.memory["needs_review"]
    challenger = store.get(FACTS, weak.key)
    assert challenger.status == "provisional" and challenger.memory["contradicts"] == [strong.id]
    hits = store.search(FACTS, query="lives in Nice Lyon")
    assert [h.value["value"] for h in hits] == ["Lyon"]


def test_tenant_facts_need_two_independent_sources(store):
    tenant_fact = {"kind": "fact", "subject": "acme", "predicate": "region", "scope": "tenant",
                   "content": "Acme runs in eu-west-1.", "confidence": 0.9}
    first = store.promote([tenant_fact], run_id="r1", **ALICE)[0]
    assert first.outcome == "written"
    assert store.get(("tenant:acme", "fact"), first.key).status == "provisional"
    assert store.search(FACTS, query="Acme region eu-west-1") == []
    same_source = store.promote([tenant_fact], run_id="r2", **ALICE)[0]
    assert same_source.outcome == "deduplicated"
    second = store.promote([tenant_fact], run_id="r3", tenant_id="acme", user_id="bob")[0]
    assert second.outcome == "confirmed"
    assert [h.key for h in store.search(FACTS, query="Acme region eu-west-1")] == [first.key]


def test_one_transaction_per_batch(store):
    out = store.promote([city("Lyon"), {"kind": "preference", "key": "tone", "value": "brief",
                                        "confidence": 0.8}, city("Lyon")], run_id="r1", **ALICE)
    assert [o.outcome for o in out] == ["written", "written", "deduplicated"]


def test_agent_scope_never_wider_than_caller():
    p = Proposal(kind="fact", subject="s", predicate="p", content="c", scope="agent")
    from langgraph_typed_memory.gate import target_scope

    assert target_scope(p, Scope("t", "u")) == Scope("t", "u")
    assert target_scope(p, Scope("t", "u", "bot")) == Scope("t", None, "bot")


def test_decide_is_pure():
    p = Proposal(kind="preference", key="tone", value="terse", confidence=0.9)
    d = decide(p, scope=Scope("t", "u"), current=None, settings=GateSettings(), run_id=None,
               source="u")
    assert d.action == "insert" and d.status == "active"


def test_gate_transitions_are_audited(store):
    first = store.promote([city("Lyon")], run_id="r1", **ALICE)[0]
    store.promote([city("Paris", correction=True)], run_id="r2", **ALICE)
    store.promote([city("Nice", 0.5)], run_id="r3", **ALICE)  # below threshold: no event
    store.promote([city("Rome", 0.72)], run_id="r4", **ALICE)  # contradiction
    events = store.audit(FACTS, first.key)
    assert [(e["from_status"], e["to_status"], e["run_id"]) for e in events] == [
        (None, "active", "r1"),
        ("active", "superseded", "r2"),
        (None, "active", "r2"),
        ("active", "active", "r4"),
    ]
    assert events[1]["reason"].startswith("correction") and events[0]["actor"] == "gate:alice"
    assert "contradicted by" in events[3]["reason"]
