"""A strict provider (one that refuses a conversation opening on an assistant message, a
system message after the conversation, or a tool call without its results) answers every
model call of a 30-turn thread with tool calls, through every prompt the package builds: the
prebuilt chat graph, the nodes around a hand-written tool loop, and `MemoryMiddleware` in
`langchain.agents.create_agent`. None of the turns falls back to the offline responder."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_typed_memory import MemoryMiddleware, SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.graph import create_memory_chat_graph
from langgraph_typed_memory.nodes import (
    create_assemble_node,
    create_extract_node,
    create_memory_prompt,
    create_promote_node,
    create_retrieve_node,
)
from langgraph_typed_memory.nodes.respond import OFFLINE_NOTICE
from langgraph_typed_memory.state import MemoryState
from tests.fake_models import ProviderRejected, StrictChatModel, provider_rejects

TURNS = 30
CONFIG: RunnableConfig = {"configurable": {"thread_id": "long", "tenant_id": "acme",
                                           "user_id": "alice"}}


@tool
def order_status(order_id: int) -> str:
    """Where an order is."""
    return f"Order {order_id} shipped on Monday."


def said(i: int) -> str:
    """The user's message of turn `i`: order questions (a tool call), statements, thanks."""
    return [
        f"Where is order {100 + i}?",
        f"I work on project number {i} this month, and I really enjoy it.",
        "Please answer in bullet points from now on.",
        f"Can you check order {200 + i} for me as well?",
        "Thanks, that helps a lot today.",
    ][i % 5]


@pytest.fixture
def store() -> SqliteMemoryStore:
    made = SqliteMemoryStore(connect_sqlite(":memory:"))
    made.setup()
    return made


def test_the_strict_fake_refuses_what_strict_providers_refuse() -> None:
    call = AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1"}])
    result = ToolMessage("r", tool_call_id="c1")
    ok = [HumanMessage("q"), call, result, AIMessage("a"), HumanMessage("q2")]
    assert provider_rejects(ok) is None
    assert "user role" in str(provider_rejects([AIMessage("a"), HumanMessage("q")]))
    assert "no result" in str(provider_rejects([HumanMessage("q"), call, HumanMessage("x")]))
    assert "no call" in str(provider_rejects([HumanMessage("q"), result]))
    with pytest.raises(ProviderRejected, match="400"):
        StrictChatModel().invoke([AIMessage("hello"), HumanMessage("hi")])


def check_turns(model: StrictChatModel, outs: list[dict[str, Any]], *, offline: bool = True
                ) -> None:
    """Every turn was answered by the model, and nothing degraded."""
    assert len(outs) == TURNS
    for i, out in enumerate(outs, 1):
        trace = out["memory_trace"]
        assert trace["degraded"] == [], (i, trace["degraded"])
        reply = out["messages"][-1]
        assert isinstance(reply, AIMessage) and not reply.tool_calls, i
        if offline:
            assert OFFLINE_NOTICE not in str(reply.content), i
    for request in model.calls:
        assert provider_rejects(request) is None
    summaries = [c for c in model.calls if "running summary" in str(c[0].content)]
    extractions = [c for c in model.calls if "Message" in str(c[-1].content)
                   and "extract" in str(c[0].content).lower()]
    assert summaries and extractions  # the strict model wrote summaries and extracted too
    with_tools = [c for c in model.calls if any(isinstance(m, ToolMessage) for m in c)]
    assert with_tools  # tool results reached the model, beside their calls


# (a) The prebuilt graph: a client-side tool exchange after some user messages.

def test_the_prebuilt_graph_with_a_strict_provider_over_a_long_thread(store) -> None:
    model = StrictChatModel()
    graph = create_memory_chat_graph(model, store=store, checkpointer=InMemorySaver())
    outs = []
    for i in range(1, TURNS + 1):
        messages: list[BaseMessage] = [HumanMessage(said(i))]
        if i % 5 == 0:  # the app ran a tool for the user before asking the graph
            messages += [AIMessage("", tool_calls=[{"name": "order_status", "id": f"ui{i}",
                                                    "args": {"order_id": i}}]),
                         ToolMessage(order_status.invoke({"order_id": i}),
                                     tool_call_id=f"ui{i}")]
        outs.append(graph.invoke({"messages": messages}, CONFIG))
    check_turns(model, outs)
    replies = [c for c in model.calls if not any(
        marker in str(c[0].content) for marker in ("running summary", "Extract"))]
    assert len(replies) >= TURNS


# (b) The nodes around a hand-written tool loop.

def build_tool_loop(model: StrictChatModel) -> StateGraph:
    """retrieve -> assemble -> agent <-> tools -> extract -> promote."""
    chat = model.bind_tools([order_status])
    prompt = create_memory_prompt("You are Acme's support agent.")

    def agent(state: MemoryState) -> dict[str, Any]:
        return {"messages": [chat.invoke(prompt(state))]}

    builder = StateGraph(MemoryState)
    builder.add_node("retrieve", create_retrieve_node())
    builder.add_node("assemble", create_assemble_node(preamble="", model=model))
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([order_status]))
    builder.add_node("extract", create_extract_node(model))
    builder.add_node("promote", create_promote_node())
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "assemble")
    builder.add_edge("assemble", "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: "extract"})
    builder.add_edge("tools", "agent")
    builder.add_edge("extract", "promote")
    builder.add_edge("promote", END)
    return builder


def test_the_nodes_around_a_tool_loop_with_a_strict_provider(store) -> None:
    model = StrictChatModel()
    graph = build_tool_loop(model).compile(store=store, checkpointer=InMemorySaver())
    outs = [graph.invoke({"messages": [HumanMessage(said(i))]}, CONFIG)
            for i in range(1, TURNS + 1)]
    check_turns(model, outs)
    loops = [o for o in outs if any(isinstance(m, ToolMessage) for m in o["messages"][-3:])]
    assert len(loops) == 12  # two order questions in every five turns


# (c) MemoryMiddleware in create_agent, sync and async.

def agent_with_memory(model: StrictChatModel, store: SqliteMemoryStore) -> Any:
    return create_agent(model, [order_status], system_prompt="You are Acme's support agent.",
                        middleware=[MemoryMiddleware(model=model)], store=store,
                        checkpointer=InMemorySaver())


def test_the_middleware_with_a_strict_provider(store) -> None:
    model = StrictChatModel()
    agent = agent_with_memory(model, store)
    outs = [agent.invoke({"messages": [HumanMessage(said(i))]}, CONFIG)
            for i in range(1, TURNS + 1)]
    check_turns(model, outs, offline=False)
    assert outs[-1]["memory_trace"]["turn_index"] == TURNS
    assert len(outs[-1]["messages"]) > 60  # the agent's thread is whole (no trimming)


async def test_the_middleware_with_a_strict_provider_async(store) -> None:
    model = StrictChatModel()
    agent = agent_with_memory(model, store)
    outs = [await agent.ainvoke({"messages": [HumanMessage(said(i))]}, CONFIG)
            for i in range(1, TURNS + 1)]
    check_turns(model, outs, offline=False)
