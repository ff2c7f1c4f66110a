"""Atomicity: a process killed mid-promotion or mid-erasure leaves no partial state.

A forked child opens the store on a copy of a seeded database, counts the statements its
connection runs (SQLite's trace callback, which also sees the statements triggers run; on
Postgres a cursor class), logs each one, and kills itself with SIGKILL just before statement
`k`. The faults live in the child script only; the product code has no hooks. After the kill
the parent reopens the database and checks:

- `check_invariants()` passes (and on SQLite `PRAGMA integrity_check` and the full-text
  index's own integrity check);
- the database is exactly as before the batch (the kill came before its COMMIT ran) or
  exactly as after an uninterrupted run of the batch (the COMMIT ran), compared row by row
  with the random ids replaced by stable labels;
- which of the two it is agrees with the child's log; over the kill points both happen.

Scenarios: a promotion batch (insert, supersede, contradict, deduplicate, confirm a tenant
fact, with vectors), and erasure of a user (deletes across kinds, vectors, audit, evidence
scrubbing, the deletion event, then the SQLite compaction). `make test` kills at
`KILL_POINTS` spread over each run; `make stress` at every statement.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import signal
from collections.abc import Callable
from typing import Any

import pytest

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.store.core.protocol import Plan, Sql
from langgraph_typed_memory.store.sqlite.store import connect_sqlite
from tests.conftest import FakeClock, fresh_database, hash_index

KILL_POINTS = 6
"""Kill points per scenario and backend in `make test`: the first statement, the middle,
around the COMMIT, and just after the call returned."""
FORK = multiprocessing.get_context("fork")
BACKENDS = ["sqlite_file", "postgres"]
if os.environ.get("TYPED_MEMORY_SKIP_POSTGRES"):
    BACKENDS = ["sqlite_file"]
ALICE = ("tenant:acme", "user:alice")
DIMS = 8


def index() -> dict[str, Any]:
    return hash_index(DIMS)


# ----------------------------------------------------------------------------- scenarios


def seed(store: Any) -> None:
    """Alice and Bob's memory, a tenant fact both support, some history."""
    for user in ("alice", "bob"):
        base = ("tenant:acme", f"user:{user}")
        store.put((*base, "preference"), "tone", {"value": "formal"})
        store.put((*base, "preference"), "tone", {"value": "plain"})
        store.put((*base, "episode"), "e1", {"title": "trip", "summary": f"{user} went to Rome"})
        store.put(("notes", user), "n", {"text": f"untyped note of {user}"})
        store.promote([
            {"kind": "fact", "subject": "user", "predicate": "home_city", "value": "Lyon",
             "content": "The user lives in Lyon.", "confidence": 0.95},
            {"kind": "fact", "subject": "acme", "predicate": "region", "scope": "tenant",
             "content": "Acme runs in eu-west-1.", "confidence": 0.9},
        ], tenant_id="acme", user_id=user, run_id=f"seed-{user}")


def promotion(store: Any) -> Any:
    """One batch that writes, supersedes, contradicts, deduplicates and confirms."""
    return store.promote([
        {"kind": "preference", "key": "tone", "value": "terse", "confidence": 0.9},
        {"kind": "preference", "key": "language", "value": "French", "confidence": 0.9},
        {"kind": "fact", "subject": "user", "predicate": "home_city", "value": "Paris",
         "content": "The user lives in Paris.", "confidence": 0.72},
        {"kind": "fact", "subject": "user", "predicate": "employer", "value": "Acme",
         "content": "The user works at Acme.", "confidence": 0.9},
        {"kind": "fact", "subject": "acme", "predicate": "region", "scope": "tenant",
         "content": "Acme runs in eu-west-1.", "confidence": 0.9},
        {"kind": "episode", "content": "Planned the Paris move.", "task_complete": True,
         "confidence": 0.9},
    ], tenant_id="acme", user_id="carol", run_id="run-killed", turn=3)


def erasure(store: Any) -> Any:
    return store.erase("acme", "alice", untyped_prefixes=[("notes", "alice")])


SCENARIOS: dict[str, Callable[[Any], Any]] = {"promotion": promotion, "erasure": erasure}


# ----------------------------------------------------------------------------- backends


