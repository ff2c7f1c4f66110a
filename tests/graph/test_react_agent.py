"""The memory in a prebuilt ReAct agent: the assemble node's block and preamble, the prompt
function that gives every model call of a tool loop the memory and the turn's tool traffic,
and the example in examples/react_agent_memory.py, run offline with a scripted model."""

from __future__ import annotations

import importlib.util
import runpy
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.assembly import PREAMBLE
from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.nodes import (
    create_assemble_node,
    create_memory_prompt,
    memory_system_message,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "react_agent_memory.py"
ALICE = {"configurable": {"tenant_id": "acme", "user_id": "alice"}}
CONTEXT = {"preferences": [{"key": "tone", "value": {"key": "tone", "value": "terse"},
                            "memory": {"id": "p1", "scope": {"user_id": "alice"}}}]}
SYSTEM = "You are Acme's support agent."


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("react_agent_memory_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the fake model's annotations here
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def sqlite_store() -> SqliteMemoryStore:
    store = SqliteMemoryStore(connect_sqlite(":memory:"))
    store.setup()
    return store


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


# The example: a prebuilt ReAct agent between the memory nodes, offline.

def check_run(run: dict[str, Any], system_prompt: str) -> None:
    prompts, states = run["prompts"], run["states"]
    assert len(prompts) == 4  # two model calls per turn: a tool call, then the reply
    for prompt in prompts:
        assert isinstance(prompt[0], SystemMessage) and prompt[0].content.startswith(
            system_prompt)
        assert sum(isinstance(m, SystemMessage) for m in prompt) == 1
        assert PREAMBLE not in prompt[0].content
    # The second call of a turn sees the tool calls and their results.
    assert [type(m) for m in prompts[1][1:]] == [HumanMessage, AIMessage, ToolMessage,
                                                 ToolMessage]
    assert "Order 42 shipped on Monday." in {m.content for m in prompts[1]}
    assert "Order 43 is being packed." in {m.content for m in prompts[3]}
    # Session 2 (a new thread) has the preference the tool wrote, on every call.
    for prompt in prompts[2:]:
        assert "- output_format: bullet points" in prompt[0].content
    assert "bullet points" not in prompts[0][0].content  # nothing remembered yet
    first, second = states
    assert [m.type for m in first["messages"]] == ["human", "ai", "tool", "tool", "ai"]
    assert first["messages"][3].content == "written: preference 'output_format' (new memory)"
    outcomes = {(p["kind"], p["outcome"]) for p in first["memory_trace"]["promotions"]}
    assert ("preference", "deduplicated") in outcomes  # extracted too, after the loop
    assert ("episode", "written") in outcomes  # the turn log, with the agent's reply
    assert second["messages"][-1].content == "- Order 43 is being packed."


def test_the_react_agent_example_runs(sqlite_store):
    module = example()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # create_react_agent moved
        run = module.main(sqlite_store, quiet=True)
    check_run(run, module.SYSTEM_PROMPT)
    [pref] = sqlite_store.search(("tenant:acme", "user:alice", "preference"))
    assert pref.value["value"] == "bullet points"


async def test_the_react_agent_example_graph_async(sqlite_store):
    module = example()
    model = module.ScriptedToolModel.of(*module.script())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        graph = module.build_memory_agent(model, [module.order_status], store=sqlite_store,
                                          checkpointer=InMemorySaver())
    states = []
    for thread, text in [("s1", "Please always answer in bullet points. Where is order 42?"),
                         ("s2", "And where is order 43?")]:
        config = {"configurable": {**ALICE["configurable"], "thread_id": thread}}
        states.append(await graph.ainvoke({"messages": [HumanMessage(text)]}, config))
    check_run({"prompts": model.prompts, "states": states}, module.SYSTEM_PROMPT)


def test_the_example_script_prints_what_the_model_saw(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        runpy.run_path(str(EXAMPLE), run_name="__main__")
    printed = capsys.readouterr().out
    assert "model call saw 5 messages (System Human AI Tool Tool)" in printed
    assert "- output_format: bullet points" in printed
