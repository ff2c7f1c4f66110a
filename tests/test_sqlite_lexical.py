"""SQLite lexical retriever: the dialect's statement against a plain reference.

Seeded random corpora (several tenants, users and agents, two ranked kinds, some superseded
and expired rows, some rows without text, a Zipf-like vocabulary with porter-stem siblings
so common terms match many rows and scores tie) are queried with 1-6 terms at several
depths. The reference is the former statement (BM25 ordered by `bm25()` itself, no limit),
re-sorted in Python by (score desc, seq) and cut at the depth: `SqliteDialect.lexical` must
return exactly that list (same seqs, bit-identical scores, same order), with or without a
depth.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.namespaces import Scope
from langgraph_typed_memory.store import queries as q
from langgraph_typed_memory.store.discovery import visible_scope_sql
from langgraph_typed_memory.store.protocol import Plan, Sql
from langgraph_typed_memory.store.sqlite import connect_sqlite
from langgraph_typed_memory.store.sqlite_sql import SqliteDialect

NOW = 1_000_000.0
WORDS = [f"w{i}" for i in range(120)] + ["run", "runs", "running", "cat", "cats"]
ZIPF = [1.0 / (rank + 1) for rank in range(len(WORDS))]
TENANTS = ["t1", "t2", "t3"]
USERS = [None, "u1", "u2"]
AGENTS = [None, "a1"]


def _run(conn: sqlite3.Connection, plan: Plan[Any]) -> Any:
    """Answer each statement of a plan on the connection; the plan's value."""
    request = next(plan)
    try:
        while True:
            assert isinstance(request, Sql)
            request = plan.send(conn.execute(request.text, request.params).fetchall())
    except StopIteration as stop:
        return stop.value


def _fill(conn: sqlite3.Connection, rng: random.Random, rows: int) -> None:
    """Rows straight into `memories` (its triggers index the text)."""
    for i in range(rows):
        text = (None if rng.random() < 0.05 else
                " ".join(rng.choices(WORDS, ZIPF, k=rng.randint(1, 18))))
        status = rng.choices(["active", "superseded", "expired"], [0.85, 0.1, 0.05])[0]
        expires = rng.choice([None, None, None, NOW - 10.0, NOW + 10.0])
        conn.execute(
            "INSERT INTO memories (id, ns, key, value, kind, tenant_id, user_id, agent_id, "
            "status, search_text, created_at, updated_at, expires_at) "
            "VALUES (?, ?, ?, '{}', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [f"id{i}", f"ns{i}", f"k{i}", rng.choice(["fact", "episode"]),
             rng.choice(TENANTS), rng.choice(USERS), rng.choice(AGENTS), status, text,
             NOW, NOW, expires],
        )
    conn.commit()


@pytest.fixture(scope="module", params=[0, 1, 2])
def corpus(request: pytest.FixtureRequest) -> Iterator[tuple[sqlite3.Connection, int]]:
    conn = connect_sqlite(":memory:")
    SqliteMemoryStore(conn).setup()
    _fill(conn, random.Random(request.param), 1500)
    yield conn, request.param
    conn.close()


def _where(rng: random.Random) -> q.ScopeRead:
    """A random visible scope, as the store's ranked search filters it."""
    scope = Scope(rng.choice(TENANTS), user_id=rng.choice(USERS), agent_id=rng.choice(AGENTS))
    kind = rng.choice(["fact", "episode"])
    where, params = visible_scope_sql(scope, kind)
    return q.ScopeRead(f"{where} AND m.status = 'active'", params, (where, params), NOW, kind)


def _reference(
    conn: sqlite3.Connection, read: q.ScopeRead, terms: list[str], depth: int | None
) -> list[tuple[int, float]]:
    """Every in-scope match as the former statement scored it, best first, ties by seq."""
    where, params = read.live()
    table = f"memory_fts_{read.kind}"
    match = " OR ".join(f'"{t}"' for t in dict.fromkeys(terms))
    rows = conn.execute(
        f"SELECT m.seq, -bm25({table}) AS score FROM {table} "
        f"JOIN memories m ON m.seq = {table}.rowid "
        f"WHERE {table} MATCH ? AND {where} ORDER BY bm25({table})",
        [match, *params],
    ).fetchall()
    ranked = sorted(((seq, float(score)) for seq, score in rows), key=lambda r: (-r[1], r[0]))
    return ranked if depth is None else ranked[:depth]


def test_lexical_equals_reference(corpus: tuple[sqlite3.Connection, int]) -> None:
    conn, seed = corpus
    rng = random.Random(100 + seed)
    dialect = SqliteDialect()
    tied = 0
    for _ in range(150):
        read = _where(rng)
        terms = rng.choices(WORDS + ["absent"], ZIPF + [0.02], k=rng.randint(1, 6))
        for depth in (1, 3, 10, 50, None):
            expected = _reference(conn, read, terms, depth)
            got = _run(conn, dialect.lexical(read, terms, depth))
            assert got == expected, (terms, depth, read)
            scores = [score for _, score in expected]
            tied += len(scores) - len(set(scores))
    assert tied > 0  # the corpora exercise the tie order


def test_full_text_scan_stays_outermost(corpus: tuple[sqlite3.Connection, int]) -> None:
    """The plan starts from the MATCH, never from the scope index (which re-runs it per row)."""
    conn, _ = corpus
    read = _where(random.Random(7))
    for depth in (10, None):
        statement = next(SqliteDialect().lexical(read, ["w1", "w2"], depth))
        assert isinstance(statement, Sql)
        plan = conn.execute("EXPLAIN QUERY PLAN " + statement.text, statement.params).fetchall()
        assert f"memory_fts_{read.kind}" in plan[0][3], plan


def test_each_kind_has_its_own_full_text_table(corpus: tuple[sqlite3.Connection, int]) -> None:
    """Migration 0012: a kind's table holds exactly the kind's rows that have text, and the
    triggers keep it so through an update of the text and a delete."""
    conn, _ = corpus

    def indexed(kind: str, word: str) -> set[int]:
        table = f"memory_fts_{kind}"
        return {r[0] for r in conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ?", [f'"{word}"'])}

    for kind in ("fact", "episode"):
        with_text = {r[0] for r in conn.execute(
            "SELECT seq FROM memories WHERE kind = ? AND instr(' ' || search_text || ' ', "
            "' w0 ') > 0", [kind])}
        assert with_text and indexed(kind, "w0") == with_text
    assert not {r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE name = 'memory_fts'")}
    seq = conn.execute("SELECT seq FROM memories WHERE kind = 'fact' AND search_text "
                       "IS NOT NULL LIMIT 1").fetchone()[0]
    conn.execute("BEGIN")  # undone below: the corpus is shared by the module's tests
    conn.execute("UPDATE memories SET search_text = 'zebraword' WHERE seq = ?", [seq])
    assert indexed("fact", "zebraword") == {seq} and not indexed("episode", "zebraword")
    conn.execute("DELETE FROM memories WHERE seq = ?", [seq])
    assert not indexed("fact", "zebraword")
    for table in ("memory_fts_fact", "memory_fts_episode", "memory_fts_observation"):
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
    conn.execute("ROLLBACK")
