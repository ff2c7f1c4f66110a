"""Resolution: which known entity a mention names, or a new entity with a stable id.

The cascade, first match wins, each stage among the known entities the mention is compatible
with (see `compatible`):

1. `exact`: the same name, case, spacing, a leading "the" and a title aside.
2. `alias`: a name the entity is also known by ("VW" for Volkswagen), learned when a turn
   states it.
3. `trigram`: pg_trgm similarity >= `TRIGRAM_THRESHOLD` (0.85) with a name or alias.
4. `variant`: the same organisation without its legal form ("Acme" / "Acme Inc."), an
   acronym of a multi-word name ("IBM", "NYC"), a place without its "Lake", "Mount" or
   "City" ("Como"), a person's first name or surname of a full name known for one person
   only ("Sarah" / "Sarah Chen", "Dr. Patel" / "Priya Patel").
5. `spelling`: one edit away for names of 6+ letters (two neighbours swapped from 5), two
   for 10+ ("Volkswagon"), the first letter kept; never two people's names that differ in
   the last letter only (Christina, Christine).
6. `model`: the caller's fallback, if any, asked to pick among a short list.
7. `new`: a new entity whose id is a UUID 5 of the scope, the name and, when the scope already
   holds another entity of that name, what tells them apart ("sister", "accounting").

Compatible: types agree where both are known (a company and a person never merge), the
pronouns agree (a "she" is not a "he"), roles can be one person's (the speaker's sister is
neither their brother nor the colleague from accounting: someone known by a family or
social role is not someone named by where they belong, "Tom from the gym"), departments and
groups agree.
Among several matches the one sharing the mention's role or department wins, then the most
recent. Pure functions; the model fallback is the caller's callable.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Literal

from langgraph_typed_memory.entities.mentions import (
    ORG_SUFFIXES,
    EntityType,
    Mention,
    name_key,
)
from langgraph_typed_memory.entities.similarity import (
    TRIGRAM_THRESHOLD,
    similarity,
    spelling_distance,
)
from langgraph_typed_memory.extraction.lexicon import Pronoun, role, roles_conflict

__all__ = ["Entity", "Resolution", "Stage", "ModelFallback", "entity_id", "compatible",
           "resolve_mention", "ENTITY_NAMESPACE"]

logger = logging.getLogger(__name__)

Stage = Literal["exact", "alias", "trigram", "variant", "spelling", "model", "pronoun", "new",
                "unresolved"]
ENTITY_NAMESPACE = uuid.UUID("5b0b1f2e-8f0c-5c1e-9a57-6e7469746965")
"""The UUID 5 namespace of entity ids."""


@dataclass(frozen=True, slots=True)
class Entity:
    """A named thing of a scope: a person, an organisation, a place, a pet, a project.

    Example:
        >>> Entity(entity_id("tenant:acme/user:u1", "Lena"), "Lena", "person", pronoun="she",
        ...        roles=(("sister", "user"),)).roles
        (('sister', 'user'),)
    """

    id: str
    name: str
    type: EntityType | None = None
    aliases: tuple[str, ...] = ()
    roles: tuple[tuple[str, str], ...] = ()
    """(role, whose): ("sister", "user") is the speaker's sister; whose is an entity id
    otherwise."""
    affiliations: tuple[str, ...] = ()
    """Departments and organisations it belongs to, as name keys ("accounting")."""
    pronoun: Pronoun | None = None
    """How it is referred to, once a turn tells ("she", "he", "they", "it")."""

    def keys(self) -> list[str]:
        """Its name and aliases as `name_key` compares them.

        Example:
            >>> Entity("e1", "Volkswagen AG", aliases=("VW",)).keys()
            ['volkswagen ag', 'vw']
        """
        return [name_key(n) for n in (self.name, *self.aliases)]


@dataclass(frozen=True, slots=True)
class Resolution:
    """What a mention resolved to, and by which stage; `entity` holds what was learned.

    Example:
        >>> r = resolve_mention(Mention("Lena", 0, 4), [], scope="tenant:t/user:u")
        >>> r.stage, r.merged, r.entity.name
        ('new', False, 'Lena')
    """

    mention: Mention
    entity: Entity | None
    stage: Stage
    score: float = 1.0
    candidates: tuple[str, ...] = field(default=())
    """Ids the mention could have named, for a model or a reviewer."""

    @property
    def merged(self) -> bool:
        """Whether the mention named an entity already known.

        Example:
            >>> Resolution(Mention("Lena", 0, 4), None, "unresolved").merged
            False
        """
        return self.stage not in ("new", "unresolved")


ModelFallback = Callable[[Mention, Sequence[Entity]], str | None]
"""`model(mention, candidates)` returns the id of the candidate the mention names, or None."""


def entity_id(scope: str, name: str, disambiguator: str = "") -> str:
    """A stable id: the same scope, name and disambiguator give the same id on every run.

    Example:
        >>> entity_id("tenant:t/user:u", "Sarah") == entity_id("tenant:t/user:u", " sarah ")
        True
        >>> entity_id("tenant:t/user:u", "Sarah") == entity_id("tenant:t/user:u", "Sarah",
        ...                                                    "accounting")
        False
    """
    return str(uuid.uuid5(ENTITY_NAMESPACE, "\x1f".join((scope, name_key(name), disambiguator))))


def compatible(mention: Mention, entity: Entity, owner: str | None = None) -> bool:
    """Whether `mention` may name `entity` (`owner`: the id of whose role the mention holds,
    "user" for the speaker).

    Example:
        >>> sister = Entity("e1", "Sarah", "person", roles=(("sister", "user"),))
        >>> compatible(Mention("Sarah", 0, 5, affiliation="accounting"), sister)
        False
        >>> compatible(Mention("Sarah", 0, 5, "organisation"), sister)
        False
        >>> compatible(Mention("Sarah", 0, 5), sister)
        True
    """
    if mention.type and entity.type and mention.type != entity.type:
        return False
    pronouns = {mention.pronoun, entity.pronoun}
    if mention.pronoun and entity.pronoun and len(pronouns) > 1 and pronouns != {"they"}:
        return False
    owner = owner or mention.role_of
    personal = any((r := role(name)) and r.kind in ("family", "social")
                   for name, _ in entity.roles)
    if mention.role is not None:
        for name, whose in entity.roles:
            known = role(name)
            if known is None:
                continue
            if whose == owner and roles_conflict(known, mention.role):
                return False
            if (name == mention.role.name and whose != owner and known.kind == "family"
                    and "user" in (whose, owner)):
                return False  # "my sister Anna" is not "Tom's sister Anna"
        if mention.role.kind in ("family", "social") and any(
                a[:1].islower() for a in entity.affiliations):
            return False  # "my sister Sarah" is not "Sarah from accounting"
    if mention.affiliation:
        key = name_key(mention.affiliation)
        if entity.affiliations and key not in entity.affiliations:
            return False
        if personal and mention.affiliation[:1].islower() and key not in entity.affiliations:
            return False  # "Tom from the gym" is not "my brother Tom"
    return True


@lru_cache(maxsize=16384)
def _initials(name: str) -> str:
    words = [w for w in re.findall(r"[^\W_]+", name) if w.lower() not in ("of", "and", "the",
                                                                          "for", "de")]
    return "".join(w[0] for w in words).lower() if len(words) > 1 else ""


@lru_cache(maxsize=16384)
def _strip_legal(key: str) -> str:
    words = key.replace(",", " ").split()
    while len(words) > 1 and words[-1] in ORG_SUFFIXES:
        words = words[:-1]
    return " ".join(words)


_GEOGRAPHIC = frozenset("lake mount mt river city island isle bay county province region "
                        "state of the".split())


@lru_cache(maxsize=16384)
def _strip_geographic(key: str) -> str:
    words = [w for w in key.split() if w not in _GEOGRAPHIC]
    return " ".join(words) if words and len(words) < len(key.split()) else key


def _agrees(mention: Mention, entity: Entity, owner: str | None) -> int:
    """How many of the mention's descriptors the entity shares (a tie-break)."""
    score = 0
    if mention.role is not None and (mention.role.name, owner or mention.role_of) in entity.roles:
        score += 1
    if mention.affiliation and name_key(mention.affiliation) in entity.affiliations:
        score += 1
    if mention.type and mention.type == entity.type:
        score += 1
    return score


