"""The drop-in contract with LangGraph's stores: an untyped search reads its namespace
through the namespace index on both backends (its cost grows with the namespace, not with
the table: LangMem's `("memories", user)` among thousands of users), and the TTL sweeper runs
as LangGraph's does."""

from __future__ import annotations

from typing import Any

from langgraph_typed_memory.namespaces import encode_namespace
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Sql


def plan_of(store: Any, prefix: tuple[str, ...], paged: bool) -> str:
    """The database's plan for the untyped search of `prefix` (sequential scans discouraged
    on Postgres, so a plan that can use the index does)."""
    d = store.records.dialect
    where, params = q.namespace_under(encode_namespace(prefix), d.range_ops)
    sql = q.sql_untyped_rows(where, paged)
    args = [*params, 0.0, *([10, 0] if paged else [])]

    def explain() -> Any:
        if d.name == "sqlite":
            rows = yield Sql("EXPLAIN QUERY PLAN " + sql, args)
            return "\n".join(str(r[-1]) for r in rows)
        yield Begin()
        yield Sql("SET LOCAL enable_seqscan = off")
        rows = yield Sql("EXPLAIN " + sql, args)
        yield Commit()
        return "\n".join(str(r[0]) for r in rows)

    return str(store.run_plan(explain))


def test_an_untyped_search_uses_the_namespace_index(store):
    for user in range(30):
        for i in range(5):
            store.put(("memories", f"u{user}"), f"k{i}", {"text": f"note {i}"})
    for prefix in (("memories", "u7"), ("memories",)):
        for paged in (True, False):
            plan = plan_of(store, prefix, paged)
            assert "memories_ns" in plan or "memories_current" in plan, plan
            assert "SCAN m\n" not in plan + "\n" and "Seq Scan" not in plan, plan
    assert [i.key for i in store.search(("memories", "u7"), limit=2, offset=1)] == ["k1", "k2"]
    assert len(store.search(("memories",), limit=200)) == 150


def test_the_ttl_sweeper_deletes_expired_items_in_the_background(tmp_path):
    import time
    from datetime import UTC, datetime, timedelta

    from langgraph_typed_memory import SqliteMemoryStore

    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    ttl = {"default_ttl": 1, "sweep_interval_minutes": 0.001}  # every 60 ms
    with SqliteMemoryStore.from_conn_string(str(tmp_path / "m.db"), ttl=ttl,
                                            clock=lambda: now[0]) as store:
        store.setup()
        store.put(("notes",), "n1", {"text": "call back"})
        running = store.start_ttl_sweeper()
        assert store.start_ttl_sweeper() is running  # one sweeper at a time
        now[0] += timedelta(minutes=2)
        deadline = time.monotonic() + 5
        while store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]:
            assert time.monotonic() < deadline, "the sweeper did not delete the expired item"
            time.sleep(0.02)
        assert store.stop_ttl_sweeper(timeout=5) and running.done()
    with SqliteMemoryStore.from_conn_string(str(tmp_path / "n.db")) as plain:
        assert plain.start_ttl_sweeper().done()  # no TTL config: nothing to sweep


async def test_the_async_ttl_sweeper_stops_with_the_store(tmp_path):
    from langgraph_typed_memory import AsyncSqliteMemoryStore

    async with AsyncSqliteMemoryStore.from_conn_string(
            str(tmp_path / "a.db"), ttl={"default_ttl": 1}) as store:
        await store.setup()
        task = await store.start_ttl_sweeper(sweep_interval_minutes=10)
        assert not task.done()
    assert task.done()  # leaving the block stopped it
