"""A turn read for entities: its mentions resolved, the aliases and relations it states.

`read_turn` takes what the scope and the thread know (`KnownEntities`) and returns what the
turn adds: each mention's resolution, the relations between resolved entities, and the known
entities updated (new ones, aliases and roles learned, the thread's recency). Pure: the store
loads `KnownEntities` and persists the result.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from langgraph_typed_memory.entities.mentions import (
    EntityType,
    Mention,
    find_mentions,
    name_key,
)
from langgraph_typed_memory.entities.pronouns import resolve_pronoun
from langgraph_typed_memory.entities.relations import Alias, Relation, find_aliases, find_relations
from langgraph_typed_memory.entities.resolve import (
    Entity,
    ModelFallback,
    Resolution,
    resolve_mention,
)
from langgraph_typed_memory.extraction.candidates import Link, NamedThing
from langgraph_typed_memory.extraction.lexicon import role

__all__ = ["KnownEntities", "TurnEntities", "LinkedRelation", "read_turn", "RECENT_LIMIT",
           "named_subjects", "Told", "told"]

RECENT_LIMIT = 30
"""How many of the thread's latest entities are kept for pronouns."""

_PERSON_RELATIONS = ("leads", "reports_to", "works_at", "works_as", "works_in", "married_to",
                     "founded")
_SUBJECT_TYPES: dict[str, EntityType] = dict.fromkeys(_PERSON_RELATIONS, "person")
_OBJECT_TYPES: dict[str, EntityType] = {"works_at": "organisation", "founded": "organisation",
                                        "lives_in": "place", "located_in": "place",
                                        "works_in": "place"}


@dataclass(frozen=True, slots=True)
class KnownEntities:
    """The entities of a scope (oldest first), the thread's latest entity ids (newest first)
    and the relations known between entities as (subject id, relation, object id).

    Example:
        >>> KnownEntities().entities
        ()
    """

    entities: tuple[Entity, ...] = ()
    recent: tuple[str, ...] = ()
    links: tuple[tuple[str, str, str], ...] = ()

    def get(self, entity_id: str) -> Entity | None:
        """The entity of that id, if known.

        Example:
            >>> KnownEntities((Entity("e1", "Lena"),)).get("e1").name
            'Lena'
        """
        return next((e for e in self.entities if e.id == entity_id), None)


@dataclass(frozen=True, slots=True)
class LinkedRelation:
    """A relation with the ids of its subject and object ("user" for the speaker; None for a
    value or a pronoun left unresolved).

    Example:
        >>> turn = read_turn("I report to Sarah.", KnownEntities(), scope="tenant:t/user:u")
        >>> [(r.subject_id, r.relation.relation) for r in turn.relations]
        [('user', 'reports_to')]
    """

    relation: Relation
    subject_id: str | None
    object_id: str | None


@dataclass(frozen=True, slots=True)
class TurnEntities:
    """What a turn adds: each mention's resolution in order, the relations and aliases it
    states, and the known entities updated.

    Example:
        >>> turn = read_turn("Liz, short for Elizabeth, called.", KnownEntities(),
        ...                  scope="tenant:t/user:u")
        >>> [(e.name, e.aliases) for e in turn.known.entities]
        [('Elizabeth', ('Liz',))]
    """

    resolutions: tuple[Resolution, ...]
    relations: tuple[LinkedRelation, ...]
    aliases: tuple[Alias, ...]
    known: KnownEntities

    def entity_ids(self) -> list[str]:
        """The ids of the entities the turn mentions, first mention first (what records
        written from the turn carry).

        Example:
            >>> turn = read_turn("My sister Lena lives in Vienna.", KnownEntities(),
            ...                  scope="tenant:t/user:u")
            >>> [turn.known.get(i).name for i in turn.entity_ids()]
            ['Lena', 'Vienna']
        """
        return list(dict.fromkeys(r.entity.id for r in self.resolutions if r.entity))


