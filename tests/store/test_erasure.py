"""Erasure: a user's canary is gone from every table, index and (SQLite) file byte."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_typed_memory import PostgresMemoryStore, SqliteMemoryStore
from langgraph_typed_memory.graph import create_memory_chat_graph
from tests.conftest import fresh_database, hash_index

CANARY = "zqcanary" + uuid.uuid4().hex[:10]
NAME = CANARY.capitalize()
"""The canary as a name: an entity, its relations and the ids its records carry."""
LONG_AGO = (datetime.now(UTC) - timedelta(days=60)).isoformat()


def plant(store: Any, graph: Any) -> None:
    """The canary in every kind, a superseded version, metadata, evidence, untyped data,
    checkpointed messages and a compacted summary of alice; bob and the tenant hold similar
    data without it."""
    for user in ("alice", "bob"):
        word = CANARY if user == "alice" else "plainword"
        base = ("tenant:acme", f"user:{user}")
        store.put((*base, "preference"), "motto", {"value": f"old {word}"})
        store.put((*base, "preference"), "motto", {"value": f"new {word}"})
        store.put((*base, "fact"), "f", {"subject": user, "predicate": "note",
                                         "content": f"{user} said {word}",
                                         "metadata": {"tag": word}})
        store.put((*base, "episode"), "e", {"title": f"t {word}", "summary": f"s {word}"})
        store.put((*base, "episode"), "trip", {"title": f"trip {word}",
                                               "summary": f"A trip about {word}.",
                                               "occurred_at": LONG_AGO})
        store.put((*base, "observation"), "o", {"category": "style", "quote": f"q {word}"})
        store.put((*base, "agent:bot", "procedure"), "p", {"rule": f"rule {word}"})
        store.put(("memories", user), "m", {"text": f"untyped {word}"})
        store.promote([{"kind": "fact", "subject": "acme", "predicate": "slogan",
                        "scope": "tenant", "content": f"Acme slogan {word}",
                        "grounding": word, "confidence": 0.9}],
                      tenant_id="acme", source=user, run_id="r1")  # the tenant's, user-sourced
        chat = {"configurable": {"thread_id": f"thread-{user}", "tenant_id": "acme",
                                 "user_id": user}}
        graph.invoke({"messages": [HumanMessage(f"I live in Lyon and my code is {word}.")]},
                     chat)
        name = word.capitalize()  # an entity, with a role and a relation
        graph.invoke({"messages": [HumanMessage(
            f"My sister {name} lives in Vienna. {name} leads the platform team.")]}, chat)
    store.put(("tenant:acme", "policy"), "refunds", {"value": {"max": 500}, "created_by": "ops"})
    # Derived records: maintenance compacts the old episodes into weekly summaries.
    assert store.maintain(tenant_id="acme").step("compaction").changed >= 2
    summaries = store.search(("tenant:acme", "user:alice", "episode"), query=f"trip {CANARY}")
    assert any(s.key.startswith("compact:") and CANARY in str(s.value) for s in summaries)


def erase_and_check(store: Any, saver: Any, dump: Any, other: Any) -> Any:
    """`other`: a second store object on the same database, as another process would hold:
    its cached copies of the cells of alice's scope are reloaded at its next search, not
    patched."""
    assert CANARY in dump() and NAME in dump()
    entities = [i.value["name"] for i in store.search(("tenant:acme", "user:alice", "entity"))]
    assert NAME in entities and "platform team" in entities
    bob_before = [i.value for i in store.search(("tenant:acme", "user:bob", "fact"))]
    bob_entities = [i.value for i in store.search(("tenant:acme", "user:bob", "entity"))]
    store.search(("tenant:acme", "user:alice", "fact"), query=CANARY)
    assert other.search(("tenant:acme", "user:alice", "fact"), query=CANARY)
    elsewhere = other.records.dialect.vectors
    loads, patches = elsewhere.full_loads, elsewhere.patched_loads
    caches = (store.records.dialect.vectors, store.records.dialect.postings)
    assert all(len(cache) for cache in caches)  # alice's scope is cached
    report = store.erase("acme", "alice", checkpointer=saver,
                         untyped_prefixes=[("memories", "alice")], reason="GDPR art. 17")
    assert not any(len(cache) for cache in caches)  # no copy of her rows stays in memory
    assert report.records["preference"] == 2 and report.records["untyped"] == 1
    assert report.records["entity"] == 4  # Lyon, the sister, Vienna, the platform team
    assert report.threads == ["thread-alice"] and report.derived_deleted == 1
    assert CANARY not in dump() and NAME not in dump()
    assert store.search(("tenant:acme", "user:alice", "entity")) == []
    assert [i.value for i in store.search(("tenant:acme", "user:bob", "fact"))] == bob_before
    assert [i.value for i in store.search(("tenant:acme", "user:bob", "entity"))] == bob_entities
    assert store.get(("memories", "bob"), "m") is not None
    assert saver.get({"configurable": {"thread_id": "thread-bob"}}) is not None
    assert saver.get({"configurable": {"thread_id": "thread-alice"}}) is None
    assert store.search(("tenant:acme", "policy"))
    assert store.check_invariants().ok
    assert other.search(("tenant:acme", "user:alice", "fact"), query=CANARY) == []
    # alice's cell and the tenant-wide one (its derived record gone) reloaded, not patched
    assert (elsewhere.full_loads, elsewhere.patched_loads) == (loads + 2, patches)
    return report


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Iterator[tuple[Any, Any, Path]]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "memory.db"
    with SqliteMemoryStore.from_conn_string(str(path), index=hash_index()) as store:
        store.setup()
        conn = sqlite3.connect(str(path), check_same_thread=False)
        yield store, SqliteSaver(conn), path
        conn.close()


@pytest.fixture
def other_sqlite(sqlite_file: tuple[Any, Any, Path]) -> Iterator[Any]:
    with SqliteMemoryStore.from_conn_string(str(sqlite_file[2]), index=hash_index()) as other:
        yield other


def test_erasure_sqlite_tables_indexes_and_file_bytes(sqlite_file, other_sqlite):
    store, saver, path = sqlite_file
    plant(store, create_memory_chat_graph(store=store, checkpointer=saver))

    def dump() -> str:
        conn = sqlite3.connect(str(path))
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [repr(conn.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables]
        conn.close()
        files = b"".join(p.read_bytes() for p in path.parent.glob("memory.db*"))
        return "\n".join(rows) + files.decode("latin-1")

    erase_and_check(store, saver, dump, other_sqlite)
    hits = store.search(("tenant:acme", "user:alice", "fact"), query=CANARY)
    assert hits == []


def test_erasure_postgres_every_table(pg_server):
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    url = fresh_database(pg_server)
    with PostgresMemoryStore.from_conn_string(url, index=hash_index()) as store, \
            PostgresMemoryStore.from_conn_string(url, index=hash_index()) as other, \
            PostgresSaver.from_conn_string(url) as saver, \
            psycopg.connect(url, autocommit=True) as raw:
        store.setup()
        saver.setup()
        plant(store, create_memory_chat_graph(store=store, checkpointer=saver))

        def dump() -> str:
            tables = [r[0] for r in raw.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()]
            text = []
            for table in tables:
                rows = raw.execute(f'SELECT * FROM "{table}"').fetchall()
                text.append(repr([[bytes(v).decode("latin-1") if isinstance(
                    v, (bytes, memoryview)) else v for v in row] for row in rows]))
            return "\n".join(text)

        erase_and_check(store, saver, dump, other)
        assert raw.execute("SELECT count(*) FROM memory_deletions WHERE user_id = 'alice'"
                           ).fetchone()[0] == 1


async def test_async_erasure_with_an_async_checkpointer(tmp_path):
    from langgraph.checkpoint.memory import InMemorySaver

    with SqliteMemoryStore.from_conn_string(str(tmp_path / "a.db"), index=hash_index()) as store:
        store.setup()
        saver = InMemorySaver()
        graph = create_memory_chat_graph(store=store, checkpointer=saver)
        config = {"configurable": {"thread_id": "t-a", "tenant_id": "acme", "user_id": "alice"}}
        await graph.ainvoke({"messages": [HumanMessage(f"I live in {NAME}ville.")]}, config)
        report = await store.aerase("acme", "alice", checkpointer=saver)
        assert report.threads == ["t-a"] and report.records["fact"] == 1
        assert await store.asearch(("tenant:acme", "user:alice", "fact"), query=CANARY) == []


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_erasing_a_thread_scoped_user_deletes_that_thread(tmp_path, asynchronous):
    """A caller that names no user is scoped to its thread (`thread-<thread_id>`): erasing
    that scope deletes the thread, not another user's that shares the tenant."""
    from langgraph.checkpoint.memory import InMemorySaver

    with SqliteMemoryStore.from_conn_string(str(tmp_path / "t.db"), index=hash_index()) as store:
        store.setup()
        saver = InMemorySaver()
        graph = create_memory_chat_graph(store=store, checkpointer=saver)
        said = {"messages": [HumanMessage(f"I live in {NAME}ville.")]}
        await graph.ainvoke(said, {"configurable": {"thread_id": "anon-1",
                                                    "tenant_id": "acme"}})
        await graph.ainvoke(said, {"configurable": {"thread_id": "t-bob", "tenant_id": "acme",
                                                    "user_id": "bob"}})
        report = (await store.aerase("acme", "thread-anon-1", checkpointer=saver)
                  if asynchronous else store.erase("acme", "thread-anon-1", checkpointer=saver))
        assert report.threads == ["anon-1"] and report.records["fact"] == 1
        assert [c.config["configurable"]["thread_id"] for c in saver.list(None)] and {
            c.config["configurable"]["thread_id"] for c in saver.list(None)} == {"t-bob"}


class _BrokenSaver:
    """A checkpointer whose thread listing fails (a database gone away)."""

    def list(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("checkpoint database unreachable")

    async def alist(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("checkpoint database unreachable")
        yield  # an async generator


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_failing_checkpointer_still_leaves_nothing_erased_in_memory(tmp_path, asynchronous):
    with SqliteMemoryStore.from_conn_string(str(tmp_path / "b.db"), index=hash_index()) as store:
        store.setup()
        ns = ("tenant:acme", "user:alice", "fact")
        store.put(ns, "home", {"subject": "user", "predicate": "home_city",
                               "content": f"The user lives in {CANARY}ville."})
        assert store.search(ns, query=CANARY)  # the cells are cached now
        cache = store.records.dialect.cache  # type: ignore[attr-defined]
        assert len(cache) > 0
        with pytest.raises(OSError, match="unreachable"):
            if asynchronous:
                await store.aerase("acme", "alice", checkpointer=_BrokenSaver())  # type: ignore[arg-type]
            else:
                store.erase("acme", "alice", checkpointer=_BrokenSaver())  # type: ignore[arg-type]
        assert len(cache) == 0  # purged although the checkpointer step failed
        assert store.search(ns, query=CANARY) == []
