"""Maintenance on every backend: compaction, consolidation, the observation engine,
feedback, the fixed order, the graph, and maintenance while the chat graph writes.

Time moves with the injected `FakeClock`; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_typed_memory.errors import ConfigurationError, InvalidRecord
from langgraph_typed_memory.graph import create_memory_chat_graph
from langgraph_typed_memory.maintenance import (
    STEPS,
    InvalidVerdict,
    UnknownMemory,
    create_memory_maintenance_graph,
    normalize_maintenance,
)
from langgraph_typed_memory.maintenance.patterns import Evidence, detect_patterns
from langgraph_typed_memory.scoring import freshness, tier_half_life
from tests.conftest import FakeClock, hash_index
from tests.fake_models import FailingChatModel, ScriptedChatModel

ROOT = Path(__file__).resolve().parents[2]
EP = ("tenant:acme", "user:alice", "episode")
FACT = ("tenant:acme", "user:alice", "fact")
OBS = ("tenant:acme", "user:alice", "observation")
PROC = ("tenant:acme", "user:alice", "procedure")


@pytest.fixture
def make(backend_store_factory: Any, clock: FakeClock) -> Any:
    def build(**kwargs: Any) -> Any:
        return backend_store_factory(hash_index(), clock=clock, **kwargs)
    return build


def episode(store: Any, key: str, title: str, summary: str, *, run: str | None = None,
            when: Any = None, ns: tuple[str, ...] = EP) -> None:
    value: dict[str, Any] = {"title": title, "summary": summary, "source_run_id": run}
    if when is not None:
        value["occurred_at"] = when.isoformat()
    store.put(ns, key, value)


def statuses(store: Any, ns: tuple[str, ...], keys: list[str]) -> list[str]:
    return [store.get(ns, k).memory["status"] for k in keys]


def active(store: Any, ns: tuple[str, ...]) -> list[Any]:
    return list(store.search(ns, limit=100))


# ----------------------------------------------------------------------------- compaction


def test_session_summary_compacts_a_finished_session(make, clock):
    store = make()
    for i, text in enumerate(["Opened ticket 981 about a double charge.",
                              "Refunded 30 EUR on ticket 981.",
                              "Closed ticket 981 after the customer confirmed."]):
        episode(store, f"a{i}", f"Billing step {i}", text, run="run-a")
    episode(store, "b0", "Password reset", "Reset the password of the admin account.",
            run="run-b")
    clock.advance(minutes=30)
    assert store.maintain().step("compaction").counts == {}  # run-a is not finished yet
    clock.advance(hours=2)
    report = store.maintain()
    assert report.step("compaction").counts == {"session_groups": 1, "episodes_compacted": 3}
    assert statuses(store, EP, ["a0", "a1", "a2", "b0"]) == ["compacted"] * 3 + ["active"]
    [summary] = [i for i in active(store, EP) if i.key.startswith("compact:")]
    assert summary.value["task_type"] == "session_summary"
    assert summary.value["compact_group"] == "session:run-a"
    assert summary.value["source_run_id"] == "run-a"
    assert summary.value["metadata"]["compacted_from"] == ["a0", "a1", "a2"]
    assert "Refunded 30 EUR" in summary.value["summary"]
    hits = store.search(EP, query="refund ticket 981")
    assert [h.key for h in hits][0] == summary.key  # the summary ranks first
    # the sources are found by their words (full text) still, never by their dropped vectors
    sources = [h for h in hits if h.key.startswith("a")]
    assert sources and all(h.memory["status"] == "compacted" for h in sources)
    assert all(h.memory.get("vector_rank") is None for h in sources)
    source = store.history(EP, "a1")[0]  # the source stays readable, pointing at its group
    assert source.status == "compacted" and source.memory["superseded_by"] == summary.memory["id"]
    assert store.audit(EP, "a1")[-1]["to_status"] == "compacted"
    assert store.maintain().changed == 0  # idempotent
    assert store.check_invariants().ok


def test_weekly_then_monthly_tiers(make, clock):
    store = make()
    start = clock.now
    for i, days in enumerate([45, 44, 38, 10]):  # two ISO weeks old enough, one recent
        episode(store, f"e{i}", f"Deploy {i}", f"Deployed release 1.{i} to production.",
                when=start - timedelta(days=days))
    report = store.maintain()
    assert report.step("compaction").counts == {"weekly_groups": 2, "episodes_compacted": 3}
    assert statuses(store, EP, ["e0", "e1", "e2", "e3"]) == ["compacted"] * 3 + ["active"]
    weekly = [i for i in active(store, EP) if i.value["compaction_tier"] == 1]
    assert sorted(len(w.value["metadata"]["source_ids"]) for w in weekly) == [1, 2]
    assert all(w.value["compact_group"].startswith("week:") for w in weekly)
    assert store.maintain().changed == 0
    clock.advance(days=100)
    report = store.maintain()
    counts = report.step("compaction").counts
    assert counts["monthly_groups"] >= 1 and counts["weekly_groups"] == 1  # e3 aged too
    monthly = [i for i in active(store, EP) if i.value["compaction_tier"] == 2]
    assert monthly and all(m.value["compact_group"].startswith("month:") for m in monthly)
    assert all(store.get(EP, w.key).memory["status"] == "compacted" for w in weekly)
    assert store.maintain().changed == 0
    hits = store.search(EP, query="deployed release production")
    assert hits and hits[0].value["compaction_tier"] > 0  # a summary first
    assert all(h.value["compaction_tier"] > 0 or h.memory["status"] == "compacted" for h in hits)
    assert store.check_invariants().ok


def test_tier_aware_decay_ranks_older_summaries_higher(make, clock):
    store = make()
    old = clock.now - timedelta(days=200)
    for key, tier in (("raw", 0), ("monthly", 2)):
        store.put(EP, key, {"title": "Quarterly audit", "summary": "Ran the quarterly audit.",
                            "compaction_tier": tier, "occurred_at": old.isoformat()})
    hits = store.search(EP, query="quarterly audit")
    assert [h.key for h in hits] == ["monthly", "raw"]
    assert hits[0].score > hits[1].score
    assert tier_half_life(30, 2) == 360 and freshness(360, tier_half_life(30, 2)) == 0.5


def test_compaction_summary_from_a_model_and_its_fallback(make, clock):
    store = make()
    for i in range(2):
        episode(store, f"e{i}", f"Step {i}", f"Did step {i}.", when=clock.now - timedelta(days=40))
    model = ScriptedChatModel.of("The user finished both setup steps.")
    report = store.maintain(model=model)
    assert report.step("compaction").counts["weekly_groups"] == 1
    [weekly] = active(store, EP)
    assert weekly.value["summary"] == "The user finished both setup steps."
    assert "Step 0" in model.prompts[0][1].content
    other = make()
    episode(other, "x", "Step x", "Did step x.", when=clock.now - timedelta(days=40))
    report = other.maintain(model=FailingChatModel())
    assert report.step("compaction").counts["weekly_groups"] == 1
    assert "extractive summary used" in report.step("compaction").notes[0]
    assert active(other, EP)[0].value["summary"] == "Step x: Did step x."


def test_maintain_one_tenant_leaves_others(make, clock):
    store = make()
    old = clock.now - timedelta(days=40)
    episode(store, "a", "Acme", "Acme work.", when=old)
    episode(store, "g", "Globex", "Globex work.", when=old, ns=("tenant:globex", "episode"))
    store.maintain(tenant_id="acme")
    assert store.get(EP, "a").memory["status"] == "compacted"
    assert store.get(("tenant:globex", "episode"), "g").memory["status"] == "active"


# ----------------------------------------------------------------------------- consolidation


def test_consolidation_merges_near_identical_records(make, clock):
    store = make()
    store.put(FACT, "f1", {"subject": "user", "predicate": "allergy",
                           "content": "The user is allergic to peanuts.", "confidence": 0.7})
    store.put(FACT, "f2", {"subject": "User", "predicate": "allergy",
                           "content": "user is ALLERGIC to peanuts", "confidence": 0.9})
    store.put(FACT, "f3", {"subject": "user", "predicate": "allergy",
                           "content": "The user is allergic to shellfish."})
    bob = ("tenant:acme", "user:bob", "fact")
    store.put(bob, "f1", {"subject": "user", "predicate": "allergy",
                          "content": "The user is allergic to peanuts."})
    report = store.maintain()
    assert report.step("consolidation").counts == {"clusters": 1, "records_merged": 1}
    assert statuses(store, FACT, ["f1", "f2", "f3"]) == ["merged", "active", "active"]
    survivor = store.get(FACT, "f2")
    assert survivor.memory["repetitions"] == 2
    assert store.get(FACT, "f1").memory["superseded_by"] == survivor.memory["id"]
    assert store.get(bob, "f1").memory["status"] == "active"  # other scope untouched
    assert [h.key for h in store.search(FACT, query="peanuts")][0] == "f2"
    assert "f1" not in [h.key for h in store.search(FACT, query="peanuts")]
    assert store.audit(FACT, "f1")[-1]["actor"] == "maintenance:consolidation"
    assert store.maintain().changed == 0


# ----------------------------------------------------------------------------- detection


LINES = ["Ran the flaky payment integration tests twice before merging.",
         "Asked for the weekly revenue report as a CSV export.",
         "Pinned the numpy version in the requirements file.",
         "Rotated the staging database credentials after the incident.",
         "Translated the release notes into German for the Berlin office."]


def sessions(store: Any, first: int, last: int, lines: list[str]) -> None:
    for s in range(first, last):
        for j, line in enumerate(lines):
            episode(store, f"s{s}-{j}", f"Session {s} task {j}", line, run=f"run-{s}")


def test_detection_needs_three_sessions_and_writes_at_most_three(make, clock):
    store = make()
    sessions(store, 0, 2, LINES)
    assert store.maintain().step("detection").counts == {}  # two sessions: not a pattern
    sessions(store, 2, 3, LINES)
    report = store.maintain()
    assert report.step("detection").counts == {"observations_new": 3}
    first = active(store, OBS)
    assert len(first) == 3 and all(o.value["occurrences"] == 3 for o in first)
    assert all(o.value["quote"] in LINES for o in first)
    assert all(o.value["confidence_level"] == "medium" for o in first)
    report = store.maintain()
    assert report.step("detection").counts == {"observations_new": 2}
    assert len(active(store, OBS)) == 5
    assert store.maintain().changed == 0
    hits = store.search(OBS, query="numpy requirements")
    assert hits[0].value["quote"] == LINES[2]


def test_observation_promoted_after_48_hours_at_high_confidence(make, clock):
    store = make()
    sessions(store, 0, 3, LINES[:1])
    store.maintain()
    [obs] = active(store, OBS)
    assert not obs.value["promotion_candidate"]
    sessions(store, 3, 5, LINES[:1])  # five sessions: high confidence
    report = store.maintain()
    assert report.step("detection").counts == {"observations_updated": 1}
    obs = store.get(OBS, obs.key)
    assert obs.value["occurrences"] == 5 and obs.value["promotion_candidate"]
    assert report.step("promotion").counts == {"skipped_waiting_for_feedback_window": 1}
    clock.advance(hours=47)
    assert store.maintain().step("promotion").counts.get("procedures_promoted") is None
    clock.advance(hours=2)
    assert store.maintain().step("promotion").counts == {"procedures_promoted": 1}
    [proc] = store.search(PROC)
    assert proc.value["source_observation"] == obs.memory["id"]
    assert LINES[0] in proc.value["rule"]
    assert store.maintain().changed == 0


def test_dismissed_within_48_hours_is_never_promoted(make, clock):
    store = make()
    sessions(store, 0, 5, LINES[:1])
    store.maintain()
    [obs] = active(store, OBS)
    clock.advance(hours=10)
    result = store.feedback(OBS, obs.key, "dismissed", actor="alice")
    assert result.status == "active" and result.changed
    clock.advance(hours=50)
    store.maintain()
    assert list(store.search(PROC)) == []
    assert store.feedback(OBS, obs.key, "dismissed").changed is False


def test_model_detector_is_checked_against_the_evidence(make, clock):
    store = make()
    sessions(store, 0, 3, ["Asked for answers in French."])
    ids = [store.get(EP, f"s{s}-0").memory["id"] for s in range(3)]
    from tests.fake_models import tool_reply

    model = ScriptedChatModel.of(tool_reply("ModelPatterns", {"patterns": [
        {"category": "language", "quote": "The user wants French.",
         "rule": "Answer in French.", "evidence_ids": ids},
        {"category": "made_up", "quote": "Likes jazz.", "rule": "Talk jazz.",
         "evidence_ids": ids[:1] + ["nope"]}]}))
    report = store.maintain(model=model)
    assert report.step("detection").counts == {"observations_new": 1}
    [obs] = active(store, OBS)
    assert obs.value["category"] == "language"
    assert obs.value["metadata"]["rule"] == "Answer in French."


def test_pure_detector_ignores_repeats_within_one_session():
    ev = [Evidence(f"e{i}", "Exported the ledger to CSV.", "run-1") for i in range(5)]
    assert detect_patterns(ev) == []


# ----------------------------------------------------------------------------- feedback


def test_feedback_correct_promotes_and_wrong_demotes(make, clock):
    store = make()
    sessions(store, 0, 3, LINES[:1])
    store.maintain()
    [obs] = active(store, OBS)
    result = store.feedback(OBS, obs.key, "correct", actor="alice", reason="yes, always")
    assert result.confidence == 0.8 and len(result.promoted) == 1  # no 48 h wait
    [proc] = store.search(PROC)
    assert store.feedback(OBS, obs.key, "correct").promoted == []
    assert store.get(PROC, proc.key).value["confirmation_count"] == 1
    result = store.feedback(OBS, obs.key, "wrong", actor="alice", reason="one-off")
    assert result.status == "rejected" and result.revoked == [proc.memory["id"]]
    assert store.get(OBS, obs.key).memory["status"] == "rejected"
    assert list(store.search(PROC)) == []
    assert list(store.search(OBS, query="flaky payment")) == []  # its index entries dropped
    events = store.audit(PROC, proc.key)
    assert events[-1]["to_status"] == "revoked" and "marked wrong" in events[-1]["reason"]
    assert store.audit(OBS, obs.key)[-1]["actor"] == "alice"
    sessions(store, 3, 8, LINES[:1])  # the pattern keeps recurring: the counter-signal holds
    clock.advance(days=3)
    assert store.maintain().step("detection").counts == {}
    assert list(store.search(PROC)) == [] and active(store, OBS) == []
    assert store.feedback(OBS, obs.key, "wrong").changed is False
    assert store.check_invariants().ok


def test_feedback_on_a_procedure_rejects_its_observation(make, clock):
    store = make()
    sessions(store, 0, 3, LINES[:1])
    store.maintain()
    [obs] = active(store, OBS)
    store.feedback(OBS, obs.key, "correct")
    [proc] = store.search(PROC)
    result = store.feedback(PROC, proc.key, "wrong")
    assert result.status == "revoked"
    assert store.get(OBS, obs.key).memory["status"] == "rejected"


def test_feedback_errors_are_typed_and_write_nothing(make, clock):
    store = make()
    store.put(OBS, "o1", {"category": "style", "quote": "Uses tabs."})
    before = store.audit(OBS, "o1")
    with pytest.raises(InvalidVerdict, match="'meh'"):
        store.feedback(OBS, "o1", "meh")  # type: ignore[arg-type]
    with pytest.raises(UnknownMemory, match="'missing'"):
        store.feedback(OBS, "missing", "wrong")
    with pytest.raises(InvalidRecord, match="observation and procedure"):
        store.feedback(FACT, "o1", "wrong")
    assert store.audit(OBS, "o1") == before
    with pytest.raises(ConfigurationError, match="nope"):
        normalize_maintenance({"nope": 1})


# ----------------------------------------------------------------------------- order, graph


def test_fixed_order_and_progress(make, clock):
    store = make()
    sessions(store, 0, 3, LINES[:2])
    calls: list[tuple[str, int, int]] = []
    report = store.maintain(progress=lambda step, done, total: calls.append((step, done, total)))
    assert [s.name for s in report.steps] == list(STEPS)
    order = [STEPS.index(step) for step, _, _ in calls]
    assert order == sorted(order) and {c[0] for c in calls} >= {"detection", "sweeps"}
    assert all(0 <= done <= total for _, done, total in calls)
    assert json.dumps(report.dict())


def test_maintenance_graph(make, clock):
    store = make()
    episode(store, "e", "Old", "Old work.", when=clock.now - timedelta(days=40))
    out = create_memory_maintenance_graph(store).invoke({"tenant_id": "acme"})
    steps = out["report"]["steps"]
    assert [s["name"] for s in steps] == list(STEPS)
    assert steps[0]["counts"] == {"weekly_groups": 1, "episodes_compacted": 1}
    out = create_memory_maintenance_graph(store).invoke({})
    assert sum(sum(s["counts"].values()) for s in out["report"]["steps"]) == 0
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["graphs"]["memory_maintenance"] == "./graphs/memory_maintenance.py:graph"


def test_async_maintain_and_feedback(make, clock):
    store = make()
    sessions(store, 0, 3, LINES[:1])

    async def main() -> Any:
        report = await store.amaintain()
        [obs] = active(store, OBS)
        return report, await store.afeedback(OBS, obs.key, "correct")

    report, result = asyncio.run(main())
    assert report.step("detection").counts == {"observations_new": 1}
    assert result.promoted


def test_maintain_while_the_chat_graph_writes(make, clock):
    store = make()
    old = clock.now - timedelta(days=40)
    for i in range(12):
        episode(store, f"e{i}", f"Old {i}", f"Old work {i}.", when=old + timedelta(days=i % 3))
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    errors: list[BaseException] = []

    def chat() -> None:
        try:
            for city in ("Lyon", "Graz", "Porto", "Turku", "Ghent", "Brno"):
                graph.invoke({"messages": [HumanMessage(f"I live in {city}.")]},
                             {"configurable": {"thread_id": "t", "tenant_id": "acme",
                                               "user_id": "alice"}})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    writer = threading.Thread(target=chat)
    writer.start()
    reports = [store.maintain() for _ in range(3)]
    writer.join()
    assert not errors
    assert sum(r.step("compaction").counts.get("episodes_compacted", 0) for r in reports) == 12
    assert len(store.history(FACT, "fact:user:home_city")) == 6
    assert store.maintain().changed == 0
    assert store.check_invariants().ok
