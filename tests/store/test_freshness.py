"""Freshness, expiry, garbage collection, access tracking, history mode and retention:
every transition on every backend, with the injected clock."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from langgraph_typed_memory import ConfigurationError, InvalidQuery, InvalidRecord
from langgraph_typed_memory.config import LifecycleConfig, normalize_lifecycle
from langgraph_typed_memory.lifecycle import (
    access_boost,
    check_retention_class,
    decay_freshness,
    gc_due,
    next_status,
    on_access,
    retention_of,
    split_history,
)
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.protocol import Plan, Sql
from tests.conftest import hash_index

ALICE = ("tenant:acme", "user:alice")
FACTS = (*ALICE, "fact")
PREFS = (*ALICE, "preference")
YEARS_OF_DISUSE = 800  # a fact (half-life 180 d) expires after ~778 days without use


def fact(content: str, confidence: float = 0.8, **extra: Any) -> dict[str, Any]:
    return {"subject": "alice", "predicate": "note", "content": content,
            "confidence": confidence, **extra}


def query(store: Any, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Read the database outside the engine's read paths (any backend)."""

    def plan() -> Plan[list[tuple[Any, ...]]]:
        return (yield Sql(sql, params or []))

    return list(store._run(plan()))


USES = (f"SELECT m.key, {q.ACCESS_COUNT}, {q.LAST_ACCESS} FROM memories m {q.ACCESS_JOIN} "
        "WHERE m.key IN ({keys}) ORDER BY m.key")
"""The retrievals of records by key, as the sweeps and an export read them."""


def uses(store: Any, *keys: str) -> list[tuple[Any, ...]]:
    """(key, retrievals, last use) of each record, in key order."""
    return query(store, USES.format(keys=", ".join("?" for _ in keys)), list(keys))


def count_of(store: Any, key: str) -> int:
    return int(uses(store, key)[0][1])


def logged(store: Any, key: str) -> int:
    """Uses of the record `key` in the access log, not yet folded into its row."""
    rows = query(store, "SELECT sum(a.n) FROM memory_access_log a JOIN memories m "
                        "ON m.id = a.memory_id WHERE m.key = ?", [key])
    return int(rows[0][0] or 0)


def status_of(store: Any, ns: tuple[str, ...], key: str) -> str | None:
    rows = query(store, "SELECT status FROM memories WHERE ns = ? AND key = ? "
                        "AND status NOT IN ('superseded', 'revoked')", [".".join(ns), key])
    return rows[0][0] if rows else None


def transitions(store: Any, ns: tuple[str, ...], key: str) -> list[tuple[Any, ...]]:
    return [(e["from_status"], e["to_status"], e["actor"]) for e in store.audit(ns, key)]


@pytest.fixture
def make(backend_store_factory: Any, clock: Any) -> Any:
    def build(**lifecycle: Any) -> Any:
        return backend_store_factory(hash_index(), clock=clock, lifecycle=lifecycle or None)

    return build


# ------------------------------------------------------------------ expiry and access


def test_unused_fact_expires_and_access_brings_it_back(make, clock):
    store = make()
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    store.put(FACTS, "pet", fact("Alice has a cat named Tom"))
    clock.advance(days=700)
    assert store.sweep().expired == 0  # freshness 2^(-700/180) = 0.068 > 0.05
    store.get(FACTS, "pet")  # used: its clock restarts
    clock.advance(days=YEARS_OF_DISUSE - 700)
    report = store.sweep()
    assert report.freshness.expired == {"fact": 1} and report.forgotten == 0
    assert status_of(store, FACTS, "city") == "expired"
    assert status_of(store, FACTS, "pet") == "active"
    event = store.audit(FACTS, "city")[-1]
    assert (event["from_status"], event["to_status"], event["actor"]) == (
        "active", "expired", "maintenance")
    assert "freshness 0.04" in event["reason"] and "floor 0.05" in event["reason"]
    # Invisible to normal search, in every mode...
    assert "city" not in [i.key for i in store.search(FACTS, query="Alice Lyon")]
    assert [i.key for i in store.search(FACTS)] == ["pet"]
    # ...but reading it through get reverses the expiry (audited) and it is found again.
    item = store.get(FACTS, "city")
    assert item.memory["status"] == "active" and item.memory["reactivated"] is True
    assert transitions(store, FACTS, "city")[-1] == ("expired", "active", "store.get")
    assert store.search(FACTS, query="Alice Lyon")[0].key == "city"
    assert store.sweep().expired == 0  # the read restarted its clock


