"""Entities as memory: the records the write path keeps of them, and the ids it stamps on
what a turn writes.

An entity is a record of the `entity` kind in the caller's own scope, keyed by its stable id
(`entity_id`), its value the fields of `Entity` plus the relations it holds as links
(`(relation, entity id)`). The kind is looked up whole, never ranked or embedded: the
scope's entities are its *directory*, what a turn's names resolve against.

`read_entities` reads one turn against the directory: the ids of the entities it mentions
(a named speaker first: "Melanie: I painted a sunrise" is about Melanie), the proposals for
the entities it creates or teaches something new of (an alias, a role, a relation), and
the thread's latest entities for the next turn's pronouns. `stamp` writes the ids into the
`metadata.entities` of the turn's candidates. Pure functions: the extract node loads the
directory and the gate writes the proposals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import SearchOp

from langgraph_typed_memory.entities.mentions import Mention, name_key
from langgraph_typed_memory.entities.relations import STATEFUL
from langgraph_typed_memory.entities.resolve import Entity, resolve_mention
from langgraph_typed_memory.entities.turns import RECENT_LIMIT, KnownEntities, Told, read_turn
from langgraph_typed_memory.lifecycle import ADDITIONS_KEY, IF_CHANGED_KEY, NEWEST_KEY

__all__ = ["ENTITY_KIND", "ENTITY_CONFIDENCE", "SPEAKER", "EntityRead", "entity_value",
           "entity_from_value", "directory", "read_entities", "stamp", "scope_key",
           "entity_names", "directory_op", "directory_records", "DIRECTORY_LIMIT", "with_recent"]

ENTITY_KIND = "entity"
"""The memory kind of entity records."""
ENTITY_CONFIDENCE = 0.9
"""The confidence of an entity record: the turn named it."""
SPEAKER = "user"
"""The speaker of a chat, as relations name them ("I report to Priya": (user, reports_to,
Priya)). A named speaker (a conversation between people) is an entity of its own."""
_GROUNDING_CHARS = 500

DIRECTORY_LIMIT = 5000
"""The most entity records a directory read takes (the newest)."""

Link = tuple[str, str]
"""(relation, entity id): one relation an entity holds."""


def directory_op(labels: Sequence[str], since: str | None = None) -> SearchOp:
    """The read of a scope's entity directory: its own entity records, newest first (the
    `$newest` listing: an indexed read of the namespace that counts no access, where the
    kind's lookup would count one per entity on every turn and question). Entities are
    only ever written in the caller's own scope. With `since`, the version of an earlier
    listing, the store lists nothing while the records are as they were then, and only the
    records added since when nothing else changed.

    Example:
        >>> op = directory_op(("tenant:acme", "user:alice"))
        >>> op.namespace_prefix, op.filter
        (('tenant:acme', 'user:alice', 'entity'), {'$newest': True})
        >>> directory_op(("tenant:acme", "user:alice"), since="7:3:100.0:inf:42").filter
        {'$newest': True, '$if_changed': '7:3:100.0:inf:42', '$additions': True}
    """
    query: dict[str, Any] = {NEWEST_KEY: True}
    if since is not None:
        query.update({IF_CHANGED_KEY: since, ADDITIONS_KEY: True})
    return SearchOp((*labels, ENTITY_KIND), query, DIRECTORY_LIMIT, 0, None, refresh_ttl=False)


def directory_records(items: Iterable[Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """`(key, value)` of a directory read's items, oldest first (what `directory` takes).

    Example:
        >>> from types import SimpleNamespace
        >>> directory_records([SimpleNamespace(key="b", value={}),
        ...                    SimpleNamespace(key="a", value={})])
        [('a', {}), ('b', {})]
    """
    return [(item.key, item.value) for item in items][::-1]


def scope_key(labels: Sequence[str]) -> str:
    """The scope text entity ids are made from: the labels of the scope the records are
    written in, joined.

    Example:
        >>> scope_key(("tenant:acme", "user:alice"))
        'tenant:acme/user:alice'
    """
    return "/".join(labels)


def entity_value(entity: Entity, links: Iterable[Link] = ()) -> dict[str, Any]:
    """The value of an entity's record (`schemas.EntityMemory`'s fields).

    Example:
        >>> entity_value(Entity("e1", "Volkswagen", "organisation", aliases=("VW",)))
        ... # doctest: +NORMALIZE_WHITESPACE
        {'name': 'Volkswagen', 'type': 'organisation', 'aliases': ['VW'], 'roles': [],
         'affiliations': [], 'pronoun': None, 'links': []}
    """
    return {"name": entity.name, "type": entity.type, "aliases": list(entity.aliases),
            "roles": [list(r) for r in entity.roles],
            "affiliations": list(entity.affiliations), "pronoun": entity.pronoun,
            "links": [list(link) for link in links]}


def entity_from_value(key: str, value: Mapping[str, Any]) -> tuple[Entity, tuple[Link, ...]]:
    """The entity a record holds, and its links.

    Example:
        >>> entity, links = entity_from_value("e1", {"name": "Sarah", "type": "person",
        ...     "roles": [["sister", "user"]], "links": [["lives_in", "e2"]]})
        >>> entity.roles, links
        ((('sister', 'user'),), (('lives_in', 'e2'),))
    """
    entity = Entity(
        key, str(value.get("name") or key), value.get("type"),
        tuple(str(a) for a in value.get("aliases") or ()),
        tuple((str(r[0]), str(r[1])) for r in value.get("roles") or () if len(r) == 2),
        tuple(str(a) for a in value.get("affiliations") or ()),
        value.get("pronoun"),
    )
    links = tuple((str(x[0]), str(x[1])) for x in value.get("links") or () if len(x) == 2)
    return entity, links


def directory(records: Iterable[tuple[str, Mapping[str, Any]]],
              recent: Sequence[str] = ()) -> KnownEntities:
    """The known entities of a scope from its entity records `(key, value)`, with the
    thread's latest entity ids (newest first) for pronouns.

    Example:
        >>> known = directory([("e1", {"name": "Sarah", "links": [["leads", "e2"]]}),
        ...                    ("e2", {"name": "platform team"})], recent=["e2", "gone"])
        >>> [e.name for e in known.entities], known.recent, known.links
        (['Sarah', 'platform team'], ('e2',), (('e1', 'leads', 'e2'),))
    """
    entities, links = [], []
    for key, value in records:
        entity, held = entity_from_value(key, value)
        entities.append(entity)
        links += [(key, relation, other) for relation, other in held]
    return with_recent(KnownEntities(tuple(entities), (), tuple(links)), recent)


def with_added(known: KnownEntities, records: Iterable[tuple[str, Mapping[str, Any]]]
               ) -> KnownEntities:
    """`known` with entity records `(key, value)` written after it was read, oldest first: as
    `directory` would read all of them (a record of a key it holds replaces that entity), the
    newest `DIRECTORY_LIMIT` kept.

    Example:
        >>> known = directory([("e1", {"name": "Sarah", "links": [["leads", "e2"]]})])
        >>> later = with_added(known, [("e2", {"name": "platform team"})])
        >>> [e.name for e in later.entities], later.links
        (['Sarah', 'platform team'], (('e1', 'leads', 'e2'),))
    """
    added = directory(records)
    fresh = {e.id for e in added.entities}
    entities = (*[e for e in known.entities if e.id not in fresh], *added.entities)
    entities = entities[-DIRECTORY_LIMIT:]
    kept = {e.id for e in entities}
    links = (*[link for link in known.links if link[0] not in fresh and link[0] in kept],
             *added.links)
    return KnownEntities(entities, known.recent, links)


def with_recent(known: KnownEntities, recent: Sequence[str]) -> KnownEntities:
    """`known` with the thread's latest entity ids (newest first) it holds, for pronouns.

    Example:
        >>> known = directory([("e1", {"name": "Sarah"})])
        >>> with_recent(known, ["gone", "e1"]).recent
        ('e1',)
    """
    if not recent:
        return known if not known.recent else KnownEntities(known.entities, (), known.links)
    ids = {e.id for e in known.entities}
    return KnownEntities(known.entities, tuple(i for i in recent if i in ids)[:RECENT_LIMIT],
                         known.links)


@dataclass(frozen=True, slots=True)
class EntityRead:
    """One turn read for entities.

    Example:
        >>> read = read_entities("I work at Volkswagen (VW).", KnownEntities(),
        ...                      scope="tenant:t/user:u")
        >>> [read.known.get(i).name for i in read.ids], read.names[read.ids[0]]
        (['Volkswagen'], ('Volkswagen', 'VW'))
    """

    ids: tuple[str, ...]
    """The entities the turn mentions, a named speaker first: what its records carry."""
    names: Mapping[str, tuple[str, ...]]
    """Per id, the words the turn used for it and the names it goes by."""
    proposals: tuple[dict[str, Any], ...]
    """Entity records for the gate: the entities the turn created or taught something new."""
    known: KnownEntities
    """The directory as the turn left it, with the thread's latest entities."""
    speaker: str | None = None
    """The id of a named speaker."""


