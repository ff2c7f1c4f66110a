"""Concurrency: many threads and processes writing conflicting memory at once.

Eight threads and four forked processes write to the same few keys of one user, on a SQLite
file and on Postgres: plain `put`s of preferences and facts to the typed namespaces, and
`promote` calls through the gate (supersessions, contradictions landing on sibling keys,
deduplicated repeats). Every write carries a unique marker. Afterwards:

- the invariant checker passes (one current version per key, superseded rows point at an
  existing row, statuses match the audit log...);
- every key has exactly one current version, and its versions form one supersession chain
  (each superseded row points at a distinct row of the same key, no fork, no orphan);
- no write is lost: every put's marker, and every id a promotion returned, is in the key's
  history; each key holds exactly as many versions as writes created;
- no error reached a caller: lock timeouts, serialization failures, deadlocks and races on
  the current-value index are retried inside the store (the retry counts are printed).

The retry mechanics are also tested deterministically, with a second connection holding
SQLite's write lock and an executor that fails on cue.

`make test` runs 12 writers x `OPS` operations per backend; `make stress` (`--run-slow -m
slow`) runs `STRESS_OPS`.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import sqlite3
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.gate import GateConfig, Proposal, record_key
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Sql
from langgraph_typed_memory.store.core.retry import RetryPolicy, is_retryable
from langgraph_typed_memory.store.sqlite.store import connect_sqlite
from tests.conftest import FakeClock, fresh_database

THREADS = 8
PROCESSES = 4
OPS = 15
"""Operations per writer in `make test` (12 writers: 180 writes per backend)."""
STRESS_OPS = 400
"""Operations per writer in `make stress` (4,800 writes per backend)."""

TENANT, USER = "acme", "alice"
PREFS = ("tenant:acme", "user:alice", "preference")
FACTS = ("tenant:acme", "user:alice", "fact")
PREF_KEYS = ["tone", "language"]
PREDICATES = ["home_city", "employer"]
FACT_KEYS = {p: record_key(Proposal(kind="fact", subject="user", predicate=p, content="x"),
                           GateConfig()) for p in PREDICATES}
MODES = ["put_pref", "promote_pref", "put_fact", "promote_fact", "promote_weak_fact", "repeat"]
CURRENT = {"active", "provisional"}
BACKENDS = ["sqlite_file", "postgres"]
if os.environ.get("TYPED_MEMORY_SKIP_POSTGRES"):
    BACKENDS = ["sqlite_file"]
FORK = multiprocessing.get_context("fork")


# ----------------------------------------------------------------------------- the workload


@dataclass
class Log:
    """What one writer did: every write, every promotion outcome, retries, errors."""

    puts: list[tuple[tuple[str, ...], str, str]] = field(default_factory=list)
    """(namespace, key, marker) of each put."""
    outcomes: list[tuple[tuple[str, ...], str | None, str | None, str]] = field(
        default_factory=list)
    """(namespace, key, id, outcome) of each promoted proposal."""
    retries: int = 0
    max_attempt: int = 1
    """The most attempts one call needed."""
    errors: list[str] = field(default_factory=list)


def fact_value(predicate: str, marker: str, confidence: float) -> dict[str, Any]:
    return {"subject": "user", "predicate": predicate, "content": f"The user's {predicate} is "
            f"{marker}.", "value": marker, "confidence": confidence}


def write(store: Any, writer: int, ops: int, log: Log) -> None:
    """One writer's deterministic sequence of conflicting writes."""
    rng = random.Random(writer)
    last: dict[str, Any] | None = None
    for i in range(ops):
        marker = f"w{writer}-{i}"
        mode = rng.choice(MODES)
        run = f"run-{writer}-{i}"
        if mode == "put_pref":
            key = rng.choice(PREF_KEYS)
            store.put(PREFS, key, {"value": marker, "confidence": 0.9})
            log.puts.append((PREFS, key, marker))
            continue
        if mode == "put_fact":
            predicate = rng.choice(PREDICATES)
            store.put(FACTS, FACT_KEYS[predicate], fact_value(predicate, marker, 0.95))
            log.puts.append((FACTS, FACT_KEYS[predicate], marker))
            continue
        if mode == "promote_pref":
            proposal = {"kind": "preference", "key": rng.choice(PREF_KEYS), "value": marker,
                        "confidence": 0.9}
        elif mode in ("promote_fact", "promote_weak_fact"):
            predicate = rng.choice(PREDICATES)
            confidence = 0.9 if mode == "promote_fact" else 0.72  # weak: may contradict
            proposal = {"kind": "fact", **fact_value(predicate, marker, confidence)}
        else:
            if last is None:
                continue
            proposal = last  # the same proposal again: deduplicated, or a new version
        last = proposal
        ns = PREFS if proposal["kind"] == "preference" else FACTS
        for outcome in store.promote([proposal], tenant_id=TENANT, user_id=USER, run_id=run):
            log.outcomes.append((ns, outcome.key, outcome.id, outcome.outcome))


