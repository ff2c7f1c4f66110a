"""Extraction without a model or a database: pre-filter gates, rule extractor, model output."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langgraph_typed_memory.extraction import (
    EXTRACTION_PROMPT,
    Candidate,
    ExtractionResult,
    FilterDecision,
    ValidatedCandidates,
    candidates_from_model_output,
    extract_rules,
    prefilter,
)
from langgraph_typed_memory.gate import GateConfig, Proposal, record_key

P, F = "preference", "fact"

# utterance -> expected candidates as (kind, key or predicate, value, correction)
CASES: list[tuple[str, list[tuple[str, str, str, bool]]]] = [
    # preferences
    ("I prefer JSON.", [(P, "output_format", "json", False)]),
    ("I'd like answers in French please.", [(P, "language", "French", False)]),
    ("Please always respond in bullet points.", [(P, "output_format", "bullet points", False)]),
    ("Use markdown format.", [(P, "output_format", "markdown", False)]),
    ("Use ISO 8601 format for dates.", [(P, "date_format", "ISO 8601", False)]),
    ("Write dates as DD/MM/YYYY.", [(P, "date_format", "DD/MM/YYYY", False)]),
    ("Call me Sam from now on.", [(P, "name", "Sam", False)]),
    ("I like tables better.", [(P, "output_format", "tables", False)]),
    ("From now on, be more concise.", [(P, "tone", "concise", False)]),
    ("Be less formal with me, please.", [(P, "tone", "less formal", False)]),
    ("Keep your answers short.", [(P, "tone", "short", False)]),
    ("I'd like shorter answers.", [(P, "tone", "short", False)]),
    ("My timezone is Europe/Paris.", [(P, "timezone", "Europe/Paris", False)]),
    ("I'm on Pacific time.", [(P, "timezone", "Pacific", False)]),
    ("Give me all your answers in JSON.", [(P, "output_format", "json", False)]),
    ("Use metric units.", [(P, "units", "metric", False)]),
    ("I'd rather have plain text.", [(P, "output_format", "plain text", False)]),
    ("Could you answer in Spanish from now on?", [(P, "language", "Spanish", False)]),
    ("Reply in one sentence.", [(P, "response_style", "one sentence", False)]),
    ("From now on, don't use emojis.", [(P, "instruction_dont_use_emojis", "don't use emojis",
                                         False)]),
    ("Always cite your sources.", [(P, "instruction_cite_your_sources", "cite your sources",
                                    False)]),
    # facts about the user
    ("My name is Alice and I live in Lyon.", [(F, "name", "Alice", False),
                                              (F, "home_city", "Lyon", False)]),
    ("I moved to Berlin last month.", [(F, "home_city", "Berlin", False)]),
    ("I've just moved to Tokyo.", [(F, "home_city", "Tokyo", False)]),
    ("I'm based in Montreal, Canada.", [(F, "home_city", "Montreal, Canada", False)]),
    ("I work at Acme as a data scientist.", [(F, "employer", "Acme", False),
                                             (F, "occupation", "data scientist", False)]),
    ("I'm a software engineer at Google.", [(F, "occupation", "software engineer", False),
                                            (F, "employer", "Google", False)]),
    ("I work as a nurse.", [(F, "occupation", "nurse", False)]),
    ("I work at Home Depot.", [(F, "employer", "Home Depot", False)]),
    ("My dog's name is Rex.", [(F, "dog_name", "Rex", False)]),
    ("My birthday is May 3.", [(F, "birthday", "May 3", False)]),
    ("I have a golden retriever named Max.", [(F, "has", "a golden retriever named Max", False)]),
    ("I'm allergic to peanuts.", [(F, "allergy", "peanuts", False)]),
    ("I have a peanut allergy and my favorite color is blue.",
     [(F, "allergy", "peanut", False), (F, "favorite_color", "blue", False)]),
    ("I'm vegetarian and I'm 34 years old.", [(F, "diet", "vegetarian", False),
                                              (F, "age", "34", False)]),
    ("My wife's name is Anna; my son's name is Leo.", [(F, "wife_name", "Anna", False),
                                                       (F, "son_name", "Leo", False)]),
    ("I live in Lyon, any restaurant tips?", [(F, "home_city", "Lyon", False)]),
    # corrections
    ("Actually, I live in Lyon now, not Paris.", [(F, "home_city", "Lyon", True)]),
    ("I don't live in Paris anymore, I live in Madrid now.", [(F, "home_city", "Madrid", True)]),
    ("Correction: my employer is Globex.", [(F, "employer", "Globex", True)]),
    ("No, call me Sam instead of Samuel.", [(P, "name", "Sam", True)]),
    ("Actually I prefer markdown, not JSON.", [(P, "output_format", "markdown", True)]),
    # negatives: chit-chat, questions, negations, one-off requests, non-memories
    ("Thanks a lot, that's great!", []),
    ("Do I live in Paris?", []),
    ("What's my name?", []),
    ("I don't live in Paris.", []),
    ("My name is not Bob.", []),
    ("I'm not a doctor.", []),
    ("I'm a big fan of jazz.", []),
    ("I have a question about my order.", []),
    ("My question is about billing.", []),
    ("Call me back tomorrow.", []),
    ("I work for myself.", []),
    ("Put this list in a table.", []),
    ("Tell me a joke about cats.", []),
    ("No, I meant Berlin.", []),
    ("I might move to Berlin next year.", []),
    ("I prefer window seats over aisle seats.", []),  # a taste, no instruction to the assistant
]


def _summary(text: str) -> list[tuple[str, str, str, bool]]:
    return [(c.kind, c.key or c.predicate or "", c.value, c.correction)
            for c in extract_rules(text)]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_rule_extraction_table(text: str, expected: list[tuple[str, str, str, bool]]) -> None:
    assert _summary(text) == expected
    for c in extract_rules(text):
        assert c.grounding in text
        assert c.confidence == 0.9
        assert c.content.startswith(("The user", "Standing instruction"))
        assert (c.subject == "user") == (c.kind == F)


def test_table_is_large_and_has_negatives() -> None:
    assert len(CASES) >= 40
    assert sum(1 for _, expected in CASES if not expected) >= 10


@pytest.mark.parametrize("text", ["I think I live in Lyon.", "Maybe call me Sammy.",
                                  "I probably work at Initech."])
def test_hedged_statements_fall_below_the_fact_threshold(text: str) -> None:
    [candidate] = extract_rules(text)
    assert candidate.confidence == 0.6 < 0.7


def test_content_is_third_person_and_grounding_is_the_sentence() -> None:
    text = "Hi there! I'm allergic to my neighbour's cat. Thanks."
    [c] = extract_rules(text)
    assert c.content == "The user is allergic to their neighbour's cat."
    assert c.grounding == "I'm allergic to my neighbour's cat."
    assert text.index(c.grounding) == 10


def test_several_sentences_and_duplicates() -> None:
    text = "I live in Lyon. I live in Lyon! Also, call me Sam; I'm a teacher."
    assert _summary(text) == [(F, "home_city", "Lyon", False), (P, "name", "Sam", False),
                              (F, "occupation", "teacher", False)]


# ----------------------------------------------------------------------------- natural phrasings
# Phrasings the continuity benchmark found missed or mis-extracted, and variants:
# utterance -> (kind, key or predicate, value, content, correction); the subject is the user.
NATURAL: list[tuple[str, list[tuple[str, str, str, str, bool]]]] = [
    ("I'm Priya.", [(F, "name", "Priya", "The user's name is Priya.", False)]),
    ("Hi, I'm Priya Sharma.", [(F, "name", "Priya Sharma", "The user's name is Priya Sharma.",
                                False)]),
    ("I am Priya, nice to meet you.", [(F, "name", "Priya", "The user's name is Priya.", False)]),
    ("I'm Jean-Luc.", [(F, "name", "Jean-Luc", "The user's name is Jean-Luc.", False)]),
    ("Call me Christian.", [(P, "name", "Christian", "The user wants to be called Christian.",
                             False)]),
    ("I'm from Brazil.", [(F, "origin", "Brazil", "The user is from Brazil.", False)]),
    ("I'm originally from São Paulo.", [(F, "origin", "São Paulo", "The user is from São Paulo.",
                                         False)]),
    ("I come from the Netherlands.", [(F, "origin", "the Netherlands",
                                       "The user is from the Netherlands.", False)]),
    ("I grew up in Lisbon.", [(F, "origin", "Lisbon", "The user is from Lisbon.", False)]),
    ("I speak Portuguese.", [(F, "spoken_language", "Portuguese", "The user speaks Portuguese.",
                              False)]),
    ("I speak Portuguese and English.", [(F, "spoken_language", "Portuguese and English",
                                          "The user speaks Portuguese and English.", False)]),
    ("I'm fluent in Spanish.", [(F, "spoken_language", "Spanish", "The user speaks Spanish.",
                                 False)]),
    ("I'm a native Portuguese speaker.", [(F, "spoken_language", "Portuguese",
                                           "The user speaks Portuguese.", False)]),
    ("I'm married.", [(F, "relationship_status", "married", "The user is married.", False)]),
    ("I'm happily married.", [(F, "relationship_status", "married", "The user is married.",
                               False)]),
    ("I just got divorced.", [(F, "relationship_status", "divorced", "The user is divorced.",
                               False)]),
    ("I'm single.", [(F, "relationship_status", "single", "The user is single.", False)]),
    ("I drive a Tesla.", [(F, "car", "a Tesla", "The user's car is a Tesla.", False)]),
    ("I drive a Tesla Model 3 to work.", [(F, "car", "a Tesla Model 3",
                                           "The user's car is a Tesla Model 3.", False)]),
    ("I drive an old Honda Civic.", [(F, "car", "an old Honda Civic",
                                      "The user's car is an old Honda Civic.", False)]),
    ("We have a baby girl named Lily.", [(F, "daughter_name", "Lily",
                                          "The user has a baby girl named Lily.", False)]),
    ("We've got a daughter called Lily.", [(F, "daughter_name", "Lily",
                                            "The user has a daughter named Lily.", False)]),
    ("My husband and I have a little girl named Lily.", [
        (F, "daughter_name", "Lily", "The user has a little girl named Lily.", False)]),
    ("We have two kids.", [(F, "has", "two kids", "The user has two kids.", False)]),
    ("I have a cat named Miso.", [(F, "cat_name", "Miso", "The user has a cat named Miso.",
                                   False)]),
    ("I've got a puppy called Rex.", [(F, "dog_name", "Rex", "The user has a puppy named Rex.",
                                       False)]),
    ("I'm not vegetarian anymore.", [(F, "diet", "no longer vegetarian",
                                      "The user is no longer vegetarian.", True)]),
    ("I'm no longer vegan.", [(F, "diet", "no longer vegan", "The user is no longer vegan.",
                               True)]),
    ("I stopped being vegetarian last year.", [(F, "diet", "no longer vegetarian",
                                                "The user is no longer vegetarian.", True)]),
    ("I'm not married anymore, I'm divorced.", [
        (F, "relationship_status", "no longer married", "The user is no longer married.", True),
        (F, "relationship_status", "divorced", "The user is divorced.", True)]),
    ("Oops, I'm 30, not 29.", [(F, "age", "30", "The user's age is 30.", True)]),
    ("I'm 29.", [(F, "age", "29", "The user's age is 29.", False)]),
    ("I just turned 30.", [(F, "age", "30", "The user's age is 30.", False)]),
    ("No, I'm 31 now.", [(F, "age", "31", "The user's age is 31.", True)]),
    ("Actually, answer in German instead.", [(P, "language", "German",
                                              "The user wants replies in German.", True)]),
    ("Reply in Italian instead of Spanish.", [(P, "language", "Italian",
                                               "The user wants replies in Italian.", True)]),
    ("Switch to German, please.", [(P, "language", "German", "The user wants replies in German.",
                                    False)]),
    ("My wife is called Ana.", [(F, "wife_name", "Ana", "The user's wife is named Ana.", False)]),
    ("My husband is named Jo.", [(F, "husband_name", "Jo", "The user's husband is named Jo.",
                                  False)]),
    ("My partner's called Sam Lee.", [(F, "partner_name", "Sam Lee",
                                       "The user's partner is named Sam Lee.", False)]),
    ("Sorry, my cat is named Mochi, not Miso.", [(F, "cat_name", "Mochi",
                                                  "The user's cat is named Mochi.", True)]),
    ("My kitten's name is Mochi.", [(F, "cat_name", "Mochi", "The user's kitten's name is Mochi.",
                                     False)]),
    ("My friend is from Brazil.", [(F, "friend_origin", "Brazil",
                                    "The user's friend is from Brazil.", False)]),
    ("My parents are from Brazil.", [(F, "parents_origin", "Brazil",
                                      "The user's parents are from Brazil.", False)]),
]


@pytest.mark.parametrize(("text", "expected"), NATURAL, ids=[c[0][:40] for c in NATURAL])
def test_natural_phrasings(text: str, expected: list[tuple[str, str, str, str, bool]]) -> None:
    found = extract_rules(text)
    assert [(c.kind, c.key or c.predicate, c.value, c.content, c.correction)
            for c in found] == expected
    assert all(c.grounding == text and c.subject == ("user" if c.kind == F else None)
               for c in found)


@pytest.mark.parametrize("text", [
    # not a name, an origin, a language, a state, a car, a child or an age
    "I'm Sorry.", "I'm French.", "I'm Nigerian.", "I'm Christian.", "I'm OK.", "I'm AFK.",
    "I'm Fine, thanks.", "i'm priya.", "I'm Indianapolis-based.",
    "I'm from the IT department.", "I'm from Acme support.", "I speak my mind.",
    "I speak to my boss every day.", "I'm engaged in a big project.", "I drive a lot.",
    "I drive a hard bargain.", "I drive my kids to school.", "I drive an Uber on weekends.",
    "We have a meeting at 3.", "We have two offices in Berlin.", "We have a client named Acme.",
    "I'm 30 minutes late.", "I'm 100% sure.", "I turned 180 degrees.", "I'm 1st in line.",
    "My son is named after his grandfather.", "My cat is called whenever dinner is ready.",
    # questions and hypotheticals
    "Are you Priya?", "Am I from Brazil?", "Do you speak Portuguese?", "Are you married?",
    "Answer in German instead?", "If I were from Brazil I'd speak Portuguese.", "Suppose I'm 30.",
    "What if I'm married?", "I'd like to speak Portuguese.", "I want to drive a Tesla.",
    "I'm getting married.", "I'm going to be 30.", "I wonder if my cat is named Miso.",
    # negations and past states
    "I'm not married.", "I'm not vegetarian.", "I don't speak Portuguese.",
    "I don't drive a Tesla.", "I used to drive a Tesla.", "I used to be vegetarian.",
    "I was married.",
    # other people's statements
    "She's from Brazil.", "My friend said she is from Brazil.", "He speaks Portuguese.",
    "My friend is not vegetarian anymore.", "They have a baby girl named Lily.",
    "Tell me about my friend from Brazil.",
])
def test_natural_negatives(text: str) -> None:
    assert extract_rules(text) == []


@pytest.mark.parametrize(("text", "predicate"), [
    ("My sister is married.", ["sister"]),
    ("My friend Priya is from Brazil.", ["friend_name", "about_priya"]),
    ("My friend is called Bob.", ["friend_name"]), ("My brother drives a Tesla.", []),
])
def test_other_peoples_facts_are_never_the_users(text: str, predicate: list[str]) -> None:
    """A fact about someone the user knows is keyed by that person (`sister`, `friend_name`,
    what is said of Priya with Priya as its subject), as "my wife's name is Anna" is
    `wife_name`: never `relationship_status`, `origin`, `name`."""
    found = extract_rules(text)
    assert [c.predicate for c in found] == predicate
    assert all(c.subject != "user" for c in found if c.predicate.startswith("about_"))


@pytest.mark.parametrize(("first", "second"), [
    ("I'm 29.", "Oops, I'm 30, not 29."),
    ("I'm 29 years old.", "I just turned 30."),
    ("I have a cat named Miso.", "Sorry, my cat is named Mochi, not Miso."),
    ("My daughter's name is Lilly.", "No, we have a baby girl named Lily."),
    ("I'm vegetarian.", "I'm not vegetarian anymore."),
    ("I'm married.", "I'm divorced now."),
    ("Please answer in Spanish.", "Actually, answer in German instead."),
    ("My wife's name is Anna.", "Actually, my wife is called Ana."),
    ("My name is Priyanka.", "I'm Priya."),
])
def test_a_change_lands_on_the_key_of_what_it_changes(first: str, second: str) -> None:
    """The gate supersedes by key: stateful predicates (age, cat_name, relationship_status) and
    preference keys by value, the rest through `correction` on the same subject and predicate."""
    [old], [new] = extract_rules(first), extract_rules(second)
    settings = GateConfig()
    keys = [record_key(Proposal(**c.model_dump()), settings) for c in (old, new)]
    same_slot = (old.kind, old.subject, old.key or old.predicate) == (
        new.kind, new.subject, new.key or new.predicate)
    assert same_slot and (keys[0] == keys[1] or new.correction)
    assert str(old.value) != str(new.value)


# ----------------------------------------------------------------------------- pre-filter

@pytest.mark.parametrize(
    ("text", "role", "reason"),
    [
        ("I live in Lyon now.", "human", "kept"),
        ("I live in Lyon now.", "user", "kept"),
        ("I live in Lyon now.", "ai", "role"),
        ("You live in Lyon, I recall.", "assistant", "role"),
        ("Sure, I will answer in JSON.", "system", "role"),
        ("Lyon.", "human", "too_short"),
        ("", "human", "too_short"),
        ("👍 👍 👍", "human", "too_short"),
        ("word " * 401, "human", "too_long"),
        ("Hi there, how are you?", "human", "chit_chat"),
        ("ok sounds good", "human", "chit_chat"),
        ("Thank you so much!", "human", "chit_chat"),
        ("Good morning everyone!", "human", "chit_chat"),
        ("Haha lol that's great", "human", "chit_chat"),
        ("Yes, yes, of course.", "human", "chit_chat"),
        ("What's the weather in Paris?", "human", "question"),
        ("Can you summarize this article?", "human", "question"),
        ("How does photosynthesis work", "human", "question"),
        ("What's my name?", "human", "question"),
        ("Do I live in Paris?", "human", "question"),
        ("I moved to Lyon last month. Any restaurant tips?", "human", "kept"),
        ("I live in Lyon, what's good to eat?", "human", "kept"),
        ("Could you answer in French from now on?", "human", "kept"),
        ("Tell me a joke about cats.", "human", "kept"),
        ("Thanks! By the way, I prefer JSON.", "human", "kept"),
    ],
)
def test_prefilter_gates(text: str, role: str, reason: str) -> None:
    decision = prefilter(text, role=role, now=0.0)
    assert decision == FilterDecision(reason == "kept", reason)  # type: ignore[arg-type]


def test_prefilter_word_gates_are_configurable() -> None:
    assert prefilter("I'm vegan.", role="human", now=0.0).keep  # "Use markdown." is two words
    assert prefilter("I'm vegan.", role="human", now=0.0, min_words=3).reason == "too_short"
    assert prefilter("I live in Lyon", role="human", now=0.0, max_words=3).reason == "too_long"
    assert prefilter("👍", role="human", now=0.0, min_words=0).reason == "chit_chat"


def test_most_chit_chat_stops_at_the_prefilter() -> None:
    turns = ["hi", "hello!", "hey there", "thanks", "thank you!", "thanks a lot!", "ok",
             "okay cool", "yes", "no", "sure thing", "got it, thanks", "sounds good to me",
             "how are you?", "good morning!", "lol", "haha nice", "bye, see you later",
             "you're welcome", "perfect, thank you so much", "great job!", "👍", "🙂🙂",
             "what's up?", "I see", "makes sense", "never mind", "have a nice day!"]
    stopped = [t for t in turns if not prefilter(t, role="human", now=0.0).keep]
    assert len(stopped) == len(turns)


def test_duplicate_window_uses_the_injected_clock() -> None:
    text = "I work at Acme as a nurse."
    recent = [("i work at ACME as a nurse", 1_000.0)]
    assert prefilter(text, role="human", recent=recent, now=1_030.0).reason == "duplicate"
    assert prefilter(text, role="human", recent=recent, now=1_060.0).reason == "duplicate"
    assert prefilter(text, role="human", recent=recent, now=1_060.5).reason == "kept"
    assert prefilter(text, role="human", recent=recent, now=1_010.0,
                     duplicate_window_s=5.0).reason == "kept"


def test_near_duplicates_by_token_jaccard() -> None:
    base = "I live in Lyon with my wife and two kids and a dog named Rex"
    near = base + " too"  # 14 of 15 tokens shared: Jaccard 0.93
    far = "I live in Paris with my husband and three cats"
    assert prefilter(near, role="human", recent=[(base, 0.0)], now=10.0).reason == "duplicate"
    assert prefilter(far, role="human", recent=[(base, 0.0)], now=10.0).reason == "kept"
    assert prefilter(base, role="human", recent=[(far, 0.0), (base, 5.0)], now=10.0).reason == (
        "duplicate")


# ----------------------------------------------------------------------------- schema

def test_candidate_schema_rules() -> None:
    ok: dict[str, Any] = {
        "kind": F, "subject": "user", "predicate": "home_city", "value": "Lyon",
        "content": "The user lives in Lyon.", "confidence": 0.9, "grounding": "I live in Lyon",
    }
    assert Candidate.model_validate(ok).correction is False
    bad = [
        {**ok, "kind": "policy"},
        {**ok, "predicate": None},
        {**ok, "predicate": "Home City"},
        {**ok, "kind": P, "key": None},
        {**ok, "confidence": math.nan},
        {**ok, "confidence": 1.5},
        {**ok, "confidence": -0.1},
        {**ok, "value": math.inf},
        {**ok, "grounding": ""},
        {**ok, "extra": 1},
    ]
    for data in bad:
        with pytest.raises(ValueError):
            Candidate.model_validate(data)


def test_schema_describes_every_field_for_a_model() -> None:
    schema = ExtractionResult.model_json_schema()
    fields = schema["$defs"]["Candidate"]["properties"]
    assert set(fields) == {"kind", "key", "subject", "predicate", "content", "value",
                           "confidence", "grounding", "correction", "replaces", "stateful",
                           "scope"}
    assert all(field.get("description") for field in fields.values())
    assert ">>>" not in schema["description"] + schema["$defs"]["Candidate"]["description"]
    for name in ("key", "subject", "predicate", "content", "grounding", "confidence",
                 "correction"):
        assert f"`{name}`" in EXTRACTION_PROMPT


def test_schema_converts_to_a_tool() -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    tool = convert_to_openai_tool(ExtractionResult)
    assert tool["function"]["name"] == "ExtractionResult"
    assert "candidates" in tool["function"]["parameters"]["properties"]


# ----------------------------------------------------------------------------- model output

TEXT = "Hi!  I live in\nLyon, and I work at Acme."
GOOD: dict[str, Any] = {
    "kind": F, "subject": "user", "predicate": "home_city", "value": "Lyon",
    "content": "The user lives in Lyon.", "confidence": 0.9, "grounding": "I live in Lyon",
}


def test_model_output_keeps_grounded_items_and_normalizes_the_span() -> None:
    out = candidates_from_model_output({"candidates": [GOOD]}, TEXT)
    assert out.dropped == 0 and out.reasons == []
    [c] = out.candidates
    assert c.grounding == "I live in\nLyon" and c.grounding in TEXT
    again = candidates_from_model_output(ExtractionResult(candidates=[c]), TEXT)
    assert again.candidates == [c]


def test_model_output_drops_ungrounded_and_malformed_items() -> None:
    items = [
        GOOD,
        {**GOOD, "grounding": "I live in Paris"},  # ungrounded
        {**GOOD, "grounding": "   "},  # empty once stripped
        {**GOOD, "confidence": float("nan")},
        {**GOOD, "confidence": 1.2},  # not clamped: dropped
        {**GOOD, "kind": "policy"},
        {**GOOD, "kind": P},  # a preference without a key
        {**GOOD, "value": float("nan")},
        {"kind": F},
        "I live in Lyon",
        None,
        42,
        {**GOOD, "predicate": "employer", "value": "Acme", "grounding": "i work at acme"},
    ]
    out = candidates_from_model_output({"candidates": items}, TEXT)
    assert [c.predicate for c in out.candidates] == ["home_city", "employer"]
    assert out.dropped == len(items) - 2 == len(out.reasons)
    assert out.reasons[:2] == ["item 1: ungrounded", "item 2: ungrounded"]
    assert out.reasons[2] == "item 3: invalid"


@pytest.mark.parametrize("result", [None, {}, {"candidates": "oops"}, {"parsed": None},
                                    {"parsed": {"candidates": 3}}, [GOOD]])
def test_model_output_never_raises_on_malformed_results(result: object) -> None:
    out = candidates_from_model_output(result, TEXT)  # type: ignore[arg-type]
    assert isinstance(out, ValidatedCandidates) and out.candidates == []


def test_model_output_include_raw_form() -> None:
    raw = {"raw": object(), "parsed": {"candidates": [GOOD]}, "parsing_error": None}
    assert len(candidates_from_model_output(raw, TEXT).candidates) == 1


# ----------------------------------------------------------------------------- properties

FRAGMENTS = [c[0] for c in CASES] + [c[0] for c in NATURAL] + [
    "", "?", "!", ",", " and ", " not ", "my ", "I'm a ", "actually, ", "\n", "é", "\ud800",
    "\x00", "{v}", "  "]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300),
                 st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join),
                 st.lists(st.sampled_from(FRAGMENTS), max_size=8).map(" ".join)))
def test_rule_extractor_never_raises_and_stays_grounded(text: str) -> None:
    for c in extract_rules(text):
        assert c.grounding in text
        assert c.confidence in (0.6, 0.9)
        assert c.kind in (P, F)
    decision = prefilter(text, role="human", now=0.0, recent=[(text, 0.0)])
    assert decision.reason in ("too_short", "too_long", "chit_chat", "question", "duplicate")


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200), st.text(max_size=40))
def test_model_output_groundings_are_substrings(text: str, grounding: str) -> None:
    out = candidates_from_model_output({"candidates": [{**GOOD, "grounding": grounding}]}, text)
    assert all(c.grounding in text for c in out.candidates)
    assert len(out.candidates) + out.dropped == 1
