"""What extraction proposes: the `Candidate` schema (also the model's structured output), the
check of a model's answer before it reaches the promotion gate, and the system prompt of model
extraction (`EXTRACTION_PROMPT`, paired with `ExtractionResult`).

The prompt covers the same categories as the rule extractor (corrections with and without a
marker, the user's organisation, standing instructions, named people and pets, identifiers,
statements buried in a longer message, several statements in one) and the entities and
relations a message names, with one short example of each; what the model returns is validated
by `candidates_from_model_output` as any model output is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema

from langgraph_typed_memory.extraction.lexicon import EntityType, Pronoun
from langgraph_typed_memory.schemas import MAX_TEXT_CHARS, check_json_value

__all__ = ["Candidate", "ExtractionResult", "Link", "NamedThing", "ValidatedCandidates",
           "candidates_from_model_output", "checked", "EXPLICIT_CONFIDENCE", "HEDGED_CONFIDENCE",
           "SNAKE", "EXTRACTION_PROMPT"]

M = TypeVar("M", bound=BaseModel)
"""A model output schema (`_parsed`)."""
SNAKE = r"^[a-z][a-z0-9_]*$"
EXPLICIT_CONFIDENCE = 0.9  # a plain first-person statement
HEDGED_CONFIDENCE = 0.6  # "I think", "maybe": below the gate's default fact threshold (0.7)


class Candidate(BaseModel):
    """A candidate memory from `extract_rules` or a model; field docstrings are what it reads.

    Example:
        >>> Candidate(kind="fact", subject="user", predicate="home_city", value="Lyon",
        ...           content="The user lives in Lyon.", confidence=0.9,
        ...           grounding="I live in Lyon.").correction
        False
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True,
                              json_schema_extra={"description": "A memory the user stated."})

    kind: Literal["preference", "fact", "episode"]
    """"preference": a standing instruction on how to answer (format, language, tone, name,
    timezone, units...); "fact": a lasting fact about the user; "episode": work they finished."""
    key: str | None = Field(default=None, pattern=SNAKE, max_length=64)
    """Preferences only (required): snake_case setting key, e.g. output_format, language, tone."""
    subject: str | None = Field(default=None, min_length=1, max_length=256)
    """Facts only, required there: the entity the fact is about; "user" for the speaker."""
    predicate: str | None = Field(default=None, pattern=SNAKE, max_length=64)
    """Facts only, required there: snake_case relation (home_city, employer, pet, birthday)."""
    content: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    """One standalone third-person sentence, e.g. "The user lives in Lyon."."""
    value: Any = None
    """The short structured value ("Lyon", "json", "French"); for a correction, the new one."""
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    """0.9 when the user states it plainly; 0.6 when hedged ("I think", "maybe", "probably")."""
    grounding: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    """The exact words of the user's message this comes from, copied verbatim."""
    correction: bool = False
    """true when the user corrects or updates an earlier statement ("actually", "not X
    anymore", "switched to", or simply a new value for the same thing)."""
    replaces: str | None = Field(default=None, min_length=1, max_length=512)
    """For a correction: the old value exactly as the user said it earlier ("green tea" in
    "I've gone off green tea, it's oolong now"); a fact that names it may omit subject and
    predicate (they are taken from the memory that holds the old value)."""
    stateful: bool | None = None
    """Facts: true when the subject has one value for this predicate at a time (home city,
    employer, manager, "my favourite X"), so a new value replaces the old."""
    scope: Literal["user", "tenant"] = "user"
    """"tenant" for a fact about the user's organisation as a whole ("we host on Azure",
    "our release ships on Tuesdays"): it waits for a second person to confirm it."""
    rule: SkipJsonSchema[str | None] = Field(default=None, max_length=120, exclude=True)
    """The id of the extraction rule that proposed it (left out of the model's schema and of
    dumps); the extract node records it on the memory as `proposed_by`: "rule:<id>"."""

    @model_validator(mode="after")
    def _fits_kind(self) -> Candidate:
        check_json_value(self.value, "candidate")  # raises InvalidRecord, a ValueError
        if self.kind == "preference" and self.key is None:
            raise ValueError("a preference candidate needs a key, e.g. 'output_format'")
        if self.kind == "fact" and (self.subject is None or self.predicate is None) and (
                self.replaces is None):
            raise ValueError("a fact candidate needs a subject and a predicate")
        return self