def test_restating_an_expired_fact_through_the_gate_brings_it_back(make, clock):
    store = make()
    said = {"kind": "fact", "subject": "alice", "predicate": "home_city",
            "content": "Alice lives in Lyon.", "confidence": 0.9}
    [first] = store.promote([said], tenant_id="acme", user_id="alice", run_id="r1")
    clock.advance(days=YEARS_OF_DISUSE)
    assert store.sweep().expired == 1
    assert status_of(store, FACTS, first.key) == "expired"
    [again] = store.promote([said], tenant_id="acme", user_id="alice", run_id="r2")
    assert (again.outcome, again.id) == ("deduplicated", first.id)
    assert status_of(store, FACTS, first.key) == "active"
    event = store.audit(FACTS, first.key)[-1]
    assert (event["from_status"], event["to_status"]) == ("expired", "active")
    assert "restated while expired" in event["reason"]
    assert store.search(FACTS, query="Alice Lyon")[0].key == first.key
    assert store.sweep().expired == 0  # the restatement restarted its clock


def test_access_boost_delays_expiry(make, clock):
    store = make()
    store.put(FACTS, "used", fact("the garden has red tulips"))
    store.put(FACTS, "unused", fact("the garage has a blue door"))
    for _ in range(5):  # five retrievals now: boost 1.5, same last use as the other
        assert [i.key for i in store.search(FACTS, query="red tulips")][0] == "used"
    clock.advance(days=YEARS_OF_DISUSE)
    assert store.sweep().freshness.expired == {"fact": 1}
    assert status_of(store, FACTS, "used") == "active"  # 0.046 x 1.5 = 0.069
    assert status_of(store, FACTS, "unused") == "expired"
    clock.advance(days=120)  # 0.029 x 1.5 = 0.044: the boost is capped, not a pardon
    assert store.sweep().freshness.expired == {"fact": 1}


def test_procedures_policies_preferences_and_episodes_never_expire(make, clock):
    store = make()
    store.put((*ALICE, "agent:bot", "procedure"), "p", {"rule": "Confirm the order id."})
    store.put(("tenant:acme", "policy"), "refunds", {"value": {"max": 500}, "created_by": "ops"})
    store.put(PREFS, "tone", {"value": "terse"})
    store.put((*ALICE, "episode"), "e", {"title": "Refund", "summary": "Refunded order 42."})
    store.put((*ALICE, "observation"), "o", {"category": "style", "quote": "prefers lists"})
    clock.advance(days=10 * 365)
    report = store.sweep()
    assert report.freshness.expired == {"observation": 1}  # observations do decay (30 d)
    assert store.search((*ALICE, "agent:bot", "procedure"))[0].key == "p"
    assert store.search(("tenant:acme", "policy"))[0].key == "refunds"
    assert store.search(PREFS)[0].key == "tone"
    assert store.search((*ALICE, "episode"), query="refund order")[0].key == "e"


class HeldFlushes:
    """Stands in for the store's background writer (`_background_runner()`): holds each
    access flush until `release`, and fails the first one if asked, after it took the buffer."""

    def __init__(self, store: Any, *, fail_first: bool = False) -> None:
        self.runner, self.fail_first = store._background_runner(), fail_first
        assert self.runner is not None
        self.threads: list[threading.Thread] = []
        self.entered, self.released = threading.Event(), threading.Event()
        store._background_runner = lambda: self

    def __call__(self, plan: Any) -> Any:
        self.threads.append(threading.current_thread())
        self.entered.set()
        assert self.released.wait(timeout=30)
        if self.fail_first and len(self.threads) == 1:
            started = plan()
            next(started)  # the buffer is taken; the UPDATE fails
            started.throw(ConnectionError("the database went away"))
        return self.runner(plan)

    def started(self) -> None:
        assert self.entered.wait(timeout=30), "no background flush started"


