"""Fuzzing the nodes' configuration: whatever a run's `configurable` holds (ids of any type
and shape, reserved or templated ids, a junk model), the memory nodes either run or raise
`ConfigurationError`, which names the key; a refused run writes nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.nodes import create_promote_node, create_retrieve_node

KEYS = ("tenant_id", "user_id", "agent_id", "thread_id", "langgraph_auth_user_id",
        "memory_model", "run_id")
ODD_TEXT = st.sampled_from([
    "", " ", "alice", "a:b", "thread-t1", "{langgraph_user_id}", "x" * 129, "x" * 128,
    "al\x00ice", "\ud800", "alice@example.com", "acme.io", "é", "user:bob", "tenant:acme"])
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), ODD_TEXT,
    st.text(max_size=40), st.binary(max_size=8), st.lists(st.text(max_size=5), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.builds(uuid.uuid4))
CONFIGURABLES = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=len(KEYS))


def count(store: Any) -> int:
    return int(store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
               + store.conn.execute("SELECT count(*) FROM memory_threads").fetchone()[0])


@pytest.fixture(scope="module")
def nodes() -> tuple[Any, Any, Any]:
    store = SqliteMemoryStore(connect_sqlite(":memory:"))
    store.setup()
    return store, create_retrieve_node(store), create_promote_node(store)


@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(configurable=CONFIGURABLES)
def test_a_runs_configuration_runs_or_is_refused_with_nothing_written(nodes, configurable):
    store, retrieve, promote = nodes
    state = {"messages": [HumanMessage("I live in Lyon."), AIMessage("Noted.")],
             "memory_trace": {"turn_index": 1}, "memory_candidates": []}
    config = {"configurable": configurable}
    for node in (retrieve, promote):
        before = count(store)
        try:
            node.invoke(state, config)
        except ConfigurationError as exc:
            assert "configurable" in str(exc) or "names none" in str(exc), str(exc)
            assert count(store) == before  # refused: nothing written
    assert store.check_invariants().ok
