"""The retrieve node's fan-out, counted in statements and round trips.

A fan-out is one batch of five searches of a user's scope, which also sees the tenant-wide
records: the policies, procedures and preferences exhaustively, the facts and episodes by
hybrid search. Once the user's scope cells are cached, it reads on SQLite:

- the counters of the scope's cells, one statement for every ranked kind (the vector and
  lexical searches of facts and episodes all ask for it; it goes out once; a user's first
  fan-out reads them once more: the first read measures whether the scope fits the caches);
- the policies, procedures and preferences, one statement for the three kinds;
- the page's rows of the facts, and of the episodes.

No statement tokenizes: the query's terms are tokenized in this process, the first time a
character outside ASCII is met excepted. On Postgres the same statements, with the query's
lexemes (one statement for both ranked searches), go out in two round trips: everything that
does not depend on a ranking, then the pages' rows; a user's first fan-out reads the cells
it does not hold yet in the first. A change to the statements a fan-out
sends, or to how they are grouped, fails here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.store.base import BaseStore

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.nodes import create_retrieve_node
from tests.conftest import FakeClock, fresh_database, hash_index

pytestmark = pytest.mark.perf_contract

USER = ("tenant:acme", "user:alice")
CONFIG = {"configurable": {"tenant_id": "acme", "user_id": "alice"}}
WORDS = ["red", "tulips", "garden", "spring", "whales", "songs", "blue", "office", "door"]


def _fill(store: BaseStore) -> None:
    """A user's preferences, facts and episodes, and tenant-wide facts (confirmed by a second
    source, so they are active) and a policy."""
    for i in range(6):
        text = " ".join(WORDS[i % 9:] + WORDS[:i % 4])
        store.put((*USER, "fact"), f"f{i}", {"subject": "alice", "predicate": f"p{i}",
                                             "content": text})
        store.put((*USER, "episode"), f"e{i}", {"title": f"talk {i}", "summary": text})
    store.put((*USER, "preference"), "tone", {"value": "terse"})
    store.put(("tenant:acme", "policy"), "p", {"value": {"max_auto_approve_usd": 500},
                                               "created_by": "ops"})
    facts = [{"kind": "fact", "scope": "tenant", "stateful": False, "confidence": 0.9,
              "subject": "acme", "predicate": f"t{i}", "content": f"{WORDS[i]} at acme"}
             for i in range(5)]
    for source in ("admin", "import"):
        store.promote(facts, tenant_id="acme", source=source)  # type: ignore[attr-defined]


class Trips:
    """The statements a store's driver sends, per round trip (a pipeline is one)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: Any) -> None:
        self.trips: list[list[str]] = []
        real = module.drive_sync

        def counting(plan: Any, execute: Callable[..., Any], *args: Any, reads: Any = None,
                     **kw: Any) -> Any:
            def one(request: Any) -> Any:
                self.trips.append([getattr(request, "text", type(request).__name__)])
                return execute(request)

            def together(steps: Any) -> Any:
                self.trips.append([step.text for step in steps])
                return reads(steps)

            return real(plan, one, *args, reads=together if reads else None, **kw)

        monkeypatch.setattr(module, "drive_sync", counting)

    def fan_out(self, node: Any, query: str) -> list[list[str]]:
        self.trips.clear()
        out = node.invoke({"messages": [HumanMessage(query)]}, CONFIG)
        modes = out["memory_trace"]["retrieval"]["modes"]
        assert (modes["facts"], modes["episodes"]) == ("hybrid", "hybrid")
        assert out["memory_context"]["preferences"] and out["memory_context"]["facts"]
        return list(self.trips)


def _reads(trip: list[str]) -> list[str]:
    """What each statement of a round trip reads, in a word."""
    out = []
    for text in trip:
        if "FROM memory_scope_versions" in text:
            out.append("counters")
        elif "ORDER BY (m.user_id IS NOT NULL)" in text:  # wider scopes first, by key
            out.append("listing")
        elif "m.seq IN" in text or "m.seq = ANY" in text:
            out.append("page")
        elif "to_tsvector" in text:
            out.append("lexemes")
        elif "memory_tokenizer" in text:
            out.append("probe")
        else:
            out.append("load")
    return out