def test_access_counts_are_buffered_then_written_in_one_batch(make, clock):
    store = make()  # default: flush after 2,048 pending records or 60 s, or when asked
    timer = [0.0]
    store.records.access.use_timer(lambda: timer[0])
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    clock.advance(seconds=5)
    store.get(FACTS, "city")
    store.search(FACTS, query="Lyon")
    assert uses(store, "city") == [("city", 0, None)] and logged(store, "city") == 0  # no write
    store.put(FACTS, "other", fact("Alice owns a bike"))  # not due: the write leaves them
    assert logged(store, "city") == 0
    timer[0] += 61
    store.put(FACTS, "more", fact("Alice owns a kayak"))  # due: they ride along, to the log
    assert logged(store, "city") == 2 and uses(store, "city") == [("city", 0, None)]
    assert store.flush_access() == 0  # nothing buffered; the log is folded
    [(_, count, at)] = uses(store, "city")
    assert count == 2 and at == pytest.approx(clock().timestamp()) and logged(store, "city") == 0
    rows = "SELECT access_count, last_accessed_at FROM memories WHERE key = 'city'"
    assert query(store, rows) == [(0, None)]  # the record's own row was never rewritten

    eager = make(access_flush_every=1)
    eager.put(FACTS, "city", fact("Alice lives in Lyon"))
    held = HeldFlushes(eager)
    eager.search(FACTS, query="Lyon")  # due: returns while its flush waits in the background
    held.started()
    eager.search(FACTS, query="Lyon")  # due again while one runs: no second thread
    assert count_of(eager, "city") == 0 and logged(eager, "city") == 0  # neither read wrote
    assert held.threads[0] is not threading.current_thread() and len(held.threads) == 1
    held.released.set()
    assert eager.flush_access() == 0  # waits for the background flush, which took both
    assert count_of(eager, "city") == 2


def test_access_flush_after_the_configured_time(make, clock):
    store = make(access_flush_seconds=30)
    store.records.access.use_timer(lambda: clock.now.timestamp())
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    store.get(FACTS, "city")
    assert logged(store, "city") == 0
    clock.advance(seconds=31)
    held = HeldFlushes(store)
    store.get(FACTS, "city")
    held.started()
    assert logged(store, "city") == 0  # the read returned before anything was written
    held.released.set()
    store.flush_access()
    assert count_of(store, "city") == 2


def test_flush_access_writes_the_pending_counts_and_says_how_many(make):
    store = make()
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    store.put(FACTS, "pet", fact("Alice has a cat named Tom"))
    for key in ("city", "pet", "city"):
        store.get(FACTS, key)
    assert store.flush_access() == 2 and store.flush_access() == 0
    assert [u[:2] for u in uses(store, "city", "pet")] == [("city", 2), ("pet", 1)]
    store.get(FACTS, "pet")
    assert _await(store, store.aflush_access()) == 1
    assert [u[:2] for u in uses(store, "city", "pet")] == [("city", 2), ("pet", 2)]


def test_a_failed_background_flush_keeps_the_counts_for_the_next(
    make, clock, monkeypatch, caplog
):
    store = make(access_flush_every=1, access_flush_seconds=30)
    store.records.access.use_timer(lambda: clock.now.timestamp())
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    escaped: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", escaped.append)
    held = HeldFlushes(store, fail_first=True)
    held.released.set()
    assert store.get(FACTS, "city") is not None  # the failing flush is not the read's
    held.started()
    with store._flushing:  # the failed flush is over
        assert escaped == [] and "the database went away" in caplog.text
    store.get(FACTS, "city")  # due by count, but reads wait a period after a failure
    assert len(held.threads) == 1
    clock.advance(seconds=31)
    store.get(FACTS, "city")
    with store._flushing:
        assert len(held.threads) == 2
    assert logged(store, "city") == 3
    assert store.flush_access() == 0
    assert count_of(store, "city") == 3


