"""The model calls a turn makes, each behind a switch (`extraction`, `summary`, `combined`),
and `on_model_error`: "degrade" (the default: the offline path, traced and logged) or
"raise" (a broken model fails the turn)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_typed_memory import ConfigurationError, SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.graph import create_memory_chat_graph
from langgraph_typed_memory.nodes import (
    create_assemble_node,
    create_extract_node,
    create_respond_node,
)
from langgraph_typed_memory.nodes.respond import OFFLINE_NOTICE
from tests.fake_models import FailingChatModel, StrictChatModel

CONFIG: RunnableConfig = {"configurable": {"thread_id": "t", "user_id": "alice"}}
STATEMENTS = [f"I work on project number {i} this month, and I really enjoy it."
              for i in range(1, 7)]


@pytest.fixture
def store() -> SqliteMemoryStore:
    made = SqliteMemoryStore(connect_sqlite(":memory:"))
    made.setup()
    return made


def kind(call: list[BaseMessage]) -> str:
    head = str(call[0].content)
    if head.startswith("You maintain a running summary"):
        return "summary"
    asked = str(call[-1].content)
    return "extraction" if asked.startswith(("Message", "Earlier messages")) else "reply"


def calls_per_turn(store: SqliteMemoryStore, texts: list[str], **options: Any
                   ) -> list[Counter[str]]:
    model = StrictChatModel()
    graph = create_memory_chat_graph(model, store=store, checkpointer=InMemorySaver(),
                                     **options)
    out = []
    for text in texts:
        before = len(model.calls)
        state = graph.invoke({"messages": [HumanMessage(text)]}, CONFIG)
        assert state["memory_trace"]["degraded"] == []
        out.append(Counter(kind(c) for c in model.calls[before:]))
    return out


def test_the_default_calls_the_model_for_the_reply_extraction_and_summary(store) -> None:
    turns = calls_per_turn(store, STATEMENTS)
    assert [t["reply"] for t in turns] == [1] * 6
    assert [t["extraction"] for t in turns] == [1] * 6  # each statement is kept
    # The window (4 messages) fills on turn 3: from then on one summary call a turn.
    assert [t["summary"] for t in turns] == [0, 0, 1, 1, 1, 1]


def test_a_question_skips_extraction(store) -> None:
    [turn] = calls_per_turn(store, ["Where is my order?"])
    assert turn == Counter(reply=1)


def test_rules_and_the_extractive_summary_leave_one_call_a_turn(store) -> None:
    turns = calls_per_turn(store, STATEMENTS, extraction="rules", summary="extractive")
    assert turns == [Counter(reply=1)] * 6
    turns = calls_per_turn(store, STATEMENTS, summary="extractive")
    assert [sum(t.values()) for t in turns] == [2] * 6


def test_combined_is_one_call_for_reply_and_candidates(store) -> None:
    turns = calls_per_turn(store, STATEMENTS[:2], combined=True, summary="extractive")
    assert [sum(t.values()) for t in turns] == [1, 1]  # the strict model accepted each


def test_summary_model_without_a_model_is_a_configuration_error(store) -> None:
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver(),
                                     summary="model")
    with pytest.raises(ConfigurationError, match="summary=\"model\""):
        graph.invoke({"messages": [HumanMessage("hi")]}, CONFIG)
    with pytest.raises(ConfigurationError, match="summary"):
        create_assemble_node(summary="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="pass one of them"):
        create_assemble_node(summarizer=lambda prev, turns: "", summary="extractive")


# on_model_error

def test_degrade_is_the_default_and_is_traced(store) -> None:
    graph = create_memory_chat_graph(FailingChatModel(), store=store,
                                     checkpointer=InMemorySaver())
    out = graph.invoke({"messages": [HumanMessage("I live in Lyon.")]}, CONFIG)
    assert out["messages"][-1].content.startswith(OFFLINE_NOTICE)
    degraded = out["memory_trace"]["degraded"]
    assert any("model failed" in d for d in degraded)
    assert any("extraction model failed" in d for d in degraded)


def test_raise_lets_the_providers_exception_through(store) -> None:
    graph = create_memory_chat_graph(FailingChatModel(), store=store,
                                     checkpointer=InMemorySaver(), on_model_error="raise")
    with pytest.raises(ConnectionError, match="unavailable"):
        graph.invoke({"messages": [HumanMessage("I live in Lyon.")]}, CONFIG)
    assert store.search(("tenant:default", "user:alice", "episode")) == []  # nothing stored


async def test_raise_async(store) -> None:
    graph = create_memory_chat_graph(FailingChatModel(), store=store,
                                     checkpointer=InMemorySaver(), on_model_error="raise")
    with pytest.raises(ConnectionError):
        await graph.ainvoke({"messages": [HumanMessage("I live in Lyon.")]}, CONFIG)


def test_raise_on_a_model_that_cannot_be_built(store) -> None:
    bad: RunnableConfig = {"configurable": {**CONFIG["configurable"],
                                            "memory_model": "no-such-provider:model"}}
    quiet = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    out = quiet.invoke({"messages": [HumanMessage("hi")]}, bad)
    assert any("could not be built" in d for d in out["memory_trace"]["degraded"])
    loud = create_memory_chat_graph(store=store, checkpointer=InMemorySaver(),
                                    on_model_error="raise")
    with pytest.raises(Exception, match="no-such-provider"):
        loud.invoke({"messages": [HumanMessage("hi")]}, bad)


def test_each_node_raises_on_request() -> None:
    failing = FailingChatModel()
    state: dict[str, Any] = {"messages": [HumanMessage("I live in Lyon.")]}
    with pytest.raises(ConnectionError):
        create_respond_node(failing, on_model_error="raise").invoke(state)
    with pytest.raises(ConnectionError):
        create_extract_node(failing, on_model_error="raise", entities=False).invoke(state)
    chat = [HumanMessage(f"Question {i}?") for i in range(6)]
    with pytest.raises(ConnectionError):
        create_assemble_node({"recent_turns": 2}, model=failing,
                             on_model_error="raise").invoke({"messages": chat})
    quiet = create_assemble_node({"recent_turns": 2}, model=failing).invoke({"messages": chat})
    assert any("summary model failed" in d for d in quiet["memory_trace"]["degraded"])
    for factory in (create_respond_node, create_extract_node):
        with pytest.raises(ConfigurationError, match="on_model_error"):
            factory(on_model_error="loud")  # type: ignore[operator]
    with pytest.raises(ConfigurationError, match="on_model_error"):
        create_assemble_node(on_model_error="loud")  # type: ignore[arg-type]
