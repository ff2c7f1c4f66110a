"""One pydantic schema per memory kind, and the pure functions that validate a value.

The store validates every typed write against its kind's schema before any I/O. Fields the
store computes (status, supersession pointers, hashes, access counters) are refused when a
caller supplies them.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from langgraph_typed_memory.errors import InvalidRecord, StatusNotAllowed, shown
from langgraph_typed_memory.namespaces import Kind

__all__ = [
    "PolicyMemory",
    "PreferenceMemory",
    "FactMemory",
    "EpisodeMemory",
    "ProcedureMemory",
    "ObservationMemory",
    "EntityMemory",
    "SCHEMAS",
    "COMPUTED_FIELDS",
    "MAX_TEXT_CHARS",
    "MAX_VALUE_DEPTH",
    "MAX_JSON_INT",
    "MIN_JSON_INT",
    "MAX_RUN_ID_CHARS",
    "ValidatedRecord",
    "validate_record",
    "check_json_value",
    "content_hash",
    "stored_value",
]

MAX_TEXT_CHARS = 32_000
"""Longest text field accepted; longer content belongs in a document store, not memory."""

MAX_VALUE_DEPTH = 64
"""The deepest a stored value may nest dicts and lists within one another (the value itself
is the first level). Far below what the JSON encoders and Python's recursion limit bear
(orjson stops at 254 levels, pydantic's serializer and SQLite's JSON functions not much
further), and far beyond any record's shape."""
MAX_JSON_INT = 2**63 - 1
MIN_JSON_INT = -(2**63)
"""The integers a value may hold: 64-bit, what both backends store and read back exactly
(SQLite's JSON reads wider ones back as floats; Python will not print one of more than 4,300
digits)."""
MAX_RUN_ID_CHARS = 256
"""Longest run id (`source_run_id`, `promote(run_id=...)`): it is indexed, and Postgres
bounds an index entry (2,704 bytes)."""

COMPUTED_FIELDS = frozenset(
    {
        "status",
        "superseded_by",
        "content_hash",
        "contradicts",
        "needs_review",
        "last_accessed_at",
        "access_count",
        "created_at",
        "updated_at",
    }
)
"""Fields the store computes; a caller that supplies one gets `StatusNotAllowed`."""

Text = Field(min_length=1, max_length=MAX_TEXT_CHARS)
Confidence = Field(default=1.0, ge=0.0, le=1.0)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    source_run_id: str | None = Field(default=None, max_length=MAX_RUN_ID_CHARS)
    """The run that produced the memory (provenance)."""
    source_turn: int | None = Field(default=None, ge=0, le=2**31 - 1)
    """The turn of that run."""
    proposed_by: str | None = Field(default=None, max_length=128)
    """What proposed it through the promotion gate: `rule:<id>`, `model`, a tool's name."""
    occurred_at: datetime | None = None
    """When the remembered thing happened; freshness counts from here (default: write time)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form filterable metadata (project, repo...): filters, never scope."""

    @field_validator("occurred_at")
    @classmethod
    def _plausible_time(cls, value: datetime | None) -> datetime | None:
        if value is not None and not (1970 <= value.year <= 2200):
            raise ValueError(f"timestamp {value.isoformat()} is outside 1970-2200")
        return value


def _shown_in_full(value: Any) -> Any:
    """A policy's or preference's value, which every prompt of its scope shows in full, if
    its JSON is at most `MAX_TEXT_CHARS` characters.

    Example:
        >>> _shown_in_full({"tone": "terse"})
        {'tone': 'terse'}
        >>> _shown_in_full("w " * 20_000)
        Traceback (most recent call last):
        ...
        ValueError: the value is 40,002 characters as JSON; ...
    """
    size = len(json.dumps(value, ensure_ascii=False, default=str))
    if size > MAX_TEXT_CHARS:
        raise ValueError(
            f"the value is {size:,} characters as JSON; a policy or preference is shown in "
            f"full in every prompt of its scope, so it may hold {MAX_TEXT_CHARS:,} at most "
            "(keep longer text in a fact or an episode, found when relevant)")
    return value