def test_a_store_opened_from_a_path_writes_pending_counts_when_closed(tmp_path):
    from langgraph_typed_memory import SqliteMemoryStore

    path = str(tmp_path / "exit.db")
    with SqliteMemoryStore.from_conn_string(path) as store:
        store.setup()
        store.put(FACTS, "city", fact("Alice lives in Lyon"))
        store.get(FACTS, "city")  # buffered: no write, no flush due
    with SqliteMemoryStore.from_conn_string(path) as store:
        assert count_of(store, "city") == 1


def test_a_store_on_a_plain_sqlite3_connection_flushes_inline():
    """Only `connect_sqlite`'s connections wait in `close` for a store's thread: on any other,
    a background flush could crash the process, so the read writes."""
    import sqlite3

    from langgraph_typed_memory import SqliteMemoryStore

    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    store = SqliteMemoryStore(conn, lifecycle={"access_flush_every": 1})
    store.setup()
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    assert store._background_runner() is None
    store.get(FACTS, "city")
    assert logged(store, "city") == 1
    conn.close()


def test_without_a_store_hook_the_engine_flushes_inline(make):
    store = make(access_flush_every=1)
    store.records.access.on_due = None  # the engine alone: a due flush runs in the read
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    store.get(FACTS, "city")
    assert logged(store, "city") == 1


# ------------------------------------------------------------------ garbage collection


def test_gc_forgets_only_long_expired_low_confidence_records(make, clock):
    store = make()
    store.put(FACTS, "weak", fact("Alice maybe likes jazz", confidence=0.3))
    store.put(FACTS, "strong", fact("Alice works at Initech", confidence=0.9))
    clock.advance(days=YEARS_OF_DISUSE)
    assert store.sweep().freshness.expired == {"fact": 2}
    clock.advance(days=179)
    assert store.sweep().forgotten == 0  # expired for 179 days: not long enough
    clock.advance(days=2)
    report = store.sweep()
    assert (report.gc.forgotten, report.gc.older_versions) == (1, 0)
    assert store.get(FACTS, "weak") is None and store.history(FACTS, "weak") == []
    last = store.audit(FACTS, "weak")[-1]
    assert (last["from_status"], last["to_status"], last["actor"]) == (
        "expired", "forgotten", "maintenance")
    assert "confidence 0.3 < 0.5" in last["reason"]
    assert status_of(store, FACTS, "strong") == "expired"  # confident: kept, reversible
    ids = [r[0] for r in query(store, "SELECT seq FROM memories")]
    assert query(store, "SELECT count(*) FROM memory_vectors")[0][0] == len(ids) == 1
    past = store.search(FACTS, query="jazz", filter={"$history": True})
    assert "weak" not in [i.key for i in past]  # gone from every index, history mode too


def test_gc_takes_the_older_versions_with_it(make, clock):
    store = make()
    store.put(FACTS, "music", fact("Alice likes rock", confidence=0.3))
    store.put(FACTS, "music", fact("Alice likes jazz", confidence=0.3))
    old_id = store.history(FACTS, "music")[1].memory["id"]
    clock.advance(days=YEARS_OF_DISUSE + 200)
    store.sweep(gc=False)
    clock.advance(days=200)
    report = store.sweep(freshness=False, retention=False)
    assert (report.gc.forgotten, report.gc.older_versions) == (1, 1)
    assert store.history(FACTS, "music") == []
    old_events = [e for e in store.audit(FACTS, "music") if e["memory_id"] == old_id]
    assert old_events[-1]["to_status"] == "forgotten"
    assert "older version of" in old_events[-1]["reason"]
    assert store.check_invariants().ok


# ------------------------------------------------------------------ history mode