class NamedThing(BaseModel):
    """A person, organisation, place, pet or project the message names (the model's part of
    entity memory; the store resolves it to a stable entity).

    Example:
        >>> NamedThing(name="Lena", type="person", role="sister", pronoun="she").role
        'sister'
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name: str = Field(min_length=1, max_length=120)
    """The name exactly as the message writes it ("Lena", "Volkswagen", "platform team")."""
    type: EntityType | None = None
    """person, organisation, place, pet or project; null when the message does not tell."""
    aliases: list[str] = Field(default_factory=list, max_length=8)
    """Other names the message gives it ("VW" in "Volkswagen (VW)"), as written."""
    pronoun: Pronoun | None = None
    """she, he, they or it, when the message refers to it so."""
    role: str | None = Field(default=None, pattern=SNAKE, max_length=40)
    """What it is to the speaker, when the message says: sister, manager, friend, dog."""


class Link(BaseModel):
    """A relation the message states between named things (or the speaker).

    Example:
        >>> Link(subject="Sarah", relation="leads", object="platform team").relation
        'leads'
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    subject: str = Field(min_length=1, max_length=120)
    """A named thing's name as in `entities`, or "user" for the speaker."""
    relation: str = Field(pattern=SNAKE, max_length=40)
    """snake_case: works_at, lives_in, reports_to, leads, member_of, married_to, located_in,
    works_as (the object a job)."""
    object: str = Field(min_length=1, max_length=120)
    """A named thing's name, "user", or for works_as the job."""