def _best(mention: Mention, found: Sequence[tuple[float, int, Entity]], owner: str | None
          ) -> Entity | None:
    """The best of (score, recency, entity): the highest score, then the most descriptors
    shared, then the most recent."""
    if not found:
        return None
    return max(found, key=lambda f: (f[0], _agrees(mention, f[2], owner), f[1]))[2]


def _variant(mention: Mention, key: str, entity: Entity) -> bool:
    if entity.type in (None, "organisation", "project", "place") and mention.type in (
            None, "organisation", "project", "place"):
        if _strip_legal(key) in {_strip_legal(k) for k in entity.keys()}:
            return True
        letters = key.replace(" ", "").replace(".", "")
        if (mention.text.replace(".", "").isupper() and 2 <= len(letters) <= 6
                and any(_initials(n) == letters for n in (entity.name, *entity.aliases))):
            return True
        if any(n.replace(".", "").isupper() and _initials(mention.text) == name_key(n).replace(
                ".", "") for n in (entity.name, *entity.aliases)):
            return True
        if entity.type in (None, "place") and mention.type in (None, "place") and (
                _strip_geographic(key) in {_strip_geographic(k) for k in entity.keys()}):
            return True  # "Como" for "Lake Como"
    if entity.type == "person" and mention.type in (None, "person"):
        words = key.split()
        for k in entity.keys():
            known = k.split()
            if len(words) == 1 and len(known) > 1 and words[0] in (known[0], known[-1]):
                return True  # "Sarah" / "Dr. Patel" for "Sarah Chen" / "Priya Patel"
            if (len(known) == 1 and len(words) > 1 and known[0] == words[0]
                    and mention.type == "person"):
                return True  # "Sarah Chen" for a "Sarah" known by first name only
    return False