def test_history_mode_includes_superseded_and_expired_records(make, clock):
    store = make()
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    store.put(FACTS, "city", fact("Alice lives in Paris"))
    store.put(FACTS, "job", fact("Alice works as a baker in Paris"))
    clock.advance(days=400)
    store.get(FACTS, "city")  # keeps the current city fresh
    clock.advance(days=YEARS_OF_DISUSE - 400)
    store.sweep()
    assert status_of(store, FACTS, "job") == "expired"
    normal = store.search(FACTS, query="Alice Lyon Paris")
    assert [(i.key, i.memory["status"], i.value["content"]) for i in normal] == [
        ("city", "active", "Alice lives in Paris")]
    # Reading the expired one through history mode reverses its expiry (audited).
    paris = store.search(FACTS, query="baker Paris", filter={"$history": True})
    baker = next(i for i in paris if i.key == "job")
    assert baker.memory["status"] == "active" and baker.memory["reactivated"]
    assert transitions(store, FACTS, "job")[-1] == ("expired", "active", "store.search")
    past = store.search(FACTS, query="Alice Lyon", filter={"$history": True})
    found = {(i.value["content"], i.memory["status"]) for i in past}
    assert ("Alice lives in Lyon", "superseded") in found
    assert past[0].value["content"] == "Alice lives in Lyon"  # the best match ranks first
    listed = store.search(FACTS, filter={"$history": True})
    assert sorted(i.memory["status"] for i in listed) == ["active", "active", "superseded"]
    current = store.search(FACTS, filter={"$history": False, "subject": "alice"}, query="Lyon")
    assert {i.memory["status"] for i in current} == {"active"}  # False: normal search


def test_history_mode_on_preferences_lists_every_version(make, clock):
    store = make()
    store.put(PREFS, "units", {"value": "imperial"})
    clock.advance(days=300)
    store.put(PREFS, "units", {"value": "metric"})
    assert [i.value["value"] for i in store.search(PREFS)] == ["metric"]
    past = store.search(PREFS, filter={"$history": True})
    assert [(i.value["value"], i.memory["status"]) for i in past] == [
        ("metric", "active"), ("imperial", "superseded")]
    assert [i.value["value"] for i in store.search(
        PREFS, filter={"$history": True, "value": "imperial"})] == ["imperial"]


@pytest.mark.parametrize("bad", [1, "yes", None, {"$eq": True}])
def test_history_flag_must_be_a_boolean(make, bad):
    store = make()
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    with pytest.raises(InvalidQuery, match=r"\$history"):
        store.search(FACTS, query="Lyon", filter={"$history": bad})


# ------------------------------------------------------------------ retention and TTL


def test_retention_classes_forget_records_past_their_age(make, clock):
    store = make(retention={"classes": {"short": 30, "legal_hold": None}, "default": 90})
    store.put(FACTS, "temp", fact("Alice is in Rome this week",
                                  metadata={"retention": "short"}))
    store.put(FACTS, "held", fact("Alice signed the contract",
                                  metadata={"retention": "legal_hold"}))
    store.put(FACTS, "plain", fact("Alice likes tea"))
    store.put(PREFS, "tone", {"value": "terse", "metadata": {"retention": "short"}})
    clock.advance(days=30)
    assert store.sweep().forgotten == 0  # not older than 30 days yet
    clock.advance(days=1)
    report = store.sweep()
    assert report.retention.forgotten == {"short": 2}
    assert store.get(FACTS, "temp") is None and store.get(PREFS, "tone") is None
    last = store.audit(FACTS, "temp")[-1]
    assert (last["to_status"], last["actor"]) == ("forgotten", "maintenance")
    assert last["reason"] == "retention class short: older than 30 days"
    clock.advance(days=60)
    assert store.sweep().retention.forgotten == {"(default)": 1}
    assert store.get(FACTS, "plain") is None
    assert store.get(FACTS, "held") is not None
    assert query(store, "SELECT count(*) FROM memory_vectors")[0][0] == 1


def test_unknown_retention_class_is_refused_at_write(make):
    store = make(retention={"classes": {"short": 30}})
    with pytest.raises(InvalidRecord, match=r"retention='shrot'.*\['short'\]"):
        store.put(FACTS, "k", fact("x", metadata={"retention": "shrot"}))
    assert store.get(FACTS, "k") is None
    unconfigured = make()
    with pytest.raises(InvalidRecord, match="retention"):
        unconfigured.put(FACTS, "k", fact("x", metadata={"retention": "short"}))