class Database:
    """A seeded database that can be copied for each kill point."""

    def __init__(self, kind: str, tmp: Any, server: Any = None) -> None:
        self.kind, self.tmp, self.server = kind, tmp, server
        self.copies = 0
        self.base = self._new_target()
        with self.open(self.base) as store:
            store.setup()
            seed(store)
            assert store.check_invariants().ok

    def _new_target(self) -> str:
        if self.kind == "sqlite_file":
            return str(self.tmp / f"db{self.copies}.db")
        return fresh_database(self.server)

    def copy(self) -> str:
        """A new database identical to the seeded one."""
        self.copies += 1
        if self.kind == "sqlite_file":
            target = str(self.tmp / f"db{self.copies}.db")
            shutil.copyfile(self.base, target)  # closed: the WAL was checkpointed into it
            return target
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        base = conninfo_to_dict(self.base)["dbname"]
        name = f"{base}_k{self.copies}"
        with psycopg.connect(self.server.get_uri(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{base}"')
        return str(self.server.get_uri(name))

    def open(self, target: str, on_statement: Callable[[str], None] | None = None) -> Any:
        """A store context on `target`; `on_statement` sees each statement before it runs."""
        if self.kind == "sqlite_file":
            return _sqlite(target, on_statement)
        return _postgres(target, on_statement)


class _sqlite:
    def __init__(self, path: str, on_statement: Callable[[str], None] | None) -> None:
        self.conn = connect_sqlite(path)
        if on_statement is not None:
            self.conn.set_trace_callback(on_statement)

    def __enter__(self) -> Any:
        return SqliteMemoryStore(self.conn, index=index(), clock=FakeClock())

    def __exit__(self, *exc: Any) -> None:
        self.conn.close()


class _postgres:
    def __init__(self, url: str, on_statement: Callable[[str], None] | None) -> None:
        import psycopg

        class Watched(psycopg.Cursor):  # type: ignore[type-arg]
            def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
                if on_statement is not None:
                    on_statement(str(query))
                return super().execute(query, *args, **kwargs)

            def executemany(self, query: Any, *args: Any, **kwargs: Any) -> Any:
                if on_statement is not None:
                    on_statement(str(query))
                return super().executemany(query, *args, **kwargs)

        self.conn = psycopg.connect(url, autocommit=True, cursor_factory=Watched)

    def __enter__(self) -> Any:
        from langgraph_typed_memory import PostgresMemoryStore

        return PostgresMemoryStore(self.conn, index=index(), clock=FakeClock())

    def __exit__(self, *exc: Any) -> None:
        self.conn.close()


# ----------------------------------------------------------------------------- the child


def child(db: Database, target: str, scenario: str, kill_at: int | None, log_path: str) -> None:
    """Run the scenario, logging each statement; SIGKILL just before statement `kill_at`."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    count = 0

    def on_statement(text: str) -> None:
        nonlocal count
        count += 1
        if count == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        os.write(fd, (" ".join(text.split())[:200] + "\n").encode())

    with db.open(target, on_statement) as store:
        SCENARIOS[scenario](store)
        if kill_at is not None:  # point total+1: dead right after the call returned
            os.kill(os.getpid(), signal.SIGKILL)
    os.close(fd)


def run_child(db: Database, target: str, scenario: str, kill_at: int | None, log_path: str
              ) -> tuple[int | None, list[str]]:
    proc = FORK.Process(target=child, args=(db, target, scenario, kill_at, log_path))
    proc.start()
    proc.join(timeout=300)
    with open(log_path) as f:
        return proc.exitcode, f.read().splitlines()


# ----------------------------------------------------------------------------- the checks


ID = re.compile(r"\b[0-9a-f]{32}\b")


def dump(store: Any) -> list[str]:
    """The database's content, row by row, with random ids replaced by stable labels."""

    def plan() -> Plan[Any]:
        mem = yield Sql(
            "SELECT id, ns, key, value, kind, tenant_id, user_id, agent_id, status, confidence, "
            "superseded_by, content_hash, search_text, evidence, contradicts, needs_review, "
            "repetitions, policy_version, source_run_id, created_at, updated_at FROM memories")
        audit = yield Sql(
            "SELECT memory_id, ns, key, kind, tenant_id, user_id, at, actor, from_status, "
            "to_status, reason, run_id FROM memory_audit")
        vectors = yield Sql(
            "SELECT m.id, v.field FROM memory_vectors v JOIN memories m ON m.seq = v.seq")
        deletions = yield Sql(
            "SELECT tenant_id, user_id, actor, reason, counts FROM memory_deletions")
        return mem, audit, vectors, deletions

    mem, audit, vectors, deletions = store._run(plan)
    labels: dict[str, str] = {}
    for row in mem:
        label = f"<{row[1]}|{row[2]}|{row[8]}|{row[11]}|{row[3]}>"
        assert label not in labels.values(), label
        labels[row[0]] = label
    out = []
    for table, rows in (("m", mem), ("a", audit), ("v", vectors), ("d", deletions)):
        for row in rows:
            text = ID.sub(lambda m: labels.get(m.group(), "<gone>"), repr(tuple(row)))
            out.append(f"{table} {text}")
    return sorted(out)


def sqlite_integrity(path: str) -> None:
    conn = connect_sqlite(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


def is_commit(statement: str) -> bool:
    return statement.strip().upper() == "COMMIT"


def first_commit(log: list[str]) -> int:
    """1-based position of the batch's COMMIT in a full run's log."""
    return next(i for i, s in enumerate(log, 1) if is_commit(s))


def kill_points(total: int, commit: int, every: bool) -> list[int]:
    """Where to kill: before statement k, for k in 1..total; total+1 is after the call."""
    if every:
        return list(range(1, total + 2))
    picks = {1, total // 2, commit - 1, commit, commit + 1, total + 1}
    return sorted(p for p in picks if 1 <= p <= total + 1)


@pytest.fixture(params=BACKENDS)
def backend_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run_scenario(backend_kind: str, scenario: str, tmp_path: Any,
                 request: pytest.FixtureRequest, every: bool) -> dict[str, int]:
    server = request.getfixturevalue("pg_server") if backend_kind == "postgres" else None
    db = Database(backend_kind, tmp_path, server)
    with db.open(db.base) as store:
        before = dump(store)
    reference = db.copy()
    code, full_log = run_child(db, reference, scenario, None, str(tmp_path / "full.log"))
    assert code == 0, f"the uninterrupted run failed ({code})"
    with db.open(reference) as store:
        after = dump(store)
    assert after != before
    commit = first_commit(full_log)
    seen = {"absent": 0, "present": 0}
    points = kill_points(len(full_log), commit, every)
    for k in points:
        target = db.copy()
        code, log = run_child(db, target, scenario, k, str(tmp_path / f"k{k}.log"))
        assert code == -signal.SIGKILL, f"kill point {k}: the child exited with {code}"
        assert len(log) == k - 1, (k, len(log))
        if backend_kind == "sqlite_file":
            sqlite_integrity(target)
        with db.open(target) as store:
            report = store.check_invariants()
            assert report.ok, f"kill point {k} ({log[-1:]}): {report}"
            state = dump(store)
        committed = any(is_commit(s) for s in log)
        expected, name = (after, "present") if committed else (before, "absent")
        assert state == expected, (
            f"kill point {k} of {len(full_log)} (after {log[-1:]!r}): the batch should be "
            f"wholly {name}; differences: {sorted(set(state) ^ set(expected))[:4]}")
        seen[name] += 1
    assert seen["absent"] and seen["present"], seen
    print(f"\nI3 {backend_kind} {scenario}: {len(full_log)} statements, {len(points)} kills, "
          f"{seen}")
    return {"kills": len(points), **seen}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_kill_mid_batch_leaves_all_or_nothing(backend_kind, scenario, tmp_path, request):
    run_scenario(backend_kind, scenario, tmp_path, request, every=False)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_kill_at_every_statement(backend_kind, scenario, tmp_path, request):
    run_scenario(backend_kind, scenario, tmp_path, request, every=True)


def test_kill_points_cover_the_commit():
    assert kill_points(30, 20, every=False) == [1, 15, 19, 20, 21, 31]
    assert kill_points(4, 4, every=True) == [1, 2, 3, 4, 5]