class _Book:
    """The working copy of `KnownEntities` while a turn is read."""

    def __init__(self, known: KnownEntities) -> None:
        self.entities = list(known.entities)
        self.recent = list(known.recent)
        self.links = list(known.links)

    def put(self, entity: Entity, recent: bool = True, addressed: bool = False) -> None:
        """Keep `entity`; `recent`: as the thread's latest; `addressed`: the one spoken to,
        whom no pronoun of the thread refers to (kept, out of the recent ones)."""
        at = next((i for i, e in enumerate(self.entities) if e.id == entity.id), None)
        if not recent or addressed:
            if at is None:
                self.entities.append(entity)
            else:
                self.entities[at] = entity
            if addressed:
                self.recent = [r for r in self.recent if r != entity.id]
            return
        if at is not None:
            del self.entities[at]
        self.entities.append(entity)  # the latest last
        self.recent = [entity.id, *(r for r in self.recent if r != entity.id)][:RECENT_LIMIT]

    def get(self, entity_id: str) -> Entity | None:
        return next((e for e in self.entities if e.id == entity_id), None)

    def newest_first(self) -> list[Entity]:
        by_id = {e.id: e for e in self.entities}
        return [by_id[i] for i in self.recent if i in by_id]

    def frozen(self) -> KnownEntities:
        return KnownEntities(tuple(self.entities), tuple(self.recent), tuple(self.links))


@dataclass(frozen=True, slots=True)
class Told:
    """What a chat model said a turn names (its structured output, checked against the
    turn's words): read instead of the rules' mentions, aliases and relations."""

    mentions: tuple[Mention, ...] = ()
    aliases: tuple[Alias, ...] = ()
    relations: tuple[Relation, ...] = ()


def told(text: str, things: Sequence[NamedThing], links: Sequence[Link]) -> Told:
    """The mentions, aliases and relations of a model's named things and links, placed where
    the turn writes each name (the first time; a name the turn does not hold is left out).

    Example:
        >>> from langgraph_typed_memory.extraction.candidates import Link, NamedThing
        >>> t = told("My sister Lena works at Volkswagen (VW).",
        ...          [NamedThing(name="Lena", type="person", role="sister", pronoun="she"),
        ...           NamedThing(name="Volkswagen", type="organisation", aliases=["VW"])],
        ...          [Link(subject="Lena", relation="works_at", object="Volkswagen")])
        >>> [(m.text, m.start, m.type, m.role and m.role.name, m.role_of) for m in t.mentions]
        [('Lena', 10, 'person', 'sister', 'user'), ('Volkswagen', 24, 'organisation', None, None)]
        >>> [(a.alias, a.name) for a in t.aliases], [(r.subject, r.relation, r.object_at)
        ...                                          for r in t.relations]
        ([('VW', 'Volkswagen')], [('Lena', 'works_at', 24)])
    """
    mentions: dict[str, Mention] = {}
    for thing in things:
        found = re.search(rf"(?<!\w){re.escape(thing.name)}(?!\w)", text, re.I)
        if found is None or name_key(thing.name) in mentions:
            continue
        kin = role(thing.role.replace("_", " ")) if thing.role else None
        mentions[name_key(thing.name)] = Mention(
            found.group(), found.start(), found.end(), thing.type, thing.pronoun,
            role=kin, role_of="user" if kin is not None else None)
    aliases = tuple(Alias(a, t.name) for t in things for a in t.aliases
                    if name_key(t.name) in mentions)
    relations = []
    for link in links:
        ends = [(-1, "user") if e.lower() == "user" else (
            mentions[name_key(e)].start, mentions[name_key(e)].text)
            if name_key(e) in mentions else None for e in (link.subject, link.object)]
        subject, obj = ends
        if subject is None or (obj is None and link.relation != "works_as"):
            continue
        at, name = obj if obj is not None else (-1, link.object)
        relations.append(Relation(subject[1], link.relation, name, subject[0], at,
                                  value=obj is None))
    return Told(tuple(sorted(mentions.values(), key=lambda m: m.start)), aliases,
                tuple(relations))