def test_ttl_sweep_forgets_typed_records_with_an_audit_row(make, clock):
    store = make()
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    store.put(FACTS, "city", fact("Alice lives in Paris"), ttl=60)
    store.put(("notes",), "n", {"text": "hello"}, ttl=60)
    clock.advance(minutes=61)
    sweep_ttl = store.sweep_ttl()
    if asyncio.iscoroutine(sweep_ttl):
        sweep_ttl = _await(store, sweep_ttl)
    assert sweep_ttl == 3  # the record, its older version, the untyped item
    assert [e["to_status"] for e in store.audit(FACTS, "city")][-2:] == [
        "forgotten", "forgotten"]
    assert store.check_invariants().ok


def test_async_sweep(make, clock):
    store = make()
    store.put(FACTS, "city", fact("Alice lives in Lyon", confidence=0.2))
    clock.advance(days=YEARS_OF_DISUSE)
    assert _await(store, store.asweep()).expired == 1
    clock.advance(days=181)
    assert _await(store, store.asweep()).gc.forgotten == 1


def _await(store: Any, coro: Any) -> Any:
    loop = getattr(store, "loop", None)
    if loop is not None:
        return asyncio.run_coroutine_threadsafe(coro, loop).result()
    return asyncio.run(coro)


# ------------------------------------------------------------------ pure rules


def test_decay_and_boost():
    s = LifecycleConfig()
    assert access_boost(0, s) == 1.0 and access_boost(2, s) == pytest.approx(1.2)
    assert access_boost(1000, s) == 1.5
    assert decay_freshness(180, 180, 0, s) == pytest.approx(0.5)
    assert decay_freshness(0, 180, 10, s) == 1.0  # capped at 1
    assert decay_freshness(-5, 180, 0, s) == 1.0  # a clock skew never boosts past 1
    assert decay_freshness(10**6, None, 0, s) == 1.0


def test_next_status_rules():
    s = LifecycleConfig()
    assert next_status("fact", "active", 0.049, s) == "expired"
    assert next_status("fact", "active", 0.05, s) == "active"
    assert next_status("observation", "active", 0.0, s) == "expired"
    for kind in ("episode", "procedure", "policy", "preference"):
        assert next_status(kind, "active", 0.0, s) == "active"
    assert next_status("fact", "provisional", 0.0, s) == "provisional"
    assert on_access("expired") == "active" and on_access("revoked") == "revoked"


def test_gc_rule():
    s = normalize_lifecycle({"gc_after_days": 10, "gc_below_confidence": 0.6})
    assert gc_due(10, 0.59, s) and not gc_due(9.9, 0.1, s) and not gc_due(100, 0.6, s)


def test_retention_rules():
    s = normalize_lifecycle({"retention": {"classes": {"short": 7, "hold": None}}})
    assert retention_of({"metadata": {"retention": "short"}}, s) == ("short", 7.0)
    assert retention_of({"metadata": {"retention": "hold"}}, s) == ("hold", None)
    assert retention_of({"metadata": {}}, s) == (None, None)
    assert retention_of({"metadata": {"retention": "gone"}}, s) == ("gone", None)
    check_retention_class({"metadata": {"retention": None}}, s, "x")
    with pytest.raises(InvalidRecord, match="retention=7"):
        check_retention_class({"metadata": {"retention": 7}}, s, "x")


def test_split_history():
    assert split_history({"$history": True}) == (True, None)
    assert split_history({"$history": False, "a": 1}) == (False, {"a": 1})
    assert split_history({"a": 1}) == (False, {"a": 1})
    with pytest.raises(InvalidQuery, match="use True"):
        split_history({"$history": "true"})


