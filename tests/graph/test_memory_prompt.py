"""The memory in a hand-written tool loop: the assemble node's block and preamble, and the
prompt function that gives every model call of the loop the memory and the turn's tool
traffic."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langgraph_typed_memory.assembly import PREAMBLE
from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.nodes import (
    create_assemble_node,
    create_memory_prompt,
    memory_system_message,
)

CONTEXT = {"preferences": [{"key": "tone", "value": {"key": "tone", "value": "terse"},
                            "memory": {"id": "p1", "scope": {"user_id": "alice"}}}]}
SYSTEM = "You are Acme's support agent."


def turn_state(preamble: str = PREAMBLE) -> dict[str, Any]:
    """A state after the assemble node, then one tool round trip of the agent."""
    ask = HumanMessage("Where is order 42?", id="h2")
    history = [HumanMessage("Hi", id="h1"), AIMessage("Hello!", id="a1"), ask]
    state: dict[str, Any] = {"messages": history, "memory_context": CONTEXT}
    state.update(create_assemble_node(preamble=preamble).invoke(state))
    call = AIMessage("", id="a2", tool_calls=[{"name": "order_status", "args": {"id": 42},
                                              "id": "c1"}])
    result = ToolMessage("Order 42 shipped.", tool_call_id="c1", id="t1")
    state["messages"] = [*history, call, result]
    return state


# The assemble node: configurable preamble, and the memory block under its own key.

def test_the_assemble_node_writes_the_memory_block_and_takes_a_preamble():
    state = {"messages": [HumanMessage("hi")], "memory_context": CONTEXT}
    default = create_assemble_node().invoke(state)
    assert default["memory_prompt"][0].content == PREAMBLE + "## User preferences\n- tone: terse\n"
    assert default["memory_block"] == "## User preferences\n- tone: terse\n"
    ours = create_assemble_node(preamble=SYSTEM).invoke(state)
    assert ours["memory_prompt"][0].content == SYSTEM + "\n" + ours["memory_block"]
    assert ours["memory_block"] == default["memory_block"]
    tokens = ours["memory_trace"]["tokens"]
    assert tokens["total"] < default["memory_trace"]["tokens"]["total"]  # a shorter preamble
    nothing = create_assemble_node(preamble="").invoke({"messages": [HumanMessage("hi")]})
    assert nothing["memory_block"] == "" and nothing["memory_prompt"] == [HumanMessage("hi")]
    with pytest.raises(ConfigurationError, match="preamble"):
        create_assemble_node(preamble=None)  # type: ignore[arg-type]


def test_memory_system_message_puts_the_apps_prompt_first():
    state = {"memory_block": "## User preferences\n- tone: terse\n"}
    assert memory_system_message(state, SYSTEM).content == SYSTEM + "\n" + state["memory_block"]
    assert memory_system_message(state, SystemMessage(SYSTEM + "\n")).content == (
        SYSTEM + "\n" + state["memory_block"])
    assert memory_system_message(state).content == state["memory_block"]
    assert memory_system_message({"memory_block": ""}, SYSTEM).content == SYSTEM
    assert memory_system_message({"memory_block": ""}) is None
    with pytest.raises(ConfigurationError, match="memory_block: str"):
        memory_system_message({"messages": []}, SYSTEM)


# The prompt function: one system message, the window, the turn's tool traffic.

def test_the_prompt_has_the_apps_prompt_the_memory_and_the_turns_tool_messages():
    state = turn_state(preamble="")
    messages = create_memory_prompt(SYSTEM)(state)
    assert [type(m) for m in messages] == [SystemMessage, HumanMessage, AIMessage, HumanMessage,
                                           AIMessage, ToolMessage]
    assert messages[0].content == SYSTEM + "\n## User preferences\n- tone: terse\n"
    assert messages[1:] == state["messages"]
    assert sum(isinstance(m, SystemMessage) for m in messages) == 1


def test_the_prompt_keeps_the_assembled_window_not_the_whole_thread():
    history: list[BaseMessage] = []
    for i in range(6):
        history += [HumanMessage(f"question {i}", id=f"h{i}"), AIMessage(f"answer {i}",
                                                                          id=f"a{i}")]
    history.append(HumanMessage("Where is order 42?", id="now"))
    state: dict[str, Any] = {"messages": history, "memory_context": CONTEXT}
    state.update(create_assemble_node({"recent_turns": 3}).invoke(state))
    call = AIMessage("", id="c", tool_calls=[{"name": "t", "args": {}, "id": "c1"}])
    state["messages"] = [*history, call, ToolMessage("done", tool_call_id="c1", id="r")]
    messages = create_memory_prompt()(state)
    assert messages[0] == state["memory_prompt"][0]  # the node's own system message
    assert "question 0" in messages[0].content  # older turns: in the running summary
    assert [m.id for m in messages[1:]] == ["h5", "a5", "now", "c", "r"]


def test_without_a_system_prompt_the_nodes_system_message_is_used():
    state = turn_state(preamble=SYSTEM)
    messages = create_memory_prompt()(state)
    assert messages[0].content.startswith(SYSTEM + "\n## User preferences")
    assert sum(isinstance(m, SystemMessage) for m in messages) == 1
    assert isinstance(messages[-1], ToolMessage)
    bare = turn_state(preamble="")
    bare["memory_prompt"] = bare["memory_prompt"][1:]  # nothing to show: no system message
    assert create_memory_prompt()(bare) == bare["messages"]


def test_the_prompt_names_the_fix_when_the_memory_nodes_did_not_run():
    with pytest.raises(ConfigurationError, match="assemble"):
        create_memory_prompt(SYSTEM)({"messages": [HumanMessage("hi")]})
    state = turn_state()
    del state["memory_block"]
    with pytest.raises(ConfigurationError, match="memory_block: str"):
        create_memory_prompt(SYSTEM)(state)


def test_a_current_message_that_left_the_conversation_sends_the_whole_conversation(caplog):
    state = turn_state()
    state["messages"] = [HumanMessage("something else", id="x")]
    assert create_memory_prompt(SYSTEM)(state)[1:] == state["messages"]
    assert "newest user message" in caplog.text
