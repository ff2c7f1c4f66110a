"""The entity graph at question time: which known entities a question names, the entities
one relation away from them, and the records about them fused with a ranked search.

Pure functions over a scope's entity records (its directory) and search results: the
retrieve node reads the directory and runs the searches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph_typed_memory.entities.mentions import find_mentions
from langgraph_typed_memory.entities.records import SPEAKER, entity_names
from langgraph_typed_memory.entities.resolve import Entity, resolve_mention
from langgraph_typed_memory.entities.turns import KnownEntities

__all__ = ["EntityFocus", "names_in", "question_entities", "related", "focus",
           "is_about", "fuse_about", "MAX_RELATED", "RRF_K", "ABOUT_WEIGHT"]

MAX_RELATED = 12
"""The most entities one relation away a question's entities are expanded to."""
MAX_ADDED_NAMES = 8
"""The most names the search for records about the entities adds to the question."""
RRF_K = 60
"""Reciprocal rank fusion constant of the question's ranking and the entity ranking: the
store's own default (`RetrievalConfig.rrf_k`)."""
ABOUT_WEIGHT = 0.3
"""What the ranking of the records about the entities counts in the fusion, against 1 for the
question's own, when it ranks the question's own matches (the records about them among its
results, or further down the same search): a record about them then rises above those of
the question's ranking up to about 20 places higher, and the question's best matches hold
their place. The entities a question names are often the people talking, whom half the
records are about; at equal weight the fusion kept little else (docs/benchmarks.md). A
search for names the question did not use (an alias, a full name, a related entity's name)
finds records by other words: the retrieve node fuses its ranking at `weight=1.0`."""


def names_in(question: str) -> bool:
    """Whether a question holds a name at all (a capitalised word or a known form): the
    cheap test before any entity is read.

    Example:
        >>> names_in("What did Melanie paint?"), names_in("what did she paint?")
        (True, False)
    """
    return any(not m.is_pronoun for m in find_mentions(question))


def question_entities(question: str, known: KnownEntities) -> list[Entity]:
    """The known entities a question names, in order: resolved by the write path's cascade
    (exact, alias, trigram, variant, spelling), never a new entity. Pronouns name nothing
    here (a question has no thread to resolve them against).

    Example:
        >>> known = KnownEntities((Entity("e1", "Volkswagen", "organisation", ("VW",)),
        ...                        Entity("e2", "Lena", "person")))
        >>> [e.name for e in question_entities("Is VW hiring? Ask lena.", known)]
        ['Volkswagen', 'Lena']
        >>> question_entities("Is Toyota hiring?", known)
        []
    """
    if not known.entities:
        return []
    names = [n for e in known.entities for n in (e.name, *e.aliases)]
    out: dict[str, Entity] = {}
    for mention in find_mentions(question, known_names=names):
        if mention.is_pronoun:
            continue
        found = resolve_mention(mention, known.entities, scope="")
        if found.merged and found.entity is not None:
            out.setdefault(found.entity.id, known.get(found.entity.id) or found.entity)
    return list(out.values())


def related(ids: Sequence[str], links: Iterable[tuple[str, str, str]],
            limit: int = MAX_RELATED) -> list[str]:
    """The entities one relation away from `ids`, either way round, first linked first;
    never the chat's speaker ("user": every record is about them).

    Example:
        >>> related(["sarah"], [("sarah", "leads", "team"), ("tom", "reports_to", "sarah"),
        ...                     ("sarah", "sister_of", "user"), ("x", "leads", "y")])
        ['team', 'tom']
    """
    named, out = set(ids), []
    for subject, _, other in links:
        for end, far in ((subject, other), (other, subject)):
            if end in named and far not in named and far != SPEAKER and far not in out:
                out.append(far)
    return out[:limit]


@dataclass(frozen=True, slots=True)
class EntityFocus:
    """What a question is about in the entity graph.

    Example:
        >>> EntityFocus((), (), "hi").targets
        frozenset()
    """

    named: tuple[Entity, ...]
    """The known entities the question names."""
    related: tuple[Entity, ...]
    """The entities one relation away from them."""
    query: str
    """The search for records about them: the question, with the names it did not use
    (aliases, full names, the related entities' names)."""

    @property
    def targets(self) -> frozenset[str]:
        """The ids a record about the focus carries."""
        return frozenset(e.id for e in (*self.named, *self.related))

    def trace(self) -> dict[str, Any]:
        """What the trace records: the names, and the search when it differs."""
        return {"named": [e.name for e in self.named],
                "related": [e.name for e in self.related], "query": self.query}


