"""The turn log on every backend: what a conversation leaves, imported or live, and what
compaction does with it (a session summary, and every turn still found by its words)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from langgraph_typed_memory.conversation_import import TurnWriter, import_conversation
from tests.conftest import FakeClock, hash_index

EP = ("tenant:acme", "user:alice", "episode")
FACTS = ("tenant:acme", "user:alice", "fact")
SESSION = [
    "Hi!",
    "Our standup is at 9:30 every weekday.",
    "The client demo went badly because the projector died halfway through.",
    "I live in Lisbon.",
    "Thanks, that's all.",
]


def test_a_session_leaves_one_episode_per_kept_turn(backend_store_factory: Any,
                                                    clock: FakeClock) -> None:
    store = backend_store_factory(hash_index(), clock=clock)
    report = import_conversation(store, [HumanMessage(t) for t in SESSION],
                                 tenant_id="acme", user_id="alice", session_id="monday")
    assert report.prefilter == {"too_short": 1, "chit_chat": 1, "kept": 3}
    turns = sorted(store.search(EP, limit=50), key=lambda i: i.value["summary"])
    assert [t.value["summary"] for t in turns] == [
        "user: I live in Lisbon.", "user: Our standup is at 9:30 every weekday.",
        "user: The client demo went badly because the projector died halfway through."]
    assert all(t.value["task_type"] == "turn" and t.value["metadata"]["session_id"] == "monday"
               for t in turns)
    salience = {t.value["summary"][6:16]: t.value["salience"] for t in turns}
    assert salience["I live in "] == 0.8  # a stated fact
    assert salience["The client"] == 0.8  # a failure
    assert sorted(f.value["content"] for f in store.search(FACTS)) == [
        "The user lives in Lisbon.", "The user's organisation standup is at 9:30 every weekday."]
    # the one no rule extracts is found by a question that shares a word with it
    [hit] = [h for h in store.search(EP, query="what went wrong at the client demo?", limit=3)
             if "projector" in h.value["summary"]]
    assert hit.memory["provenance"]["source_run_id"] == report.run_id


def test_compaction_folds_a_session_and_keeps_every_turn_findable(
        backend_store_factory: Any, clock: FakeClock) -> None:
    store = backend_store_factory(hash_index(), clock=clock)
    writer = TurnWriter(store, tenant_id="acme", user_id="alice", session_id="monday")
    for text in SESSION:
        writer.write(HumanMessage(text), reply=AIMessage("Noted."))
    clock.advance(hours=3)  # the session is over
    report = store.maintain()
    assert report.step("compaction").counts == {"session_groups": 1, "episodes_compacted": 3}
    [summary] = [i for i in store.search(EP, limit=50) if i.key.startswith("compact:")]
    assert summary.value["task_type"] == "session_summary"
    assert summary.value["compact_group"] == "session:monday"
    # each turn the summary folded is still found by its own words, lexically
    hits = store.search(EP, query="projector died halfway", limit=5)
    turn = next(h for h in hits
                if h.value.get("task_type") == "turn" and "projector" in h.value["summary"])
    assert turn.memory["status"] == "compacted" and "projector" in turn.value["summary"]
    assert turn.memory["superseded_by"] == summary.memory["id"]
    clock.advance(days=2)
    assert store.maintain().changed == 0  # idempotent
    assert store.check_invariants().ok


def test_a_week_of_sessions_keeps_every_turns_line_without_repeated_labels(
        backend_store_factory: Any, clock: FakeClock) -> None:
    """A session summary lists its turns as they were said (no day label repeated before
    each); a week's summary of sessions keeps every one of their lines, not each session's
    first."""
    store = backend_store_factory(hash_index(), clock=clock)
    for session in ("mon", "tue"):
        writer = TurnWriter(store, tenant_id="acme", user_id="alice", session_id=session)
        for text in SESSION:
            writer.write(HumanMessage(f"On {session}: {text}"), reply=AIMessage("Noted."))
        clock.advance(days=1)
    store.maintain()
    [monday] = [i for i in store.search(EP, limit=50)
                if i.value.get("compact_group") == "session:mon"]
    lines = monday.value["summary"].splitlines()
    assert len(lines) == len(SESSION) and all(line.startswith("user: On mon: ")
                                              for line in lines), lines
    clock.advance(days=30)  # the sessions' summaries fold into their week's
    store.maintain()
    [week] = [i for i in store.search(EP, limit=50)
              if str(i.value.get("compact_group", "")).startswith("week:")]
    assert week.value["summary"].splitlines() == [
        *lines, *(line.replace("On mon", "On tue") for line in lines)]
    assert store.check_invariants().ok


def test_a_correction_in_a_later_session_retires_the_turn_that_said_the_old_value(
        backend_store_factory: Any, clock: FakeClock) -> None:
    store = backend_store_factory(hash_index(), clock=clock)
    import_conversation(store, [HumanMessage("My favourite tea is green tea.")],
                        tenant_id="acme", user_id="alice", session_id="s1")
    clock.advance(days=1)
    import_conversation(
        store, [HumanMessage("Actually I've gone off green tea, it's oolong these days.")],
        tenant_id="acme", user_id="alice", session_id="s2")
    said = [i.value["summary"] for i in store.search(EP, limit=50)]
    assert said == ["user: Actually I've gone off green tea, it's oolong these days."]
    assert [f.value["content"] for f in store.search(FACTS)] == [
        "The user's favourite tea is oolong."]
    assert store.check_invariants().ok


def test_a_correction_retires_every_turn_that_stated_the_old_value(
        backend_store_factory: Any, clock: FakeClock) -> None:
    """Said on two days (the fact is written once, then restated), corrected on a third:
    neither day's turn is left to show the old value beside the new one."""
    store = backend_store_factory(hash_index(), clock=clock)
    for session in ("s1", "s2"):
        import_conversation(store, [HumanMessage("I live in Lyon.")], tenant_id="acme",
                            user_id="alice", session_id=session)
        clock.advance(days=1)
    import_conversation(store, [HumanMessage("I moved to Porto.")], tenant_id="acme",
                        user_id="alice", session_id="s3")
    said = [i.value["summary"] for i in store.search(EP, limit=50)]
    assert not [s for s in said if "Lyon" in s], said
    assert [f.value["content"] for f in store.search(FACTS)] == ["The user lives in Porto."]
    assert store.check_invariants().ok