class PolicyMemory(_Record):
    """A tenant rule (compliance, guardrail, approval). Authored explicitly, never promoted.

    Example:
        >>> PolicyMemory(value={"max_auto_approve_usd": 500}, created_by="ops").version
        1
    """

    key: str | None = Field(default=None, min_length=1, max_length=128)
    """The rule's key; defaults to the store key."""
    value: dict[str, Any]
    """The rule's parameters as a JSON object."""
    policy_type: Literal["compliance", "guardrail", "approval", "other"] = "other"
    version: int = Field(default=1, ge=1)
    effective_from: datetime | None = None
    effective_until: datetime | None = None
    created_by: str = Field(min_length=1, max_length=256)
    """Who authored the rule."""

    _value_size = field_validator("value")(_shown_in_full)


class PreferenceMemory(_Record):
    """A user setting, read every turn. A new value for the same key supersedes the old one.

    Example:
        >>> PreferenceMemory(value="json", source="user_stated").confidence
        1.0
    """

    key: str | None = Field(default=None, min_length=1, max_length=128)
    """The setting's key; defaults to the store key."""
    value: Any
    """The setting's value (any JSON)."""
    source: Literal["user_stated", "inferred", "admin_set"] = "user_stated"
    confidence: float = Confidence

    _value_size = field_validator("value")(_shown_in_full)


class FactMemory(_Record):
    """A durable assertion with provenance, found by hybrid retrieval.

    Example:
        >>> FactMemory(subject="acme", predicate="region", content="Acme runs in eu-west-1").subject
        'acme'
    """

    subject: str = Field(min_length=1, max_length=256)
    """The entity the fact is about."""
    predicate: str = Field(min_length=1, max_length=64)
    """The kind of fact (e.g. 'region', 'fiscal_year_start')."""
    content: str = Text
    """The prose the model reads."""
    value: Any = None
    """An optional structured value."""
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)
    expires_at: datetime | None = None


class EpisodeMemory(_Record):
    """A summary of completed work or of a period of conversation.

    Example:
        >>> EpisodeMemory(title="Refund #42", summary="Approved a $30 refund.").compaction_tier
        0
    """

    task_type: str = Field(default="conversation", min_length=1, max_length=64)
    title: str = Field(min_length=1, max_length=512)
    summary: str = Text
    outcome: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    key_steps: list[str] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list, max_length=8)
    """The turns that led to this one, oldest first: indexed for full-text search only (a
    question often echoes the turn before the answer), never embedded or put in the prompt."""
    artifacts: dict[str, Any] | None = None
    compaction_tier: Literal[0, 1, 2] = 0
    """0 raw, 1 weekly group, 2 monthly group."""
    compact_group: str | None = None
    confidence: float = Confidence
    salience: float | None = Field(default=None, ge=0.0, le=1.0)
    """How much a logged turn matters (corrections, stated facts and failures high)."""


class ProcedureMemory(_Record):
    """A learned rule in plain language, injected verbatim into the prompt. No decay.

    Example:
        >>> ProcedureMemory(rule="Always confirm the order id before refunding.").confirmation_count
        0
    """

    rule: str = Text
    source_observation: str | None = None
    confirmation_count: int = Field(default=0, ge=0)
    last_applied_at: datetime | None = None
    confidence: float = Confidence


class ObservationMemory(_Record):
    """A detected behavioural pattern, candidate for promotion to a procedure.

    Example:
        >>> ObservationMemory(category="format", quote="user reformats dates").occurrences
        1
    """

    category: str = Field(min_length=1, max_length=64)
    agent: str | None = None
    quote: str = Text
    evidence: list[str] = Field(default_factory=list)
    occurrences: int = Field(default=1, ge=1)
    confidence_level: Literal["low", "medium", "high"] = "low"
    promotion_candidate: bool = False
    feedback: Literal["correct", "wrong", "dismissed"] | None = None
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)


class EntityMemory(_Record):
    """A named thing of a scope (a person, an organisation, a place, a pet, a project), keyed
    by its stable id, with the other names it goes by and the relations it holds. Written by
    the extract node through the gate; a turn that teaches something new of it (an alias, a
    role, a relation) supersedes the record, the earlier version kept in its history.

    Example:
        >>> EntityMemory(name="Volkswagen", type="organisation", aliases=["VW"]).links
        []
    """

    name: str = Field(min_length=1, max_length=256)
    """The name it was first met by ("Volkswagen", "Lena", "the platform team")."""
    type: Literal["person", "organisation", "place", "pet", "project"] | None = None
    aliases: list[str] = Field(default_factory=list, max_length=64)
    """Other names a turn said it goes by ("VW"), and a full name met later ("Sarah Chen")."""
    roles: list[tuple[str, str]] = Field(default_factory=list, max_length=64)
    """(role, whose): ("sister", "user") is the speaker's sister; whose is an entity id
    otherwise."""
    affiliations: list[str] = Field(default_factory=list, max_length=64)
    """Departments and groups it belongs to ("accounting")."""
    pronoun: Literal["she", "he", "they", "it"] | None = None
    links: list[tuple[str, str]] = Field(default_factory=list, max_length=256)
    """The relations it holds as (relation, entity id): ("leads", <the platform team's id>);
    "user" is the speaker of a chat. One object at a time for a relation that holds one
    (lives in, works at, reports to)."""
    confidence: float = Confidence


