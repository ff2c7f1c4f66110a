"""The write path's lookups read their index, not the namespace: a user's turn log only grows,
so a statement that scans it gets slower every turn."""

from __future__ import annotations

import os
from typing import Any

import pytest

from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.store import queries as q

PARAMS = ["tenant:t/user:u/episode", "run-1", 3]


def test_sqlite_finds_a_turns_records_by_provenance() -> None:
    conn = connect_sqlite(":memory:")
    SqliteMemoryStore(conn).setup()
    plan = " ".join(str(row[-1]) for row in conn.execute(
        f"EXPLAIN QUERY PLAN {q.SQL_STATED_IN_TURN}", PARAMS))
    assert "memories_provenance" in plan, plan


@pytest.mark.skipif(bool(os.environ.get("TYPED_MEMORY_SKIP_POSTGRES")), reason="no Postgres")
def test_postgres_finds_a_turns_records_by_provenance(pg_server: Any) -> None:
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore

    from .conftest import fresh_database

    with psycopg.connect(fresh_database(pg_server), autocommit=True) as conn:
        PostgresMemoryStore(conn).setup()
        conn.execute(  # one user's long turn log: 200 runs of 25 turns, one namespace
            "INSERT INTO memories (id, ns, key, value, created_at, updated_at, source_run_id, "
            "source_turn) SELECT 'm' || g, %s, 'k' || g, '{}', 0, 0, 'run-' || (g / 25), g %% 25 "
            "FROM generate_series(1, 5000) g", [PARAMS[0]])
        conn.execute("ANALYZE memories")
        text = q.SQL_STATED_IN_TURN.replace("?", "%s")
        plan = " ".join(row[0] for row in conn.execute(f"EXPLAIN {text}", PARAMS))
    assert "memories_provenance" in plan, plan