def test_the_same_words_on_another_day_are_another_event(
        backend_store_factory: Any, clock: FakeClock) -> None:
    """Said again the same day, a repetition of one record; said on another day, an event of
    its own, every one of them kept and found."""
    store = backend_store_factory(hash_index(), clock=clock)
    said = "The deploy of the billing service failed again today."
    for week in range(3):
        for session in ("a", "b") if week == 0 else ("a",):
            import_conversation(store, [HumanMessage(said)], tenant_id="acme",
                                user_id="alice", session_id=f"{session}{week}")
        clock.advance(days=7)
    found = [i for i in store.search(EP, query="billing deploy failed", limit=10)
             if i.value.get("task_type") == "turn"]
    assert sorted(i.value["title"] for i in found) == [
        "user (1 January 2026)", "user (15 January 2026)", "user (8 January 2026)"]
    first = next(i for i in found if i.value["title"] == "user (1 January 2026)")
    assert first.memory["status"] == "active" and len(store.history(EP, first.key)) == 1
    assert first.memory["repetitions"] == 2  # sessions a0 and b0, one day
    assert store.check_invariants().ok


def test_a_turn_result_counts_the_candidates_that_correct_something(
        backend_store_factory: Any) -> None:
    store = backend_store_factory()
    writer = TurnWriter(store, tenant_id="acme", user_id="alice", session_id="s1")
    assert writer.write(HumanMessage("I live in Lisbon.")).corrections == 0
    assert writer.write(HumanMessage("Actually I moved to Porto.")).corrections == 1