def _put(known: KnownEntities, entity: Entity) -> KnownEntities:
    """`known` with `entity` added or replaced; the thread's latest entities unchanged (a
    speaker says "I", not "she")."""
    entities = tuple(e for e in known.entities if e.id != entity.id) + (entity,)
    return KnownEntities(entities, known.recent, known.links)


def _links_of(links: Iterable[tuple[str, str, str]]) -> dict[str, list[Link]]:
    held: dict[str, list[Link]] = {}
    for subject, relation, other in links:
        held.setdefault(subject, []).append((relation, other))
    return held


def read_entities(text: str, known: KnownEntities, *, scope: str, speaker: str = SPEAKER,
                  told: Told | None = None) -> EntityRead:
    """Read one turn against the scope's directory (`known`, its `recent` the thread's
    latest entities): the ids the turn's records carry, the entity records to write.

    A named `speaker` (not "user") is resolved as a person and leads the ids; the turn's
    "I" is that entity in its relations. Relations whose both ends resolved become links of
    the subject's record; a relation that holds one object at a time (`STATEFUL`: lives in,
    works at) replaces the subject's earlier one. Only entities this turn mentions, or whose
    links it changed, are proposed, and only when new or changed. `told`: what a chat model
    said the turn names (`turns.told`), read instead of the rules.

    Example:
        >>> scope = "tenant:acme/user:u1"
        >>> first = read_entities("I work at Volkswagen. Sarah leads the platform team.",
        ...                       KnownEntities(), scope=scope)
        >>> [(p["value"]["name"], [(r, first.known.get(o).name) for r, o in p["value"]["links"]])
        ...  for p in first.proposals]
        [('Volkswagen', []), ('Sarah', [('leads', 'platform team')]), ('platform team', [])]
        >>> later = read_entities("Volkswagen, VW for short, is hiring.", first.known,
        ...                       scope=scope)
        >>> [(p["value"]["name"], p["value"]["aliases"]) for p in later.proposals]
        [('Volkswagen', ['VW'])]
        >>> read_entities("Volkswagen is hiring.", later.known, scope=scope).proposals
        ()
    """
    stored = {e.id: e for e in known.entities}
    stored_links = _links_of(known.links)
    speaker_id: str | None = None
    if speaker and speaker != SPEAKER:
        said = Mention(speaker, 0, len(speaker), "person")
        found = resolve_mention(said, known.entities, scope=scope)
        if found.entity is not None:
            speaker_id = found.entity.id
            known = _put(known, found.entity)
    turn = read_turn(text, known, scope=scope, told=told)
    held = _links_of(known.links)
    touched: list[str] = []
    for linked in turn.relations:
        subject, other = (speaker_id if end == SPEAKER and speaker_id else end
                          for end in (linked.subject_id, linked.object_id))
        if subject is None or other is None or subject == SPEAKER or subject == other:
            continue
        relation = linked.relation.relation
        links = [link for link in held.get(subject, [])
                 if not (relation in STATEFUL and link[0] == relation)]
        if (relation, other) not in links:
            links.append((relation, other))
        held[subject] = links
        touched.append(subject)
    ids = list(dict.fromkeys([*([speaker_id] if speaker_id else []), *turn.entity_ids()]))
    final = {e.id: e for e in turn.known.entities}
    names: dict[str, tuple[str, ...]] = {}
    for resolution in turn.resolutions:
        if resolution.entity is not None:
            seen = final[resolution.entity.id]
            names[seen.id] = tuple(dict.fromkeys(
                [*names.get(seen.id, ()), resolution.mention.text, seen.name, *seen.aliases]))
    if speaker_id:
        names[speaker_id] = tuple(dict.fromkeys([*names.get(speaker_id, ()), speaker]))
    proposals = []
    for ident in dict.fromkeys([*ids, *touched]):
        if (entity := final.get(ident)) is None:
            continue
        links = held.get(ident, [])
        if stored.get(ident) == entity and stored_links.get(ident, []) == links:
            continue
        proposals.append({"kind": "entity", "key": ident, "value": entity_value(entity, links),
                          "confidence": ENTITY_CONFIDENCE,
                          "grounding": text[:_GROUNDING_CHARS],
                          "proposed_by": "model" if told is not None else
                          "rule:entity.mention" if ident in ids else "rule:entity.relation"})
    after = KnownEntities(turn.known.entities, turn.known.recent,
                          tuple((s, r, o) for s, links in held.items() for r, o in links))
    return EntityRead(tuple(ids), names, tuple(proposals), after, speaker_id)