SCHEMAS: dict[str, type[_Record]] = {
    "policy": PolicyMemory,
    "preference": PreferenceMemory,
    "fact": FactMemory,
    "episode": EpisodeMemory,
    "procedure": ProcedureMemory,
    "observation": ObservationMemory,
    "entity": EntityMemory,
}


@dataclass(frozen=True, slots=True)
class ValidatedRecord:
    """What the store needs from a validated typed value."""

    value: dict[str, Any]
    """The normalized value (defaults filled, JSON-ready) that `get` returns."""
    search_text: str
    """Text indexed for lexical (BM25) search."""
    embed_text: str | None
    """Text embedded for vector search (None: the kind is not vector-indexed)."""
    content_hash: str
    confidence: float
    occurred_at: datetime | None


_SPACE = re.compile(r"\s+")


def content_hash(*parts: str) -> str:
    """Hash of normalized text: case, Unicode form and whitespace do not matter.

    Example:
        >>> content_hash("Hello  World") == content_hash("hello world")
        True
    """
    text = "\x1f".join(_SPACE.sub(" ", unicodedata.normalize("NFKC", p)).strip().lower()
                       for p in parts)
    return hashlib.sha256(text.encode()).hexdigest()


def check_json_value(value: Any, where: str, path: str = "value") -> None:
    """Refuse what no backend can store faithfully: NUL bytes, lone surrogates, NaN/inf,
    integers outside 64 bits (`MIN_JSON_INT`..`MAX_JSON_INT`), nesting deeper than
    `MAX_VALUE_DEPTH`, and anything that is not JSON.

    Example:
        >>> check_json_value({"tags": ["a", {"n": 2**63 - 1}]}, "put 'k' in ('docs',)")
        >>> check_json_value({"n": 2**64}, "put")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidRecord: put: value.n is 18446744073709551616, ...

    Raises:
        InvalidRecord: naming the path of the bad element.
    """
    _check_json(value, where, path, 0)