def _spelling(mention: Mention, key: str, entity: Entity) -> bool:
    for k in entity.keys():
        shortest = min(len(k), len(key))
        swap = len(k) == len(key) and sorted(k) == sorted(key)  # "Priay" for "Priya"
        if shortest < (5 if swap else 6) or k[0] != key[0]:
            continue
        limit = 2 if shortest >= 10 else 1
        if spelling_distance(key, k, limit) > limit:
            continue
        person = mention.type in (None, "person") and entity.type in (None, "person")
        if person and k[:-1] == key[:-1]:
            continue  # Christina / Christine: two names, not a slip
        return True
    return False


def resolve_mention(
    mention: Mention,
    known: Sequence[Entity],
    *,
    scope: str,
    owner: str | None = None,
    model: ModelFallback | None = None,
) -> Resolution:
    """Resolve a name (not a pronoun: see `resolve_pronoun`) against the scope's entities,
    oldest first (the last is the most recent).

    Returns the entity it names with what the mention taught (its type, pronoun, role,
    department), or a new entity. `owner` is the id of whose role the mention holds ("user"
    for the speaker's).

    Example:
        >>> scope = "tenant:acme/user:u1"
        >>> vw = Entity(entity_id(scope, "Volkswagen"), "Volkswagen", "organisation",
        ...             aliases=("VW",))
        >>> sister = Entity(entity_id(scope, "Sarah"), "Sarah", "person",
        ...                 roles=(("sister", "user"),), pronoun="she")
        >>> [resolve_mention(Mention(t, 0, len(t)), [vw, sister], scope=scope).stage
        ...  for t in ("volkswagen", "VW", "Volkswagon", "Sarah", "Toyota")]
        ['exact', 'alias', 'spelling', 'exact', 'new']
        >>> other = resolve_mention(Mention("Sarah", 0, 5, affiliation="accounting"),
        ...                         [vw, sister], scope=scope)
        >>> other.stage, other.entity.id != sister.id
        ('new', True)
    """
    key = name_key(mention.text)
    owner = owner or mention.role_of
    quick_stages: tuple[tuple[Stage, Callable[[Entity], bool]], ...] = (
        ("exact", lambda e: name_key(e.name) == key),
        ("alias", lambda e: any(name_key(a) == key for a in e.aliases)))
    for quick, named in quick_stages:
        # the first two stages over the entities of that name alone (most names a turn
        # holds are known by it): the cascade below would find the same ones first
        found = [(1.0, i, e) for i, e in enumerate(known)
                 if named(e) and compatible(mention, e, owner)]
        if (best := _best(mention, found, owner)) is not None:
            return Resolution(mention, learn(best, mention, owner, quick), quick, 1.0)
    facts = _name_facts(mention.text)
    pool = [(i, e) for i, e in enumerate(known)
            if _may_match(facts, e) and compatible(mention, e, owner)]
    entity: Entity | None = None
    stage: Stage = "new"
    score = 1.0
    stages: tuple[tuple[Stage, Callable[[Entity], float]], ...] = (  # after exact and alias
        ("trigram", lambda e: max(
            (s for n in (e.name, *e.aliases)
             if (s := similarity(mention.text, n)) >= TRIGRAM_THRESHOLD), default=0.0)),
        ("variant", lambda e: float(_variant(mention, key, e))),
        ("spelling", lambda e: float(_spelling(mention, key, e))),
    )
    for name, test in stages:
        found = [(s, i, e) for i, e in pool if (s := test(e)) > 0]
        if name == "variant" and len(found) > 1:
            agreeing = [f for f in found if _agrees(mention, f[2], owner) > (mention.type
                                                                                is not None)]
            if len(agreeing) != 1:
                continue  # "Sarah" with two full-named Sarahs: not told which
            found = agreeing
        if (best := _best(mention, found, owner)) is not None:
            entity, stage = best, name
            score = max(f[0] for f in found if f[2] is best)
            break
    candidates: tuple[str, ...] = ()
    if entity is None and model is not None:
        shortlist = [e for _, e in pool if any(
            similarity(mention.text, n) >= 0.3 or set(name_key(n).split()) & set(key.split())
            for n in (e.name, *e.aliases))][-10:]
        candidates = tuple(e.id for e in shortlist)
        if shortlist:
            try:
                chosen = model(mention, shortlist)
            except Exception:  # a failing model degrades to a new entity
                logger.warning("entity model fallback failed for %r", mention.text,
                               exc_info=True)
                chosen = None
            entity = next((e for e in shortlist if e.id == chosen), None)
            if chosen is not None and entity is None:
                logger.warning("entity model fallback chose %r, not a candidate", chosen)
            stage = "model" if entity is not None else "new"
    if entity is None:
        return Resolution(mention, _new(mention, key, known, scope, owner), "new", 1.0,
                          candidates)
    return Resolution(mention, learn(entity, mention, owner, stage), stage, score, candidates)


