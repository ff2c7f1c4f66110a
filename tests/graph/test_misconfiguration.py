"""A misconfiguration fails loudly, a run-time failure degrades the turn (recorded and logged).

What a LangGraph developer gets wrong in their first hour used to run without an error and
store nothing: a graph compiled without a store, LangGraph's `InMemoryStore` (no promotion
gate), an existing `StateGraph(MessagesState)` (LangGraph drops the `memory_*` keys), and a
namespace that is almost typed (wrong order, a missing `tenant:`, a capital letter, a
misspelt kind), which became an untyped namespace that typed search never sees. Each now
raises a typed error that says what is wrong and how to fix it. A store or a model that fails
at run time still only degrades the turn, and the node logs what it records.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.memory import InMemoryStore

from langgraph_typed_memory import AsyncSqliteMemoryStore, SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.errors import (
    ConfigurationError,
    InvalidNamespace,
    StoreClosed,
    StoreNotSetUp,
    UnknownKind,
)
from langgraph_typed_memory.graph import build_memory_chat_graph, create_memory_chat_graph
from langgraph_typed_memory.namespaces import check_untyped, misspelt_kind
from langgraph_typed_memory.nodes import (
    create_assemble_node,
    create_extract_node,
    create_promote_node,
    create_respond_node,
    create_retrieve_node,
)
from langgraph_typed_memory.nodes._common import MODEL_ENV
from langgraph_typed_memory.state import MemoryState
from tests.fake_models import FailingChatModel

CONFIG = {"configurable": {"thread_id": "t1", "tenant_id": "acme", "user_id": "alice"}}
TURN = {"messages": [HumanMessage("I live in Lyon.")]}
FACTS = ("tenant:acme", "user:alice", "fact")


@pytest.fixture(autouse=True)
def no_model_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)


@pytest.fixture
def memory() -> Iterator[SqliteMemoryStore]:
    store = SqliteMemoryStore(connect_sqlite(":memory:"))
    store.setup()
    yield store


def run(graph: Any, use_async: bool, state: Any = TURN, config: Any = CONFIG) -> Any:
    if use_async:
        return asyncio.run(graph.ainvoke(state, config))
    return graph.invoke(state, config)


def loop_on(builder: StateGraph) -> StateGraph:
    """The five memory nodes, in order, on a builder of the user's own."""
    for name, node in [("retrieve", create_retrieve_node()), ("assemble", create_assemble_node()),
                       ("respond", create_respond_node()), ("extract", create_extract_node()),
                       ("promote", create_promote_node())]:
        builder.add_node(name, node)
    builder.add_edge(START, "retrieve")
    for a, b in [("retrieve", "assemble"), ("assemble", "respond"), ("respond", "extract"),
                 ("extract", "promote"), ("promote", END)]:
        builder.add_edge(a, b)
    return builder


# ---------------------------------------------------------------- no store at run time


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_graph_compiled_without_a_store_fails_the_first_turn(use_async):
    graph = build_memory_chat_graph().compile(checkpointer=InMemorySaver())
    with pytest.raises(ConfigurationError, match=r"No store: pass store="):
        run(graph, use_async)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_run_naming_no_user_agent_or_thread_writes_nothing_tenant_wide(memory, use_async):
    graph = create_memory_chat_graph(store=memory)  # no checkpointer: no thread_id either
    said = {"messages": [HumanMessage("My name is Zoe and my doctor is Dr. Berg.")]}
    with pytest.raises(ConfigurationError, match=r"shown to every one of its users"):
        run(graph, use_async, said, {"configurable": {"tenant_id": "acme"}})
    assert memory.list_namespaces() == []  # nothing written, so nothing for others to see
    other = run(graph, use_async, {"messages": [HumanMessage("What is my doctor's name?")]},
                {"configurable": {"tenant_id": "acme", "user_id": "mallory"}})
    assert "Berg" not in other["messages"][-1].content
    # an agent's own memory, or the thread's, is a scope of its own
    run(graph, use_async, said, {"configurable": {"tenant_id": "acme", "agent_id": "bot"}})
    assert ("tenant:acme", "agent:bot", "episode") in memory.list_namespaces()


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_store_never_set_up_fails_the_first_turn_and_says_to_call_setup(use_async):
    conn = connect_sqlite(":memory:")
    store = (AsyncSqliteMemoryStore if use_async else SqliteMemoryStore)(conn)
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    with pytest.raises(StoreNotSetUp, match=r"call store\.setup\(\)"):
        run(graph, use_async)
    with pytest.raises(StoreNotSetUp):  # the store itself, on a read and on a write
        SqliteMemoryStore(conn).search(FACTS, query="Lyon")
    with pytest.raises(StoreNotSetUp):
        SqliteMemoryStore(conn).put(FACTS, "k", {"subject": "user", "predicate": "home_city",
                                                 "content": "The user lives in Lyon."})
    SqliteMemoryStore(conn).setup()  # the fix the error names
    assert run(graph, use_async)["memory_trace"].get("degraded") in (None, [], {})


