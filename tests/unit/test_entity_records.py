"""Entities as memory, without a database: the records a turn writes, the ids its records
carry, and the directory a scope's records make."""

from __future__ import annotations

from typing import Any

from langgraph_typed_memory.entities import Entity, KnownEntities, entity_id
from langgraph_typed_memory.entities.mentions import EntityType
from langgraph_typed_memory.entities.records import (
    EntityRead,
    directory,
    entity_from_value,
    entity_value,
    read_entities,
    stamp,
)
from langgraph_typed_memory.schemas import EntityMemory

SCOPE = "tenant:acme/user:u1"


def _turns(*texts: str, speaker: str = "user", scope: str = SCOPE) -> list[EntityRead]:
    """Each turn read against the directory the previous ones left, as the store would hold
    it: only what was proposed is kept."""
    records: dict[str, dict[str, Any]] = {}
    recent: list[str] = []
    out = []
    for text in texts:
        read = read_entities(text, directory(records.items(), recent), scope=scope,
                             speaker=speaker)
        for proposal in read.proposals:
            records[proposal["key"]] = proposal["value"]
        recent = list(read.known.recent)
        out.append(read)
    return out


def _names(read: EntityRead, ids: Any) -> list[str]:
    return [e.name for i in ids if (e := read.known.get(i)) is not None]


def test_a_record_value_round_trips_and_matches_the_schema() -> None:
    entity = Entity("e1", "Lena", "person", ("Lenny",), (("sister", "user"),), ("accounting",),
                    "she")
    value = entity_value(entity, [("lives_in", "e2")])
    assert EntityMemory.model_validate(value).links == [("lives_in", "e2")]
    assert entity_from_value("e1", value) == (entity, (("lives_in", "e2"),))


def test_the_schema_knows_every_entity_type() -> None:
    from typing import get_args

    literal, _ = get_args(EntityMemory.model_fields["type"].annotation)  # Literal | None
    assert set(get_args(literal)) == set(get_args(EntityType))


def test_a_directory_keeps_links_and_only_known_recent_ids() -> None:
    known = directory([("a", {"name": "Sarah", "links": [["leads", "b"]]}),
                       ("b", {"name": "platform team"})], recent=["b", "missing", "a"])
    assert known.recent == ("b", "a")
    assert known.links == (("a", "leads", "b"),)


def test_new_entities_are_proposed_once_and_unchanged_ones_never() -> None:
    first, again = _turns("My sister Lena lives in Vienna.", "Lena lives in Vienna.")
    assert _names(first, [p["key"] for p in first.proposals]) == ["Lena", "Vienna"]
    assert first.proposals[0]["value"]["roles"] == [["sister", "user"]]
    assert again.proposals == ()  # nothing new of either
    assert _names(again, again.ids) == ["Lena", "Vienna"]


def test_a_new_alias_updates_the_record() -> None:
    _, later, vw = _turns("I work at Volkswagen.", "Volkswagen, VW for short, is hiring.",
                          "VW is hiring again.")
    [update] = later.proposals
    assert (update["value"]["name"], update["value"]["aliases"]) == ("Volkswagen", ["VW"])
    assert vw.proposals == () and _names(vw, vw.ids) == ["Volkswagen"]  # the alias resolves


def test_a_relation_of_one_object_at_a_time_replaces_the_old_link() -> None:
    first, moved = _turns("My sister Lena lives in Vienna.", "Lena moved to Graz.")
    lena = first.proposals[0]["key"]
    [update] = [p for p in moved.proposals if p["key"] == lena]
    links = update["value"]["links"]
    assert [(r, moved.known.get(o).name if o != "user" else o) for r, o in links] == [
        ("sister_of", "user"), ("lives_in", "Graz")]


def test_relations_that_hold_many_objects_accumulate() -> None:
    _, second = _turns("Ana founded Brightwave.", "Ana founded Lumen.")
    [ana] = [p for p in second.proposals if p["value"]["name"] == "Ana"]
    assert [second.known.get(o).name for _, o in ana["value"]["links"]] == [
        "Brightwave", "Lumen"]


