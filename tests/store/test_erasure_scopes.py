"""Erasure by the scope the nodes computed: for every id shape a run may carry, a canary said
through the chat graph is gone from every table (and, on SQLite, every file byte) after
erasing that scope, by the API and by the CLI; erasing a name a client merely sent deletes
nothing of the authenticated user."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_typed_memory import PostgresMemoryStore, SqliteMemoryStore
from langgraph_typed_memory.cli import main
from langgraph_typed_memory.graph import create_memory_chat_graph
from tests.conftest import fresh_database

UUID = uuid.UUID("7d7c3c5e-1b1f-4bb4-9a43-5f0c6a3b2f10")
SHAPES: dict[str, tuple[dict[str, Any], tuple[str, str]]] = {
    # name: (what the run's configurable holds, the scope erased)
    "plain": ({"tenant_id": "acme", "user_id": "alice"}, ("acme", "alice")),
    "no_tenant": ({"user_id": "alice"}, ("default", "alice")),
    "int": ({"tenant_id": "acme", "user_id": 42}, ("acme", "42")),
    "uuid": ({"tenant_id": "acme", "user_id": UUID}, ("acme", str(UUID))),
    "authenticated": ({"tenant_id": "acme", "langgraph_auth_user_id": "carol"},
                      ("acme", "carol")),
    "anonymous": ({"tenant_id": "acme"}, ("acme", "thread-{thread}")),
}
CLAIMED = {"tenant_id": "acme", "user_id": "mallory", "langgraph_auth_user_id": "carol"}
"""An authenticated user (carol) whose client sent another name (mallory)."""


def canary() -> str:
    return "zqscope" + uuid.uuid4().hex[:10]


def say(graph: Any, configurable: dict[str, Any], thread: str, word: str) -> None:
    graph.invoke({"messages": [HumanMessage(f"I live in Lyon and my locker code is {word}.")]},
                 {"configurable": {**configurable, "thread_id": thread}})


@contextmanager
def sqlite_backend(tmp_path: Path) -> Iterator[tuple[Any, Any, Callable[[], str], str]]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "memory.db"
    with SqliteMemoryStore.from_conn_string(str(path)) as store:
        store.setup()
        conn = sqlite3.connect(str(path), check_same_thread=False)

        def dump() -> str:
            raw = sqlite3.connect(str(path))
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            tables = [r[0] for r in raw.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")]
            rows = [repr(raw.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables]
            raw.close()
            files = b"".join(p.read_bytes() for p in path.parent.glob("memory.db*"))
            return "\n".join(rows) + files.decode("latin-1")

        try:
            yield store, SqliteSaver(conn), dump, str(path)
        finally:
            conn.close()


@contextmanager
def postgres_backend(server: Any) -> Iterator[tuple[Any, Any, Callable[[], str], str]]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    url = fresh_database(server)
    with PostgresMemoryStore.from_conn_string(url) as store, \
            PostgresSaver.from_conn_string(url) as saver, \
            psycopg.connect(url, autocommit=True) as raw:
        store.setup()
        saver.setup()

        def dump() -> str:
            tables = [r[0] for r in raw.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()]
            text = []
            for table in tables:
                rows = raw.execute(f'SELECT * FROM "{table}"').fetchall()
                text.append(repr([[bytes(v).decode("latin-1") if isinstance(
                    v, (bytes, memoryview)) else v for v in row] for row in rows]))
            return "\n".join(text)

        yield store, saver, dump, url


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path
            ) -> Iterator[tuple[Any, Any, Callable[[], str], str]]:
    if request.param == "sqlite":
        with sqlite_backend(tmp_path) as found:
            yield found
    else:
        with postgres_backend(request.getfixturevalue("pg_server")) as found:
            yield found


def erase_by(how: str, store: Any, saver: Any, target: str, tenant: str, user: str,
             monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Erase by the API or by `typed-memory erase`; the threads the API reports deleted."""
    if how == "api":
        return list(store.erase(tenant, user, checkpointer=saver).threads)
    monkeypatch.delenv("TYPED_MEMORY_DB", raising=False)
    assert main(["--db", target, "--no-index", "erase", "--tenant", tenant, "--user", user,
                 "--yes"]) == 0
    return []


@pytest.mark.parametrize("how", ["api", "cli"])
def test_every_id_shape_is_erased_with_its_conversation(backend, how, monkeypatch):
    store, saver, dump, target = backend
    graph = create_memory_chat_graph(store=store, checkpointer=saver)
    words = {(name, n): canary() for name in SHAPES for n in (1, 2)}
    bystander = canary()
    say(graph, {"tenant_id": "acme", "user_id": "bob"}, "bob-1", bystander)
    for (name, n), word in words.items():
        say(graph, SHAPES[name][0], f"{name}-{n}", word)
    assert all(w in dump() for w in words.values())
    erased: set[tuple[str, int]] = set()
    for name, (_, (tenant, user)) in SHAPES.items():
        # an anonymous caller's scope is one thread's: its second thread is another user
        mine = [(name, 1)] if name == "anonymous" else [(name, 1), (name, 2)]
        threads = erase_by(how, store, saver, target, tenant, user.format(thread=f"{name}-1"),
                           monkeypatch)
        if how == "api":
            assert threads == [f"{name}-{n}" for _, n in mine], name
        erased |= set(mine)
        text = dump()
        assert [k for k, w in words.items() if (w in text) == (k in erased)] == [], name
    assert bystander in dump()
    assert saver.get_tuple({"configurable": {"thread_id": "bob-1"}}) is not None
    assert store.check_invariants().ok