@dataclass(frozen=True, slots=True)
class _NameFacts:
    """What `_may_match` compares of a name."""

    key: str
    words: frozenset[str]
    """The words of its `name_key`."""
    initials: frozenset[str]
    """The first letters of its words (lower-cased, as `_initials` reads them)."""
    acronym: bool
    """Written in capitals ("VW", "I.B.M."), as `_variant` reads initials."""
    letters: str
    """The key without spaces and dots, as `_variant` compares it with initials."""
    long: bool
    """At least `LONG_NAME` characters, as written or as a key."""


@lru_cache(maxsize=16384)
def _name_facts(name: str) -> _NameFacts:
    key = name_key(name)
    return _NameFacts(key, frozenset(key.split()),
                      frozenset(w[0].lower() for w in re.findall(r"[^\W_]+", name)),
                      name.replace(".", "").isupper(), key.replace(" ", "").replace(".", ""),
                      max(len(name), len(key)) >= LONG_NAME)


LONG_NAME = 30
"""Names this long are always run through the cascade: two names sharing no word and no
first letter reach `TRIGRAM_THRESHOLD` only when they are far longer (a first letter apart
loses three trigrams of each name, every other word apart more)."""


def _may_match(mention: _NameFacts, entity: Entity) -> bool:
    """Whether a name the exact and alias stages did not match could pass a later stage
    for `entity` (False only when none can: a cheap test that spares the cascade the
    entities it would reject). Every later stage needs a name of the entity that shares a
    word with the mention (variants: legal and geographic forms, a person's first or last
    name), starts with the same letter (spelling), or whose initials it is, or is, when one
    of them is written in capitals; trigram similarity of names below `LONG_NAME` needs one
    of those too.

    Example:
        >>> vw = Entity("e1", "Volkswagen", "organisation", aliases=("VW AG",))
        >>> [_may_match(_name_facts(t), vw) for t in ("Volkswagon", "VW", "Toyota", "Wolfsburg VW")]
        [True, True, False, True]
        >>> _may_match(_name_facts(".NET"), Entity("e2", "Net Energy Technologies"))
        True
    """
    key = mention.key
    if not key or mention.long:
        return True
    for name in (entity.name, *entity.aliases):
        known = _name_facts(name)
        if (not known.key or known.long or known.key[0] == key[0]
                or not known.words.isdisjoint(mention.words)
                or (mention.acronym and mention.letters[:1] in known.initials)
                or (known.acronym and known.letters[:1] in mention.initials)):
            return True
    return False


