"""Entities without a database: mentions, aliases, relations, the resolution cascade,
pronouns, stable ids, and a turn read against what a thread knows."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_typed_memory.entities import (
    Entity,
    KnownEntities,
    Mention,
    compatible,
    entity_id,
    find_aliases,
    find_mentions,
    find_relations,
    name_key,
    read_turn,
    resolve_mention,
    resolve_pronoun,
    similarity,
    spelling_distance,
)
from langgraph_typed_memory.entities.facts import relation_facts
from langgraph_typed_memory.extraction import extract_rules
from langgraph_typed_memory.extraction.lexicon import ROLES

SCOPE = "tenant:acme/user:u1"


def _read(*turns: str, model: object = None) -> list[KnownEntities | object]:
    known, out = KnownEntities(), []
    for turn in turns:
        read = read_turn(turn, known, scope=SCOPE, model=model)  # type: ignore[arg-type]
        out.append(read)
        known = read.known
    return out


def _ids(read: object) -> dict[str, str | None]:
    return {r.mention.text: (r.entity.id if r.entity else None)
            for r in read.resolutions}  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ similarity


@given(st.text(max_size=20), st.text(max_size=20))
def test_similarity_is_symmetric_and_bounded(a: str, b: str) -> None:
    assert similarity(a, b) == similarity(b, a)
    assert 0.0 <= similarity(a, b) <= 1.0


def test_similarity_of_a_name_with_itself_in_any_case_and_spacing() -> None:
    assert similarity("Acme  Corp", "ACME corp") == 1.0
    assert similarity("", "Acme") == 0.0 == similarity("!!", "??")


def test_single_word_typos_score_below_the_trigram_threshold() -> None:
    """Why the cascade has a spelling stage: one slip costs a short name many trigrams."""
    assert similarity("Volkswagen", "Volkswagon") < 0.85
    assert spelling_distance("volkswagen", "volkswagon") == 1


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("kitten", "sitting", 3), ("abc", "acb", 1), ("", "abc", 3), ("same", "same", 0),
    ("abcdef", "abcdfe", 1), ("ab", "ba", 1),
])
def test_spelling_distance(a: str, b: str, expected: int) -> None:
    assert spelling_distance(a, b, limit=3) == expected


# -------------------------------------------------------------------------------- mentions


def test_mentions_carry_type_role_and_department() -> None:
    found = {m.text: m for m in find_mentions(
        "My brother Tom is a dentist in Cork. Sarah from accounting pinged me about Acme Inc.")}
    assert found["Tom"].type == "person" and found["Tom"].role == ROLES["brother"]
    assert found["Tom"].pronoun == "he" and found["Tom"].role_of == "user"
    assert found["Cork"].type == "place"
    assert found["Sarah"].affiliation == "accounting" and found["Sarah"].type == "person"
    assert found["Acme Inc"].type == "organisation"


def test_departments_in_capitals() -> None:
    found = {m.text: m for m in find_mentions("Michael from IT fixed it; Laura in HR agreed.")}
    assert found["Michael"].affiliation == "it" and found["Laura"].affiliation == "hr"


def test_a_capital_that_only_starts_a_sentence_is_no_name() -> None:
    assert [m.text for m in find_mentions("Hope you're well. Thanks for lunch.")] == []
    assert [m.text for m in find_mentions("Sarah leads the platform team.")] == [
        "Sarah", "platform team"]


@pytest.mark.parametrize(("text", "names"), [
    ("Thankfully, my son is fine now.", []),
    ("Congrats, Caroline! That's huge.", ["Caroline"]),
    ("Bye Caroline, take care!", ["Caroline"]),
    ("Woohoo Melanie, you did it!", ["Melanie"]),
    ("Nah, it was fine. Yep, we went.", []),
    ("Lately, I've been busy. Hopefully it calms down.", []),
    ("Painting helped me relax. Running has been great.", []),
    ("Last Fri we went hiking.", []),
    ("You've got this! Knowing I'm loved helps.", []),
    ("Sarah, my sister, called. Elizabeth, Liz for short, moved in.",
     ["Sarah", "Elizabeth", "Liz"]),
    ("Emily said hi. Kelly, who runs the shop, waved.", ["Emily", "Kelly"]),
    ("Sterling said he'd come. Kimberly is my sister. Shelly told me.",
     ["Sterling", "Kimberly", "Shelly"]),
    ("Sarah, Tom and I went hiking. Paris, France is lovely.", ["Sarah", "Tom", "Paris", "France"]),
    ("Sarah, can you help? Caroline, I'm so proud of you!", ["Sarah", "Caroline"]),
    ("I work at Indeed now. We watched Cheers and Cool Runnings with Ha Jin.",
     ["Indeed", "Cheers", "Cool Runnings", "Ha Jin"]),
    ("I met Thu yesterday.", ["Thu"]),
])
def test_chat_openers_are_no_names(text: str, names: list[str]) -> None:
    """Interjections, greetings, sentence adverbs and gerunds that open a chat sentence
    name nothing, also before a name ("Bye Caroline"); the same words elsewhere are names
    ("I work at Indeed"), and a name opening a sentence still is one when a verb, a list, an
    apposition or a question to "you" follows it, or, for one shaped like a gerund or an
    adverb, when a role or "said" tells so."""
    assert [m.text for m in find_mentions(text) if not m.is_pronoun] == names


@pytest.mark.parametrize(("text", "names"), [
    ("Pottery is a huge part of my life. Setbacks happen.", []),
    ("Dance is my passion. Yoga was great too.", []),
    ("Sarah is coming over. Priya has the keys.", ["Sarah", "Priya"]),
    ('I loved reading "Charlotte\'s Web" as a kid.', []),
    ("I play Call of Duty and listen to New Kids on the Block.", []),
    ("I'm learning Spanish; Indian food and Buddhism too.", []),
    ("I have a German Shepherd and two Golden Retrievers.", []),
    ("Give me times in Central Time.", []),
    ("Haven't seen you! It's INTENSE. I love DIYs and RPGs.", []),
    ("Have you read George R. R. Martin?", ["George", "Martin"]),
    ("Nice to meet you, User 2. What do you do?", ["User 2"]),
    ("Wishing you luck with the right team; our platform team ships.", ["platform team"]),
])
def test_words_that_take_capitals_are_no_names(text: str, names: list[str]) -> None:
    """Ordinary words that only open a sentence, titles and their words, languages, peoples,
    faiths, breeds, time zones, shouted words, contractions and initials name nothing; a
    name opening a sentence still does ("Sarah is", a word no dictionary lists lower-case)."""
    assert [m.text for m in find_mentions(text) if not m.is_pronoun] == names


@pytest.mark.parametrize(("text", "addressed"), [
    ("Hey Mel! Good to see you.", ["Mel"]),
    ("Thanks, Jon. I agree, Gina.", ["Jon", "Gina"]),
    ("Go Jon! Keep going.", ["Jon"]),
    ("Met my new manager, Daniel, today.", []),
    ("I visited Paris. My sister Lena came too.", []),
])
def test_the_one_spoken_to_is_addressed(text: str, addressed: list[str]) -> None:
    """A name after a greeting, or after the one comma of a sentence at its end, is the one
    spoken to: a person, and "you" in the turn."""
    found = [m for m in find_mentions(text) if not m.is_pronoun]
    assert [m.text for m in found if m.addressed] == addressed
    assert all(m.type == "person" for m in found if m.addressed and m.text != "Gina")


def test_no_pronoun_of_a_turn_refers_to_the_one_spoken_to() -> None:
    """ "Hey Caroline, my son ... He": Caroline is not the son, nor "he"; and "they" teaches
    no one a pronoun (it is mostly many)."""
    scope = "tenant:t/user:u"
    turn = read_turn("Hey Caroline, my son got into an accident. He is fine now.",
                     KnownEntities(), scope=scope)
    caroline = next(r for r in turn.resolutions if r.mention.text == "Caroline")
    assert caroline.entity is not None and caroline.entity.pronoun is None
    assert all(r.entity is None for r in turn.resolutions if r.mention.text == "He")
    later = read_turn("Tim came by. They brought cookies.", turn.known, scope=scope)
    tim = next(e for e in later.known.entities if e.name == "Tim")
    assert tim.pronoun is None


def test_known_names_are_found_in_lower_case() -> None:
    assert [m.text for m in find_mentions("talked to sarah chen today",
                                          known_names=["Sarah Chen"])] == ["sarah chen"]


def test_expletive_it_is_no_mention() -> None:
    assert [m.text for m in find_mentions("It's raining and it was late.")] == []
    assert [m.text for m in find_mentions("It just raised more money.")] == ["It"]


def test_her_team_is_a_possessed_group() -> None:
    (m,) = [m for m in find_mentions("Her team shipped it.") if m.group_of]
    assert m.text == "Her team" and m.group_of == "she"


# --------------------------------------------------------------------------------- aliases


@pytest.mark.parametrize(("text", "alias", "name"), [
    ("I work at Volkswagen (VW).", "VW", "Volkswagen"),
    ("VW (Volkswagen) is hiring.", "VW", "Volkswagen"),
    ("VW, short for Volkswagen, is hiring.", "VW", "Volkswagen"),
    ("JLR stands for Jaguar Land Rover.", "JLR", "Jaguar Land Rover"),
    ("Elizabeth, Liz for short, moved in.", "Liz", "Elizabeth"),
    ("Katherine, who goes by Kat, designs.", "Kat", "Katherine"),
    ("Robert, aka Bob, called.", "Bob", "Robert"),
    ("The European Central Bank (ECB) raised rates.", "ECB", "European Central Bank"),
])
def test_stated_aliases(text: str, alias: str, name: str) -> None:
    assert [(a.alias, a.name) for a in find_aliases(text)] == [(alias, name)]


def test_we_call_him_names_a_pronoun() -> None:
    (alias,) = find_aliases("We call him Bob.")
    assert (alias.alias, alias.name, alias.pronoun) == ("Bob", "him", "he")


def test_no_alias_without_a_statement() -> None:
    assert find_aliases("Volkswagen and VW are both mentioned (in passing).") == []


# ------------------------------------------------------------------------------- relations


def _triples(text: str) -> list[tuple[str, str, str]]:
    return [(r.subject, r.relation, r.object) for r in find_relations(text)]


def test_relation_frames() -> None:
    assert _triples("My sister Lena lives in Vienna.") == [
        ("Lena", "sister_of", "user"), ("Lena", "lives_in", "Vienna")]
    assert _triples("Sarah leads the platform team.") == [("Sarah", "leads", "platform team")]
    assert ("Tom", "works_in", "Cork") in _triples("My brother Tom is a dentist in Cork.")
    assert ("user", "reports_to", "Sarah") in _triples("I report to Sarah now.")
    assert ("Priya", "works_at", "Stripe") in _triples("Priya works at Stripe.")


def test_what_someone_does_follows_their_group() -> None:
    assert _triples("My colleague Tom from accounting lives in Linz.") == [
        ("Tom", "colleague_of", "user"), ("Tom", "member_of", "accounting"),
        ("Tom", "lives_in", "Linz")]
    assert ("Sarah", "works_at", "Bosch") in _triples("Sarah from accounting works at Bosch.")
    assert ("Zara", "lives_in", "Graz") in _triples("Zara from my book club lives in Graz.")


def test_a_job_is_a_value_not_an_entity() -> None:
    (job,) = [r for r in find_relations("My brother Tom is a dentist.")
              if r.relation == "works_as"]
    assert job.object == "dentist" and job.value and job.object_at == -1


# ------------------------------------------------------------------------------ resolution


def _entity(name: str, **kwargs: object) -> Entity:
    return Entity(entity_id(SCOPE, name), name, **kwargs)  # type: ignore[arg-type]


def test_cascade_stages_in_order() -> None:
    vw = _entity("Volkswagen", type="organisation", aliases=("VW",))
    acme = _entity("Acme Corporation Ltd", type="organisation")
    chen = _entity("Sarah Chen", type="person")
    known = [vw, acme, chen]

    def stage(text: str) -> str:
        return resolve_mention(Mention(text, 0, len(text)), known, scope=SCOPE).stage

    assert stage("  VOLKSWAGEN ") == "exact"
    assert stage("VW") == "alias"
    assert stage("Acme Corporation Ltd.") == "exact"
    assert stage("Acme Corporations Ltd") == "trigram"
    assert stage("Acme Corporation") == "variant"
    assert stage("Sarah") == "variant"
    assert stage("Volkswagon") == "spelling"
    assert stage("Toyota") == "new"


def test_two_sarahs_do_not_merge() -> None:
    sister = resolve_mention(Mention("Sarah", 0, 5, "person", "she", role=ROLES["sister"],
                                     role_of="user"), [], scope=SCOPE).entity
    assert sister is not None
    colleague = resolve_mention(Mention("Sarah", 0, 5, "person", affiliation="accounting"),
                                [sister], scope=SCOPE)
    assert colleague.stage == "new" and colleague.entity is not None
    assert colleague.entity.id != sister.id
    again = resolve_mention(Mention("Sarah", 0, 5, affiliation="accounting"),
                            [sister, colleague.entity], scope=SCOPE)
    assert again.entity is not None and again.entity.id == colleague.entity.id
    mine = resolve_mention(Mention("Sarah", 0, 5, role=ROLES["sister"], role_of="user"),
                           [sister, colleague.entity], scope=SCOPE)
    assert mine.entity is not None and mine.entity.id == sister.id


def test_a_company_and_a_person_of_one_name_do_not_merge() -> None:
    ford = _entity("Ford", type="organisation")
    assert not compatible(Mention("Ford", 0, 4, "person"), ford)
    result = resolve_mention(Mention("Ford", 0, 4, "person"), [ford], scope=SCOPE)
    assert result.stage == "new" and result.entity is not None and result.entity.id != ford.id


def test_names_that_look_alike_stay_apart() -> None:
    for known, mention in [("Maria", "Marie"), ("Christina", "Christine"), ("Daniel",
                           "Danielle"), ("Sam", "Samantha"), ("Meta", "Metabase"),
                           ("Austria", "Australia")]:
        result = resolve_mention(Mention(mention, 0, len(mention)), [_entity(known)],
                                 scope=SCOPE)
        assert result.stage == "new", (known, mention)


def test_short_alias_needs_a_statement() -> None:
    vw = _entity("Volkswagen", type="organisation")
    assert resolve_mention(Mention("VW", 0, 2), [vw], scope=SCOPE).stage == "new"
    ibm = _entity("International Business Machines", type="organisation")
    assert resolve_mention(Mention("IBM", 0, 3), [ibm], scope=SCOPE).stage == "variant"


def test_ids_are_stable_and_scoped() -> None:
    assert entity_id(SCOPE, "Sarah") == entity_id(SCOPE, "SARAH ")
    assert entity_id(SCOPE, "Sarah") != entity_id("tenant:acme/user:u2", "Sarah")
    first = _read("My sister Sarah is visiting.", "Sarah from accounting called.")
    again = _read("My sister Sarah is visiting.", "Sarah from accounting called.")
    assert [_ids(r) for r in first] == [_ids(r) for r in again]


def test_the_model_fallback_picks_among_candidates() -> None:
    acme = _entity("Acme", type="organisation")
    calls: list[tuple[str, list[str]]] = []

    def model(mention: Mention, candidates: Sequence[Entity]) -> str | None:
        calls.append((mention.text, [c.name for c in candidates]))
        return acme.id

    result = resolve_mention(Mention("Acme Widgets", 0, 12), [acme], scope=SCOPE, model=model)
    assert result.stage == "model" and result.entity is not None
    assert result.entity.id == acme.id and calls == [("Acme Widgets", ["Acme"])]


def test_a_failing_or_wrong_model_makes_a_new_entity(caplog: pytest.LogCaptureFixture
                                                      ) -> None:
    acme = _entity("Acme", type="organisation")

    def broken(mention: Mention, candidates: Sequence[Entity]) -> str | None:
        raise TimeoutError("model down")

    with caplog.at_level(logging.WARNING):
        assert resolve_mention(Mention("Acme Widgets", 0, 12), [acme], scope=SCOPE,
                               model=broken).stage == "new"
        assert resolve_mention(Mention("Acme Widgets", 0, 12), [acme], scope=SCOPE,
                               model=lambda m, c: "not-a-candidate").stage == "new"
    assert "model fallback failed" in caplog.text and "not a candidate" in caplog.text


def test_no_model_by_default() -> None:
    result = resolve_mention(Mention("Acme Widgets", 0, 12), [_entity("Acme")], scope=SCOPE)
    assert result.stage == "new" and result.candidates == ()


# -------------------------------------------------------------------------------- pronouns


def _pronoun(form: str) -> Mention:
    return Mention(form, 0, len(form), pronoun=form, is_pronoun=True)  # type: ignore[arg-type]


def test_pronouns_resolve_where_the_rules_can_tell() -> None:
    lena = _entity("Lena", type="person", pronoun="she")
    tom = _entity("Tom", type="person", pronoun="he")
    acme = _entity("Acme", type="organisation")
    recent = [acme, tom, lena]  # newest first
    assert resolve_pronoun(_pronoun("she"), recent) == lena
    assert resolve_pronoun(_pronoun("he"), recent) == tom
    assert resolve_pronoun(_pronoun("it"), recent) == acme


def test_pronouns_stay_unresolved_when_unclear() -> None:
    anna, mark = _entity("Anna", type="person"), _entity("Mark", type="person")
    assert resolve_pronoun(_pronoun("she"), [mark, anna]) is None
    assert resolve_pronoun(_pronoun("he"), [_entity("Ines", type="person", pronoun="she")]
                           ) is None
    assert resolve_pronoun(_pronoun("it"), [anna]) is None


def test_her_team_follows_a_relation() -> None:
    (first, second) = _read("Sarah Chen runs the platform team.", "Her team shipped the API.")
    team = _ids(first)["platform team"]
    assert _ids(second)["Her team"] == team


# ---------------------------------------------------------------------------- turn reading


def test_a_thread_of_turns() -> None:
    reads = _read("I work at Volkswagen (VW). My sister Sarah lives in Graz.",
                  "VW, short for Volkswagen, is hiring. Sarah from accounting told me.",
                  "My sister Sarah says she might apply.")
    first, second, third = (_ids(r) for r in reads)
    assert second["VW"] == first["Volkswagen"] == second["Volkswagen"]
    assert second["Sarah"] != first["Sarah"]
    assert third["Sarah"] == first["Sarah"] == third["she"]


def test_we_call_him_learns_the_alias() -> None:
    first, second = _read("My brother Robert is visiting. We call him Bob.",
                          "Bob wants to watch the game.")
    assert _ids(second)["Bob"] == _ids(first)["Robert"]
    robert = first.known.get(_ids(first)["Robert"])  # type: ignore[attr-defined]
    assert robert.aliases == ("Bob",)


def test_relations_carry_entity_ids() -> None:
    (read,) = _read("My sister Lena lives in Vienna.")
    ids = _ids(read)
    assert [(r.subject_id, r.relation.relation, r.object_id) for r in read.relations] == [
        (ids["Lena"], "sister_of", "user"), (ids["Lena"], "lives_in", ids["Vienna"])]
    assert (ids["Lena"], "lives_in", ids["Vienna"]) in read.known.links


def test_name_key() -> None:
    assert name_key("The  Hague") == "hague"
    assert name_key("Marco's") == "marco"
    assert name_key("Mr. Alvarez") == "alvarez"


@pytest.mark.parametrize(("text", "expected"), [
    ("I report to Priya.", [("user", "manager", "Priya", True)]),  # as "my manager is"
    ("Sarah leads the platform team.", [("Sarah", "leads", "platform team", False)]),
    ("Tom is married to Ana.", [("Tom", "married_to", "Ana", True)]),
    ("Whoops, I'm actually reporting to Odalys Mbeki.", [("user", "manager", "Odalys Mbeki",
                                                          True)]),
    ("Ana founded Brightwave.", [("Ana", "founded", "Brightwave", False)]),
    ("Marco from accounting approved the budget.", [("Marco", "member_of", "accounting", True)]),
    ("I work at Volkswagen (VW).", [("Volkswagen", "also_called", "VW", False)]),
    ("Elizabeth goes by Liz.", [("Elizabeth", "also_called", "Liz", False)]),
    ("We call him Bob.", []),  # who "him" is: not from this sentence alone
    ("The meeting with Sarah went well.", []),
])
def test_relations_and_other_names_as_facts(text: str, expected: list[tuple]) -> None:

    found = relation_facts(text, already=extract_rules(text))
    assert [(c.subject, c.predicate, c.value, c.stateful) for c in found] == expected


def test_what_the_rules_already_say_is_not_proposed_twice() -> None:

    text = "My sister Lena lives in Vienna and I work at Acme."
    assert relation_facts(text, already=extract_rules(text)) == []
    hedged = relation_facts("I think Sarah reports to Dana now.")
    assert [c.confidence for c in hedged] == [0.6]  # below the gate's fact threshold


def test_the_cascade_skips_only_entities_no_stage_could_match(monkeypatch) -> None:
    """Resolution with the quick test that spares the cascade most entities resolves every
    mention as the cascade over all of them does: typos, swapped letters, acronyms, legal and
    geographic forms, first and last names, among names that share letters and words."""
    import random

    from langgraph_typed_memory.entities import resolve

    rng = random.Random(20261126)
    syllables = ["ka", "lo", "mi", "ra", "ten", "vo", "sa", "ber", "lin", "to", "ya", "ne"]

    def word() -> str:
        return "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))).title()

    def variant(name: str) -> str:
        words, pick = name.split(), rng.random()
        if pick < 0.2 and len(name) > 4:  # a slip of the keyboard
            at = rng.randrange(1, len(name) - 1)
            return name[:at] + name[at + 1] + name[at] + name[at + 2:]
        if pick < 0.35:  # initials, also dotted or led by a dot (".NET")
            letters = "".join(w[0] for w in words).upper() if len(words) > 1 else name.upper()
            return rng.choice([letters, ".".join(letters) + ".", "." + letters])
        if pick < 0.5:
            return f"{name} {rng.choice(['Ltd', 'Inc', 'GmbH'])}"
        if pick < 0.6:
            return f"Lake {name}"
        if pick < 0.8 and len(words) > 1:
            return rng.choice([words[0], words[-1]])
        return word() + (f" {word()}" if rng.random() < 0.5 else "")

    kinds = [None, "person", "organisation", "place", "project"]
    stages: set[str] = set()
    for _ in range(60):
        known = []
        for i in range(40):
            name = " ".join(word() for _ in range(rng.randint(1, 3)))
            aliases = (variant(name),) if rng.random() < 0.3 else ()
            known.append(Entity(f"e{i}", name, rng.choice(kinds), aliases))
        mentions = [variant(rng.choice(known).name) for _ in range(20)]
        fast = [resolve_mention(Mention(m, 0, len(m), rng.choice(kinds)), known, scope="s")
                for m in mentions]
        monkeypatch.setattr(resolve, "_may_match", lambda *_: True)
        slow = [resolve_mention(r.mention, known, scope="s") for r in fast]
        monkeypatch.undo()
        assert [(r.stage, r.entity and r.entity.id) for r in fast] == [
            (r.stage, r.entity and r.entity.id) for r in slow]
        stages.update(r.stage for r in fast)
    assert {"exact", "alias", "trigram", "variant", "spelling", "new"} <= stages


@pytest.mark.parametrize(("text", "fact"), [
    ("Lena's husband Tom is a chef.", ("Lena", "husband_name", "Tom", "Lena's husband is Tom.")),
    ("Tom's brother Sam lives in Oslo.", ("Tom", "brother_name", "Sam", "Tom's brother is Sam.")),
    ("Sam is my brother.", ("user", "brother_name", "Sam", "The user's brother is Sam.")),
])
def test_a_role_becomes_a_fact_of_whoever_holds_it(text: str, fact: tuple[str, ...]) -> None:
    found = relation_facts(text, already=extract_rules(text))
    assert fact in [(c.subject, c.predicate, c.value, c.content) for c in found]


@pytest.mark.parametrize("text", [
    "Tom and Lena have a daughter called Mia.",  # theirs, not the speaker's
    "My sister has a dog called Rex.",
    "The Corolla was my dad's.",  # a possession, not a role
])
def test_no_role_is_given_to_the_speaker_that_is_someone_elses(text: str) -> None:
    assert not [r for r in find_relations(text) if r.object == "user"]
    assert not [c for c in relation_facts(text, already=extract_rules(text))
                if c.subject == "user"]


def test_a_role_the_rules_named_is_not_proposed_twice() -> None:
    text = "My sister Lena lives in Vienna. I have a daughter called Mia."
    ruled = extract_rules(text)
    assert {c.value for c in ruled if (c.predicate or "").endswith("_name")} == {"Lena", "Mia"}
    assert not [c for c in relation_facts(text, already=ruled)
                if (c.predicate or "").endswith("_name")]
