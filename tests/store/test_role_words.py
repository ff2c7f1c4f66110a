"""A query that names the user ranks on its other words.

Stored facts say "The user ..." and logged turns read "user: ...": a model's memory-tool query
("what does the user like to drink") names the user too, and must not match every record on
that word.
"""

from __future__ import annotations

from typing import Any

from langgraph_typed_memory.scoring import query_terms
from tests.conftest import StoreFactory, hash_index

QUERY = "what does the user like to drink"
FACTS = {
    "home_city": "The user lives in Lyon.",
    "employer": "The user works at Initech as a data engineer.",
    "sister": "The user's sister is called Ana.",
    "pet": "The user has a dog named Rex.",
    "allergy": "The user is allergic to peanuts.",
    "sport": "The user plays tennis on Sundays.",
    "car": "The user drives a Honda Civic.",
    "kids": "The user has two kids.",
    "morning_drink": "The user drinks green tea every morning.",
    "laptop": "The user uses a Mac at work.",
}
TURNS = [
    "I live in Lyon.", "I work at Initech as a data engineer.", "My sister is called Ana.",
    "I have a dog named Rex.", "I usually drink green tea in the morning.",
    "I'm learning Japanese.", "My birthday is in May.",
]


def _fill(store: Any) -> None:
    facts = ("tenant:acme", "user:alice", "fact")
    for key, text in FACTS.items():
        store.put(facts, key, {"subject": "user", "predicate": key, "content": text})
    episodes = ("tenant:acme", "user:alice", "episode")
    for i, text in enumerate(TURNS):
        store.put(episodes, f"turn-{i}", {"task_type": "turn", "title": "user (1 March 2026)",
                                          "summary": f"user: {text}"})


def _texts(store: Any, kind: str) -> list[str]:
    found = store.search(("tenant:acme", "user:alice", kind), query=QUERY, limit=20)
    return [r.value.get("content") or r.value["summary"] for r in found]


def test_the_role_word_is_not_a_query_term() -> None:
    assert query_terms(QUERY) == ["like", "drink"]
    assert query_terms("the user") == ["the", "user"]  # nothing else to go on: all count


def test_lexical_search_ranks_on_the_other_words(make_store: StoreFactory) -> None:
    store = make_store()
    _fill(store)
    assert _texts(store, "fact") == ["The user drinks green tea every morning."]
    assert _texts(store, "episode") == ["user: I usually drink green tea in the morning."]


def test_hybrid_search_ranks_the_drink_first(make_store: StoreFactory) -> None:
    store = make_store(hash_index())
    _fill(store)
    for kind, first in (("fact", "The user drinks green tea every morning."),
                        ("episode", "user: I usually drink green tea in the morning.")):
        found = store.search(("tenant:acme", "user:alice", kind), query=QUERY, limit=20)
        assert found[0].value.get("content", found[0].value.get("summary")) == first
        lexical = [r for r in found if r.memory.get("lexical_rank") is not None]
        assert len(lexical) == 1, [r.key for r in lexical]