def counting(store: Any, log: Log) -> Any:
    def on_retry(attempt: int, exc: BaseException) -> None:
        log.retries += 1
        log.max_attempt = max(log.max_attempt, attempt + 1)

    store.retry_policy = RetryPolicy(on_retry=on_retry)
    return store


def run_writer(open_store: Callable[[], Any], writer: int, ops: int, barrier: Any) -> Log:
    log = Log()
    try:
        with open_store() as store:
            counting(store, log)
            barrier.wait(timeout=120)
            write(store, writer, ops, log)
    except Exception:
        log.errors.append(traceback.format_exc())
    return log


def process_main(open_store: Callable[[], Any], writer: int, ops: int, barrier: Any,
                 queue: Any) -> None:
    """A forked writer: runs its sequence on its own connection, sends its log back."""
    queue.put(run_writer(open_store, writer, ops, barrier))


def run_all(open_store: Callable[[], Any], open_shared: Callable[[], Any], ops: int
            ) -> list[Log]:
    """Fork the processes, then start the threads; one barrier releases them all together.

    The processes are forked before the parent opens any connection (a connection must
    never cross a fork). Threads 0-5 open their own store; threads 6 and 7 share one (a
    connection behind the store's lock, or a pool).
    """
    barrier = FORK.Barrier(THREADS + PROCESSES)
    queue = FORK.Queue()
    procs = [FORK.Process(target=process_main,
                          args=(open_store, THREADS + p, ops, barrier, queue))
             for p in range(PROCESSES)]
    for proc in procs:
        proc.start()
    logs: list[Log] = [Log() for _ in range(THREADS)]
    with open_shared() as shared:
        counting(shared, logs[THREADS - 1])  # the shared store's retries, counted once

        def thread_main(t: int) -> None:
            if t < THREADS - 2:
                logs[t] = run_writer(open_store, t, ops, barrier)
                return
            try:
                barrier.wait(timeout=120)
                write(shared, t, ops, logs[t])
            except Exception:
                logs[t].errors.append(traceback.format_exc())

        threads = [threading.Thread(target=thread_main, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    children = [queue.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join()
    return logs + children


# ----------------------------------------------------------------------------- the checks


def verify(store: Any, logs: list[Log]) -> dict[str, int]:
    """Every concurrency property over the final database; returns the figures of the run."""
    errors = [e for log in logs for e in log.errors]
    assert not errors, f"{len(errors)} error(s) reached a caller, the first:\n{errors[0]}"
    report = store.check_invariants()
    assert report.ok, str(report)

    created: Counter[tuple[tuple[str, ...], str]] = Counter()
    keys: set[tuple[tuple[str, ...], str]] = set()
    for log in logs:
        for ns, key, _ in log.puts:
            created[(ns, key)] += 1
            keys.add((ns, key))
        for ns, key, _ident, outcome in log.outcomes:
            assert outcome != "rejected", "the workload only offers acceptable proposals"
            assert key is not None
            keys.add((ns, key))
            if outcome in ("written", "superseded", "contradicted"):
                created[(ns, key)] += 1

    histories = {k: store.history(*k) for k in keys}
    for (ns, key), versions in histories.items():
        statuses = [v.status for v in versions]
        assert sum(s in CURRENT for s in statuses) == 1, (key, statuses)
        assert len(versions) == created[(ns, key)], (key, len(versions), created[(ns, key)])
        ids = {v.memory["id"] for v in versions}
        successors = [v.memory["superseded_by"] for v in versions if v.status == "superseded"]
        assert len(successors) == len(versions) - 1, (key, statuses)
        assert set(successors) <= ids and len(set(successors)) == len(successors), key

    for log in logs:
        for ns, key, marker in log.puts:
            values = [v.value.get("value") for v in histories[(ns, key)]]
            assert marker in values, f"lost write {marker} to {key}"
        for ns, key, ident, _ in log.outcomes:
            assert key is not None
            assert ident in {v.memory["id"] for v in histories[(ns, key)]}, (key, ident)

    outcomes = Counter(o for log in logs for *_, o in log.outcomes)
    return {"writes": sum(len(log.puts) + len(log.outcomes) for log in logs),
            "keys": len(keys), "versions": sum(len(v) for v in histories.values()),
            "retries": sum(log.retries for log in logs),
            "max_attempts": max(log.max_attempt for log in logs), **outcomes}


# ----------------------------------------------------------------------------- backends


class SqliteOpener:
    """Opens a store on the shared SQLite file (picklable, so forked children can use it)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self) -> Any:
        return SqliteMemoryStore.from_conn_string(self.path, clock=FakeClock())


class PostgresOpener:
    def __init__(self, url: str) -> None:
        self.url = url

    def __call__(self) -> Any:
        from langgraph_typed_memory import PostgresMemoryStore

        return PostgresMemoryStore.from_conn_string(self.url, clock=FakeClock())


@pytest.fixture(params=BACKENDS)
def shared_database(request: pytest.FixtureRequest, tmp_path: Any
                    ) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(an opener of new stores on one set-up database, an opener of the shared store)."""
    if request.param == "sqlite_file":
        opener: Any = SqliteOpener(str(tmp_path / "shared.db"))
        with opener() as store:
            store.setup()
        return opener, opener
    from langgraph_typed_memory import PostgresMemoryStore

    url = fresh_database(request.getfixturevalue("pg_server"))
    opener = PostgresOpener(url)
    with opener() as store:
        store.setup()
    return opener, lambda: PostgresMemoryStore.from_conn_string(
        url, pool_size=2, clock=FakeClock())


def run_and_verify(shared_database: tuple[Callable[[], Any], Callable[[], Any]], ops: int
                   ) -> dict[str, int]:
    opener, open_shared = shared_database
    logs = run_all(opener, open_shared, ops)
    with opener() as checker:
        figures = verify(checker, logs)
    print(f"\nI2 {type(checker).__name__}, {THREADS} threads + {PROCESSES} processes x "
          f"{ops} ops: {dict(figures)}")
    return figures


def test_conflicting_writers(shared_database):
    figures = run_and_verify(shared_database, OPS)
    assert figures["writes"] >= (THREADS + PROCESSES) * OPS * 0.8  # "repeat" may skip once
    assert figures["superseded"] > 0


@pytest.mark.slow
def test_conflicting_writers_stress(shared_database):
    figures = run_and_verify(shared_database, STRESS_OPS)
    assert figures["superseded"] > 0 and figures["contradicted"] > 0


# ----------------------------------------------------------------------------- retry mechanics


def busy() -> sqlite3.OperationalError:
    exc = sqlite3.OperationalError("database is locked")
    exc.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
    return exc


def test_lock_held_by_another_connection_is_waited_out(tmp_path):
    """A write lock held past the busy timeout: the put retries, then succeeds once the
    holder commits (released from the retry hook: no timing involved)."""
    path = str(tmp_path / "locked.db")
    holder = connect_sqlite(path)
    with SqliteMemoryStore.from_conn_string(path) as store:
        store.setup()
        store.conn.execute("PRAGMA busy_timeout = 0")
        holder.execute("BEGIN IMMEDIATE")
        seen: list[BaseException] = []

        def on_retry(attempt: int, exc: BaseException) -> None:
            seen.append(exc)
            if attempt == 3:
                holder.execute("COMMIT")

        store.retry_policy = RetryPolicy(base_delay=0, on_retry=on_retry)
        store.put(PREFS, "tone", {"value": "terse"})
        assert len(seen) == 3 and all(is_retryable(e) for e in seen)
        assert store.get(PREFS, "tone").value["value"] == "terse"
        assert store.check_invariants().ok

        holder.execute("BEGIN IMMEDIATE")  # held for good: the last attempt's error surfaces
        store.retry_policy = RetryPolicy(attempts=3, base_delay=0)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            store.put(PREFS, "tone", {"value": "formal"})
        holder.execute("ROLLBACK")
        assert store.get(PREFS, "tone").value["value"] == "terse"
    holder.close()


class Flaky:
    """Wraps a store's executor: raises `error` when `when(req)` holds, `times` times."""

    def __init__(self, store: SqliteMemoryStore, error: Callable[[], Exception],
                 when: Callable[[Any], bool], times: int) -> None:
        self.inner, self.error, self.when, self.left = store._execute, error, when, times
        self.requests: list[Any] = []
        store._execute = self  # type: ignore[method-assign]

    def __call__(self, req: Any) -> list[tuple[Any, ...]]:
        self.requests.append(req)
        if self.left and self.when(req):
            self.left -= 1
            raise self.error()
        return self.inner(req)


def is_insert(req: Any) -> bool:
    return isinstance(req, Sql) and req.text.startswith("INSERT INTO memories ")


@pytest.fixture
def mem_store() -> Iterator[SqliteMemoryStore]:
    with SqliteMemoryStore.from_conn_string(":memory:", clock=FakeClock()) as store:
        store.setup()
        store.retry_policy = RetryPolicy(base_delay=0)
        yield store


def test_failure_inside_the_transaction_is_rolled_back_and_retried(mem_store):
    mem_store.put(PREFS, "tone", {"value": "formal"})
    flaky = Flaky(mem_store, busy, is_insert, times=2)
    out = mem_store.promote([{"kind": "preference", "key": "tone", "value": "terse",
                              "confidence": 0.9}], tenant_id=TENANT, user_id=USER)
    assert [o.outcome for o in out] == ["superseded"]
    assert sum(isinstance(r, Begin) for r in flaky.requests) == 3  # two rolled back, one kept
    assert [v.value["value"] for v in mem_store.history(PREFS, "tone")] == ["terse", "formal"]
    assert mem_store.check_invariants().ok


def test_non_retryable_errors_surface_at_once(mem_store):
    flaky = Flaky(mem_store, lambda: sqlite3.IntegrityError("CHECK constraint failed"),
                  is_insert, times=1)
    with pytest.raises(sqlite3.IntegrityError):
        mem_store.put(PREFS, "tone", {"value": "terse"})
    assert sum(isinstance(r, Begin) for r in flaky.requests) == 1
    assert mem_store.get(PREFS, "tone") is None


def test_no_retry_after_a_commit(mem_store):
    """Erasure commits, then compacts; a busy error in the compaction does not replay it."""
    mem_store.put(PREFS, "tone", {"value": "terse"})
    committed = []

    def after_commit(req: Any) -> bool:
        committed.append(isinstance(req, Commit))
        return any(committed[:-1])  # the first request after the commit fails, once

    purge_fails = Flaky(mem_store, busy, after_commit, times=1)
    report = mem_store.erase(TENANT, USER)  # the purge is its own plan: it is retried
    assert report.records == {"preference": 1}
    assert sum(isinstance(r, Begin) for r in purge_fails.requests) == 1
    assert mem_store.get(PREFS, "tone") is None

    # One plan whose post-commit step fails: the committed work is not replayed.
    from langgraph_typed_memory.store.core.protocol import Plan

    def plan() -> Plan[str]:
        yield Begin()
        yield Sql("INSERT INTO memory_meta (key, value) VALUES ('probe', '1')")
        yield Commit()
        yield Sql("SELECT 1")
        return "done"

    flaky = Flaky(mem_store, busy, lambda req: req == Sql("SELECT 1"), times=1)
    with pytest.raises(sqlite3.OperationalError):
        mem_store._run(plan)
    assert sum(isinstance(r, Begin) for r in flaky.requests) == 1
    assert mem_store.conn.execute(
        "SELECT count(*) FROM memory_meta WHERE key = 'probe'").fetchone() == (1,)


def test_a_failed_read_still_degrades_inside_the_plan():
    """A read the engine degrades (a broken full-text query) is neither retried nor raised."""
    from tests.conftest import hash_index

    def full_text(req: object) -> bool:  # the ranking's read of the scope's texts
        return isinstance(req, Sql) and req.text.startswith(
            "SELECT m.seq, CASE WHEN m.search_tokens")

    with SqliteMemoryStore.from_conn_string(":memory:", index=hash_index()) as store:
        store.setup()
        store.retry_policy = RetryPolicy(base_delay=0)
        store.put(FACTS, "f", fact_value("home_city", "Lyon", 0.9))
        flaky = Flaky(store, busy, full_text, times=1)
        found = store.search(FACTS, query="Lyon")
        assert found.retrieval_mode == "vector" and found[0].key == "f"
        assert any("lexical failed" in d for d in found.degraded)
        # the texts of the scope's two cells (the user's, the tenant's) read once: no retry
        assert flaky.left == 0 and sum(map(full_text, flaky.requests)) == 2


def test_plan_objects_run_once(mem_store):
    """A plan object cannot be rebuilt: it runs once, and its error surfaces."""
    from langgraph_typed_memory.store.governance.sweeps import ttl_plan

    flaky = Flaky(mem_store, busy, lambda req: isinstance(req, Begin), times=1)
    with pytest.raises(sqlite3.OperationalError):
        mem_store.run_plan(ttl_plan(mem_store.records))
    assert mem_store.run_plan(ttl_plan(mem_store.records)) == 0
    assert len(flaky.requests) > 1


@pytest.mark.parametrize(
    ("sqlstate", "constraint", "retryable"),
    [("40001", None, True), ("40P01", None, True), ("23505", "memories_current", True),
     ("23505", "memories_id_key", False), ("42601", None, False), ("57014", None, False)],
)
def test_postgres_errors_marked_retryable(sqlstate, constraint, retryable):
    class Diag:
        constraint_name = constraint

    class PgError(Exception):
        diag = Diag()

    exc = PgError("x")
    exc.sqlstate = sqlstate  # type: ignore[attr-defined]
    assert is_retryable(exc) is retryable


def test_retry_policy_validates():
    from langgraph_typed_memory.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="attempts"):
        RetryPolicy(attempts=0)
    with pytest.raises(ConfigurationError, match="max_delay"):
        RetryPolicy(max_delay=-1)
    policy = RetryPolicy(base_delay=0.01, max_delay=0.05)
    assert [policy.delay(n, 1.0) for n in range(4)] == [0.01, 0.02, 0.04, 0.05]
    assert policy.delay(3, 0.5) == 0.025


def test_two_postgres_stores_on_one_connection_take_turns(request):
    """A store's background access flush and another store's reads and writes on the same
    connection never interleave (one lock per connection, whatever store object holds it)."""
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore

    url = fresh_database(request.getfixturevalue("pg_server"))
    with psycopg.connect(url, autocommit=True) as conn:
        every_read = {"access_flush_every": 1}  # a background flush after every read
        a = PostgresMemoryStore(conn, lifecycle=every_read)
        b = PostgresMemoryStore(conn, lifecycle=every_read)
        a.setup()
        assert a._lock is b._lock
        ns = ("tenant:acme", "user:alice", "fact")
        for i in range(20):
            a.put(ns, f"k{i}", {"subject": "user", "predicate": f"p{i}",
                                "content": f"The user likes colour {i}."})
        errors: list[BaseException] = []

        def work(store: PostgresMemoryStore, offset: int) -> None:
            try:
                for i in range(40):
                    store.search(ns, query=f"colour {i % 20}", limit=5)
                    store.put(ns, f"w{offset}-{i}", {"subject": "user", "predicate": "q",
                                                     "content": f"note {offset} {i}"})
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(s, n)) for n, s in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        a.flush_access()
        assert errors == []
        assert a.check_invariants().ok
