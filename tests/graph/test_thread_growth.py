"""A long thread through the memory chat graph: the checkpointed conversation stays short.

With `trim_absorbed` on (the chat graph's default) the assemble node removes the messages the
running summary absorbed, so the state holds the verbatim window and the last few user turns
whatever the length of the thread; the turn index keeps counting, the summary covers every
removed message, and the checkpointer's history still has every earlier state. With the
option off nothing is removed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.assembly import extractive_summary
from langgraph_typed_memory.graph import create_memory_chat_graph
from langgraph_typed_memory.nodes import create_assemble_node
from langgraph_typed_memory.nodes.assemble import KEPT_USER_TURNS, absorbed_prefix

TURNS = 30
CONFIG: Any = {"configurable": {"thread_id": "long", "tenant_id": "acme", "user_id": "alice"}}


@pytest.fixture
def memory_store() -> Iterator[SqliteMemoryStore]:
    store = SqliteMemoryStore(connect_sqlite(":memory:"))
    store.setup()
    yield store


class FoldRecorder:
    """The extractive summarizer, remembering every message it folded."""

    def __init__(self) -> None:
        self.folded: list[BaseMessage] = []

    def __call__(self, previous: str | None, turns: list[BaseMessage]) -> str:
        self.folded.extend(turns)
        return extractive_summary(previous, turns, 200)


def user_text(i: int) -> str:
    return f"Note {i}: my locker number this week is {100 + i} and the weather was mild."


def play(graph: Any, turns: int, start: int = 1) -> list[dict[str, Any]]:
    return [graph.invoke({"messages": [HumanMessage(user_text(i))]}, CONFIG)
            for i in range(start, start + turns)]


def test_trimmed_thread_stays_bounded_and_keeps_counting(memory_store):
    recorder = FoldRecorder()
    graph = create_memory_chat_graph(store=memory_store, checkpointer=InMemorySaver(),
                                     summarizer=recorder)
    outs = play(graph, TURNS)

    sizes = [len(out["messages"]) for out in outs]
    assert max(sizes) <= 2 * KEPT_USER_TURNS
    assert sizes[-1] == sizes[-10]  # flat, not growing
    assert [out["memory_trace"]["turn_index"] for out in outs] == list(range(1, TURNS + 1))
    state = graph.get_state(CONFIG).values
    assert state["memory_turns"] == TURNS
    kept = state["messages"]
    assert isinstance(kept[0], HumanMessage)
    assert sum(isinstance(m, HumanMessage) for m in kept) >= KEPT_USER_TURNS

    # Every message of the thread is either still in the state or folded into the summary,
    # exactly once; the summary's newest lines are the newest removed turns.
    sent = [m.content for out in outs for m in out["messages"][-2:]]
    folded = [m.content for m in recorder.folded]
    assert len(folded) == len(set(folded))
    assert set(folded) | {m.content for m in kept} == set(sent)
    assert not set(folded) & {m.content for m in kept[state["memory_summarized"]:]}
    removed = [m for m in sent if m not in {k.content for k in kept}]
    newest_removed_user = [t for t in removed if t.startswith("Note")][-1]
    assert newest_removed_user.split(" and ")[0] in state["memory_summary"]


@pytest.fixture(params=["memory", "sqlite"])
def checkpointer(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(":memory:", check_same_thread=False)
    yield SqliteSaver(conn)
    conn.close()


def test_history_still_holds_the_removed_messages(memory_store, checkpointer):
    graph = create_memory_chat_graph(store=memory_store, checkpointer=checkpointer)
    play(graph, 12)
    assert len(graph.get_state(CONFIG).values["messages"]) <= 2 * KEPT_USER_TURNS
    now = {m.content for m in graph.get_state(CONFIG).values["messages"]}
    assert user_text(1) not in now
    seen = {m.content for snapshot in graph.get_state_history(CONFIG)
            for m in snapshot.values.get("messages", [])}
    assert {user_text(i) for i in range(1, 13)} <= seen
    turns = [s.values["memory_trace"]["turn_index"] for s in graph.get_state_history(CONFIG)
             if not s.next and s.values.get("memory_trace")]
    assert turns == list(range(12, 0, -1))


def test_option_off_keeps_every_message(memory_store):
    graph = create_memory_chat_graph(store=memory_store, checkpointer=InMemorySaver(),
                                     trim_absorbed=False)
    outs = play(graph, 15)
    assert len(outs[-1]["messages"]) == 30
    assert outs[-1]["messages"][0].content == user_text(1)
    assert [o["memory_trace"]["turn_index"] for o in outs] == list(range(1, 16))
    # assembled before the reply: 29 messages, the last 3 verbatim (the last 4 would open on
    # the assistant), the 26 before summarized
    assert outs[-1]["memory_summarized"] == 29 - 3


async def test_async_graph_trims_too(memory_store):
    graph = create_memory_chat_graph(store=memory_store, checkpointer=InMemorySaver())
    for i in range(1, 16):
        out = await graph.ainvoke({"messages": [HumanMessage(user_text(i))]}, CONFIG)
    assert len(out["messages"]) <= 2 * KEPT_USER_TURNS
    assert out["memory_trace"]["turn_index"] == 15


def test_a_tool_exchange_leaves_whole(memory_store):
    graph = create_memory_chat_graph(store=memory_store, checkpointer=InMemorySaver())
    play(graph, 3)
    call = AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "locker"}, "id": "c1"}])
    graph.invoke({"messages": [HumanMessage("Look up my locker."), call,
                               ToolMessage("Locker 104.", tool_call_id="c1"),
                               AIMessage("It is locker 104.")]}, CONFIG)
    for i in range(4, 12):
        out = graph.invoke({"messages": [HumanMessage(user_text(i))]}, CONFIG)
        messages = out["messages"]
        assert isinstance(messages[0], HumanMessage)
        calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
        assert all(m.tool_call_id in calls for m in messages if isinstance(m, ToolMessage))
    assert not any(isinstance(m, ToolMessage) for m in messages)  # it left with its call


def _chat(turns: int) -> list[BaseMessage]:
    return [m for i in range(turns)
            for m in (HumanMessage(f"q{i}", id=f"h{i}"), AIMessage(f"a{i}", id=f"a{i}"))]


def test_absorbed_prefix_cuts_whole_turns_and_keeps_the_last_ones():
    chat = _chat(8)
    assert absorbed_prefix(chat, 0) == 0
    assert absorbed_prefix(chat, 5) == 4  # a2 not absorbed: turn 2 stays whole
    assert absorbed_prefix(chat, 14) == 8  # the last four user turns stay
    assert absorbed_prefix(chat, 14, keep_user_turns=1) == 14
    assert absorbed_prefix(_chat(3), 6) == 0  # fewer user turns than kept
    with_tool = [HumanMessage("q", id="h"),
                 AIMessage("", id="c", tool_calls=[{"name": "t", "args": {}, "id": "1"}]),
                 ToolMessage("r", id="r", tool_call_id="1"), AIMessage("a", id="a"),
                 *_chat(4)]
    assert absorbed_prefix(with_tool, 3) == 0  # never between a call and its result
    assert absorbed_prefix(with_tool, 4) == 4
    with pytest.raises(ValueError, match="keep_user_turns"):
        absorbed_prefix(chat, 3, keep_user_turns=0)


def test_messages_without_ids_are_never_removed():
    chat = _chat(8)
    chat[6].id = None  # h3
    assert absorbed_prefix(chat, 12) == 6
    unnamed = [HumanMessage(m.content) if isinstance(m, HumanMessage) else AIMessage(m.content)
               for m in _chat(8)]
    assert absorbed_prefix(unnamed, 12) == 0


def test_node_alone_trims_only_when_asked():
    state = {"messages": [*_chat(8), HumanMessage("And now?", id="now")]}
    plain = create_assemble_node({"recent_turns": 2}).invoke(state)
    assert "messages" not in plain
    assert plain["memory_summarized"] == 16  # the window opens on the current message
    trimmed = create_assemble_node({"recent_turns": 2}, trim_absorbed=True).invoke(state)
    removed = [m.id for m in trimmed["messages"]]
    assert removed == [m.id for m in _chat(5)]  # q5..q7 and the current message stay
    assert trimmed["memory_summarized"] == 16 - len(removed)
    assert trimmed["memory_summary"] == plain["memory_summary"]


def test_the_candidates_live_for_the_turn_and_are_never_checkpointed(memory_store, checkpointer):
    graph = create_memory_chat_graph(store=memory_store, checkpointer=checkpointer)
    graph.invoke({"messages": [HumanMessage("My favourite tea is green tea.")]}, CONFIG)
    out = graph.invoke({"messages": [HumanMessage("What is my favourite tea?")]}, CONFIG)
    found = out["memory_context"]["facts"]  # the turn's nodes and invoke's answer see them
    assert [f["value"]["content"] for f in found] == ["The user's favourite tea is green tea."]
    assert "green tea" in out["messages"][-1].content
    for snapshot in graph.get_state_history(CONFIG):  # no checkpoint of any step holds them
        assert "memory_context" not in snapshot.values
    retrieval = graph.get_state(CONFIG).values["memory_trace"]["retrieval"]
    assert retrieval["facts_returned"] == [found[0]["memory"]["id"]]  # the trace keeps ids
