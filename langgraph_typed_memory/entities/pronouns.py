"""Pronouns: "she", "he", "they", "it", "her team" to the entity of the thread they mean.

A pronoun resolves to the most recent entity of the thread it can refer to, where the rules
can tell, and stays unresolved otherwise:

- "she" / "he": the most recent person known to be referred to so (a kin word, a title or
  an earlier pronoun told), unless a person whose pronoun is unknown was mentioned since; or
  else the one person or pet of the last few entities whose pronoun is unknown, when no
  entity of unknown type could be meant instead ("Anna and Mark came over. She ...").
- "it": the most recent organisation, pet or project among the last few entities.
- "they": the most recent person known to go by "they", else the thread's latest entity when
  it is the one person or organisation among the last three whose pronoun is not known.
- "her team", "his company": the team or organisation a relation ties that person to.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_typed_memory.entities.mentions import Mention
from langgraph_typed_memory.entities.resolve import Entity

__all__ = ["resolve_pronoun", "PRONOUN_WINDOW"]

PRONOUN_WINDOW = 5
"""How many of the thread's latest entities a pronoun looks back over when no entity is known
to be referred to by it."""
_GROUP_RELATIONS = ("leads", "member_of", "works_at", "founded", "owns")


def _person(entity: Entity) -> bool:
    return entity.type in (None, "person") and entity.pronoun != "it"


def resolve_pronoun(mention: Mention, recent: Sequence[Entity],
                    links: Sequence[tuple[str, str, str]] = ()) -> Entity | None:
    """The entity a pronoun refers to, among the thread's entities newest first, or None.

    `links` are known relations as (subject id, relation, object id), for "her team".

    Example:
        >>> lena = Entity("e1", "Lena", "person", pronoun="she")
        >>> acme = Entity("e2", "Acme", "organisation")
        >>> resolve_pronoun(Mention("she", 0, 3, pronoun="she", is_pronoun=True),
        ...                 [acme, lena]).name
        'Lena'
        >>> resolve_pronoun(Mention("it", 0, 2, pronoun="it", is_pronoun=True),
        ...                 [lena, acme]).name
        'Acme'
        >>> resolve_pronoun(Mention("he", 0, 2, pronoun="he", is_pronoun=True), [acme, lena])
    """
    form = mention.group_of or mention.pronoun
    if form is None:
        return None
    target = _refers(form, recent)
    if mention.group_of is None or target is None:
        return target
    by_id = {e.id: e for e in recent}
    for subject, relation, obj in reversed(links):
        if subject == target.id and relation in _GROUP_RELATIONS and obj in by_id:
            group = by_id[obj]
            if group.type in (None, "organisation", "project"):
                return group
    return None


def _refers(form: str, recent: Sequence[Entity]) -> Entity | None:
    window = list(recent[:PRONOUN_WINDOW])
    if form in ("she", "he"):
        for i, entity in enumerate(recent):
            if entity.pronoun == form:
                unknown_since = [e for e in recent[:i] if _person(e) and e.pronoun is None
                                 and e.type == "person"]
                return None if unknown_since else entity
        unknown = [e for e in window if e.type in ("person", "pet", None) and e.pronoun is None]
        return unknown[0] if len(unknown) == 1 and unknown[0].type is not None else None
    if form == "it":
        return next((e for e in window if e.type in ("organisation", "pet", "project")
                     and e.pronoun in (None, "it")), None)
    if form == "they":
        explicit = next((e for e in recent if e.pronoun == "they"), None)
        if explicit is not None:
            return explicit
        candidates = [e for e in recent[:3] if e.type in ("person", "organisation", None)
                      and e.pronoun in (None, "they")]
        if len(candidates) == 1 and candidates[0] is recent[0]:
            return candidates[0]  # the one person or organisation just named
    return None
