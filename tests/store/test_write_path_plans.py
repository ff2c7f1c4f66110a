"""Lookups that run every turn read their index, not the namespace: a user's turn log only
grows and superseded facts stay as history, so a statement that reads every row of a
namespace gets slower every turn."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.sqlite.dialect import SqliteDialect

pytestmark = pytest.mark.perf_contract

NS = "tenant:t.user:u.episode"
LOOKUPS = [  # (what, (statement, parameters) in a dialect, the index it must read)
    ("a turn's records", lambda _: (q.SQL_STATED_IN_TURN, [NS, "run-1", 3]),
     "memories_provenance"),
    ("the newest active", lambda _: (q.SQL_NEWEST, [NS, 0.0, 10**9, 10]), "memories_active_seq"),
    ("the newest holding a value",
     lambda d: (q.sql_holding_text(d.position_fn), [NS, "oolong"]), "memories_active_seq"),
    ("a span of time", lambda _: (q.SQL_DURING, [NS, 0.0, 100.0, 200.0, 0, 10]),
     "memories_active_occurred"),
    ("a batch's current rows", lambda d: _current_rows(d, [(NS, "k1"), (NS, "k2")]),
     "memories_current"),
]


def _current_rows(dialect: Any, pairs: list[tuple[str, str]]) -> tuple[str, list[Any]]:
    [(rows, params)] = dialect.key_pairs(pairs)
    return q.SQL_CURRENT_ROWS.format(pairs=rows), params


@pytest.mark.parametrize(("what", "sql", "index"), LOOKUPS, ids=[x[0] for x in LOOKUPS])
def test_sqlite_plans(what: str, sql: Callable[[Any], tuple[str, list[Any]]], index: str
                      ) -> None:
    conn = connect_sqlite(":memory:")
    SqliteMemoryStore(conn).setup()
    text, params = sql(SqliteDialect())
    plan = " ".join(str(row[-1]) for row in conn.execute(f"EXPLAIN QUERY PLAN {text}", params))
    assert index in plan and "SCAN m" not in plan, plan


@pytest.mark.skipif(bool(os.environ.get("TYPED_MEMORY_SKIP_POSTGRES")), reason="no Postgres")
def test_postgres_plans(pg_server: Any) -> None:
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore
    from langgraph_typed_memory.store.postgres.dialect import PostgresDialect
    from tests.conftest import fresh_database

    with psycopg.connect(fresh_database(pg_server), autocommit=True) as conn:
        PostgresMemoryStore(conn).setup()
        conn.execute(  # one user's long history: 200 runs of 25 turns, 1 in 10 still active
            "INSERT INTO memories (id, ns, key, value, status, search_text, created_at, "
            "updated_at, occurred_at, source_run_id, source_turn) SELECT 'm' || g, %s, "
            "'k' || g, '{}', CASE WHEN g %% 10 = 0 THEN 'active' ELSE 'superseded' END, "
            "'turn ' || g, 0, 0, g, 'run-' || (g / 25), g %% 25 "
            "FROM generate_series(1, 5000) g", [NS])
        conn.execute("ANALYZE memories")
        for what, sql, index in LOOKUPS:
            text, params = sql(PostgresDialect())
            text = text.replace("?", "%s")
            plan = " ".join(row[0] for row in conn.execute(f"EXPLAIN {text}", params))
            assert index in plan, (what, plan)


def test_a_correction_reads_only_the_newest_records_for_the_value_it_replaces(monkeypatch
                                                                              ) -> None:
    """Its cost does not grow with the turn log: the held value is looked for among the
    namespace's `HOLDING_WINDOW` newest active records."""
    monkeypatch.setattr(q, "HOLDING_WINDOW", 3)
    store = SqliteMemoryStore(connect_sqlite(":memory:"))
    store.setup()
    episodes = ("tenant:t", "user:u", "episode")
    for i, text in enumerate(["I drink green tea", "filler one", "filler two", "oolong now"]):
        store.put(episodes, f"e{i}", {"title": "user", "summary": f"user: {text}"})
    ns = "tenant:t.user:u.episode"
    held = store.conn.execute(q.sql_holding_text("instr"), [ns, "oolong"]).fetchall()
    assert [row[2] for row in held] == ["e3"]
    assert store.conn.execute(q.sql_holding_text("instr"), [ns, "green tea"]).fetchall() == []