@pytest.mark.parametrize(
    "config, match",
    [
        ({"expiry_flor": 0.1}, "unknown key"),
        ({"expiry_floor": 1.5}, "expiry_floor=1.5"),
        ({"expiry_floor": float("nan")}, "expiry_floor=nan"),
        ({"access_boost_cap": 0.5}, "access_boost_cap"),
        ({"gc_after_days": -1}, "gc_after_days"),
        ({"gc_below_confidence": True}, "gc_below_confidence"),
        ({"access_flush_every": 0}, "access_flush_every"),
        ({"retention": [30]}, "retention="),
        ({"retention": {"classes": {"short": 30}, "defualt": 1}}, "unknown key"),
        ({"retention": {"classes": {"short": 0}}}, "retention class 'short'=0"),
        ({"retention": {"classes": {"": 30}}}, "retention class name"),
        ({"retention": {"classes": {"short": "30"}}}, "positive number of days"),
        ({"retention": {"default": -3}}, "retention default=-3"),
        ("strict", "must be a dict"),
    ],
)
def test_bad_lifecycle_config_is_a_typed_error(config, match):
    with pytest.raises(ConfigurationError, match=match):
        normalize_lifecycle(config)


def test_store_rejects_a_bad_lifecycle_config():
    from langgraph_typed_memory import SqliteMemoryStore

    with pytest.raises(ConfigurationError, match="expiry_floor"):
        with SqliteMemoryStore.from_conn_string(":memory:", lifecycle={"expiry_floor": 2}):
            pass


def test_a_background_flush_writes_in_chunks_so_reads_wait_for_one_at_most(make, monkeypatch):
    from langgraph_typed_memory.store.core import access

    monkeypatch.setattr(access, "FLUSH_CHUNK", 2)
    store = make(access_flush_every=5)
    for i in range(5):
        store.put(FACTS, f"k{i}", fact(f"Alice owns bike number {i}"))
    held = HeldFlushes(store)
    held.released.set()
    for i in range(5):
        store.get(FACTS, f"k{i}")  # the fifth makes the flush due
    held.started()
    with store._flushing:  # the flush thread is done
        assert len(held.threads) == 3  # chunks of 2, 2 and 1, each its own runner call
    assert query(store, "SELECT sum(n) FROM memory_access_log") == [(5,)]


def test_reads_append_to_the_access_log_and_a_fold_updates_each_record_once(make, clock):
    store = make(access_flush_every=1)
    store.records.access.on_due = None  # flushes run in the read that makes them due
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    store.put(FACTS, "pet", fact("Alice has a cat named Tom"))
    for key in ("city", "pet", "city", "city"):
        clock.advance(seconds=60)
        store.get(FACTS, key)
    entries = query(store, "SELECT count(*) FROM memory_access_log")
    assert entries == [(4,)] and logged(store, "city") == 3 and logged(store, "pet") == 1
    assert [u[1:] for u in uses(store, "city", "pet")] == [(0, None), (0, None)]  # not folded
    store.flush_access()
    (_, n_city, at_city), (_, n_pet, at_pet) = uses(store, "city", "pet")
    assert (n_city, n_pet) == (3, 1) and at_city == pytest.approx(clock().timestamp())
    assert at_pet == pytest.approx(clock().timestamp() - 120)  # the newest use of each
    assert query(store, "SELECT count(*) FROM memory_access_log") == [(0,)]
    assert query(store, "SELECT count(*) FROM memory_access") == [(2,)]  # a row per record
    store.get(FACTS, "pet")
    store.flush_access()  # a record's later uses add to its row
    assert uses(store, "pet")[0][1:] == (2, pytest.approx(clock().timestamp()))


def test_the_access_log_holds_each_count_and_time_as_noted(make, clock):
    """A flush logs every record's count and newest time exactly, ids with a comma too (the
    Postgres flush sends each column as one comma-joined text, or as arrays for such ids)."""
    store = make()
    access = store.records.access
    times = []
    for ids in (["m1", "m1", "m2"], ["m3", "m1"], ["odd,id", "m3"]):
        clock.advance(seconds=1.234567)
        times.append(clock().timestamp())
        store.run_plan(access.note(ids))
        if ids[0] == "m3":
            assert store.run_plan(access.flush) == 3
    assert store.run_plan(access.flush) == 2
    rows = query(store, "SELECT memory_id, n, at FROM memory_access_log ORDER BY entry")
    first, noted, later = times
    assert rows == [("m1", 3, noted), ("m2", 1, first), ("m3", 1, noted),
                    ("odd,id", 1, later), ("m3", 1, later)]