def test_a_client_sent_name_erases_nothing_of_the_authenticated_user(backend, monkeypatch):
    store, saver, dump, target = backend
    graph = create_memory_chat_graph(store=store, checkpointer=saver)
    word = canary()
    say(graph, CLAIMED, "carol-1", word)
    report = store.erase("acme", "mallory", checkpointer=saver)
    assert report.threads == [] and sum(report.records.values()) == 0
    assert erase_by("cli", store, saver, target, "acme", "mallory", monkeypatch) == []
    assert word in dump()
    assert saver.get_tuple({"configurable": {"thread_id": "carol-1"}}) is not None
    assert store.erase("acme", "carol", checkpointer=saver).threads == ["carol-1"]
    assert word not in dump()


@pytest.mark.parametrize("name", ["plain", "no_tenant", "int", "authenticated", "anonymous"])
def test_threads_written_before_they_were_recorded_are_found_by_their_metadata(
        tmp_path, name):
    """A database whose threads predate the record of them: erasure reads each candidate
    checkpoint's metadata as the nodes read a run's configuration."""
    with sqlite_backend(tmp_path) as (store, saver, dump, _):
        graph = create_memory_chat_graph(store=store, checkpointer=saver)
        configurable, (tenant, user) = SHAPES[name]
        word = canary()
        say(graph, configurable, "old-1", word)
        # dave, authenticated, whose client sent the names being erased
        say(graph, {"tenant_id": tenant, "user_id": user.format(thread="old-1"),
                    "langgraph_auth_user_id": "dave"}, "dave-1", canary())
        store.run_plan(lambda: (yield from _forget_all_threads()))
        report = store.erase(tenant, user.format(thread="old-1"), checkpointer=saver)
        assert report.threads == ["old-1"]
        assert word not in dump()
        assert saver.get_tuple({"configurable": {"thread_id": "dave-1"}}) is not None


def _forget_all_threads() -> Iterator[Any]:
    from langgraph_typed_memory.store.core.protocol import Begin, Commit, Sql

    yield Begin()
    yield Sql("DELETE FROM memory_threads", [])
    yield Commit()


def test_without_a_checkpointer_the_threads_are_kept_and_found_later(tmp_path, caplog):
    with sqlite_backend(tmp_path) as (store, saver, dump, _):
        graph = create_memory_chat_graph(store=store, checkpointer=saver)
        word = canary()
        say(graph, {"tenant_id": "acme", "user_id": 42}, "t-42", word)
        report = store.erase("acme", "42")
        assert report.threads == [] and report.threads_kept == ["t-42"]
        assert "no checkpointer given" in caplog.text
        assert store.erase("acme", "42", checkpointer=saver).threads == ["t-42"]
        assert word not in dump()


async def test_async_nodes_record_the_thread_and_async_erasure_deletes_it(tmp_path):
    from langgraph.checkpoint.memory import InMemorySaver

    with SqliteMemoryStore.from_conn_string(str(tmp_path / "a.db")) as store:
        store.setup()
        saver = InMemorySaver()
        graph = create_memory_chat_graph(store=store, checkpointer=saver)
        await graph.ainvoke({"messages": [HumanMessage("I live in Lyon.")]},
                            {"configurable": {"thread_id": "u-1", "user_id": UUID}})
        report = await store.aerase("default", str(UUID), checkpointer=saver)
        assert report.threads == ["u-1"]
        assert saver.get_tuple({"configurable": {"thread_id": "u-1"}}) is None


def test_a_deleted_threads_anonymous_memory_is_erased_and_a_live_one_kept(tmp_path):
    with sqlite_backend(tmp_path) as (store, saver, dump, _):
        graph = create_memory_chat_graph(store=store, checkpointer=saver)
        gone, live = canary(), canary()
        say(graph, {"tenant_id": "acme"}, "tmp-1", gone)
        say(graph, {"tenant_id": "acme"}, "live-1", live)
        saver.delete_thread("tmp-1")  # a stateless run's thread, deleted after the run
        reports = store.erase_abandoned(saver)
        assert [(r.tenant_id, r.user_id) for r in reports] == [("acme", "thread-tmp-1")]
        assert gone not in dump() and live in dump()
        assert store.erase_abandoned(saver) == []


@pytest.mark.parametrize("key", ["user_id", "langgraph_auth_user_id"])
def test_a_named_user_cannot_take_an_anonymous_threads_scope(tmp_path, key):
    from langgraph_typed_memory.errors import ConfigurationError

    with sqlite_backend(tmp_path) as (store, saver, _, _):
        graph = create_memory_chat_graph(store=store, checkpointer=saver)
        say(graph, {"tenant_id": "acme"}, "t42", canary())
        with pytest.raises(ConfigurationError, match="reserved for callers that name no user"):
            say(graph, {"tenant_id": "acme", key: "thread-t42"}, "mine", "hello")