def _said(names: Iterable[str], text: str) -> bool:
    return any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text, re.I) for n in names if n)


def stamp(candidates: Sequence[Mapping[str, Any]], read: EntityRead, *, speaker: str = SPEAKER
          ) -> list[dict[str, Any]]:
    """The candidates with `metadata.entities`: the ids of the turn's entities their
    grounding (or content) names, and a named speaker's for what is about the speaker.
    Tenant-wide candidates carry none (the ids are the speaker's scope's). Entity proposals
    pass unchanged.

    Example:
        >>> read = read_entities("My sister Lena lives in Vienna.", KnownEntities(),
        ...                      scope="tenant:t/user:u")
        >>> fact = {"kind": "fact", "subject": "Lena", "predicate": "home_city",
        ...         "content": "Lena lives in Vienna.", "grounding": "Lena lives in Vienna."}
        >>> [read.known.get(i).name for i in stamp([fact], read)[0]["metadata"]["entities"]]
        ['Lena', 'Vienna']
    """
    out = []
    for candidate in candidates:
        row = dict(candidate)
        if row.get("kind") in ("fact", "preference") and row.get("scope") != "tenant":
            text = str(row.get("grounding") or row.get("content") or "")
            about = [i for i in read.ids if _said(read.names.get(i, ()), text)]
            if read.speaker and (row.get("kind") == "preference"
                                 or row.get("subject") in (speaker, SPEAKER)):
                about = [read.speaker, *(i for i in about if i != read.speaker)]
            if about:
                row["metadata"] = {**(row.get("metadata") or {}), "entities": about}
        out.append(row)
    return out


def entity_names(entity: Entity) -> tuple[str, ...]:
    """Its name and aliases, each once by `name_key`.

    Example:
        >>> entity_names(Entity("e1", "Volkswagen", aliases=("VW", "volkswagen")))
        ('Volkswagen', 'VW')
    """
    seen: dict[str, str] = {}
    for name in (entity.name, *entity.aliases):
        seen.setdefault(name_key(name), name)
    return tuple(seen.values())
