"""The promotion gate on every backend."""

from __future__ import annotations

import json

import pytest

from langgraph_typed_memory.gate import GateConfig, Proposal, decide
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
    first = store.promote([tenant_fact], run_id="r1", tenant_id="acme", source="admin")[0]
    assert first.outcome == "written"
    assert store.get(("tenant:acme", "fact"), first.key).status == "provisional"
    assert store.search(FACTS, query="Acme region eu-west-1") == []
    same_source = store.promote([tenant_fact], run_id="r2", tenant_id="acme",
                                source="admin")[0]
    assert same_source.outcome == "deduplicated"
    second = store.promote([tenant_fact], run_id="r3", tenant_id="acme", source="import")[0]
    assert second.outcome == "confirmed"
    assert [h.key for h in store.search(FACTS, query="Acme region eu-west-1")] == [first.key]


def test_a_users_fact_about_the_tenant_stays_in_their_scope(store):
    tenant_fact = {"kind": "fact", "subject": "acme", "predicate": "region", "scope": "tenant",
                   "content": "Acme runs in eu-west-1.", "confidence": 0.9}
    for user in ("alice", "bob"):  # two accounts agreeing share nothing
        [out] = store.promote([tenant_fact], run_id=f"r-{user}", tenant_id="acme",
                              user_id=user)
        assert out.outcome == "written" and "own scope" in out.reason
        assert store.get(("tenant:acme", f"user:{user}", "fact"), out.key).status == "active"
    assert store.search(("tenant:acme", "fact")) == []
    assert store.search(("tenant:acme", "user:carol", "fact"), query="Acme region") == []


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
    d = decide(p, scope=Scope("t", "u"), current=None, settings=GateConfig(), run_id=None,
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


# ------------------------------------------------------------------ corrections and the turn log

EPISODES = ("tenant:acme", "user:alice", "episode")


def said(text: str, **extra):
    """A logged turn, as the turn log proposes it."""
    return {"kind": "episode", "task_type": "turn", "title": "user (2 March 2025)",
            "content": f"user: {text}", "grounding": text, "confidence": 1.0, **extra}


def current(store, ns):
    return [(i.value.get("content") or i.value.get("summary") or i.value.get("value"))
            for i in store.search(ns)]


def test_a_superseded_fact_takes_the_turn_that_stated_it_along(store):
    store.promote([city("Lisbon"), said("I live in Lisbon, with my cat Miso.")],
                  run_id="r1", turn=1, **ALICE)
    out = store.promote([city("Porto", correction=True), said("Actually I moved to Porto.")],
                        run_id="r2", turn=2, **ALICE)
    assert [(o.kind, o.outcome) for o in out] == [("fact", "superseded"), ("episode", "written")]
    assert current(store, FACTS) == ["The user lives in Porto."]
    assert current(store, EPISODES) == ["user: Actually I moved to Porto."]  # Lisbon is gone
    old_turn = next(i for i in store.search(EPISODES, filter={"$history": True}, query="Lisbon")
                    if "Lisbon" in i.value["summary"])
    assert old_turn.memory["status"] == "superseded"
    assert old_turn.memory["superseded_by"] == out[0].id  # the fact that replaced it
    assert store.check_invariants().ok


def test_a_correction_naming_the_old_value_finds_the_fact_that_holds_it(store):
    tea = {"kind": "fact", "subject": "user", "predicate": "favourite_tea", "value": "green tea",
           "content": "The user's favourite tea is green tea.", "confidence": 0.9,
           "grounding": "My favourite tea is green tea."}
    first = store.promote([tea, said("My favourite tea is green tea.")], run_id="r1", turn=1,
                          **ALICE)
    fix = {"kind": "fact", "subject": "user", "value": "oolong", "replaces": "green tea",
           "content": "user (updated): it's oolong", "correction": True, "confidence": 0.9,
           "grounding": "it's oolong these days"}
    out = store.promote([fix], run_id="r2", turn=2, **ALICE)
    assert out[0].outcome == "superseded" and out[0].key == first[0].key  # the same record
    assert current(store, FACTS) == ["The user's favourite tea is oolong."]  # its old content
    assert current(store, EPISODES) == []  # the turn that said green tea went with it


def test_a_correction_of_what_only_a_turn_said_supersedes_that_turn(store):
    store.promote([said("Our standup is at 9:15 every morning.")], run_id="r1", turn=1, **ALICE)
    fix = {"kind": "fact", "value": "9:45", "replaces": "9:15", "confidence": 0.9,
           "content": "user (updated): standup at 9:45", "correction": True,
           "grounding": "it's actually 9:45"}
    out = store.promote([fix, said("sorry, it's actually 9:45")], run_id="r2", turn=2, **ALICE)
    assert [(o.kind, o.outcome) for o in out] == [("fact", "written"), ("episode", "written")]
    # the correcting words as said, never the old turn with the new value swapped in
    assert current(store, FACTS) == ["user (updated): standup at 9:45"]
    assert "9:15" not in json.dumps(current(store, EPISODES))


def test_a_withdrawal_of_a_preference_keeps_what_else_the_turn_said(store):
    tables = {"kind": "preference", "key": "output_format", "confidence": 0.9,
              "value": "markdown tables when comparing", "grounding": "Use markdown tables"}
    store.promote([tables], run_id="r1", turn=1, **ALICE)
    stop = {"kind": "fact", "subject": "user", "replaces": "tables", "correction": True,
            "content": "user: Plain prose comparisons please.", "confidence": 0.9,
            "grounding": "Stop with the tables. Plain prose comparisons please."}
    [out] = store.promote([stop], run_id="r2", turn=2, **ALICE)
    assert (out.kind, out.outcome, out.key) == ("preference", "superseded", "output_format")
    [pref] = store.search(("tenant:acme", "user:alice", "preference"))
    assert pref.value["value"] == "Plain prose comparisons please."


def test_a_tenant_wide_correction_retires_the_turn_in_the_callers_own_log(store):
    store.promote([said("We track our tasks on a whiteboard in the office.")], run_id="r1",
                  turn=1, **ALICE)
    fix = {"kind": "fact", "subject": "user", "scope": "tenant", "value": "shared spreadsheet",
           "replaces": "whiteboard", "correction": True, "confidence": 0.9,
           "content": "The user's organisation tasks live in a shared spreadsheet.",
           "grounding": "Our tasks live in a shared spreadsheet."}
    store.promote([fix], run_id="r2", turn=2, **ALICE)
    assert "whiteboard" not in json.dumps(current(store, EPISODES))


def test_a_correction_nothing_holds(store):
    lone = {"kind": "fact", "value": "Porto", "replaces": "Atlantis", "confidence": 0.9,
            "content": "user: Porto", "correction": True, "grounding": "Porto"}
    [out] = store.promote([lone], run_id="r1", turn=1, **ALICE)
    assert out.outcome == "rejected" and "'Atlantis'" in out.reason
    # a proposal complete on its own is written as it is
    [out] = store.promote([city("Porto", replaces="Atlantis", correction=True)], run_id="r1",
                          turn=1, **ALICE)
    assert out.outcome == "written"


def test_a_correction_never_rewrites_a_record_about_something_else(store):
    dog = {"kind": "fact", "subject": "user", "predicate": "dog_name", "value": "Rex",
           "content": "The user's dog's name is Rex.", "confidence": 0.9, "grounding": "Rex"}
    store.promote([dog], run_id="r1", turn=1, **ALICE)
    # a home city that claims to replace "Rex" (a wrong guess upstream) leaves the dog alone
    out = store.promote([city("Paris", replaces="Rex", correction=True)], run_id="r2", turn=2,
                        **ALICE)
    assert out[0].outcome == "written" and out[0].key == "fact:user:home_city"
    assert sorted(current(store, FACTS)) == ["The user lives in Paris.",
                                             "The user's dog's name is Rex."]


def test_restating_a_preference_or_a_turn_is_a_repetition_not_a_new_version(store):
    """The gate compares the content hash of the record it would write with the stored one
    (a preference's value, an episode's title and summary), so a restatement counts."""
    tone = {"kind": "preference", "key": "tone", "value": "terse", "confidence": 0.9}
    turn = said("Our standup is at 9:30.")
    first = store.promote([tone, turn], run_id="r1", turn=1, **ALICE)
    again = store.promote([tone, turn], run_id="r2", turn=7, **ALICE)
    assert [o.outcome for o in first] == ["written", "written"]
    assert [o.outcome for o in again] == ["deduplicated", "deduplicated"]
    assert [o.id for o in again] == [o.id for o in first]
    assert store.get(EPISODES, first[1].key).memory["repetitions"] == 2