def read_turn(text: str, known: KnownEntities, *, scope: str,
              model: ModelFallback | None = None, told: Told | None = None) -> TurnEntities:
    """Resolve the mentions of a turn against what the scope and thread know.

    The relations the turn states type what they tie when the names alone did not: who
    leads, reports to or works somewhere is a person, where one works an organisation, where
    one lives a place.

    Aliases the turn states are learned before its names are resolved ("VW, short for
    Volkswagen": both name one entity); pronouns resolve against the thread, this turn
    included; a role's owner ("Tom's sister") is resolved first. `model` is the optional
    fallback of `resolve_mention`. `told`: what a chat model said the turn names, read instead
    of the rules' mentions, aliases and relations (`told()`).

    Example:
        >>> scope = "tenant:acme/user:u1"
        >>> first = read_turn("I work at Volkswagen (VW). My sister Sarah lives in Graz.",
        ...                   KnownEntities(), scope=scope)
        >>> later = read_turn("Sarah from accounting says VW is hiring. She loves it.",
        ...                   first.known, scope=scope)
        >>> [(r.mention.text, r.stage) for r in later.resolutions]
        [('Sarah', 'new'), ('VW', 'alias'), ('She', 'unresolved')]
        >>> [(r.relation.subject, r.relation.relation, r.relation.object)
        ...  for r in first.relations]  # doctest: +NORMALIZE_WHITESPACE
        [('Sarah', 'sister_of', 'user'), ('user', 'works_at', 'Volkswagen'),
         ('Sarah', 'lives_in', 'Graz')]
    """
    book = _Book(known)
    names = [n for e in known.entities for n in (e.name, *e.aliases)]
    mentions = list(told.mentions) if told else find_mentions(text, known_names=names)
    aliases = list(told.aliases) if told else find_aliases(text)
    alias_of = {name_key(a.alias): a for a in aliases}
    named = {name_key(a.name): a for a in aliases if a.pronoun is None}
    resolved: dict[int, Resolution] = {}
    by_text: dict[str, str] = {}  # a name of this turn -> its entity id
    last_pronoun: dict[str, str] = {}
    for mention in mentions:
        if mention.is_pronoun:
            target = resolve_pronoun(mention, book.newest_first(), book.links)
            if target is None:
                resolved[mention.start] = Resolution(mention, None, "unresolved", 0.0)
                continue
            if (mention.group_of is None and target.pronoun is None
                    and mention.pronoun in ("she", "he")):  # "they" is mostly many
                target = replace(target, pronoun=mention.pronoun)
            book.put(target)
            last_pronoun[mention.pronoun or mention.group_of or ""] = target.id
            resolved[mention.start] = Resolution(mention, target, "pronoun")
            continue
        key = name_key(mention.text)
        owner = _owner(mention, by_text, last_pronoun)
        stated = alias_of.get(key)
        earlier = None if stated is None else (  # "we call him Bob"; "Volkswagen (VW)"
            last_pronoun.get(stated.pronoun) if stated.pronoun else by_text.get(
                name_key(stated.name)))
        if earlier is not None and (entity := book.get(earlier)) is not None:
            entity = _with_alias(entity, mention.text)
            book.put(entity)
            by_text[key] = entity.id
            resolved[mention.start] = Resolution(mention, entity, "alias")
            continue
        lookup = mention
        if stated is not None and stated.pronoun is None:  # "VW, short for Volkswagen"
            lookup = replace(mention, text=stated.name)
        result = resolve_mention(lookup, book.entities, scope=scope, owner=owner, model=model)
        entity = result.entity
        assert entity is not None
        for alias in (named.get(name_key(lookup.text)), stated):
            if alias is not None and alias.pronoun is None:
                entity = _with_alias(entity, alias.alias)
        book.put(entity, addressed=mention.addressed)
        by_text[key] = by_text[name_key(lookup.text)] = entity.id
        resolved[mention.start] = replace(result, mention=mention, entity=entity)
    linked = _link(told.relations if told else find_relations(text, mentions), resolved, book)
    return TurnEntities(tuple(resolved[m.start] for m in mentions), tuple(linked),
                        tuple(aliases), book.frozen())