def test_a_named_speaker_leads_the_ids_and_is_the_i_of_relations() -> None:
    [read] = _turns("I work at Volkswagen and my dog Bailey loves the park.", speaker="Ana")
    assert _names(read, read.ids) == ["Ana", "Volkswagen", "Bailey"]
    ana = next(p for p in read.proposals if p["value"]["name"] == "Ana")
    assert ana["value"]["type"] == "person"
    assert [(r, read.known.get(o).name) for r, o in ana["value"]["links"]] == [
        ("works_at", "Volkswagen")]
    bailey = next(p for p in read.proposals if p["value"]["name"] == "Bailey")
    assert [(r, read.known.get(o).name) for r, o in bailey["value"]["links"]] == [
        ("dog_of", "Ana")]


def test_the_chat_speaker_is_no_entity() -> None:
    [read] = _turns("I work at Volkswagen.")
    assert read.speaker is None and _names(read, read.ids) == ["Volkswagen"]


def test_a_pronoun_of_the_next_turn_resolves_through_the_thread() -> None:
    _, she = _turns("My sister Lena lives in Vienna.", "She just moved to Graz.")
    assert _names(she, she.ids) == ["Lena", "Graz"]


def test_a_pronoun_never_means_the_speaker() -> None:
    _, she = _turns("Hi there, how are you.", "She said hi.", speaker="Melanie")
    assert _names(she, she.ids) == ["Melanie"]  # "she" is left unresolved


def test_ids_are_stable_and_never_shared_across_scopes() -> None:
    [a] = _turns("My sister Lena lives in Vienna.")
    [again] = _turns("My sister Lena lives in Vienna.")
    [b] = _turns("My sister Lena lives in Vienna.", scope="tenant:acme/user:u2")
    assert a.ids == again.ids
    assert not set(a.ids) & set(b.ids)
    assert a.ids[1] == entity_id(SCOPE, "Vienna")


def test_candidates_carry_the_ids_their_grounding_names() -> None:
    [read] = _turns("My sister Lena lives in Vienna. I work at Volkswagen (VW).")
    candidates = [
        {"kind": "fact", "subject": "Lena", "predicate": "home_city", "content": "x",
         "grounding": "My sister Lena lives in Vienna."},
        {"kind": "fact", "subject": "user", "predicate": "employer", "content": "x",
         "grounding": "I work at VW."},
        {"kind": "fact", "subject": "acme", "predicate": "cloud", "content": "x",
         "grounding": "Lena", "scope": "tenant"},
        {"kind": "preference", "key": "tone", "value": "terse", "content": "x",
         "grounding": "be terse", "metadata": {"source": "chat"}},
    ]
    stamped = stamp(candidates, read)
    assert _names(read, stamped[0]["metadata"]["entities"]) == ["Lena", "Vienna"]
    assert _names(read, stamped[1]["metadata"]["entities"]) == ["Volkswagen"]  # by its alias
    assert "metadata" not in stamped[2]  # tenant-wide: no ids of the speaker's scope
    assert stamped[3]["metadata"] == {"source": "chat"}  # names nothing
    assert candidates[0].get("metadata") is None  # the input is left alone


def test_what_a_named_speaker_says_of_themselves_carries_their_id() -> None:
    [read] = _turns("I prefer short answers.", speaker="Ana")
    [pref] = stamp([{"kind": "preference", "key": "length", "value": "short",
                     "content": "x", "grounding": "I prefer short answers."}], read,
                   speaker="Ana")
    assert _names(read, pref["metadata"]["entities"]) == ["Ana"]


def test_entities_never_touched_by_the_turn_are_not_proposed() -> None:
    known = KnownEntities((Entity("x", "Sarah", "person"),))
    read = read_entities("Volkswagen is hiring.", known, scope=SCOPE)
    assert _names(read, [p["key"] for p in read.proposals]) == ["Volkswagen"]