def stored_value(value: Any) -> Any:
    """A JSON value as every backend stores it: -0.0 becomes 0.0 (Postgres' JSON numbers
    have no signed zero, and both backends read back the same value; `-0.0 == 0.0`, so the
    value read back still equals the one written). Returns `value` itself when it holds no
    -0.0.

    Example:
        >>> stored_value({"x": -0.0, "l": [1, -0.0]})
        {'x': 0.0, 'l': [1, 0.0]}
        >>> v = {"x": 0.5}
        >>> stored_value(v) is v
        True
    """
    if isinstance(value, float):
        return 0.0 if value == 0.0 else value
    if isinstance(value, dict):
        if not any(_has_negative_zero(v) for v in value.values()):
            return value
        return {k: stored_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if not any(_has_negative_zero(v) for v in value):
            return value
        return [stored_value(v) for v in value]
    return value


def stored_json(value: Any) -> str:
    """`stored_value(value)` as compact JSON text. The value is walked for a -0.0 only when
    its text holds "-0.0" (rarely: a write's value is otherwise dumped once, in C).

    Example:
        >>> stored_json({"x": -0.0, "note": "caf\u00e9"}), stored_json([1.5, "-0.0"])
        ('{"x":0.0,"note":"café"}', '[1.5,"-0.0"]')
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if "-0.0" not in text:
        return text
    return json.dumps(stored_value(value), ensure_ascii=False, separators=(",", ":"))


def _has_negative_zero(value: Any) -> bool:
    if isinstance(value, float):
        return value == 0.0 and math.copysign(1.0, value) < 0
    if isinstance(value, dict):
        return any(_has_negative_zero(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_negative_zero(v) for v in value)
    return False


def _check_json(value: Any, where: str, path: str, depth: int) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidRecord(f"{where}: {path} contains a NUL byte; remove it.")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidRecord(
                f"{where}: {path} contains a lone surrogate ({exc.object[exc.start:exc.end]!r}); "
                "pass valid Unicode text."
            ) from None
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        if not MIN_JSON_INT <= value <= MAX_JSON_INT:
            raise InvalidRecord(
                f"{where}: {path} is {shown(value, 40)}, an integer outside the 64-bit range "
                f"{MIN_JSON_INT}..{MAX_JSON_INT} that every backend stores exactly; store it "
                "as a string (or as a float if an approximation will do)."
            )
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidRecord(f"{where}: {path} is {value}; use a finite number.")
    elif isinstance(value, (dict, list, tuple)):
        if depth >= MAX_VALUE_DEPTH:
            raise InvalidRecord(
                f"{where}: {_cut(path)} is nested more than {MAX_VALUE_DEPTH} levels deep "
                "(dicts and lists within one another); flatten it, or store the deep part as "
                "a JSON string."
            )
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise InvalidRecord(f"{where}: {path} has a non-string key {shown(k)}.")
                _check_json(k, where, f"{path} key", depth + 1)
                _check_json(v, where, f"{path}.{k}", depth + 1)
        else:
            for i, v in enumerate(value):
                _check_json(v, where, f"{path}[{i}]", depth + 1)
    else:
        raise InvalidRecord(
            f"{where}: {path} is a {type(value).__name__}, which is not JSON; "
            "use dicts, lists, strings, numbers, booleans or None."
        )


def _cut(path: str, width: int = 120) -> str:
    """A long path for a message: its start and its end."""
    return path if len(path) <= width else f"{path[: width // 2]}...{path[-width // 2 :]}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def validate_record(
    kind: Kind, key: str, value: Any, namespace: tuple[str, ...]
) -> ValidatedRecord:
    """Validate a typed value; return its normalized form and derived fields.

    Raises:
        StatusNotAllowed: the value sets a computed field.
        InvalidRecord: the value fails the kind's schema (message names field and value).
    """
    where = f"{kind} {key!r} in {namespace!r}"
    if not isinstance(value, dict):
        raise InvalidRecord(f"{where}: the value must be a dict, got {type(value).__name__}.")
    computed = sorted(COMPUTED_FIELDS & value.keys())
    if computed:
        raise StatusNotAllowed(
            f"{where}: {', '.join(computed)} {'is' if len(computed) == 1 else 'are'} computed "
            "by the store and cannot be set by a caller; remove "
            f"{'it' if len(computed) == 1 else 'them'} from the value."
        )
    check_json_value(value, where)
    try:
        record = SCHEMAS[kind].model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}"
            + (f" (got {err['input']!r:.80})" if err["type"] != "missing" else "")
            for err in exc.errors()
        )
        raise InvalidRecord(f"{where} does not match the {kind} schema: {problems}.") from None
    fields = record.__dict__  # the declared fields (extra ones are refused); a missing
    # attribute would go through pydantic's __getattr__, ~10 us a record
    own_key = fields.get("key")
    if own_key is not None and own_key != key:
        raise InvalidRecord(
            f"{where}: value key {own_key!r} differs from the store key {key!r}; "
            "drop the field or use the same key."
        )
    normalized = record.model_dump(mode="json")
    if "key" in normalized:
        normalized["key"] = key
    search, embed, hashed = _derived_texts(kind, key, record)
    return ValidatedRecord(
        value=normalized,
        search_text=search,
        embed_text=embed,
        content_hash=content_hash(*hashed),
        confidence=float(fields.get("confidence", 1.0)),
        occurred_at=record.occurred_at,
    )


def _derived_texts(kind: str, key: str, r: Any) -> tuple[str, str | None, tuple[str, ...]]:
    if kind == "fact":
        return f"{r.subject} {r.predicate} {r.content}", r.content, (r.subject, r.predicate,
                                                                    r.content)
    if kind == "episode":
        body = " ".join([r.title, r.summary, *r.key_steps, r.outcome or "", *r.context]).strip()
        return body, f"{r.title}\n{r.summary}", (r.title, r.summary)
    if kind == "observation":
        return f"{r.category} {r.quote}", r.quote, (r.category, r.quote)
    if kind == "procedure":
        return r.rule, None, (r.rule,)
    if kind == "entity":  # looked up by scope, never ranked or embedded
        described = json.dumps([r.name, r.type, r.aliases, r.roles, r.affiliations, r.pronoun,
                                r.links], sort_keys=True)
        return " ".join([r.name, *r.aliases]), None, (key, described)
    return f"{key} {_text(r.value)}", None, (key, _text(r.value))