class ExtractionResult(BaseModel):
    """The schema to pass to `model.with_structured_output(ExtractionResult)`.

    Example:
        >>> ExtractionResult().candidates, ExtractionResult().entities
        ([], [])
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True,
                              json_schema_extra={"description": "Memories in the user's message."})

    candidates: list[Candidate] = Field(default_factory=list)
    """Every durable preference or fact the user stated in this message; [] when none."""
    entities: list[NamedThing] = Field(default_factory=list)
    """Every person, organisation, place, pet or project the message names; [] when none."""
    relations: list[Link] = Field(default_factory=list)
    """The relations the message states between them (or the speaker, "user")."""


@dataclass(frozen=True, slots=True)
class ValidatedCandidates:
    """What survived validation of a model's output, and how many items were dropped and why.

    Example:
        >>> ValidatedCandidates(candidates=[], dropped=0).reasons
        []
    """

    candidates: list[Candidate]
    dropped: int
    reasons: list[str] = field(default_factory=list)
    """One short reason per dropped item: "item 2: invalid", "item 3: ungrounded"."""
    entities: list[NamedThing] = field(default_factory=list)
    """The named things whose name (and aliases) the message holds."""
    relations: list[Link] = field(default_factory=list)
    """The relations both of whose ends are the speaker or a kept named thing."""


def candidates_from_model_output(result: ExtractionResult | Mapping[str, Any] | None, text: str
                                 ) -> ValidatedCandidates:
    """Validate a model's structured output item by item; never raises.

    `result`: an `ExtractionResult`, a dict `{"candidates": [...]}`, or the `include_raw=True`
    form `{"parsed": ...}`. Invalid items (unknown kind, missing key, NaN or out-of-range
    confidence: nothing is clamped) and ungrounded ones (grounding not in `text`, ignoring case
    and whitespace) are dropped and counted; kept groundings become the exact span of `text`.

    Example:
        >>> fact = {"kind": "fact", "subject": "user", "predicate": "home_city",
        ...         "value": "Lyon", "content": "The user lives in Lyon.", "confidence": 0.9}
        >>> out = candidates_from_model_output({"candidates": [
        ...     {**fact, "grounding": "i LIVE  in lyon"}, {**fact, "grounding": "I live in Paris"},
        ...     {**fact, "confidence": 1.5, "grounding": "I live in Lyon"}]}, "Hi! I live in Lyon.")
        >>> [c.grounding for c in out.candidates], out.dropped, out.reasons
        (['I live in Lyon'], 2, ['item 1: ungrounded', 'item 2: invalid'])
    """
    if isinstance(result, Mapping) and "parsed" in result and "candidates" not in result:
        result = result["parsed"]
    if result is None:  # the model answered in prose instead of calling the schema's tool
        return ValidatedCandidates([], 1, ["output: no structured answer"])
    items: Any = getattr(result, "candidates", None)
    items = result.get("candidates") if isinstance(result, Mapping) else items
    if not isinstance(items, (list, tuple)):
        return ValidatedCandidates([], 1, ["output: no list of candidates"])
    kept: list[Candidate] = []
    reasons: list[str] = []
    for i, item in enumerate(items):
        candidate = _parsed(Candidate, item)
        if candidate is None:
            reasons.append(f"item {i}: invalid")
            continue
        span = _span(candidate.grounding, text)
        if span is None:
            reasons.append(f"item {i}: ungrounded")
        else:
            kept.append(candidate.model_copy(update={"grounding": span}))
    things = _said_things(_items(result, "entities"), text, reasons)
    names = {n.lower() for t in things for n in (t.name, *t.aliases)} | {"user"}
    links = []
    for i, item in enumerate(_items(result, "relations")):
        link = _parsed(Link, item)
        if link is None:
            reasons.append(f"relation {i}: invalid")
            continue
        if link.subject.lower() in names and (
                link.object.lower() in names or link.relation == "works_as"):
            links.append(link)
        else:
            reasons.append(f"relation {i}: names no entity of the message")
    return ValidatedCandidates(kept, len(reasons), reasons, things, links)


def _parsed(schema: type[M], item: Any) -> M | None:
    """`item` (a dict, or an instance) as a valid `schema`, else None."""
    try:
        return schema.model_validate(item.model_dump() if isinstance(item, schema) else item)
    except (ValidationError, ValueError, TypeError):
        return None


def checked(**fields: Any) -> list[Candidate]:
    """`[Candidate(**fields)]`, or `[]` when the schema refuses them (a predicate not in
    snake_case, a lone surrogate in the value): what the rules propose is checked too.

    Example:
        >>> checked(kind="fact", subject="user", predicate="Home City", value="Lyon",
        ...         content="The user lives in Lyon.", confidence=0.9, grounding="Lyon")
        []
    """
    found = _parsed(Candidate, fields)
    return [found] if found is not None else []


def _items(result: Any, name: str) -> list[Any]:
    """The list `name` of a structured answer (a model or a mapping); [] when absent."""
    items = result.get(name) if isinstance(result, Mapping) else getattr(result, name, None)
    return list(items) if isinstance(items, (list, tuple)) else []


def _span(words: str, text: str) -> str | None:
    """`words` as `text` writes them (case and spacing aside), else None."""
    parts = words.strip(" \t\n\"'\u201c\u201d").split()
    span = re.search(r"\s+".join(map(re.escape, parts)), text, re.I) if parts else None
    return span.group() if span is not None else None


def _said_things(items: list[Any], text: str, reasons: list[str]) -> list[NamedThing]:
    """The named things whose name the message holds, with the aliases it holds, as
    written; the others are dropped with a reason."""
    kept = []
    for i, item in enumerate(items):
        thing = _parsed(NamedThing, item)
        if thing is None:
            reasons.append(f"entity {i}: invalid")
            continue
        name = _span(thing.name, text)
        if name is None:
            reasons.append(f"entity {i}: ungrounded")
            continue
        aliases = [a for a in (_span(a, text) for a in thing.aliases) if a and a != name]
        kept.append(thing.model_copy(update={"name": name, "aliases": aliases}))
    return kept


EXTRACTION_PROMPT = """\
Extract from ONE message written by the user what is worth remembering in later conversations. \
Earlier messages may be shown for context: extract nothing from them, but use them to see what \
a correction corrects.
- preference: a standing instruction on how to answer; `key` in snake_case (output_format, \
language, tone, name, timezone, date_format, units, or instruction_<short_slug> for any other \
standing request such as "stop adding emojis") and `value`.
- fact: a lasting fact about the user or their world; `subject` ("user" for the speaker, a \
person's or pet's name, "organisation" for the user's company or team), `predicate` in \
snake_case (home_city, employer, occupation, manager_name, brother_name, email, uses_for_ci...), \
`value`; `stateful`: true when there is one value at a time (home city, manager, the port a \
service listens on), false when values add up (allergies, hobbies); `scope`: "tenant" only for \
facts about the organisation as a whole ("we host everything on Azure").
- episode: only when the user reports finishing a piece of work, summarized in `content`.
A preference is a request TO YOU, the assistant, about how to answer or behave; advice, \
encouragement or small talk between people ("never give up", "thanks for the tip") is none. \
A fact is true of its subject and lasting, with a value of the right type (a job is a job; \
a pet is not a partner); a mood, a plan for tonight or a hypothetical is none.
entities: every person, organisation, place, pet or project the message names: `name` as \
written, `type`, `aliases` (other names it gives: "VW" in "Volkswagen (VW)"), `pronoun`, \
`role` (what it is to the user: sister, manager, dog). Never a pronoun, a common noun, a \
language or a nationality.
relations: what the message says ties them: `subject` and `object` a name from entities or \
"user" for the speaker, `relation` in snake_case (works_at, lives_in, reports_to, leads, \
member_of, married_to, located_in; works_as with the job as `object`).
Corrections and updates: `correction` true whenever the message changes something said before, \
with or without a marker ("actually", "scratch that", "not X anymore", "switched to", "these \
days", or simply a new value for the same thing), the new `value`, and `replaces`: the old \
value exactly as the user said it earlier (omit subject and predicate if you cannot tell them).
Several statements in one message give several candidates; a statement buried in a longer \
message counts like any other.
Never extract greetings, thanks, small talk, questions, one-off requests, hypotheticals, what the \
user says is NOT true, or what the assistant said. `content`: one standalone third-person \
sentence ("The user lives in Lyon."); `grounding`: copied verbatim from the message; \
`confidence`: 0.9 when stated plainly, 0.6 when hedged ("I think", "maybe"). Nothing to \
remember: {"candidates": [], "entities": [], "relations": []}.
Examples (message -> candidates):
"Actually I've gone off green tea, it's oolong these days." -> fact subject user, predicate \
favourite_tea, value "oolong", replaces "green tea", correction true, stateful true.
"Small update: my team moved me to the Austin office." -> fact subject user, predicate \
work_location, value "Austin", correction true, stateful true.
"We use Jenkins for CI, self-hosted." -> fact subject organisation, predicate uses_for_ci, \
value "Jenkins", scope tenant, stateful true.
"Going forward, could you always put a TL;DR at the top?" -> preference key \
instruction_tldr_at_top, value "put a TL;DR at the top".
"My brother Tom is a dentist in Cork." -> fact user brother_name "Tom" (stateful); fact \
subject Tom, predicate occupation, value "dentist in Cork"; entities Tom (person, he, role \
brother), Cork (place); relations Tom works_as "dentist", Tom lives_in Cork.
"The staging db listens on 5433." -> fact subject user, predicate staging_db_port, value \
"5433", stateful true.
"Before I forget, some background: I teach chemistry, which is why I ask." -> fact subject \
user, predicate occupation, value "chemistry teacher"."""
"""System prompt for model extraction; pair it with `ExtractionResult`."""