def _new(mention: Mention, key: str, known: Sequence[Entity], scope: str, owner: str | None
         ) -> Entity:
    namesakes = [e for e in known if key in e.keys()]
    disambiguator = ""
    if namesakes:
        if mention.role is not None:
            disambiguator = f"{mention.role.name} of {owner or mention.role_of or ''}"
        elif mention.affiliation:
            disambiguator = name_key(mention.affiliation)
        elif mention.type:
            disambiguator = mention.type
    ids = {e.id for e in known}
    new_id, n = entity_id(scope, mention.text, disambiguator), 1
    while new_id in ids:
        n += 1
        new_id = entity_id(scope, mention.text, f"{disambiguator}#{n}")
    return learn(Entity(new_id, mention.text.strip(), mention.type), mention, owner, "new")


def learn(entity: Entity, mention: Mention, owner: str | None, stage: Stage) -> Entity:
    """`entity` with what `mention` tells of it: its type and pronoun when not known yet, a
    role, a department, a full name first met as a first name.

    Example:
        >>> learn(Entity("e1", "Sarah"), Mention("Sarah Chen", 0, 10, "person", "she"), None,
        ...       "variant")
        Entity(id='e1', name='Sarah', type='person', aliases=('Sarah Chen',), roles=(), \
affiliations=(), pronoun='she')
    """
    changes: dict[str, object] = {}
    if entity.type is None and mention.type is not None:
        changes["type"] = mention.type
    if entity.pronoun is None and mention.pronoun is not None and not mention.is_pronoun:
        changes["pronoun"] = mention.pronoun
    if mention.role is not None:
        pair = (mention.role.name, owner or mention.role_of or "")
        if pair not in entity.roles:
            changes["roles"] = (*entity.roles, pair)
    if mention.affiliation and (a := name_key(mention.affiliation)) not in entity.affiliations:
        changes["affiliations"] = (*entity.affiliations, a)
    if stage == "variant" and len(mention.text.split()) > len(entity.name.split()):
        if name_key(mention.text) not in entity.keys():
            changes["aliases"] = (*entity.aliases, mention.text)
    return replace(entity, **changes) if changes else entity  # type: ignore[arg-type]