def test_a_records_own_counts_and_its_logged_uses_add_up(make, clock):
    """An import (or a record written before the access log) holds counts in its own row:
    the logged uses add to them, and the later time of the two is its last use."""
    store = make(access_flush_every=1)
    store.records.access.on_due = None
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    before = clock().timestamp()
    query(store, "UPDATE memories SET access_count = 5, last_accessed_at = ? WHERE key = 'city'",
          [before])
    store.flush_access()
    assert uses(store, "city") == [("city", 5, pytest.approx(before))]
    clock.advance(days=1)
    store.get(FACTS, "city")
    store.flush_access()
    assert uses(store, "city") == [("city", 6, pytest.approx(clock().timestamp()))]


def test_the_log_is_folded_in_the_background_once_enough_is_logged(make, monkeypatch):
    from langgraph_typed_memory.store.core import access

    monkeypatch.setattr(access, "FLUSH_CHUNK", 2)
    monkeypatch.setattr(access, "FOLD_CHUNK", 2)
    store = make(access_flush_every=3, access_log_rows=6)
    for i in range(3):
        store.put(FACTS, f"k{i}", fact(f"Alice owns bike number {i}"))
    held = HeldFlushes(store)
    held.released.set()
    for _ in range(2):  # 3 uses make a flush due: 3 logged, then 6 (a fold is due)
        for i in range(3):
            store.get(FACTS, f"k{i}")
        held.started()
        with store._flushing:  # that flush is over
            held.entered.clear()
    with store._flushing:
        assert query(store, "SELECT count(*) FROM memory_access_log") == [(0,)]
    assert [u[1] for u in uses(store, "k0", "k1", "k2")] == [2, 2, 2]
    assert store.records.access.logged == 0
    # flushes of 2, 1 (3 logged); 2, then 1 (6 logged) with a fold of 2 in its transaction,
    # then folds of 2, 2 and an empty one
    assert len(held.threads) == 7


def test_erasure_drops_the_erased_records_uses(make):
    store = make(access_flush_every=1)
    store.records.access.on_due = None
    bob = ("tenant:acme", "user:bob", "fact")
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    store.put(bob, "city", fact("Bob lives in Oslo"))
    store.get(FACTS, "city")
    store.flush_access()  # Alice's use folded; then one of each, logged
    store.get(FACTS, "city")
    store.get(bob, "city")
    store.erase("acme", "alice")
    assert query(store, "SELECT count(*) FROM memory_access_log") == [(1,)]  # Bob's use
    assert query(store, "SELECT count(*) FROM memory_access") == [(0,)]
    assert logged(store, "city") == 1


def test_the_maintenance_sweeps_wait_for_a_background_flush(make):
    from langgraph_typed_memory.maintenance.runner import run_step

    store = make(access_flush_every=1)
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    held = HeldFlushes(store)
    store.get(FACTS, "city")  # due: its flush is held in the background
    held.started()
    done = threading.Event()
    sweeper = threading.Thread(target=lambda: (run_step(store, "sweeps"), done.set()))
    sweeper.start()
    assert not done.wait(0.3)  # the sweeps wait: the held flush carries a use
    held.released.set()
    sweeper.join(30)
    assert done.is_set()
    assert count_of(store, "city") == 1


def test_access_flushes_are_timed_by_this_process_not_the_store_clock(make, clock):
    """A store clock that jumps (a simulation moving minutes per turn) does not make every
    read start a flush: the interval is this process's own time; the accesses are stamped
    with the store's clock."""
    store = make(access_flush_seconds=30)
    store.put(FACTS, "city", fact("Alice lives in Lyon"))
    held = HeldFlushes(store)
    clock.advance(minutes=5)
    store.get(FACTS, "city")
    assert held.threads == [] and len(store.records.access) == 1
    held.released.set()
    assert store.flush_access() == 1
    assert uses(store, "city")[0][2] == clock.now.timestamp()