def _with_alias(entity: Entity, alias: str) -> Entity:
    if name_key(alias) in entity.keys():
        return entity
    return replace(entity, aliases=(*entity.aliases, alias.strip()))


def _owner(mention: Mention, by_text: dict[str, str], last_pronoun: dict[str, str]
           ) -> str | None:
    """The id of whose role the mention holds: "user", an entity met earlier in the turn,
    or what a possessive pronoun referred to ("her sister")."""
    whose = mention.role_of
    if whose is None or whose == "user":
        return whose
    form = {"his": "he", "her": "she", "their": "they"}.get(whose.lower())
    if form is not None:
        return last_pronoun.get(form, whose.lower())
    return by_text.get(name_key(whose), name_key(whose))


def _link(relations: Sequence[Relation], resolved: dict[int, Resolution], book: _Book
          ) -> list[LinkedRelation]:
    out = []
    for relation in relations:
        ends = []
        for at, name in ((relation.subject_at, relation.subject),
                         (relation.object_at, relation.object)):
            if at < 0:
                ends.append("user" if name == "user" else None)
            else:
                r = resolved.get(at)
                ends.append(r.entity.id if r is not None and r.entity is not None else None)
        subject, obj = ends
        out.append(LinkedRelation(relation, subject, obj))
        for end, typed in ((subject, _SUBJECT_TYPES.get(relation.relation)),
                           (obj, _OBJECT_TYPES.get(relation.relation))):
            known = book.get(end) if end and typed else None
            if known is not None and known.type is None:
                book.put(replace(known, type=typed), recent=False)
        if subject is not None and obj is not None:
            link = (subject, relation.relation, obj)
            if link not in book.links:
                book.links.append(link)
    return out


_OPENING_PRONOUN = re.compile(r"(?:^|[.!?;]\s+|,\s+(?:so|and|but)\s+)(?:she|he)\b", re.I)


def named_subjects(text: str, earlier: Sequence[str], *, scope: str = "") -> str:
    """`text` with each "she" or "he" that opens a sentence or clause written as the name of
    the person the thread's earlier texts (oldest first) say it is, where the rules can tell:
    what the rules that read statements about named people need ("She moved to Graz." after
    "My sister Lena lives in Vienna." is about Lena). Unresolved pronouns stay.

    Example:
        >>> named_subjects("She just moved to Graz.", ["My sister Lena lives in Vienna."])
        'Lena just moved to Graz.'
        >>> named_subjects("She just moved to Graz.", ["Lena met Tom."])  # who? it stays
        'She just moved to Graz.'
        >>> named_subjects("I moved to Graz.", ["My sister Lena lives in Vienna."])
        'I moved to Graz.'
    """
    if not earlier or not _OPENING_PRONOUN.search(text):
        return text  # most turns: nothing to read
    known = KnownEntities()
    for said in earlier:
        known = read_turn(said, known, scope=scope).known
    opening = {m.end() for m in _OPENING_PRONOUN.finditer(text)}
    out, shift = text, 0
    for found in sorted(read_turn(text, known, scope=scope).resolutions,
                        key=lambda r: r.mention.start):
        mention, entity = found.mention, found.entity
        if (mention.is_pronoun and mention.end in opening and found.stage == "pronoun"
                and entity is not None and entity.type in (None, "person")):
            at, end = mention.start + shift, mention.end + shift
            out = out[:at] + entity.name + out[end:]
            shift += len(entity.name) - (mention.end - mention.start)
    return out
