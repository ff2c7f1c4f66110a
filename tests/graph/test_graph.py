"""The memory chat graph end to end, with fake chat models, on every backend."""

from __future__ import annotations

import sqlite3

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.assembly import count_tokens
from langgraph_typed_memory.graph import create_memory_chat_graph
from tests.conftest import fresh_database, hash_index
from tests.fake_models import FailingChatModel, ScriptedChatModel, tool_reply

SESSION_1 = [
    "Please always answer in bullet points.",
    "I live in Lyon and I work at Acme Robotics.",
    "My dog's name is Rex.",
    "Actually, I moved to Paris last month.",
]
QUESTION = "Where do I live, and what is my dog called?"


def config(thread: str, user: str = "alice") -> dict:
    return {"configurable": {"thread_id": thread, "tenant_id": "acme", "user_id": user}}


def play(graph, thread: str, turns: list[str], user: str = "alice") -> list[dict]:
    return [graph.invoke({"messages": [HumanMessage(t)]}, config(thread, user)) for t in turns]


def system_prompt(state: dict) -> str:
    return state["memory_prompt"][0].content


def assert_continuity(graph) -> None:
    play(graph, "s1", SESSION_1)
    [answer] = play(graph, "s2", [QUESTION])
    prompt = system_prompt(answer)
    assert "bullet points" in prompt and "Paris" in prompt and "Rex" in prompt
    assert "Lyon" not in prompt  # the correction replaced the old value
    retrieval = answer["memory_trace"]["retrieval"]
    assert retrieval["preferences_applied"] and retrieval["facts_returned"]
    [other] = play(graph, "s3", [QUESTION], user="bob")
    assert "Paris" not in system_prompt(other) and "Rex" not in system_prompt(other)
    assert "bullet" not in system_prompt(other)
    assert not other["memory_trace"]["retrieval"]["facts_returned"]


def test_two_sessions_offline(store):
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    assert_continuity(graph)


def test_who_stands_where_is_remembered_and_corrected(store):
    """Relations between people and teams become facts; one that holds one value at a time
    ("reports to") is replaced by the new one, and the turn that said the old one goes too."""
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    play(graph, "s1", ["I report to Priya.", "Sarah leads the platform team.",
                       "After the reorg I report to Dana now."])
    [answer] = play(graph, "s2", ["Who do I report to, and who leads the platform team?"])
    prompt = system_prompt(answer)
    assert "The user reports to Dana." in prompt and "Sarah leads the platform team." in prompt
    assert "Priya" not in prompt


def test_the_prebuilt_graph_keeps_the_memory_block_and_takes_a_preamble(store):
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver(),
                                     preamble="You are Acme's support bot.\n")
    play(graph, "s1", SESSION_1[:3])
    [answer] = play(graph, "s2", [QUESTION])
    assert system_prompt(answer).startswith("You are Acme's support bot.")
    block = answer["memory_block"]
    assert "Rex" in block and "support bot" not in block
    assert graph.get_state(config("s2")).values["memory_block"] == block  # checkpointed


def test_trace_is_checkpointed_and_replayable(store):
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    play(graph, "s1", SESSION_1[:2])
    traces = [s.values.get("memory_trace") for s in graph.get_state_history(config("s1"))
              if s.values.get("memory_trace") and not s.next]
    assert [t["turn_index"] for t in traces] == [2, 1]
    last = traces[0]
    assert {"run_id", "turn_index", "tenant_id", "user_id", "agent_id", "retrieval", "tokens",
            "model_call", "promotions"} <= last.keys()
    assert {p["outcome"] for p in last["promotions"]} == {"written"}
    assert last["tokens"]["total"] <= last["tokens"]["budget"]


def test_graph_with_a_chat_model_and_structured_extraction(store):
    model = ScriptedChatModel.of(
        "Sure.",
        tool_reply("ExtractionResult", {"candidates": [{
            "kind": "fact", "subject": "user", "predicate": "home_city",
            "content": "The user lives in Lyon.", "value": "Lyon", "confidence": 0.9,
            "grounding": "I live in Lyon"}],
            "entities": [{"name": "Lyon", "type": "place"}]}),
    )
    graph = create_memory_chat_graph(model, store=store, checkpointer=InMemorySaver())
    [state] = play(graph, "s1", ["I live in Lyon, by the river."])
    trace = state["memory_trace"]
    assert trace["extraction"]["method"] == "model"
    assert trace["model_call"]["input_tokens"] == 20
    assert [(p["kind"], p["outcome"]) for p in trace["promotions"]] == [
        ("fact", "written"), ("entity", "written"), ("episode", "written")]
    # the candidate, the entity the model named (Lyon), then the turn log
    assert state["messages"][-1].content == "Sure."


