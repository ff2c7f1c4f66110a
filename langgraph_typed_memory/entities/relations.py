"""Relations a turn states between the things it names: (subject, relation, object) triples,
and the aliases it states.

"My sister Lena lives in Vienna" gives (Lena, sister_of, user) and (Lena, lives_in, Vienna);
"Sarah leads the platform team" gives (Sarah, leads, platform team); "my brother Tom is a
dentist in Cork" gives (Tom, brother_of, user), (Tom, works_as, dentist) and (Tom, works_in,
Cork). The speaker is "user". A role or department stated beside a name ("Sarah from
accounting") is a relation too. Objects are the turn's mentions, except a job (`value=True`).
Relations in `STATEFUL` hold one object at a time: a new one replaces the old.

An alias is a second name for one entity: "Volkswagen (VW)", "VW, short for Volkswagen", "we
call him Bob". Learned only when the turn says so: two names that merely look alike are the
resolver's business, not an alias. A pronoun target ("we call him Bob") is resolved with the
turn's other pronouns. Pure functions, English.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from langgraph_typed_memory.entities.mentions import Mention, find_mentions
from langgraph_typed_memory.extraction.lexicon import occupation
from langgraph_typed_memory.extraction.statements import person_drafts

__all__ = ["Alias", "Relation", "find_aliases", "find_relations", "STATEFUL"]

STATEFUL = frozenset({"lives_in", "works_at", "works_as", "works_in", "reports_to",
                      "married_to", "located_in", "member_of"})
"""Relations a subject holds with one object at a time (a new one supersedes the old)."""

_ADV = r"(?:(?:now|currently|still|just|also|actually|recently|finally|officially)\s+)*"
_FRAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(r"^(?:'m|'re)?\s*(?:,\s*)?(?:(?:am|are)\s+)?" + _ADV + p, re.I), relation)
    for p, relation in (  # after "I'm", "we are": "I'm actually reporting to Dana"
        (r"(?:leads|led|runs|ran|heads(?:\s+up)?|headed|manages|managed|is\s+in\s+charge\s+of|"
         r"(?:is|was)\s+(?:the\s+)?(?:head|lead|leader|manager|director)\s+of|leading|running|"
         r"managing|heading(?:\s+up)?)\s+(?P<o>\S)", "leads"),
        (r"(?:reports?|reported|reporting)\s+(?:directly\s+)?to\s+(?P<o>\S)", "reports_to"),
        (r"(?:works?|worked|working|is\s+working)\s+(?:at|for)\s+(?P<o>\S)", "works_at"),
        (r"(?:joined|is\s+joining|started\s+at|moved\s+to\s+a\s+job\s+at|got\s+a\s+job\s+at|"
         r"is\s+employed\s+by|(?:is|was)\s+hired\s+by|(?:is|'s)\s+(?:now\s+)?at)\s+(?P<o>\S)",
         "works_at"),
        (r"(?:works?|worked|working)\s+(?:in|on)\s+(?P<o>\S)", "member_of"),
        (r"(?:is|'s|was)\s+(?:on|in|part\s+of|a\s+member\s+of)\s+(?P<o>(?:the|our)\s+\S)",
         "member_of"),
        (r"(?:lives|lived|is\s+living|living|live)\s+in\s+(?P<o>\S)", "lives_in"),
        (r"(?:moved|relocated|is\s+moving|emigrated|moved\s+back)\s+to\s+(?P<o>\S)", "lives_in"),
        (r"(?:is|'s|was)\s+(?:based|headquartered|located)\s+in\s+(?P<o>\S)", "located_in"),
        (r"(?:founded|co-?founded|started)\s+(?P<o>\S)", "founded"),
        (r"(?:is|'s|was|got)\s+married\s+to\s+(?P<o>\S)|married\s+(?P<w>\S)", "married_to"),
        (r"(?:owns|acquired|bought)\s+(?P<o>\S)", "owns"),
        (r"(?:is|'s|was)\s+(?:originally\s+)?from\s+(?P<o>\S)", "from"),
    ))
_JOB = re.compile(
    r"^\s*(?:,\s*)?" + _ADV + r"(?:is|'s|works\s+as|became|trained\s+as|qualified\s+as)\s+"
    r"(?:an?\s+)(?P<job>[a-z][\w-]*(?:\s+(?!(?:at|for|in|and|who|with)\b)[a-z][\w-]*)?)(?:\s+(?P<prep>at|for|in)\s+(?P<o>\S))?",
    re.I)
_SLOTS = {"home_city": "lives_in", "employer": "works_at", "occupation": "works_as"}
_SELF = re.compile(r"\bI\b|\bI'm\b|\bI've\b|\bwe\b", re.I)


@dataclass(frozen=True, slots=True)
class Relation:
    """`subject` `relation` `object`, with where each stands in the turn (-1: the speaker,
    or a value that is not a mention).

    Example:
        >>> Relation("Sarah", "leads", "platform team", 0, 17).relation in STATEFUL
        False
    """

    subject: str
    relation: str
    object: str
    subject_at: int = -1
    object_at: int = -1
    value: bool = False
    """The object is a value ("dentist"), not an entity."""


def _mention_at(text: str, mentions: Sequence[Mention], at: int) -> Mention | None:
    """The mention at `at`, or just after an article there ("the platform team")."""
    for m in mentions:
        if m.start <= at < m.end or (m.start > at and not m.is_pronoun
                                     and re.fullmatch(r"(?:the|our|my)\s+", text[at:m.start])):
            return m
    return None


def find_relations(text: str, mentions: Sequence[Mention] | None = None) -> list[Relation]:
    """The relations a turn states, in the order of their subjects.

    Example:
        >>> [(r.subject, r.relation, r.object) for r in find_relations(
        ...     "My brother Tom is a dentist in Cork. Sarah leads the platform team.")]
        ... # doctest: +NORMALIZE_WHITESPACE
        [('Tom', 'brother_of', 'user'), ('Tom', 'works_as', 'dentist'),
         ('Tom', 'works_in', 'Cork'), ('Sarah', 'leads', 'platform team')]
    """
    mentions = find_mentions(text) if mentions is None else mentions
    out: list[Relation] = []
    subjects: list[tuple[str, int, int]] = [(m.text, m.start, m.end) for m in mentions
                                            if not m.group_of]
    subjects += [("user", -1, s.end()) for s in _SELF.finditer(text)
                 if s.group().lower() != "we"]
    for m in mentions:
        if m.role is not None and m.role_of is not None:
            owner_at = -1
            if m.role_of != "user":
                owner = next((o for o in mentions if o.text == m.role_of
                              or o.is_pronoun and o.text.lower() == m.role_of), None)
                owner_at = owner.start if owner else -1
            out.append(Relation(m.text, f"{m.role.name}_of", m.role_of, m.start, owner_at))
        if m.affiliation:
            target = next((o for o in mentions if o.start >= m.end and o.text == m.affiliation),
                          None)
            out.append(Relation(m.text, "member_of", m.affiliation, m.start,
                                target.start if target else -1))
    # "Tom from accounting lives in Linz": what Tom does follows his affiliation
    affiliated = {m.start: m.affiliation_end for m in mentions if m.affiliation_end >= 0}
    for name, at, end in sorted(subjects, key=lambda s: s[2]):
        rest = text[max(end, affiliated.get(at, end)):end + 200]
        rest = re.sub(r"^\s*(?:\)|,\s*(?:my|our|his|her|their)\s+[\w\s-]{1,30}?,|\([^)]*\))",
                      "", rest)
        shift = len(text[end:end + 200]) - len(rest)
        found = False
        for pattern, relation in _FRAMES:
            hit = pattern.match(rest)
            if hit is None:
                continue
            group = "o" if hit["o"] is not None else "w"
            obj = _mention_at(text, mentions, end + shift + hit.start(group))
            if obj is not None and obj.text != name:
                out.append(Relation(name, relation, obj.text, at, obj.start))
                found = True
                break
        if found:
            continue
        if (job := _JOB.match(rest)) and (held := occupation(job["job"])):  # not "was a kid"
            out.append(Relation(name, "works_as", held, at, -1, value=True))
            if job["o"] and (obj := _mention_at(text, mentions, end + shift + job.start("o"))):
                relation = "works_in" if job["prep"].lower() == "in" else "works_at"
                out.append(Relation(name, relation, obj.text, at, obj.start))
            continue
        for draft in person_drafts(name, rest.strip(" ,"), "", name):
            slot = _SLOTS.get(draft.name)
            if slot is None:
                continue
            relation, value_at = slot, text.find(draft.value, end)
            obj = _mention_at(text, mentions, value_at) if value_at >= 0 else None
            if obj is not None:
                out.append(Relation(name, relation, obj.text, at, obj.start))
            elif relation == "works_as":
                out.append(Relation(name, relation, draft.value, at, -1, value=True))
    return out


_NAME = r"(?-i:[A-Z])[\w&.'-]*(?:(?<!\.)\s+(?:(?-i:[A-Z])[\w&.'-]*|of|and|&|de|van|von))*(?<![.'-])"
_SHORT = r"(?-i:[A-Z])[\w&.'-]*(?:(?<!\.)\s+(?-i:[A-Z])[\w&.'-]*)?(?<![.'-])"
_CALL = (r"(?:we|everyone|everybody|they|people|most\s+people|the\s+team|i|friends|the\s+kids)"
         r"\s+(?:all\s+)?(?:just\s+)?(?:call|calls|called)")
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), order) for p, order in (
        # "Volkswagen (VW)", "Robert (Bob)", "VW (Volkswagen)", "Alexander (Sasha to friends)"
        (rf"(?P<a>{_NAME})\s+\((?:aka\s+|a\.k\.a\.?\s+|or\s+|i\.e\.\s+|called\s+|"
         rf"known\s+as\s+)?(?P<b>{_NAME})(?:\s+for\s+short|\s+to\s+(?:his|her|their|my|our|"
         rf"the)?\s*(?:friends|family|everyone|us|colleagues|the\s+team))?\)", "paren"),
        # "VW, short for Volkswagen"; "VW stands for Volkswagen"; "Liz is short for Elizabeth"
        (rf"(?P<b>{_SHORT})\s*,?\s+(?:is\s+|being\s+)?(?:short\s+for|stands\s+for|"
         rf"an?\s+(?:nickname|abbreviation)\s+for)\s+(?P<a>{_NAME})", "ab"),
        # "Elizabeth, Liz for short"; "Elizabeth, or Liz for short"
        (rf"(?P<a>{_NAME})\s*(?:,|—|–|-)\s*(?:or\s+)?(?:just\s+)?(?P<b>{_SHORT})\s+for\s+short",
         "ab"),
        # "Robert, aka Bob", "Robert, also known as Bob", "Robert, who goes by Bob"
        (rf"(?P<a>{_NAME})\s*,?\s+(?:aka|a\.k\.a\.?|also\s+known\s+as|better\s+known\s+as|"
         rf"known\s+as|(?:who|which)\s+(?:goes|go)\s+by|goes\s+by|(?:who|which)\s+"
         rf"(?:we|everyone)\s+(?:call|calls))\s+(?P<b>{_SHORT})", "ab"),
        # "Robert's nickname is Bob"
        (rf"(?P<a>{_NAME})'s\s+nickname\s+is\s+(?P<b>{_SHORT})", "ab"),
        # "we call him Bob", "everyone calls her Liz"
        (rf"\b{_CALL}\s+(?P<a>him|her|them|it)\s+(?:just\s+)?(?P<b>{_SHORT})", "ab"),
        # "we call Robert Bob" (two names): only when both are capitalized, as written
        (rf"\b{_CALL}\s+(?P<a>{_SHORT})\s+(?:just\s+)?(?P<b>(?-i:[A-Z])[\w'-]+)(?=\s*[.,;!?]|$)",
         "ab"),
    ))
_PRONOUNS = {"him": "he", "her": "she", "them": "they", "it": "it"}
_NOT_ALIASES = frozenset("i the a an we you he she it they my our ok".split())


@dataclass(frozen=True, slots=True)
class Alias:
    """`alias` is another name of `name`; when `name` is a pronoun, `pronoun` is its form.

    Example:
        >>> Alias("VW", "Volkswagen")
        Alias(alias='VW', name='Volkswagen', pronoun=None)
    """

    alias: str
    name: str
    pronoun: str | None = None


def _is_acronym(text: str) -> bool:
    return bool(re.fullmatch(r"[A-Z][A-Z0-9&.]{1,7}", text.replace(" ", "")))


def find_aliases(text: str) -> list[Alias]:
    """The aliases a turn states, left to right.

    In parentheses, the shorter name is the alias ("Volkswagen (VW)", "VW (Volkswagen)").

    Example:
        >>> [(a.alias, a.name) for a in find_aliases(
        ...     "I joined Volkswagen (VW) in May. Liz, short for Elizabeth, runs QA.")]
        [('VW', 'Volkswagen'), ('Liz', 'Elizabeth')]
        >>> find_aliases("My manager is Robert. We call him Bob.")
        [Alias(alias='Bob', name='him', pronoun='he')]
    """
    out: list[Alias] = []
    seen: set[tuple[str, str]] = set()
    for pattern, order in _PATTERNS:
        for m in pattern.finditer(text):
            a, b = (re.sub(r"^the\s+", "", m[g].strip(), flags=re.I) for g in "ab")
            if order == "paren" and (len(a) < len(b) and not _is_acronym(b) or _is_acronym(a)):
                a, b = b, a  # "VW (Volkswagen)": the longer, non-acronym name is the name
            if (a.lower() == b.lower() or b.lower() in _NOT_ALIASES
                    or a.split()[0].lower() in _NOT_ALIASES - {"it"}):
                continue
            if (b, a) in seen or (b, a.lower()) in seen:
                continue
            pronoun = _PRONOUNS.get(a.lower())
            if pronoun is None and a.lower() == "it":
                continue
            seen.add((b, a if pronoun is None else a.lower()))
            out.append(Alias(b, a, pronoun))
    return sorted(out, key=lambda x: text.find(x.alias))
