"""Typed memory in a LangChain v1 agent (`langchain.agents.create_agent`), offline.

One middleware adds the memory: `MemoryMiddleware()` retrieves and assembles the caller's
memory once per turn, puts it after the agent's system prompt on every model call of the
tool loop, and after the agent's answer extracts what the user stated and promotes it
through the store's gate. The agent also has the memory tools (search, propose a preference,
propose a fact) beside the app's own tool.

The model is a scripted fake that calls tools, so the example runs without a network or a
key; with a real model, pass it instead (`create_agent("openai:gpt-4o", ...)`). Run it with

    python examples/agent_memory.py

It prints what the model saw on each call, and what the gate wrote.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore

from langgraph_typed_memory import MemoryMiddleware, SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.tools import create_memory_tools

SYSTEM_PROMPT = "You are Acme's support agent. Look orders up with order_status."

logger = logging.getLogger("agent_memory")


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
        # Session 2, a new thread: the preference is in the system message from the first call.
        AIMessage("", tool_calls=[call("order_status", "call-3", order_id=43)]),
        AIMessage("- Order 43 is being packed."),
    ]


def build_agent(model: Any, *, store: BaseStore, checkpointer: Any = None) -> Any:
    """The app's agent, with the memory middleware and the memory tools."""
    return create_agent(model, [*create_memory_tools(), order_status],
                        system_prompt=SYSTEM_PROMPT, middleware=[MemoryMiddleware()],
                        store=store, checkpointer=checkpointer)


def _seen(prompt: list[BaseMessage]) -> str:
    kinds = " ".join(type(m).__name__.removesuffix("Message") for m in prompt)
    return f"{len(prompt)} messages ({kinds})"


def main(store: BaseStore | None = None) -> dict[str, Any]:
    """Two sessions of one user; returns the model's prompts and each turn's final state."""
    if store is None:
        store = SqliteMemoryStore(connect_sqlite(":memory:"))
        store.setup()  # type: ignore[attr-defined]
    model = ScriptedToolModel.of(*script())
    agent = build_agent(model, store=store, checkpointer=InMemorySaver())
    turns = [
        ("session-1", "Please always answer in bullet points. Where is order 42?"),
        ("session-2", "And where is order 43?"),
    ]
    states = []
    for thread, text in turns:
        config: RunnableConfig = {"configurable": {"thread_id": thread, "tenant_id": "acme",
                                                   "user_id": "alice"}}
        seen_before = len(model.prompts)
        state = agent.invoke({"messages": [HumanMessage(text)]}, config)
        states.append(state)
        logger.info("\n[%s] user: %s", thread, text)
        for prompt in model.prompts[seen_before:]:
            logger.info("  model call saw %s", _seen(prompt))
        system = str(model.prompts[seen_before][0].content).strip()
        logger.info("  system message:\n    %s", system.replace("\n", "\n    "))
        for message in state["messages"]:
            if isinstance(message, ToolMessage):
                logger.info("  tool %s: %s", message.name, message.content)
        logger.info("  reply: %s", state["messages"][-1].content)
        for p in state["memory_trace"]["promotions"]:
            logger.info("  gate: %s %r %s (%s)", p["kind"], p["key"], p["outcome"], p["reason"])
    return {"prompts": model.prompts, "states": states}


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    main()
