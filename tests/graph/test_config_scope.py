"""What the memory nodes read from the run's `configurable`: the scope and the chat model.

The LangGraph server sends `"user_id": ""` when it runs without authentication and puts the
authenticated user in `langgraph_auth_user_id`; LangGraph templates put their own model in
`configurable["model"]`. The memory nodes must store memory in the first case, honour the
second, ignore the third, and take their own model from `configurable["memory_model"]`, a
model that cannot be built degrading the turn instead of failing it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_typed_memory import ConfigurationError, SqliteMemoryStore
from langgraph_typed_memory.graph import create_memory_chat_graph
from langgraph_typed_memory.namespaces import Scope, scope_from_config
from langgraph_typed_memory.nodes import create_assemble_node, create_respond_node
from langgraph_typed_memory.nodes._common import (
    MODEL_ENV,
    resolve_model,
    try_resolve_model,
)
from langgraph_typed_memory.nodes.respond import OFFLINE_NOTICE
from langgraph_typed_memory.store.sqlite.store import connect_sqlite

TEMPLATE_MODEL = "anthropic/claude-3-5-sonnet-20240620"
"""What LangGraph's templates put in `configurable["model"]` (not an `init_chat_model` id)."""
BAD_MODEL = "nonexistent-provider:foo"


@pytest.fixture(autouse=True)
def no_model_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)


@pytest.fixture
def store() -> Iterator[SqliteMemoryStore]:
    memory = SqliteMemoryStore(connect_sqlite(":memory:"))
    memory.setup()
    yield memory


def scope(**configurable: Any) -> Scope:
    return scope_from_config({"configurable": {"thread_id": "t", **configurable}})


# ----------------------------------------------------------------------------- scope


@pytest.mark.parametrize("blank", ["", "  ", None], ids=["empty", "blank", "none"])
def test_blank_ids_count_as_absent(blank):
    assert scope(tenant_id=blank, user_id=blank, agent_id=blank) == Scope("default", "thread-t")
    assert scope(tenant_id="acme", user_id=blank) == Scope("acme", "thread-t")
    assert scope(tenant_id="acme", user_id="alice", agent_id=blank) == Scope("acme", "alice")


def test_ids_are_strings_ints_or_uuids():
    ident = uuid.UUID(int=7)
    assert scope(tenant_id="acme", user_id=42, agent_id=ident) == Scope("acme", "42", str(ident))
    assert scope_from_config({"configurable": {"thread_id": 9}}).user_id == "thread-9"


@pytest.mark.parametrize("bad", [["alice"], b"alice", True, 3.5, {"id": 1}],
                         ids=["list", "bytes", "bool", "float", "dict"])
@pytest.mark.parametrize("key", ["tenant_id", "user_id", "agent_id", "thread_id"])
def test_an_id_of_another_type_is_a_configuration_error(key, bad):
    with pytest.raises(ConfigurationError, match=rf"configurable\['{key}'\] is a "):
        scope(**{key: bad})


def test_the_servers_authenticated_user_wins_over_a_sent_user_id():
    assert scope(tenant_id="acme", user_id="", langgraph_auth_user_id="u-7") == \
        Scope("acme", "u-7")
    assert scope(tenant_id="acme", langgraph_auth_user_id="u-7") == Scope("acme", "u-7")
    # a client cannot name another user when the server authenticated it
    assert scope(tenant_id="acme", user_id="alice", langgraph_auth_user_id="u-7") == \
        Scope("acme", "u-7")
    assert scope(tenant_id="acme", user_id="", langgraph_auth_user_id="") == \
        Scope("acme", "thread-t")


@pytest.mark.parametrize(("configurable", "user"), [
    ({"user_id": ""}, "thread-t"),  # what `langgraph dev` sends without authentication
    ({"user_id": "", "langgraph_auth_user_id": "alice"}, "alice"),
], ids=["anonymous", "authenticated"])
def test_the_chat_graph_stores_memory_for_what_the_server_sends(store, configurable, user):
    graph = create_memory_chat_graph(store=store)
    config = {"configurable": {"thread_id": "t", "tenant_id": "acme", **configurable}}
    state = graph.invoke({"messages": [HumanMessage("I live in Lyon.")]}, config)
    trace = state["memory_trace"]
    facts = [p for p in trace["promotions"] if p["kind"] == "fact"]
    assert [p["outcome"] for p in facts] == ["written"], trace["promotions"]
    assert trace["degraded"] == []
    [fact] = store.search(("tenant:acme", f"user:{user}", "fact"))
    assert "Lyon" in fact.value["content"]


# ----------------------------------------------------------------------------- the model


def test_a_templates_model_key_is_left_to_the_app(store):
    graph = create_memory_chat_graph(store=store)
    config = {"configurable": {"thread_id": "t", "tenant_id": "acme", "user_id": "alice",
                               "model": TEMPLATE_MODEL}}
    state = graph.invoke({"messages": [HumanMessage("I live in Lyon.")]}, config)
    assert state["messages"][-1].content.startswith(OFFLINE_NOTICE)
    assert state["memory_trace"]["degraded"] == []
    assert "written" in {p["outcome"] for p in state["memory_trace"]["promotions"]}


def bad_model_config() -> dict[str, Any]:
    return {"configurable": {"thread_id": "t", "tenant_id": "acme", "user_id": "alice",
                             "memory_model": BAD_MODEL}}


def test_try_resolve_model_reports_and_logs_instead_of_raising(caplog, capsys):
    with caplog.at_level(logging.WARNING):
        chat, why = try_resolve_model(None, bad_model_config())
    assert chat is None and why is not None and "could not be built" in why
    assert "nonexistent-provider" in why and why in caplog.text
    assert capsys.readouterr() == ("", "")
    assert try_resolve_model(None, None) == (None, None)


def test_an_explicit_model_that_cannot_be_built_still_raises():
    """What the CLI's `--model` relies on: a model the user typed fails loudly."""
    with pytest.raises(ValueError, match="nonexistent-provider"):
        resolve_model(BAD_MODEL, None)


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_respond_degrades_when_the_memory_model_cannot_be_built(use_async, caplog):
    node = create_respond_node()
    state = {"messages": [HumanMessage("hi")], "memory_context": {}}
    with caplog.at_level(logging.WARNING):
        if use_async:
            out = asyncio.run(node.ainvoke(state, bad_model_config()))
        else:
            out = node.invoke(state, bad_model_config())
    assert out["messages"][0].content.startswith(OFFLINE_NOTICE)
    [why] = out["memory_trace"]["degraded"]
    assert "could not be built" in why and "nonexistent-provider" in why
    assert out["memory_trace"]["model_call"]["error"] == why
    assert "could not be built" in caplog.text


def test_assemble_degrades_when_the_memory_model_cannot_be_built():
    node = create_assemble_node()
    out = node.invoke({"messages": [HumanMessage("hi")], "memory_context": {}},
                      bad_model_config())
    assert out["memory_prompt"]
    [why] = out["memory_trace"]["degraded"]
    assert why.startswith("assemble: model could not be built")


def test_a_turn_with_a_memory_model_that_cannot_be_built_completes(store):
    graph = create_memory_chat_graph(store=store)
    state = graph.invoke({"messages": [HumanMessage("I live in Lyon.")]}, bad_model_config())
    assert state["messages"][-1].content.startswith(OFFLINE_NOTICE)
    degraded = state["memory_trace"]["degraded"]
    assert any(d.startswith("model could not be built") for d in degraded), degraded
    assert any(d.startswith("assemble: model could not be built") for d in degraded), degraded