def test_streaming_messages_filtered_by_node_yields_the_reply_alone(store):
    """LangGraph's "messages" mode streams every message a node writes, the system prompt
    assemble builds (policies, memory) among them: filtered to the respond node, as
    docs/memory-loop.md shows, it streams the reply alone."""
    store.put(("tenant:acme", "policy"), "codes", {"value": {"rule": "approval code 7731"},
                                                  "created_by": "ops"})
    graph = create_memory_chat_graph(ScriptedChatModel.of("Sure."), store=store,
                                     checkpointer=InMemorySaver())
    streamed = list(graph.stream({"messages": [HumanMessage("Hi there!")]}, config("s1"),
                                 stream_mode="messages"))
    assert any("7731" in str(m.content) for m, meta in streamed
               if meta["langgraph_node"] == "assemble")
    assert [m.content for m, meta in streamed if meta["langgraph_node"] == "respond"
            and m.content] == ["Sure."]


def test_graph_with_the_combined_call(store):
    model = ScriptedChatModel.of(tool_reply("ReplyWithMemories", {
        "reply": "Noted, Paris.", "candidates": [{
            "kind": "fact", "subject": "user", "predicate": "home_city",
            "content": "The user lives in Paris.", "value": "Paris", "confidence": 0.9,
            "grounding": "I live in Paris"}]}))
    graph = create_memory_chat_graph(model, store=store, checkpointer=InMemorySaver(),
                                     combined=True)
    [state] = play(graph, "s1", ["I live in Paris."])
    assert state["messages"][-1].content == "Noted, Paris."
    assert state["memory_trace"]["extraction"]["method"] == "combined"
    assert [(p["kind"], p["outcome"]) for p in state["memory_trace"]["promotions"]] == [
        ("fact", "written"), ("entity", "written"), ("episode", "written")]
    assert len(model.prompts) == 1  # one model call for the whole turn


def test_model_failure_still_completes_the_turn(store):
    graph = create_memory_chat_graph(FailingChatModel(), store=store,
                                     checkpointer=InMemorySaver())
    [state] = play(graph, "s1", ["I live in Lyon."])
    degraded = state["memory_trace"]["degraded"]
    assert any("model failed" in d for d in degraded)
    assert any("extraction model failed" in d for d in degraded)
    assert "not a language model" in state["messages"][-1].content
    assert [(p["kind"], p["outcome"]) for p in state["memory_trace"]["promotions"]] == [
        ("fact", "written"), ("entity", "written"), ("episode", "written")]


async def test_async_graph(store):
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    for text in SESSION_1:
        await graph.ainvoke({"messages": [HumanMessage(text)]}, config("s1"))
    state = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, config("s2"))
    assert "Paris" in system_prompt(state) and "Lyon" not in system_prompt(state)


def test_prompt_stays_bounded_over_300_turns(backend_store_factory):
    store = backend_store_factory(hash_index())
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver(),
                                     assembly={"budget_tokens": 600})
    totals, transcript = [], 0
    for turn in range(300):
        text = f"Note {turn}: my favourite number this week is {turn * 7} and the sky was grey."
        state = graph.invoke({"messages": [HumanMessage(text)]}, config("long"))
        totals.append(state["memory_trace"]["tokens"]["total"])
        transcript += count_tokens(text) + count_tokens(state["messages"][-1].content)
    assert max(totals) <= 600
    assert max(totals[10:]) - min(totals[10:]) <= 120
    assert transcript > 20 * 600


def test_checkpointer_on_the_same_sqlite_file(tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = str(tmp_path / "app.db")
    with SqliteMemoryStore.from_conn_string(path, index=hash_index()) as store:
        store.setup()
        conn = sqlite3.connect(path, check_same_thread=False)
        graph = create_memory_chat_graph(store=store, checkpointer=SqliteSaver(conn))
        assert_continuity(graph)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert {"memories", "checkpoints"} <= tables
        conn.close()


def test_checkpointer_on_the_same_postgres_database(pg_server):
    from langgraph.checkpoint.postgres import PostgresSaver

    from langgraph_typed_memory import PostgresMemoryStore

    url = fresh_database(pg_server)
    with PostgresMemoryStore.from_conn_string(url, index=hash_index()) as store, \
            PostgresSaver.from_conn_string(url) as saver:
        store.setup()
        saver.setup()
        graph = create_memory_chat_graph(store=store, checkpointer=saver)
        assert_continuity(graph)