def test_a_postgres_store_never_set_up_says_to_call_setup(pg_server):
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore
    from tests.conftest import fresh_database

    with psycopg.connect(fresh_database(pg_server), autocommit=True) as conn:
        store = PostgresMemoryStore(conn)
        with pytest.raises(StoreNotSetUp, match=r"call store\.setup\(\)"):
            store.search(FACTS, query="Lyon")
        graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
        with pytest.raises(StoreNotSetUp):
            run(graph, False)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_store_used_after_its_block_fails_loudly(tmp_path, use_async):
    """A store opened with `with ... as store:` and run after the block: each node raises
    `StoreClosed`, where it used to log a warning and write nothing."""
    with SqliteMemoryStore.from_conn_string(str(tmp_path / "m.db")) as store:
        store.setup()
        graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
        run(graph, use_async)
    with pytest.raises(StoreClosed, match=r"works inside that block only"):
        run(graph, use_async)
    with pytest.raises(StoreClosed):
        store.search(FACTS, query="Lyon")


def test_a_postgres_store_used_after_its_block_fails_loudly(pg_server):
    from langgraph_typed_memory import PostgresMemoryStore
    from tests.conftest import fresh_database

    url = fresh_database(pg_server)
    for pool_size in (None, 2):
        with PostgresMemoryStore.from_conn_string(url, pool_size=pool_size) as store:
            store.setup()
        graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
        with pytest.raises(StoreClosed):
            run(graph, False)
        with pytest.raises(StoreClosed):
            store.put(FACTS, "k", {"subject": "user", "predicate": "home_city",
                                   "content": "The user lives in Lyon."})


@pytest.mark.parametrize("options", [{"facts": "10"}, {"episodes": -1}, {"facts": 2.5},
                                     {"episodes": True}, {"entity_weight": 1.5}])
def test_a_retrieve_node_setting_out_of_range_is_refused_by_the_factory(options):
    name, value = next(iter(options.items()))
    with pytest.raises(ConfigurationError, match=rf"retrieve node {name}={value!r}"):
        create_retrieve_node(**options)