def test_sqlite_fan_out_statements(monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph_typed_memory.store.sqlite import store as module

    with SqliteMemoryStore.from_conn_string(":memory:", index=hash_index(),
                                            clock=FakeClock()) as store:
        store.setup()
        _fill(store)
        node = create_retrieve_node(store)
        trips = Trips(monkeypatch, module)
        cold = [_reads(t) for t in trips.fan_out(node, "red tulips in the spring garden")]
        assert cold[0] == ["counters"] and cold[-2:] == [["page"], ["page"]]
        # the cells, read once, with the listing, and the counters once more (the first read
        # measured whether the scope fits the caches)
        middle = sorted(t[0] for t in cold[1:-2])
        assert middle.count("listing") == 1 and middle.count("counters") == 1
        assert set(middle) == {"listing", "load", "counters"}
        warm = [_reads(t) for t in trips.fan_out(node, "blue whales singing in the office")]
        assert warm == [["counters"], ["listing"], ["page"], ["page"]]
        # a character outside ASCII is probed once, then known
        first = [_reads(t) for t in trips.fan_out(node, "blue whales in the café")]
        assert [t for t in first if t != ["probe"]] == warm
        assert len(first) > len(warm)
        again = [_reads(t) for t in trips.fan_out(node, "café garden")]
        assert again == warm
        # a write: the changed cells are brought up to date, the rest stays as it was
        store.put((*USER, "fact"), "f9", {"subject": "alice", "predicate": "p9",
                                          "content": "whales in the garden"})
        after = [_reads(t) for t in trips.fan_out(node, "whales garden")]
        assert after[:2] == [["counters"], ["listing"]] and after[-2:] == [["page"], ["page"]]
        assert [_reads(t) for t in trips.fan_out(node, "whales garden")] == warm


@pytest.mark.skipif(bool(os.environ.get("TYPED_MEMORY_SKIP_POSTGRES")),
                    reason="TYPED_MEMORY_SKIP_POSTGRES is set")
def test_postgres_fan_out_round_trips(pg_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore
    from langgraph_typed_memory.store.postgres import store as module

    with psycopg.connect(fresh_database(pg_server), autocommit=True) as conn:
        store = PostgresMemoryStore(conn, index=hash_index(), clock=FakeClock())
        store.setup()
        _fill(store)
        node = create_retrieve_node(store)
        trips = Trips(monkeypatch, module)
        cold = [_reads(t) for t in trips.fan_out(node, "red tulips in the spring garden")]
        # a scope no cache holds is measured first (its counters, beside the listing: one too
        # large for the caches is ranked by its sketches, docs/large-scopes.md), then its
        # cells are read with their counters: a first search takes three round trips
        assert len(cold) == 3 and cold[0] == ["counters", "listing"]
        assert cold[-1] == ["page", "page"]
        first = sorted(cold[1])
        assert cold[1][0] == "counters" and first.count("lexemes") == 1
        assert first.count("load") == 8  # vectors and postings of 2 cells (user's, tenant's) x 2
        warm = [_reads(t) for t in trips.fan_out(node, "blue whales singing in the office")]
        assert warm == [["counters", "lexemes", "listing"], ["page", "page"]]


# ------------------------------------------------------------------ the listing's plan

LISTING_ROWS = (
    "INSERT INTO memories (id, ns, key, value, kind, tenant_id, user_id, status, created_at, "
    "updated_at) VALUES (?, ?, ?, '{}', ?, 'acme', ?, 'active', 1, 1)")


def _listing_rows(users: int) -> list[list[Any]]:
    """Five preferences for each of `users` users, a policy and a procedure of the tenant."""
    rows: list[list[Any]] = [[f"t{k}", f"tenant:acme.{k}", k, k, None]
                             for k in ("policy", "procedure")]
    rows += [[f"u{u}p{j}", f"tenant:acme.user:u{u}.preference", f"k{j}", "preference", f"u{u}"]
             for u in range(users) for j in range(5)]
    return rows


@pytest.mark.parametrize("statistics", [False, True])
def test_sqlite_listing_reads_each_cell_by_the_scope_index(statistics: bool) -> None:
    """The policies, procedures and preferences a fan-out lists are read cell by cell
    through the scope index, on every column of it, with or without the database's
    statistics: never every user's rows of the tenant."""
    from langgraph_typed_memory.namespaces import Scope
    from langgraph_typed_memory.store.core.search import _exact_listing

    with SqliteMemoryStore.from_conn_string(":memory:") as store:
        store.setup()
        conn = store.conn
        conn.executemany(LISTING_ROWS, _listing_rows(2000))
        if statistics:
            conn.execute("ANALYZE")
        sql = _exact_listing(Scope("acme", "u7"), "m.status = 'active'", 5.0, False)
        plan = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql.text, sql.params)]
        searches = [step for step in plan if step.startswith("SEARCH m")]
        assert "MULTI-INDEX OR" in plan and len(searches) == 6, plan  # 3 kinds x 2 cells
        assert all("memories_scope (tenant_id=? AND kind=? AND status=? AND user_id=? AND "
                   "agent_id=?)" in step for step in searches), plan
        rows = conn.execute(sql.text, sql.params).fetchall()
        assert [(r[5], r[7]) for r in rows] == [("policy", None), ("procedure", None)] + [
            ("preference", "u7")] * 5


def test_postgres_listing_reads_each_cell_by_the_scope_index(pg_server: Any) -> None:
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore
    from langgraph_typed_memory.namespaces import Scope
    from langgraph_typed_memory.store.core.search import _exact_listing
    from langgraph_typed_memory.store.postgres.store import to_psycopg

    with psycopg.connect(fresh_database(pg_server), autocommit=True) as conn:
        PostgresMemoryStore(conn).setup()
        with conn.cursor() as cur:
            cur.executemany(to_psycopg(LISTING_ROWS), _listing_rows(2000))
        conn.execute("ANALYZE")
        sql = _exact_listing(Scope("acme", "u7"), "m.status = 'active'", 5.0, False)
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN " + to_psycopg(sql.text), sql.params, prepare=False))
        assert "memories_scope" in plan and "Seq Scan on memories" not in plan, plan
        assert len(conn.execute(to_psycopg(sql.text), sql.params).fetchall()) == 7
