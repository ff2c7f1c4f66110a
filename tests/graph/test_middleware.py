"""`MemoryMiddleware` in LangChain v1's `create_agent`: a preference, a fact and a correction
told in one thread are recalled in another thread of the same user, through tool loops, sync
and async; another user is shown none of it; the trace is in the agent's state; the thread is
recorded for erasure; a misconfiguration fails loudly."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langgraph_typed_memory import (
    ConfigurationError,
    MemoryMiddleware,
    SqliteMemoryStore,
    connect_sqlite,
)
from tests.fake_models import StrictChatModel
from tests.graph.test_strict_provider import order_status

SYSTEM = "You are Acme's support agent."
TOLD = [
    "Please always answer in bullet points. Where is order 42?",  # preference + tool loop
    "My favourite tea is green tea.",
    "Sorry, my favourite tea is oolong, not green tea.",  # the correction
    "I live in Lyon. Can you check order 43 too?",  # fact + tool loop
]
ASKED = "What tea should I order today?"


def config(user: str, thread: str) -> RunnableConfig:
    return {"configurable": {"tenant_id": "acme", "user_id": user, "thread_id": thread}}


@pytest.fixture
def store() -> SqliteMemoryStore:
    made = SqliteMemoryStore(connect_sqlite(":memory:"))
    made.setup()
    return made


def build(store: Any, model: StrictChatModel, **options: Any) -> Any:
    return create_agent(model, [order_status], system_prompt=SYSTEM,
                        middleware=[MemoryMiddleware(**options)], store=store,
                        checkpointer=InMemorySaver())


def system_of(model: StrictChatModel, since: int) -> list[str]:
    """The system message of each agent model call since call `since`."""
    prompts = model.calls[since:]
    assert all(isinstance(p[0], SystemMessage) for p in prompts)
    return [str(p[0].content) for p in prompts]


def check_recall(model: StrictChatModel, outs: list[dict[str, Any]], alice_at: int,
                 bob_at: int, alice: dict[str, Any], bob: dict[str, Any]) -> None:
    # The tool loops ran: the results reached the model beside their calls.
    assert [sum(isinstance(m, ToolMessage) for m in o["messages"]) for o in outs] == [1, 1, 1, 2]
    for out in outs:
        assert out["memory_trace"]["degraded"] == []
        assert out["memory_trace"]["model_call"]["calls"] >= 1
    promoted = {(p["kind"], p["outcome"]) for o in outs for p in o["memory_trace"]["promotions"]}
    assert {("preference", "written"), ("fact", "written"), ("fact", "superseded")} <= promoted
    # Another thread of the same user: every model call has the memory after the app's prompt.
    [seen] = system_of(model, alice_at)[:1]
    assert seen.startswith(SYSTEM + "\n")
    assert "- output_format: bullet points" in seen
    assert "oolong" in seen and "green tea" not in seen  # the correction replaced the value
    assert "The user lives in Lyon." in seen
    assert alice["memory_trace"]["turn_index"] == 1 and alice["memory_trace"]["user_id"] == "alice"
    assert alice["memory_trace"]["assembled"]["preferences"]
    # Another user sees none of it.
    for text in system_of(model, bob_at):
        assert text == SYSTEM, text
    assert bob["memory_trace"]["assembled"]["facts"] == []


def test_recalled_in_another_thread_and_never_shown_to_another_user(store) -> None:
    model = StrictChatModel()
    agent = build(store, model)
    outs = [agent.invoke({"messages": [HumanMessage(text)]}, config("alice", "t1"))
            for text in TOLD]
    alice_at = len(model.calls)
    alice = agent.invoke({"messages": [HumanMessage(ASKED)]}, config("alice", "t2"))
    bob_at = len(model.calls)
    bob = agent.invoke({"messages": [HumanMessage(ASKED)]}, config("bob", "t3"))
    check_recall(model, outs, alice_at, bob_at, alice, bob)
    assert "oolong" in alice["messages"][-1].content  # the model read it


async def test_recalled_in_another_thread_async(store) -> None:
    model = StrictChatModel()
    agent = build(store, model)
    outs = [await agent.ainvoke({"messages": [HumanMessage(text)]}, config("alice", "t1"))
            for text in TOLD]
    alice_at = len(model.calls)
    alice = await agent.ainvoke({"messages": [HumanMessage(ASKED)]}, config("alice", "t2"))
    bob_at = len(model.calls)
    bob = await agent.ainvoke({"messages": [HumanMessage(ASKED)]}, config("bob", "t3"))
    check_recall(model, outs, alice_at, bob_at, alice, bob)


def test_every_call_of_a_tool_loop_gets_the_memory_and_the_turns_tool_messages(store) -> None:
    model = StrictChatModel()
    agent = build(store, model)
    agent.invoke({"messages": [HumanMessage("Please always answer in bullet points.")]},
                 config("alice", "t1"))
    at = len(model.calls)
    agent.invoke({"messages": [HumanMessage("Where is order 7?")]}, config("alice", "t1"))
    first, second = model.calls[at:]
    for prompt in (first, second):
        assert "- output_format: bullet points" in str(prompt[0].content)
        assert sum(isinstance(m, SystemMessage) for m in prompt) == 1
    assert [m.type for m in second[1:]][-3:] == ["human", "ai", "tool"]
    assert "Order 7 shipped" in str(second[-1].content)


def test_the_thread_is_recorded_for_erasure(store) -> None:
    agent = build(store, StrictChatModel())
    agent.invoke({"messages": [HumanMessage("I live in Lyon.")]}, config("alice", "t1"))
    report = store.erase("acme", "alice")
    assert report.threads_kept == ["t1"]


def test_the_store_given_to_the_middleware_is_used(store) -> None:
    model = StrictChatModel()
    agent = create_agent(model, [], middleware=[MemoryMiddleware(store)],
                         checkpointer=InMemorySaver())  # no store on the agent
    out = agent.invoke({"messages": [HumanMessage("I live in Lyon.")]}, config("alice", "t1"))
    assert ("fact", "written") in {(p["kind"], p["outcome"])
                                   for p in out["memory_trace"]["promotions"]}


def test_misconfigurations_fail_loudly(store) -> None:
    with pytest.raises(ConfigurationError, match="promotion gate"):
        MemoryMiddleware(InMemoryStore())
    with pytest.raises(ConfigurationError, match="extraction"):
        MemoryMiddleware(extraction="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="summary"):
        MemoryMiddleware(summary="never")  # type: ignore[arg-type]
    without = create_agent(StrictChatModel(), [], middleware=[MemoryMiddleware()])
    with pytest.raises(ConfigurationError, match="No store"):
        without.invoke({"messages": [HumanMessage("I live in Lyon.")]}, config("alice", "t1"))
    anonymous = create_agent(StrictChatModel(), [], middleware=[MemoryMiddleware()], store=store)
    with pytest.raises(ConfigurationError, match="names none"):
        anonymous.invoke({"messages": [HumanMessage("I live in Lyon.")]})


def test_without_langchain_the_import_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['langchain.agents'] = None\n"
        "sys.modules['langchain.agents.middleware'] = None\n"
        "import langgraph_typed_memory\n"
        "try:\n"
        "    from langgraph_typed_memory import MemoryMiddleware\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert "pip install 'langgraph-typed-memory[agents]'" in out.stdout


# The example: examples/agent_memory.py, offline with a scripted model.

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_memory.py"


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_memory_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the fake model's annotations here
    spec.loader.exec_module(module)
    return module


def check_example(run: dict[str, Any], system_prompt: str) -> None:
    prompts, states = run["prompts"], run["states"]
    assert len(prompts) == 4  # two model calls per turn: a tool call, then the reply
    for prompt in prompts:
        assert str(prompt[0].content).startswith(system_prompt)
        assert sum(isinstance(m, SystemMessage) for m in prompt) == 1
    # The second call of a turn sees the tool calls and their results.
    assert [m.type for m in prompts[1][1:]] == ["human", "ai", "tool", "tool"]
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


def test_the_agent_example_runs(store) -> None:
    module = example()
    check_example(module.main(store), module.SYSTEM_PROMPT)
    [pref] = store.search(("tenant:acme", "user:alice", "preference"))
    assert pref.value["value"] == "bullet points"


async def test_the_agent_example_async(store) -> None:
    module = example()
    model = module.ScriptedToolModel.of(*module.script())
    agent = module.build_agent(model, store=store, checkpointer=InMemorySaver())
    states = []
    for thread, text in [("s1", "Please always answer in bullet points. Where is order 42?"),
                         ("s2", "And where is order 43?")]:
        states.append(await agent.ainvoke({"messages": [HumanMessage(text)]},
                                          config("alice", thread)))
    check_example({"prompts": model.prompts, "states": states}, module.SYSTEM_PROMPT)


def test_the_example_script_shows_what_the_model_saw() -> None:
    warnings = {**os.environ, "PYTHONWARNINGS": "error::DeprecationWarning"}  # none used
    out = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                         check=True, env=warnings)
    assert "model call saw 5 messages (System Human AI Tool Tool)" in out.stdout
    assert "- output_format: bullet points" in out.stdout


def test_trim_absorbed_keeps_the_agents_thread_short(store) -> None:
    model = StrictChatModel()
    agent = build(store, model, trim_absorbed=True, summary="extractive")
    for i in range(12):
        out = agent.invoke({"messages": [HumanMessage(f"Where is order {i}?")]},
                           config("alice", "t1"))
    assert out["memory_trace"]["turn_index"] == 12
    assert len(out["messages"]) < 4 * 6  # 12 turns of four messages, the oldest removed
    assert out["messages"][0].type == "human"
    assert "called order_status" in out["memory_summary"]  # the summary holds the rest