def test_a_checkpointer_on_the_stores_own_connection_is_refused(tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = connect_sqlite(str(tmp_path / "memory.db"))
    store = SqliteMemoryStore(conn)
    store.setup()
    with pytest.raises(ConfigurationError, match=r"a connection of its own"):
        create_memory_chat_graph(store=store, checkpointer=SqliteSaver(conn))
    own = sqlite3.connect(str(tmp_path / "memory.db"), check_same_thread=False)
    graph = create_memory_chat_graph(store=store, checkpointer=SqliteSaver(own))
    assert not run(graph, False)["memory_trace"]["degraded"]


def test_a_promote_node_without_a_store_raises():
    node = create_promote_node()
    with pytest.raises(ConfigurationError, match="No store"):
        node.invoke({**TURN, "memory_trace": {}}, CONFIG)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_the_retrieve_node_without_a_store_raises_before_the_model_is_called(use_async):
    with pytest.raises(ConfigurationError, match="No store"):
        run(create_retrieve_node(), use_async)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_the_memory_tools_raise_on_misconfiguration_not_tell_the_model(memory, use_async):
    from langgraph_typed_memory.tools import create_propose_fact_tool, create_search_memory_tool

    def call(tool: Any, args: dict[str, Any], config: Any = CONFIG) -> Any:
        return asyncio.run(tool.ainvoke(args, config)) if use_async else tool.invoke(args, config)

    fact = {"subject": "user", "predicate": "home_city", "content": "The user lives in Lyon."}
    with pytest.raises(ConfigurationError, match="promotion gate"):
        call(create_propose_fact_tool(InMemoryStore()), fact)
    bad_id = {"configurable": {"tenant_id": "acme", "user_id": "a:b"}}
    with pytest.raises(ConfigurationError, match="user_id"):
        call(create_search_memory_tool(memory), {"query": "Lyon"}, bad_id)
    with pytest.raises(ConfigurationError, match="user_id"):
        call(create_propose_fact_tool(memory), fact, bad_id)
    assert call(create_propose_fact_tool(memory), fact).startswith("written")


# ---------------------------------------------------------------- a store without the gate


def test_a_store_without_the_promotion_gate_is_refused_when_the_graph_is_built():
    with pytest.raises(ConfigurationError, match=r"got InMemoryStore, which has none"):
        create_memory_chat_graph(store=InMemoryStore())
    with pytest.raises(ConfigurationError, match="SqliteMemoryStore"):
        create_promote_node(InMemoryStore())


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_runtime_store_without_the_gate_fails_the_first_turn(use_async):
    graph = build_memory_chat_graph().compile(checkpointer=InMemorySaver(),
                                              store=InMemoryStore())
    with pytest.raises(ConfigurationError, match="promotion gate"):
        run(graph, use_async)


# ---------------------------------------------------------------- a state without the keys


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_messages_state_graph_fails_the_first_turn_and_says_to_use_memory_state(
        memory, use_async):
    graph = loop_on(StateGraph(MessagesState)).compile(store=memory,
                                                       checkpointer=InMemorySaver())
    with pytest.raises(ConfigurationError, match=r"StateGraph\(MemoryState\)") as raised:
        run(graph, use_async)
    assert "add MemoryState's keys" in str(raised.value)
    assert memory.search(FACTS) == []


class AppState(MemoryState, total=False):
    """An app's own state: MemoryState plus its keys."""

    locale: str


def test_a_state_that_extends_memory_state_works(memory):
    graph = loop_on(StateGraph(AppState)).compile(store=memory, checkpointer=InMemorySaver())
    out = graph.invoke({**TURN, "locale": "fr"}, CONFIG)
    assert out["locale"] == "fr" and out["memory_trace"]["degraded"] == []
    assert [i.value["value"] for i in memory.search(FACTS)] == ["Lyon"]


def test_extract_and_promote_alone_in_a_memory_state_graph_work(memory):
    """No retrieve node before them: the state check must not take that for a bad schema."""
    builder = StateGraph(MemoryState)
    builder.add_node("extract", create_extract_node(extraction="rules"))
    builder.add_node("promote", create_promote_node())
    builder.add_edge(START, "extract")
    builder.add_edge("extract", "promote")
    out = builder.compile(store=memory).invoke(TURN, CONFIG)
    assert {p["outcome"] for p in out["memory_trace"]["promotions"]} == {"written"}


# ---------------------------------------------------------------- run-time failures degrade


class BrokenStore:
    """The package's store surface, failing at run time (a database that went away)."""

    def batch(self, ops: Any) -> Any:
        raise OSError("disk on fire")

    async def abatch(self, ops: Any) -> Any:
        raise OSError("disk on fire")

    def promote(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("disk on fire")

    async def apromote(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("disk on fire")


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_failing_store_degrades_the_promote_node_and_is_logged(use_async, caplog):
    node = create_promote_node(BrokenStore())
    with caplog.at_level(logging.WARNING, logger="langgraph_typed_memory.nodes.promote"):
        out = run(node, use_async, {**TURN, "memory_trace": {}})
    [why] = out["memory_trace"]["degraded"]
    assert why.startswith("promotion failed") and "disk on fire" in why
    assert [r.name for r in caplog.records] == ["langgraph_typed_memory.nodes.promote"]
    assert why in caplog.records[0].getMessage()


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_failing_model_degrades_respond_and_extract_and_is_logged(use_async, caplog):
    state = {**TURN, "memory_context": {}}
    with caplog.at_level(logging.WARNING):
        replied = run(create_respond_node(FailingChatModel()), use_async, state)
        extracted = run(create_extract_node(FailingChatModel()), use_async, state)
    for out, node in [(replied, "respond"), (extracted, "extract")]:
        [why] = out["memory_trace"]["degraded"]
        assert "model provider unavailable" in why
        logged = [r for r in caplog.records if r.name == f"langgraph_typed_memory.nodes.{node}"]
        assert logged and why in logged[0].getMessage()


# ---------------------------------------------------------------- almost typed namespaces


ALMOST_TYPED = {
    "wrong-order": (("user:alice", "tenant:acme", "fact"), "is not its first label",
                    "('tenant:acme', 'user:alice', 'fact')"),
    "no-tenant-prefix": (("acme", "user:alice", "fact"), "does not start with a 'tenant:'",
                         "('tenant:acme', 'user:alice', 'fact')"),
    "capital-tenant": (("Tenant:acme", "user:alice", "fact"), "not 'tenant:' in lower case",
                       "('tenant:acme', 'user:alice', 'fact')"),
    "no-tenant-at-all": (("user:alice", "facts"), "does not start with a 'tenant:'",
                         "('tenant:ID', 'user:alice', 'fact')"),
    "capital-user": (("tenant:acme", "User:alice", "fact"), "scope labels are lower case",
                     "'user:alice'"),
    "agent-before-user": (("tenant:acme", "agent:bot", "user:alice", "fact"),
                          "'user:' before 'agent:'", "('tenant:ID', ['user:ID']"),
    "kind-typo": (("tenant:acme", "user:alice", "facts"), "did you mean 'fact'?", "facts"),
    "kind-capital": (("tenant:acme", "user:alice", "Preference"),
                     "did you mean 'preference'?", "Preference"),
}


@pytest.mark.parametrize("case", ALMOST_TYPED, ids=list(ALMOST_TYPED))
def test_an_almost_typed_namespace_is_refused_with_the_fix(memory, case):
    ns, what, fix = ALMOST_TYPED[case]
    value = {"subject": "user", "predicate": "home_city", "content": "Lives in Lyon."}
    for call in (lambda: memory.put(ns, "city", value), lambda: memory.get(ns, "city"),
                 lambda: memory.search(ns, query="Lyon"), lambda: memory.delete(ns, "city")):
        with pytest.raises(InvalidNamespace) as raised:
            call()
        assert what in str(raised.value) and fix in str(raised.value)
    assert memory.list_namespaces() == []


def test_a_misspelt_kind_is_an_unknown_kind_naming_the_nearest():
    with pytest.raises(UnknownKind, match=r"'procedures' is not one of .*did you mean "
                                          r"'procedure'\?"):
        SqliteMemoryStore(connect_sqlite(":memory:")).get(
            ("tenant:acme", "agent:bot", "procedures"), "k")


LANGGRAPH_NAMESPACES = [("memories", "alice"), ("users", "123", "prefs"), ("docs",),
                        ("memories", "user:123"), ("user_alice", "facts"), ("tenant", "acme"),
                        ("agents", "agent-7", "episodes"), ("notes", "User", "fact")]


@pytest.mark.parametrize("ns", LANGGRAPH_NAMESPACES, ids=["/".join(n) for n in
                                                          LANGGRAPH_NAMESPACES])
def test_untyped_namespaces_langgraph_users_use_keep_working(memory, ns):
    reference = InMemoryStore()
    for store in (memory, reference):
        store.put(ns, "k", {"text": "hello"})
    assert memory.get(ns, "k").value == reference.get(ns, "k").value == {"text": "hello"}
    assert [(tuple(i.namespace), i.key) for i in memory.search(ns[:1])] == \
        [(tuple(i.namespace), i.key) for i in reference.search(ns[:1])] == [(ns, "k")]
    assert memory.list_namespaces() == reference.list_namespaces() == [ns]


def test_the_look_alike_rule_is_narrow():
    for ns in LANGGRAPH_NAMESPACES:
        check_untyped(ns)
    assert [misspelt_kind(w) for w in ["facts", "Fact", "fcat", "policies", "prefrence",
                                       "episodes", "observations", "procedures"]] == [
        "fact", "fact", "fact", "policy", "preference", "episode", "observation", "procedure"]
    assert [misspelt_kind(w) for w in ["prefs", "memories", "notes", "data", "part", "docs",
                                       "user:123", "alice"]] == [None] * 8


def test_a_misspelled_store_option_fails_at_construction(pg_server):
    """Each store class names the option it does not know, and the ones it takes."""
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore
    from tests.conftest import fresh_database

    sqlite_conn = connect_sqlite(":memory:")
    with pytest.raises(ConfigurationError, match=r"unknown option 'indx'.*cache_bytes"):
        SqliteMemoryStore(sqlite_conn, indx={"dims": 4})  # type: ignore[call-arg]
    sqlite_conn.close()
    with psycopg.connect(fresh_database(pg_server), autocommit=True) as conn:
        with pytest.raises(ConfigurationError, match=r"unknown option 'ef'.*ef_search"):
            PostgresMemoryStore(conn, ef=40)  # type: ignore[call-arg]
