"""The rules as data: each rule's examples write what it names, its non-examples write
nothing typed, every candidate carries the id of the rule that proposed it, and the docs
table lists every rule. Natural talk between people (encouragement, small talk, stories)
writes no standing instruction and no fact that is not so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from langgraph_typed_memory.entities.facts import relation_facts
from langgraph_typed_memory.extraction import extract_rules
from langgraph_typed_memory.extraction.lexicon import names_output, occupation, possession
from langgraph_typed_memory.extraction.rules import RULES, rule_table

DOCS = Path(__file__).resolve().parents[2] / "docs" / "extraction.md"
EXAMPLES = [(r.id, e) for r in RULES for e in r.examples]
NON_EXAMPLES = [(r.id, e) for r in RULES for e in r.non_examples]


def test_every_rule_has_an_id_and_examples() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"(?:preference|fact)\.[a-z_]+", i) for i in ids)
    assert all(r.examples for r in RULES)


@pytest.mark.parametrize(("rule", "text"), EXAMPLES, ids=[f"{r}:{t[:30]}" for r, t in EXAMPLES])
def test_a_rules_examples_are_written_by_it(rule: str, text: str) -> None:
    assert rule in [c.rule for c in extract_rules(text)]


@pytest.mark.parametrize(("rule", "text"), NON_EXAMPLES,
                         ids=[f"{r}:{t[:30]}" for r, t in NON_EXAMPLES])
def test_a_rules_non_examples_write_nothing(rule: str, text: str) -> None:
    assert extract_rules(text) == []


def test_the_docs_table_is_the_rules() -> None:
    """docs/extraction.md shows `rule_table()` as it is (print it to regenerate the table)."""
    assert rule_table() in DOCS.read_text()


# ----------------------------------------------------------------------------- instructions

@pytest.mark.parametrize("text", [
    "Stop adding emojis to your replies.", "Please never use the word synergy.",
    "Don't bother with greetings.", "Going forward, please cite your sources.",
    "I want replies to be under 100 words.", "From now on, don't use emojis.",
    "From now on could you always end your answers with a haiku?",
    "Always include code comments.", "No more bullet points, please.",
    "And always use the 24-hour clock.",
    "When you write code for me, always use type hints and keep functions small.",
])
def test_a_standing_instruction_addresses_the_assistants_answers(text: str) -> None:
    [c] = extract_rules(text)
    assert (c.kind, c.rule) == ("preference", "preference.instruction")
    assert c.key.startswith("instruction_")


@pytest.mark.parametrize("text", [
    # encouragement, small talk and advice between people: nothing the assistant answers
    "Don't give up", "Don't give up, buddy!", "Keep going and never give up!",
    "They brighten up our day and always make us smile.",
    "Flowers always remind me of that day.", "Hey Maria, great chatting with you again!",
    "Always good to hear!", "Nope, never been to something like that.",
    "Never been to an animal shelter before, but it must be great.",
    "Always on the lookout for healthy snacks, thanks for the tip!",
    "No prob! Always here to help.", "Don't give up on your dreams!",
    "Don't ever quit on what you love.", "Never say never.", "I'm gonna never quit.",
    "Nice one! You never shy away from a challenge and always try something new.",
    "Never saw this coming.", "Don't forget to take breaks and dance it out.",
    "Always been interested in different cultures and countries.",
    "Don't give up, your replies were great though.",
    "I want you to know how much I appreciate it.", "I prefer to spend my money on travel.",
    # one request for one answer
    "For this email, use a formal tone.",
])
def test_what_people_say_to_each_other_is_no_instruction(text: str) -> None:
    assert [c for c in extract_rules(text, speaker="Gina") if c.kind == "preference"] == []


@pytest.mark.parametrize(("text", "key", "value"), [
    ("I'd rather you reply in Portuguese.", "language", "Portuguese"),
    ("I need you to answer in French.", "language", "French"),
    ("I'd like you to always cite your sources.", "instruction_cite_your_sources",
     "cite your sources"),
    ("Also, I prefer pytest over unittest for any tests you write.", "prefers_pytest", "pytest"),
])
def test_a_request_to_the_assistant_said_about_it(text: str, key: str, value: str) -> None:
    assert [(c.key, c.value) for c in extract_rules(text)] == [(key, value)]


def test_what_names_the_assistants_output() -> None:
    assert names_output("never use emojis in your replies")
    assert not names_output("never give up on your dreams")


# ----------------------------------------------------------------------------- facts

@pytest.mark.parametrize("text", [
    # a job is a job noun, said now
    "I used to go horseback riding with my dad when I was a kid.",
    "I'm a rookie, so it's all new.", "He is a bundle of energy.",
    "They're my little buddies, always calm and peaceful.",
    "I'm a mix of excited and scared to get into fashion.",
    "The Godfather is a legendary thing.", "Barcelona is a must-visit city!",
    "Meditation is a wonderful way to relax.", "She's an amazing learner.",
    "I'm a much better cook because of it.", "I'm a blonde girl with really short hair.",
    "I'm a feminist, so I'm really interested in women's history.",
    # a value of the right type
    "My fam's been awesome.", "My son's ok and that was a reminder.",
    "My kids are so excited about summer break!", "My hard work is paying off!",
    "My team is like my second family.", "Our kids are our future.",
    "I live in the city.", "I just moved in a few weeks ago.", "I have a funny story.",
    "My favorite is the amazing banana split sundae - after a day of volunteering.",
    "Hi, my name is [user 1's name].", "I'm a [user1_job].",
    # not the speaker's own statement
    "Translate into Spanish: 'I am a teacher and I have three cats.'",
    "Can you proofread this for my cousin? 'Hello, my name is Marco and I work at Google.'",
    "If I moved to Canada, would I need a new driving licence?",
    "Say I lived in Toronto, how cold does it get?",
])
def test_natural_talk_writes_no_untrue_fact(text: str) -> None:
    ruled = extract_rules(text, speaker="Audrey")
    assert ruled + relation_facts(text, speaker="Audrey", already=ruled) == []


@pytest.mark.parametrize(("text", "predicate", "value"), [
    ("I'm a shooting guard for the team and our season opener is next week!", "occupation",
     "shooting guard"),
    ("Hi! I'm a waitress during the day to supplement my income.", "occupation", "waitress"),
    ("I got a job as a financial analyst.", "occupation", "financial analyst"),
    ("I work at the National Health Service (NHS) as a radiographer.", "occupation",
     "radiographer"),
    ("I have two dogs who live with me.", "has", "two dogs"),
    ("I work at a small logistics startup called Freightly.", "employer", "Freightly"),
    ("I'm allergic to most reptiles and animals with fur.", "allergy",
     "most reptiles and animals with fur"),
    ("My daughter is 8 and she wants to learn the piano.", "daughter", "8"),
    ("Hi! I'm Priya, I work as a nurse at a children's hospital in Leeds.", "employer",
     "a children's hospital"),
    ("My favorite watch is my Rolex Submariner.", "favorite_watch", "my Rolex Submariner"),
])
def test_a_fact_holds_a_clean_value(text: str, predicate: str, value: str) -> None:
    assert (predicate, value) in [(c.predicate, c.value) for c in extract_rules(text)]


def test_a_pet_is_nobodys_partner() -> None:
    text = "Me, my girlfriend, Toby and I went to the park. My dog Toby loved it."
    facts = [c for c in relation_facts(text, speaker="Andrew") + extract_rules(
        text, speaker="Andrew") if c.value == "Toby"]
    assert [(c.predicate, c.rule) for c in facts] == [("dog_name", "fact.person_role_name")]


@pytest.mark.parametrize(("phrase", "job"), [
    ("a software engineer at Google", "software engineer"), ("nurse", "nurse"),
    ("stay-at-home mom", "stay-at-home mom"), ("kid", None), ("rookie", None),
    ("bundle of", None), ("buddies", None), ("legendary thing", None), ("big fan", None),
])
def test_an_occupation_is_a_job_noun(phrase: str, job: str | None) -> None:
    assert occupation(phrase) == job


@pytest.mark.parametrize(("phrase", "held"), [
    ("a golden retriever named Bailey", "a golden retriever named Bailey"),
    ("a pup and a kitty", "a pup and a kitty"), ("a question", None),
    ("a picture from a vacation in Florida", None),
])
def test_what_one_has_is_family_pets_or_a_business(phrase: str, held: str | None) -> None:
    assert possession(phrase) == held


# ----------------------------------------------------------------------------- corrections

@pytest.mark.parametrize(("earlier", "turn"), [
    ("Having people who back you makes such a huge difference.",
     "I want to help make that happen."),
    ("Going hiking together would be fun.", "Sorry, I can't make it this weekend."),
    ("I'm doing my best to make sure these kids have a loving home.",
     "It's been tough to deal with personal challenges since."),
    ("My favorite food is papaya.", "My favorite movie is The Shawshank Redemption."),
    ("I moved to Berlin in May.", "Not bad, just hanging out."),
])
def test_an_ordinary_sentence_corrects_nothing(earlier: str, turn: str) -> None:
    found = extract_rules(turn, speaker="Sam", earlier=[earlier])
    assert not [c for c in found if c.replaces or c.correction]
    assert not any("(updated)" in c.content for c in found)


@pytest.mark.parametrize(("earlier", "turn", "old", "new"), [
    ("I live in Lyon.", "Actually I moved to Berlin, not Lyon.", "Lyon", "Berlin"),
    ("Give me code examples in TypeScript.",
     "For code examples I want Kotlin, it's what I write all day now.", "TypeScript",
     "Kotlin"),
])
def test_a_real_correction_names_what_it_replaces(earlier: str, turn: str, old: str,
                                                  new: str) -> None:
    [c] = [c for c in extract_rules(turn, earlier=[earlier]) if c.replaces]
    assert (c.replaces, c.value, c.correction) == (old, new, True)
    assert c.rule is not None


# ----------------------------------------------------------------------------- rule ids

@pytest.mark.parametrize(("text", "earlier", "rules"), [
    ("Please always answer in French. I'm a nurse.", [],
     ["preference.answer_in", "fact.occupation"]),
    ("From now on, cite your sources.", [], ["preference.instruction"]),
    ("We use Jenkins for CI.", [], ["fact.organisation_uses_for"]),
    ("The staging db listens on 5433.", [], ["fact.identifier"]),
    ("My brother Tom is a dentist in Cork.", [], ["fact.person_role_name",
                                                  "fact.person_about"]),
    ("Saoirse just qualified as a midwife.", ["My sister Saoirse is a paramedic."],
     ["fact.person_occupation"]),
    ("I've gone vegan.", ["I'm vegetarian."], ["fact.diet"]),
    ("Stop with the tables.", ["Put everything in tables."], ["correction.withdraws"]),
])
def test_every_candidate_names_its_rule(text: str, earlier: list[str], rules: list[str]
                                        ) -> None:
    assert [c.rule for c in extract_rules(text, earlier=earlier)] == rules


@pytest.mark.parametrize(("text", "rules"), [
    ("I report to Priya.", ["relation.reports_to"]),
    ("Lena's husband Tom is a chef.", ["relation.role_name", "relation.works_as"]),
    ("I work at Volkswagen (VW).", ["relation.also_called"]),
])
def test_relation_facts_name_their_rule(text: str, rules: list[str]) -> None:
    found = relation_facts(text, already=extract_rules(text))
    assert [c.rule for c in found] == rules