def _said(name: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.I) is not None


def focus(question: str, known: KnownEntities) -> EntityFocus:
    """The entities a question names among a scope's entities (its directory: `directory`
    of its entity records), those one relation away, and the search for records about them.

    Example:
        >>> from langgraph_typed_memory.entities.records import directory
        >>> known = directory([("vw", {"name": "Volkswagen", "aliases": ["VW"]}),
        ...                    ("sarah", {"name": "Sarah", "links": [["leads", "team"]]}),
        ...                    ("team", {"name": "platform team"})])
        >>> found = focus("Is VW hiring?", known)
        >>> [e.name for e in found.named], found.query
        (['Volkswagen'], 'Is VW hiring? Volkswagen')
        >>> found = focus("What does Sarah work on?", known)
        >>> [e.name for e in found.related], found.query
        (['platform team'], 'What does Sarah work on? platform team')
    """
    named = question_entities(question, known)
    near = [e for i in related([e.id for e in named], known.links)
            if (e := known.get(i)) is not None]
    added: list[str] = []
    for entity in (*named, *near):
        added += [n for n in entity_names(entity)
                  if not _said(n, question) and not any(_said(n, a) for a in added)]
    query = " ".join([question, *added[:MAX_ADDED_NAMES]])
    return EntityFocus(tuple(named), tuple(near), query)


def is_about(item: Any, targets: frozenset[str]) -> bool:
    """Whether a search result (an `Item`) carries one of the `targets` in
    `metadata.entities`.

    Example:
        >>> from types import SimpleNamespace
        >>> is_about(SimpleNamespace(value={"metadata": {"entities": ["e1"]}}), frozenset({"e1"}))
        True
    """
    value = getattr(item, "value", None) or {}
    held = (value.get("metadata") or {}).get("entities") if isinstance(value, Mapping) else None
    return isinstance(held, list) and not targets.isdisjoint(held)


def fuse_about(ranked: Sequence[Any], pool: Sequence[Any], targets: frozenset[str],
               limit: int, k: int = RRF_K, weight: float = ABOUT_WEIGHT) -> list[Any]:
    """The question's ranking fused with the entity ranking: the records about the
    `targets` in `pool` (a deeper search for records about them), in its order, then those
    of `ranked` it lacks. Weighted reciprocal rank fusion (`1 / (k + rank)` from the
    question's ranking, `weight / (k + rank)` from the entity ranking), ties to the
    question's order; the first `limit`.

    Example:
        >>> from types import SimpleNamespace
        >>> def item(key, *ids):
        ...     return SimpleNamespace(namespace=("t", "episode"), key=key,
        ...                            value={"metadata": {"entities": list(ids)}})
        >>> ranked = [item("a"), item("b", "e1"), item("c"), item("d")]
        >>> pool = [*ranked, item("x", "e1"), item("y")]
        >>> [i.key for i in fuse_about(ranked, pool, frozenset({"e1"}), 4)]
        ['b', 'a', 'c', 'd']
        >>> [i.key for i in fuse_about(ranked, pool, frozenset({"e1"}), 4, weight=1.0)]
        ['b', 'a', 'x', 'c']
    """
    def address(item: Any) -> tuple[Any, ...]:
        return (*item.namespace, item.key)

    score: dict[tuple[Any, ...], float] = {}
    first: dict[tuple[Any, ...], tuple[int, int, Any]] = {}
    for rank, item in enumerate(ranked):
        score[address(item)] = 1 / (k + rank)
        first[address(item)] = (0, rank, item)
    about = [i for i in pool if is_about(i, targets)]
    seen = {address(i) for i in about}
    about += [i for i in ranked if address(i) not in seen and is_about(i, targets)]
    for rank, item in enumerate(about):
        score[address(item)] = score.get(address(item), 0.0) + weight / (k + rank)
        first.setdefault(address(item), (1, rank, item))
    order = sorted(score, key=lambda a: (-score[a], first[a][:2]))
    return [first[a][2] for a in order[:limit]]
