"""Each memory node alone: invoked with a state dict and a store, on every backend."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda

from langgraph_typed_memory.graph import create_memory_chat_graph
from langgraph_typed_memory.nodes import (
    create_assemble_node,
    create_extract_node,
    create_promote_node,
    create_respond_node,
    create_retrieve_node,
)
from tests.fake_models import FailingChatModel, ScriptedChatModel, tool_reply

ALICE = {"configurable": {"tenant_id": "acme", "user_id": "alice", "thread_id": "t1"}}
PREFS = ("tenant:acme", "user:alice", "preference")
FACTS = ("tenant:acme", "user:alice", "fact")


def lives_in(city: str) -> dict:
    return {"kind": "fact", "subject": "user", "predicate": "home_city",
            "content": f"The user lives in {city}.", "value": city, "confidence": 0.9,
            "grounding": f"I live in {city}"}


def test_retrieve_fans_out_for_the_callers_scope(store):
    store.put(PREFS, "tone", {"value": "terse"})
    store.put(("tenant:acme", "policy"), "refunds", {"value": {"max": 500}, "created_by": "ops"})
    store.put(FACTS, "city", {"subject": "user", "predicate": "home_city",
                              "content": "The user lives in Lyon."})
    store.put(("tenant:acme", "user:bob", "fact"), "city", {
        "subject": "user", "predicate": "home_city", "content": "The user lives in Oslo."})
    out = create_retrieve_node(store).invoke(
        {"messages": [HumanMessage("where do I live?")]}, ALICE)
    context, trace = out["memory_context"], out["memory_trace"]
    assert [f["value"]["content"] for f in context["facts"]] == ["The user lives in Lyon."]
    assert len(context["preferences"]) == 1 and len(context["policies"]) == 1
    retrieval = trace["retrieval"]
    assert retrieval["retrieval_mode"] == "hybrid" and retrieval["modes"]["preferences"] == "exact"
    assert retrieval["facts_returned"] == [context["facts"][0]["memory"]["id"]]
    assert (trace["tenant_id"], trace["user_id"], trace["turn_index"]) == ("acme", "alice", 1)


def test_a_message_longer_than_a_query_still_gets_its_memory(store):
    """A pasted log over the store's query limit is searched by its start; the policies
    and preferences, which need no query, are there as for any message."""
    store.put(PREFS, "tone", {"value": "terse"})
    store.put(("tenant:acme", "policy"), "emails", {"value": {"rule": "never reveal emails"},
                                                   "created_by": "ops"})
    store.put(FACTS, "city", {"subject": "user", "predicate": "home_city",
                              "content": "The user lives in Lyon."})
    pasted = "Why did Lyon fail? " + "ERROR timeout at node 7 " * 500
    assert len(pasted) > 8000
    out = create_retrieve_node(store).invoke({"messages": [HumanMessage(pasted)]}, ALICE)
    context, trace = out["memory_context"], out["memory_trace"]
    assert not trace["degraded"]
    assert len(context["policies"]) == 1 and len(context["preferences"]) == 1
    assert [f["key"] for f in context["facts"]] == ["city"]


async def test_retrieve_async_path(store):
    store.put(FACTS, "city", {"subject": "user", "predicate": "home_city",
                              "content": "The user lives in Lyon."})
    out = await create_retrieve_node(store).ainvoke(
        {"messages": [HumanMessage("Lyon?")]}, ALICE)
    assert out["memory_context"]["facts"][0]["key"] == "city"


EPISODES = ("tenant:acme", "user:alice", "episode")


def said(text: str) -> dict:
    return {"title": "user", "summary": f"user: {text}", "task_type": "turn"}


async def test_without_vectors_a_short_slot_gets_the_newest_records(backend_store_factory):
    store = backend_store_factory()  # no index: word search only
    store.put(EPISODES, "old", said("the gearbox on my bike is worn"))
    for i in range(12):
        store.put(EPISODES, f"t{i:02d}", said(f"we planted tulip bulbs, row {i}"))
    store.put(FACTS, "city", {"subject": "user", "predicate": "home_city",
                              "content": "The user lives in Lyon."})
    node = create_retrieve_node(store)
    for out in (node.invoke({"messages": [HumanMessage("gearbox?")]}, ALICE),
                await node.ainvoke({"messages": [HumanMessage("gearbox?")]}, ALICE)):
        episodes = [e["key"] for e in out["memory_context"]["episodes"]]
        # the word match first, then the newest ten, without the match twice
        assert episodes == ["old", *[f"t{i:02d}" for i in range(11, 1, -1)]]
        assert [f["key"] for f in out["memory_context"]["facts"]] == ["city"]
        modes = out["memory_trace"]["retrieval"]["modes"]
        assert modes["episodes"] == "lexical+newest" and modes["facts"] == "like+newest"


def test_with_vectors_no_listing_is_added(store):
    store.put(EPISODES, "old", said("the gearbox on my bike is worn"))
    store.put(EPISODES, "new", said("we planted tulip bulbs"))
    out = create_retrieve_node(store, episodes=1).invoke(
        {"messages": [HumanMessage("gearbox?")]}, ALICE)
    assert [e["key"] for e in out["memory_context"]["episodes"]] == ["old"]
    assert out["memory_trace"]["retrieval"]["modes"]["episodes"] == "hybrid"


async def test_a_question_naming_a_time_gets_that_spans_turns_first(backend_store_factory, clock):
    from datetime import UTC, datetime

    clock.now = datetime(2026, 3, 4, 15, tzinfo=UTC)  # a Wednesday
    store = backend_store_factory(clock=clock)
    for key, day, text in [("mon", 2, "the quarterly budget is due on Friday"),
                           ("tue", 3, "we talked to the landlord about the heating"),
                           ("feb", 1, "the budget for the trip is two thousand")]:
        month = 2 if key == "feb" else 3
        store.put(EPISODES, key, {**said(text),
                                  "occurred_at": f"2026-0{month}-0{day}T10:00:00+00:00"})
    node = create_retrieve_node(store)
    question = {"messages": [HumanMessage("what did I tell you yesterday?")]}
    for out in (node.invoke(question, ALICE), await node.ainvoke(question, ALICE)):
        episodes = [e["key"] for e in out["memory_context"]["episodes"]]
        assert episodes[0] == "tue"  # no word in common: the span finds it
        retrieval = out["memory_trace"]["retrieval"]
        assert retrieval["time_window"] == {"phrase": "yesterday",
                                            "start": "2026-03-03T00:00:00+00:00",
                                            "end": "2026-03-04T00:00:00+00:00"}
        assert "+window" in retrieval["modes"]["episodes"]
    # a question naming something in the span: what it finds there first, then the rest of
    # what it finds, then the span's others
    out = node.invoke({"messages": [HumanMessage("the budget I mentioned this week")]}, ALICE)
    assert [e["key"] for e in out["memory_context"]["episodes"]][:3] == ["mon", "feb", "tue"]
    # a question naming no time, or a node told not to read spans: no span
    out = node.invoke({"messages": [HumanMessage("budget?")]}, ALICE)
    assert out["memory_trace"]["retrieval"]["time_window"] is None
    out = create_retrieve_node(store, time_windows=False).invoke(question, ALICE)
    assert out["memory_trace"]["retrieval"]["time_window"] is None
    assert "window" not in out["memory_trace"]["retrieval"]["modes"]["episodes"]


def test_extract_reads_she_as_the_person_the_thread_named():
    messages = [HumanMessage("My sister Lena lives in Vienna."),
                HumanMessage("She just moved to Graz.")]
    out = create_extract_node().invoke({"messages": messages}, ALICE)
    moved = [c for c in out["memory_candidates"] if c.get("predicate") == "home_city"]
    assert [(c["subject"], c["value"], c.get("replaces")) for c in moved] == [
        ("Lena", "Graz", "Vienna")]
    # nobody the rules can tell: the pronoun stays and no one's home changes
    messages = [HumanMessage("Lena met Tom at the gym."), HumanMessage("She moved to Graz.")]
    out = create_extract_node().invoke({"messages": messages}, ALICE)
    assert not [c for c in out["memory_candidates"] if c.get("subject") in ("Lena", "Tom")]


class BrokenStore:
    def batch(self, ops):
        raise OSError("disk on fire")

    async def abatch(self, ops):
        raise OSError("disk on fire")

    def promote(self, *args, **kwargs):
        raise OSError("disk on fire")


def test_retrieve_and_promote_degrade_instead_of_failing():
    out = create_retrieve_node(BrokenStore()).invoke({"messages": [HumanMessage("x")]}, ALICE)
    assert out["memory_trace"]["retrieval"]["retrieval_mode"] == "failed"
    assert "disk on fire" in out["memory_trace"]["degraded"][0]
    out = create_promote_node(BrokenStore()).invoke(
        {"memory_candidates": [lives_in("Lyon")], "memory_trace": {}}, ALICE)
    assert out["memory_trace"]["promotions"] == [] and out["memory_candidates"] == []
    assert "promotion failed" in out["memory_trace"]["degraded"][0]


def test_assemble_reports_tokens_within_budget():
    context = {"facts": [{"key": f"f{i}", "value": {"content": f"fact number {i} " * 8},
                          "memory": {"id": f"f{i}", "tier": "standard"}} for i in range(50)]}
    out = create_assemble_node({"budget_tokens": 300}).invoke(
        {"messages": [HumanMessage("tell me everything")], "memory_context": context})
    tokens = out["memory_trace"]["tokens"]
    assert tokens["total"] <= 300 == tokens["budget"] and tokens["dropped"]
    assert out["memory_prompt"][-1].content == "tell me everything"


def test_respond_offline_says_it_is_not_a_model():
    out = create_respond_node().invoke(
        {"messages": [HumanMessage("where?")],
         "memory_context": {"facts": [{"value": {"content": "The user lives in Lyon."}}]}})
    reply = out["messages"][0].content
    assert "not a language model" in reply and "Lyon" in reply
    assert out["memory_trace"]["model_call"]["model"].startswith("extractive-responder")


def test_respond_offline_recites_only_what_the_prompt_shows(store):
    for i, city in enumerate(["Lyon", "Oslo", "Porto", "Quito"]):
        store.put(FACTS, f"f{i}", {"subject": "user", "predicate": f"visited_{i}",
                                   "content": f"The user visited {city} in spring with a group "
                                              "of old friends from school."})
    graph = create_memory_chat_graph(store=store, assembly={"budget_tokens": 140})
    out = graph.invoke({"messages": [HumanMessage("Which cities did I visit in spring?")]},
                       ALICE)
    shown = out["memory_trace"]["assembled"]["facts"]
    retrieved = out["memory_trace"]["retrieval"]["facts_returned"]
    assert 0 < len(shown) < len(retrieved)  # the budget held some of them only
    reply = out["messages"][-1].content
    recited = [c for c in ["Lyon", "Oslo", "Porto", "Quito"] if c in reply]
    assert len(recited) == len(shown)


def test_respond_with_a_model_records_usage():
    model = ScriptedChatModel.of(AIMessage("Lyon.", usage_metadata={
        "input_tokens": 42, "output_tokens": 2, "total_tokens": 44}))
    out = create_respond_node(model).invoke(
        {"messages": [HumanMessage("where?")], "memory_prompt": [HumanMessage("where?")]})
    assert out["messages"][0].content == "Lyon."
    assert out["memory_trace"]["model_call"]["input_tokens"] == 42


def test_respond_combined_call_returns_candidates():
    model = ScriptedChatModel.of(tool_reply(
        "ReplyWithMemories", {"reply": "Noted.", "candidates": [lives_in("Lyon")]}))
    out = create_respond_node(model, combined=True).invoke(
        {"messages": [HumanMessage("I live in Lyon")]})
    assert out["messages"][0].content == "Noted."
    assert out["memory_candidates"][0]["value"] == "Lyon"
    assert out["memory_trace"]["extraction"]["method"] == "combined"


def test_respond_model_failure_completes_the_turn():
    out = create_respond_node(FailingChatModel()).invoke(
        {"messages": [HumanMessage("hi there friend")]})
    assert "not a language model" in out["messages"][0].content
    assert "model failed" in out["memory_trace"]["degraded"][0]


def test_respond_malformed_structured_output_degrades():
    model = ScriptedChatModel.of(tool_reply("ReplyWithMemories", {"candidates": "oops"}))
    out = create_respond_node(model, combined=True).invoke({"messages": [HumanMessage("hi")]})
    assert "model failed" in out["memory_trace"]["degraded"][0]
    assert "memory_candidates" not in out


def test_extract_prefilter_stops_chit_chat():
    out = create_extract_node(extraction="rules").invoke({"messages": [HumanMessage("thanks!")]})
    assert out["memory_candidates"] == []
    assert out["memory_trace"]["extraction"]["method"] == "prefiltered"


def test_extract_near_duplicate_within_a_minute():
    node = create_extract_node(extraction="rules", clock=lambda: 1000.0)
    recent = [("I live in Lyon.", 990.0)]
    out = node.invoke({"messages": [HumanMessage("I live in Lyon.")], "memory_recent": recent})
    assert out["memory_trace"]["extraction"]["prefilter"] == "duplicate"


def test_extract_with_a_model_validates_grounding():
    model = ScriptedChatModel.of(tool_reply("ExtractionResult", {"candidates": [
        lives_in("Lyon"), {**lives_in("Rome"), "grounding": "I live in Rome"}]}))
    out = create_extract_node(model).invoke({"messages": [HumanMessage("I live in Lyon.")]})
    assert [c["value"] for c in out["memory_candidates"]] == ["Lyon"]
    assert out["memory_trace"]["extraction"] == {
        "prefilter": "kept", "method": "model", "candidates": 1, "dropped": 1}


def test_extract_model_failure_falls_back_to_rules():
    out = create_extract_node(FailingChatModel()).invoke(
        {"messages": [HumanMessage("I live in Lyon.")]})
    assert [c["value"] for c in out["memory_candidates"]] == ["Lyon"]
    assert "extraction model failed" in out["memory_trace"]["degraded"][0]


def test_extract_model_answering_in_prose_falls_back_to_rules():
    class Prose(ScriptedChatModel):  # structured output that parsed to nothing
        def with_structured_output(self, schema, **kwargs):
            return RunnableLambda(lambda _: None)

    out = create_extract_node(Prose.of("Sure! You live in Lyon.")).invoke(
        {"messages": [HumanMessage("I live in Lyon.")]})
    assert [c["value"] for c in out["memory_candidates"]] == ["Lyon"]
    assert out["memory_trace"]["extraction"]["method"] == "rules"
    assert "extraction model output unusable" in out["memory_trace"]["degraded"][0]


def test_extract_keeps_combined_candidates():
    state = {"messages": [HumanMessage("I live in Lyon.")], "memory_candidates": [lives_in("X")],
             "memory_trace": {"extraction": {"method": "combined"}}}
    out = create_extract_node(FailingChatModel()).invoke(state)
    assert "memory_candidates" not in out and out["memory_trace"]["degraded"] == []


def test_promote_writes_and_records_outcomes(store):
    node = create_promote_node(store)
    out = node.invoke({"memory_candidates": [lives_in("Lyon")],
                       "memory_trace": {"run_id": "run-1", "turn_index": 3}}, ALICE)
    [promotion] = out["memory_trace"]["promotions"]
    assert promotion["outcome"] == "written"
    item = store.get(FACTS, promotion["key"])
    assert item.memory["provenance"]["source_run_id"] == "run-1"
    assert item.memory["provenance"]["source_turn"] == 3


def test_promote_gives_an_episode_its_preceding_turns_as_searchable_context(store):
    messages = [HumanMessage("Can you help me move the billing service to Postgres?"),
                AIMessage("Sure. You use Redis for caching. Did you start with a schema dump?"),
                HumanMessage("I finished the migration.")]
    episode = {"kind": "episode", "title": "Billing migration", "confidence": 0.9,
               "content": "The user migrated the billing service.", "task_complete": True,
               "grounding": "I finished the migration"}
    config = {"configurable": {**ALICE["configurable"], "thread_id": "th-7"}}
    out = create_promote_node(store, log_turns=False).invoke(
        {"messages": messages, "memory_candidates": [episode, lives_in("Lyon")]}, config)
    assert [p["outcome"] for p in out["memory_trace"]["promotions"]] == ["written", "written"]
    episodes = ("tenant:acme", "user:alice", "episode")
    [hit] = store.search(episodes, query="schema dump")  # words only the context holds
    assert hit.memory["lexical_rank"] == 1
    # of the assistant's reply only its question: the rest repeats what memory holds
    assert hit.value["context"] == [messages[0].content, "Did you start with a schema dump?"]
    assert all(h.memory["lexical_rank"] is None
               for h in store.search(episodes, query="Redis caching"))
    assert hit.value["metadata"] == {"session_id": "th-7"}  # compaction's session key
    assert "context" not in store.search(FACTS)[0].value


def test_promote_logs_the_turn_with_its_reply_context_time_and_session():
    from datetime import UTC, datetime

    from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite

    when = datetime(2025, 6, 2, 9, 30, tzinfo=UTC)
    store = SqliteMemoryStore(connect_sqlite(":memory:"), clock=lambda: when)
    store.setup()
    messages = [HumanMessage("Hi!"), AIMessage("Hello, how can I help?"),
                HumanMessage("Our standup is at 9:30 every weekday.", id="m-3"),
                AIMessage("Noted: standup at 9:30.")]
    state = {"messages": messages, "memory_trace": {"run_id": "r-1", "turn_index": 2,
                                                   "extraction": {"prefilter": "kept"}}}
    out = create_promote_node(store).invoke(state, ALICE)
    [logged] = out["memory_trace"]["promotions"]
    assert (logged["kind"], logged["outcome"]) == ("episode", "written")
    item = store.get(("tenant:acme", "user:alice", "episode"), logged["key"])
    assert item.value["task_type"] == "turn" and item.value["title"] == "user (2 June 2025)"
    assert item.value["summary"] == "user: Our standup is at 9:30 every weekday."
    assert item.value["context"] == ["user: Hi!", "assistant: Hello, how can I help?"]
    assert item.value["occurred_at"].startswith("2025-06-02T09:30")
    assert item.value["metadata"] == {"session_id": "t1", "message_id": "m-3"}
    assert item.value["artifacts"] == {"reply": "Noted: standup at 9:30."}
    assert item.memory["provenance"]["source_run_id"] == "r-1"
    assert item.memory["provenance"]["source_turn"] == 2
    # a turn the pre-filter dropped is not logged; without an extract node it decides itself
    chit_chat = {"messages": [HumanMessage("thanks, that's great!")], "memory_trace": {}}
    assert create_promote_node(store).invoke(chit_chat, ALICE)["memory_trace"]["promotions"] == []


async def test_promote_async_path(store):
    out = await create_promote_node(store).ainvoke(
        {"memory_candidates": [lives_in("Lyon")], "memory_trace": {"run_id": "r"}}, ALICE)
    assert out["memory_trace"]["promotions"][0]["outcome"] == "written"


def _conversation(n: int) -> list:
    out = []
    for i in range(n):
        out += [HumanMessage(f"Question {i} about order {100 + i}."), AIMessage(f"Answer {i}.")]
    return out + [HumanMessage("And now?")]


def test_assemble_summarizes_older_turns_with_the_model():
    model = ScriptedChatModel.of("The user asked about orders 100 to 104.")
    node = create_assemble_node({"recent_turns": 2}, model=model)
    out = node.invoke({"messages": _conversation(5)})
    assert out["memory_summary"] == "The user asked about orders 100 to 104."
    assert "orders 100 to 104" in out["memory_prompt"][0].content
    assert out["memory_summarized"] == len(_conversation(5)) - 1  # the window opens on a user


def test_assemble_summary_falls_back_to_extractive_recorded_and_logged(caplog):
    node = create_assemble_node({"recent_turns": 2}, model=FailingChatModel())
    with caplog.at_level("WARNING", logger="langgraph_typed_memory.nodes.assemble"):
        out = node.invoke({"messages": _conversation(5)})
    assert "order 100" in out["memory_summary"]
    [why] = out["memory_trace"]["degraded"]
    assert "summary model failed" in why and "model provider unavailable" in why
    assert any("summary model failed" in r.getMessage() for r in caplog.records)


async def test_assemble_async_with_a_model_summary():
    model = ScriptedChatModel.of("Summary from the model.")
    out = await create_assemble_node({"recent_turns": 2}, model=model).ainvoke(
        {"messages": _conversation(3)})
    assert out["memory_summary"] == "Summary from the model."
