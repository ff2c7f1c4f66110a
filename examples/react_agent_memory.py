"""Typed memory in a prebuilt ReAct agent (LangGraph's `create_react_agent`), offline.

The memory nodes wrap the agent: retrieve and assemble before it, extract and promote after.
The agent's `prompt=` is `create_memory_prompt(SYSTEM_PROMPT)`: on every model call of the
tool loop the model gets one system message (the app's prompt, then the memory), the recent
turns, and this turn's tool calls and results. The agent also has the memory tools (search,
propose a preference, propose a fact) beside the app's own tool.

The model is a scripted fake that calls tools, so the example runs without a network or a
key; with a real model, pass it instead of `ScriptedToolModel.of(*script())`. LangGraph 1.x
warns that `create_react_agent` is deprecated (moved to `langchain.agents.create_agent`); it
still works. Run it with

    python examples/react_agent_memory.py

It prints what the model saw on each call, and what the gate wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.managed import RemainingSteps
from langgraph.prebuilt import create_react_agent
from langgraph.store.base import BaseStore

from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.nodes import (
    create_assemble_node,
    create_extract_node,
    create_memory_prompt,
    create_promote_node,
    create_retrieve_node,
)
from langgraph_typed_memory.state import MemoryState
from langgraph_typed_memory.tools import create_memory_tools

SYSTEM_PROMPT = "You are Acme's support agent. Look orders up with order_status."


class AgentMemoryState(MemoryState):
    """The memory keys, the memory block, and the step budget the ReAct agent needs."""

    memory_block: str
    remaining_steps: RemainingSteps


@tool
def order_status(order_id: int) -> str:
    """Where an order is."""
    return {42: "Order 42 shipped on Monday.", 43: "Order 43 is being packed."}.get(
        order_id, f"No order {order_id}.")


class ScriptedToolModel(GenericFakeChatModel):
    """A fake chat model: answers with scripted messages in order, records every prompt."""

    prompts: list[list[BaseMessage]] = []

    @classmethod
    def of(cls, *replies: AIMessage) -> ScriptedToolModel:
        return cls(messages=iter(replies), prompts=[])

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedToolModel:  # type: ignore[override]
        return self  # the script already knows the tools

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def call(name: str, ident: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": ident}


def script() -> list[AIMessage]:
    """What the scripted model answers, call after call."""
    return [
        # Session 1, one turn: look the order up and remember how the user wants answers.
        AIMessage("", tool_calls=[
            call("order_status", "call-1", order_id=42),
            call("propose_preference", "call-2", key="output_format", value="bullet points",
                 content="The user wants answers in bullet points.", confidence=0.9,
                 grounding="please always answer in bullet points"),
        ]),
        AIMessage("- Order 42 shipped on Monday."),
        # Session 2, a new thread: the preference is in the memory block from the first call.
        AIMessage("", tool_calls=[call("order_status", "call-3", order_id=43)]),
        AIMessage("- Order 43 is being packed."),
    ]


def build_memory_agent(
    model: Any, app_tools: Sequence[Any], *, store: BaseStore, checkpointer: Any = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """retrieve -> assemble -> agent (tool loop) -> extract -> promote."""
    agent = create_react_agent(
        model, [*create_memory_tools(), *app_tools],
        prompt=create_memory_prompt(SYSTEM_PROMPT), state_schema=AgentMemoryState,
    )
    builder = StateGraph(AgentMemoryState)
    builder.add_node("retrieve", create_retrieve_node())
    builder.add_node("assemble", create_assemble_node(preamble=""))  # the agent brings its own
    builder.add_node("agent", agent)
    builder.add_node("extract", create_extract_node())
    builder.add_node("promote", create_promote_node())
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "assemble")
    builder.add_edge("assemble", "agent")
    builder.add_edge("agent", "extract")
    builder.add_edge("extract", "promote")
    builder.add_edge("promote", END)
    return builder.compile(store=store, checkpointer=checkpointer)


def _seen(prompt: list[BaseMessage]) -> str:
    kinds = " ".join(type(m).__name__.removesuffix("Message") for m in prompt)
    return f"{len(prompt)} messages ({kinds})"


def main(store: BaseStore | None = None, *, quiet: bool = False) -> dict[str, Any]:
    """Two sessions of one user; returns the model's prompts and each turn's final state."""
    if store is None:
        store = SqliteMemoryStore(connect_sqlite(":memory:"))
        store.setup()  # type: ignore[attr-defined]
    model = ScriptedToolModel.of(*script())
    graph = build_memory_agent(model, [order_status], store=store, checkpointer=InMemorySaver())
    turns = [
        ("session-1", "Please always answer in bullet points. Where is order 42?"),
        ("session-2", "And where is order 43?"),
    ]
    states = []
    for thread, text in turns:
        config: RunnableConfig = {"configurable": {"thread_id": thread, "tenant_id": "acme",
                                                   "user_id": "alice"}}
        seen_before = len(model.prompts)
        state = graph.invoke({"messages": [HumanMessage(text)]}, config)
        states.append(state)
        if quiet:
            continue
        print(f"\n[{thread}] user: {text}")
        for prompt in model.prompts[seen_before:]:
            print(f"  model call saw {_seen(prompt)}")
        system = model.prompts[seen_before][0]
        assert isinstance(system, SystemMessage)
        print("  system message:\n    " + str(system.content).strip().replace("\n", "\n    "))
        for message in state["messages"]:
            if isinstance(message, ToolMessage):
                print(f"  tool {message.name}: {message.content}")
        print(f"  reply: {state['messages'][-1].content}")
        for p in state["memory_trace"]["promotions"]:
            print(f"  gate: {p['kind']} {p['key']!r} {p['outcome']} ({p['reason']})")
    return {"prompts": model.prompts, "states": states}


if __name__ == "__main__":
    main()
