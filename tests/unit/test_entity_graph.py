"""The entity graph at question time, without a database: what a question names, one hop
through relations, the search for records about them, and the fusion."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from langgraph_typed_memory.entities import Entity, KnownEntities
from langgraph_typed_memory.entities.graph import (
    MAX_RELATED,
    focus,
    fuse_about,
    is_about,
    names_in,
    question_entities,
    related,
)
from langgraph_typed_memory.entities.records import directory

RECORDS = [
    ("vw", {"name": "Volkswagen", "type": "organisation", "aliases": ["VW"]}),
    ("sarah", {"name": "Sarah Chen", "type": "person", "links": [["leads", "team"]]}),
    ("team", {"name": "platform team", "type": "organisation"}),
    ("tom", {"name": "Tom", "type": "person", "links": [["reports_to", "sarah"]]}),
    ("lena", {"name": "Lena", "type": "person", "roles": [["sister", "user"]],
              "links": [["sister_of", "user"]]}),
    ("acme", {"name": "Acme Corporation", "type": "organisation"}),
]
KNOWN = directory(RECORDS)


def item(key: str, *ids: str, ns: tuple[str, ...] = ("tenant:t", "episode")) -> Any:
    return SimpleNamespace(namespace=ns, key=key, value={"metadata": {"entities": list(ids)}})


def test_a_question_names_known_entities_by_any_form_the_cascade_knows() -> None:
    known = focus("x", KNOWN)
    assert known.named == ()
    for question, names in [
        ("Is VW hiring?", ["Volkswagen"]),                      # alias
        ("Is volkswagen hiring?", ["Volkswagen"]),              # known name, any case
        ("Is Volkswagon hiring?", ["Volkswagen"]),              # spelling
        ("What does Sarah do?", ["Sarah Chen"]),                # first name of a full name
        ("Did Acme Corp sign?", ["Acme Corporation"]),          # legal form aside
        ("Is Toyota hiring?", []),                              # unknown: never a new entity
        ("What did she say?", []),                              # a pronoun names no one here
    ]:
        assert [e.name for e in focus(question, KNOWN).named] == names, question


def test_one_hop_goes_both_ways_but_never_to_the_chat_speaker() -> None:
    found = focus("What does Sarah do?", KNOWN)
    assert [e.name for e in found.related] == ["platform team", "Tom"]
    assert found.targets == {"sarah", "team", "tom"}
    assert [e.name for e in focus("Where is Lena?", KNOWN).related] == []  # only "user"


def test_the_search_adds_the_names_the_question_did_not_use() -> None:
    assert focus("Is VW hiring?", KNOWN).query == "Is VW hiring? Volkswagen"
    assert focus("Is Volkswagen hiring?", KNOWN).query == "Is Volkswagen hiring? VW"
    assert focus("What does Sarah do?", KNOWN).query == (
        "What does Sarah do? Sarah Chen platform team Tom")
    assert focus("Did Lena call?", KNOWN).query == "Did Lena call?"  # nothing to add


def test_related_is_bounded() -> None:
    links = [("hub", "knows", f"e{i}") for i in range(50)]
    assert related(["hub"], links) == [f"e{i}" for i in range(MAX_RELATED)]


def test_question_entities_in_an_empty_scope() -> None:
    assert question_entities("Is VW hiring?", KnownEntities()) == []
    assert question_entities("Is VW hiring?", KnownEntities((Entity("x", "VW"),)))[0].id == "x"


def test_names_in_is_the_cheap_gate() -> None:
    assert names_in("What did Melanie paint?") and names_in("Is VW hiring?")
    assert not names_in("what did i say yesterday?") and not names_in("")


def test_is_about_reads_metadata_entities_only() -> None:
    targets = frozenset({"e1"})
    assert is_about(item("a", "e1", "e2"), targets)
    assert not is_about(item("a", "e2"), targets)
    assert not is_about(SimpleNamespace(value={"metadata": {"entities": "e1"}}), targets)
    assert not is_about(SimpleNamespace(value={}), targets)
    assert not is_about(SimpleNamespace(value=None), targets)


def test_fusion_lifts_records_about_the_entities_and_keeps_the_top() -> None:
    ranked = [item("a"), item("b"), item("c", "e1"), item("d")]
    pool = [*ranked, item("e"), item("f", "e1"), item("g", "e1")]
    fused = [i.key for i in fuse_about(ranked, pool, frozenset({"e1"}), 5)]
    assert fused[0] == "c"  # in both rankings
    assert fused[1] == "a"  # the question's best match stays near the top
    assert "f" in fused and "e" not in fused  # from the pool only what is about e1


def test_the_entity_ranking_counts_less_than_the_question_own() -> None:
    # the question's best match, then records about a speaker half the records are about
    ranked = [item("best"), *(item(f"s{i}", "e1") for i in range(30))]
    fused = [i.key for i in fuse_about(ranked, ranked, frozenset({"e1"}), 31)]
    assert 10 < fused.index("best") < 20  # passed only by those ranked close behind it
    at_par = [i.key for i in fuse_about(ranked, ranked, frozenset({"e1"}), 31, weight=1.0)]
    assert at_par.index("best") == 30  # at equal weight every record about e1 passes it


def test_fusion_without_records_about_the_entities_changes_nothing() -> None:
    ranked = [item(k) for k in "abcd"]
    assert fuse_about(ranked, [*ranked, item("x")], frozenset({"e1"}), 3) == ranked[:3]


def test_the_same_key_in_two_namespaces_is_two_records() -> None:
    ranked = [item("a", ns=("tenant:t", "user:u", "episode"))]
    pool = [item("a", "e1", ns=("tenant:t", "episode"))]
    assert len(fuse_about(ranked, pool, frozenset({"e1"}), 5)) == 2


@given(st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10),
       st.lists(st.sampled_from("abcdefghijklmnop"), unique=True, max_size=16),
       st.sets(st.sampled_from("abcdefghijklmnop")), st.integers(1, 12))
def test_fusion_returns_distinct_records_from_the_two_lists(
        ranked_keys: list[str], pool_keys: list[str], about: set[str], limit: int) -> None:
    def make(key: str) -> Any:
        return item(key, *(["e1"] if key in about else []))

    ranked, pool = [make(k) for k in ranked_keys], [make(k) for k in pool_keys]
    fused = [i.key for i in fuse_about(ranked, pool, frozenset({"e1"}), limit)]
    assert len(fused) == len(set(fused)) <= limit
    allowed = set(ranked_keys) | {k for k in pool_keys if k in about}
    assert set(fused) <= allowed
    assert len(fused) == min(limit, len(allowed))
