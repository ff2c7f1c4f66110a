"""The promotion gate's decisions, as pure functions.

A *proposal* is a candidate memory from extraction, a tool or application code. The gate
classifies and scopes it, verifies it against per-kind thresholds, deduplicates it by content
hash within its scope, and decides whether it supersedes or contradicts what is current. The
store executes the decisions of a whole batch in one transaction (`store.promote`).

Stateful predicates (a person has one home city, one employer) are keyed by subject and
predicate, so a new value supersedes the old one; other predicates (allergies, pets) are keyed
by content, so values accumulate.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from langgraph_typed_memory.config import UNIT, Options, one_of, option
from langgraph_typed_memory.errors import ConfigurationError, InvalidRecord, StatusNotAllowed
from langgraph_typed_memory.namespaces import Scope
from langgraph_typed_memory.schemas import COMPUTED_FIELDS, check_json_value, content_hash

__all__ = [
    "Proposal",
    "GateConfig",
    "normalize_gate",
    "Current",
    "Decision",
    "Outcome",
    "target_scope",
    "record_key",
    "decide",
    "DEFAULT_STATEFUL_PREDICATES",
    "TURN",
]

TURN = "turn"
"""`task_type` of an episode that logs one user turn: kept without task completion."""

DEFAULT_STATEFUL_PREDICATES = frozenset(
    {
        "name", "home_city", "city", "country", "address", "employer", "occupation", "job",
        "title", "role", "email", "phone", "timezone", "birthday", "age", "status",
        "relationship_status", "spouse", "partner", "manager", "team", "plan", "tier",
        "region", "language", "dog_name", "cat_name", "pet_name", "fiscal_year_start",
    }
)


class Proposal(BaseModel):
    """A candidate memory offered to the gate.

    Example:
        >>> Proposal(kind="fact", subject="user", predicate="home_city",
        ...          content="The user lives in Lyon.", value="Lyon", confidence=0.9).kind
        'fact'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["policy", "preference", "fact", "episode", "procedure", "observation",
                  "entity"]
    key: str | None = Field(default=None, max_length=128)
    """Preference key (snake_case); an entity's stable id."""
    subject: str | None = Field(default=None, max_length=256)
    predicate: str | None = Field(default=None, max_length=64)
    content: str = Field(default="", max_length=32_000)
    value: Any = None
    """A preference's or fact's value; an entity's fields (name, type, aliases, roles,
    affiliations, pronoun, links: see `schemas.EntityMemory`)."""
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)
    grounding: str | None = Field(default=None, max_length=32_000)
    correction: bool = False
    replaces: str | None = Field(default=None, min_length=1, max_length=512)
    """A correction's old value ("not green tea anymore": "green tea"). The gate supersedes
    the newest current fact or preference holding it (taking its key, subject and predicate)
    or, failing that, the newest logged turn that said it; with neither, it rejects."""
    stateful: bool | None = None
    """Facts: True when the predicate holds one value per subject ("my manager is ..."), so
    a new value supersedes the old; None: `GateConfig.stateful_predicates` decides."""
    occurred_at: datetime | None = None
    """When the remembered thing happened (an import passes the message's time); default:
    when it is written. Freshness counts from here."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Filterable metadata stored with the record (never scope)."""
    scope: Literal["user", "agent", "tenant"] = "user"
    """The narrowest scope that fits; "tenant" only for facts about the tenant itself."""
    source: str | None = Field(default=None, max_length=256)
    """Who observed it (a user id, a tool): tenant facts need two independent sources."""
    title: str | None = Field(default=None, max_length=512)
    """Episodes: a title (the summary goes in `content`)."""
    outcome: str | None = None
    context: list[str] = Field(default_factory=list, max_length=8)
    """Episodes: the turns that led to it, oldest first (full-text search only)."""
    session_id: str | None = Field(default=None, max_length=256)
    """Episodes: the conversation it happened in (the promote node gives the thread id);
    stored as `metadata.session_id`, which compaction groups a session's episodes by."""
    task_complete: bool = False
    """Episodes promote only when their task completed, or when they log a turn."""
    task_type: str | None = Field(default=None, min_length=1, max_length=64)
    """Episodes: what kind of episode; `"turn"` logs one user turn (see `turns.py`)."""
    salience: float | None = Field(default=None, ge=0.0, le=1.0)
    """Episodes: how much the turn matters (corrections, stated facts, failures high)."""
    artifacts: dict[str, Any] | None = None
    """Episodes: what the work produced; a logged turn keeps the reply in short here."""
    proposed_by: str | None = Field(default=None, min_length=1, max_length=128)
    """What proposed it: `rule:<id>` (the offline rule extractor's rule), `model` (a chat
    model's extraction), a tool's name; None for application code. Kept on the record and
    in the trace, so `typed-memory explain` says which rule wrote a memory."""


SHARING_MODES = ("off", "review")


def _predicates(what: str, value: Any) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigurationError(
            f"{what}={value!r:.80}: give the predicates as a list or set of names.")
    return frozenset(value)


@dataclass(frozen=True, slots=True)
class GateConfig(Options):
    """Thresholds of the gate (pass a dict with these keys, or this class); recorded (as a
    version hash) on every record it writes.

    Example:
        >>> normalize_gate({"fact_min_confidence": 0.8}).fact_min_confidence
        0.8
    """

    what: ClassVar[str] = "gate"
    preference_min_confidence: float = option(0.5, UNIT)
    """Lowest confidence at which a preference is promoted. Default 0.5."""
    fact_min_confidence: float = option(0.7, UNIT)
    """Lowest confidence at which a fact is promoted. Default 0.7."""
    stateful_predicates: frozenset[str] = option(DEFAULT_STATEFUL_PREDICATES, _predicates)
    """Predicates with one current value per subject (a new value supersedes)."""
    supersede_margin: float = option(0.15, UNIT)
    """A new value supersedes unless its confidence is lower than the current one's by more
    than this (then it is a contradiction). Corrections always supersede. Default 0.15."""
    review_threshold: float = option(0.8, UNIT)
    """A contradiction whose stronger side has at least this confidence sets needs_review."""
    tenant_sharing: Literal["off", "review"] = option("off", one_of(
        *SHARING_MODES, fix="use \"off\" (a user's statements about the tenant stay the "
        "user's) or \"review\" (they wait, unseen, for an operator's store.review)"))
    """What becomes of a fact a user's conversation states about the whole tenant ("our
    fiscal year starts in April"). "off" (the default): it is the user's own memory, shown
    to no one else. "review": it is kept for the tenant as a proposal (provisional,
    needs_review), shown to nobody until an operator accepts it (`store.review`); a second
    user saying the same is no approval. Tenant-wide memory is otherwise written by
    `store.put`, or by `store.promote` called for the tenant itself (no user or agent)."""

    @property
    def version(self) -> str:
        """`gate-v1:` and a short hash of the thresholds: each record's policy version."""
        data = json.dumps(
            [self.preference_min_confidence, self.fact_min_confidence,
             sorted(self.stateful_predicates), self.supersede_margin, self.review_threshold]
            + ([self.tenant_sharing] if self.tenant_sharing != "off" else [])
        )
        return "gate-v1:" + hashlib.sha256(data.encode()).hexdigest()[:12]


def normalize_gate(config: GateConfig | Mapping[str, Any] | None) -> GateConfig:
    """A gate configuration from what an app passed (`GateConfig.of`).

    Raises:
        ConfigurationError: unknown key or out-of-range value, named.
    """
    return GateConfig.of(config)


_SLUG = re.compile(r"[^a-z0-9]+")


def _slug(text: str) -> str:
    return _SLUG.sub("_", text.lower()).strip("_")[:100] or "x"


def parse_proposal(raw: Proposal | Mapping[str, Any]) -> Proposal:
    """Validate a proposal; refuse computed fields such as `status`.

    Raises:
        StatusNotAllowed: the proposal sets a field the store computes.
        InvalidRecord: the proposal does not match the schema (names the field).
    """
    if isinstance(raw, Proposal):
        return raw
    if not isinstance(raw, Mapping):
        raise InvalidRecord(f"proposal must be a dict or Proposal, got {type(raw).__name__}.")
    computed = sorted((COMPUTED_FIELDS | {"id", "scope_id", "tenant_id", "user_id", "agent_id"})
                      & raw.keys())
    if computed:
        raise StatusNotAllowed(
            f"proposal sets {', '.join(computed)}: status, scope ids and bookkeeping are decided "
            "by the gate and the caller's scope; remove them."
        )
    check_json_value(dict(raw), "proposal")
    try:
        return Proposal.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidRecord(f"proposal does not match the schema: {problems}.") from None


def target_scope(proposal: Proposal, caller: Scope, sharing: str = "off") -> Scope:
    """The narrowest scope that fits, never wider than the caller's tenant. A fact about the
    tenant is the tenant's when the caller is the tenant itself (no user or agent: an
    operator's `store.promote`), or under `sharing="review"` (as a proposal); a user's or an
    agent's run otherwise keeps it in its own scope.

    Example:
        >>> fact = Proposal(kind="fact", content="x", scope="tenant")
        >>> target_scope(fact, Scope("t", "u"))
        Scope(tenant_id='t', user_id='u', agent_id=None)
        >>> target_scope(fact, Scope("t")) == target_scope(fact, Scope("t", "u"), "review")
        True
    """
    if proposal.scope == "tenant" and proposal.kind == "fact" and (
            sharing == "review" or caller.level == "tenant"):
        return Scope(caller.tenant_id)
    if proposal.scope == "agent" and caller.agent_id is not None:
        return Scope(caller.tenant_id, None, caller.agent_id)
    return own_scope(caller)


def own_scope(caller: Scope) -> Scope:
    """The caller's own scope: its user's, else its agent's, else the tenant's. A user's turn
    log is kept there.

    Example:
        >>> own_scope(Scope("t", "u", "a"))
        Scope(tenant_id='t', user_id='u', agent_id=None)
    """
    if caller.user_id is not None:
        return Scope(caller.tenant_id, caller.user_id)
    if caller.agent_id is not None:
        return Scope(caller.tenant_id, None, caller.agent_id)
    return Scope(caller.tenant_id)


def is_stateful(proposal: Proposal, settings: GateConfig) -> bool:
    """Whether a fact's predicate holds one current value per subject."""
    if proposal.stateful is not None:
        return proposal.stateful and proposal.predicate is not None
    return proposal.predicate is not None and _slug(proposal.predicate) in {
        _slug(p) for p in settings.stateful_predicates
    }


def record_key(proposal: Proposal, settings: GateConfig) -> str:
    """The store key a proposal is written under.

    Preferences: their key; entities: their stable id (so what a later turn teaches of one
    supersedes its record). Stateful facts: subject and predicate (so a new value lands on
    the same key and supersedes). Episodes: a hash of the content and the title (a logged
    turn's title names its speaker and day: the same words said on another day are another
    event, kept beside the first; said again the same day, a repetition). Everything else:
    a hash of the normalized content.

    Example:
        >>> record_key(Proposal(kind="fact", subject="User", predicate="home_city",
        ...                     content="x"), GateConfig())
        'fact:user:home_city'
        >>> said = [record_key(Proposal(kind="episode", title=f"user ({day} May 2026)",
        ...                             content="user: the deploy failed"), GateConfig())
        ...         for day in (4, 4, 11)]
        >>> said[0] == said[1] != said[2]
        True
    """
    if proposal.kind in ("preference", "entity") and proposal.key:
        return proposal.key
    if proposal.kind == "fact" and proposal.subject and is_stateful(proposal, settings):
        return f"fact:{_slug(proposal.subject)}:{_slug(proposal.predicate or '')}"
    if proposal.kind == "episode" and proposal.title:
        return f"episode:{content_hash(proposal.title, proposal_hash(proposal))[:24]}"
    return f"{proposal.kind}:{proposal_hash(proposal)[:24]}"


def proposal_hash(proposal: Proposal) -> str:
    """Content hash used for deduplication."""
    if proposal.kind in ("preference", "entity"):
        return content_hash(proposal.key or "", json.dumps(proposal.value, sort_keys=True))
    return content_hash(proposal.subject or "", proposal.predicate or "", proposal.content)


@dataclass(frozen=True, slots=True)
class Current:
    """The current record at a proposal's key (what the transaction found)."""

    id: str
    content_hash: str
    confidence: float
    status: str
    sources: tuple[str, ...] = ()


Action = Literal["reject", "dedup", "insert", "supersede", "contradict", "confirm"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What the store must do with one proposal."""

    action: Action
    reason: str
    status: str = "active"
    """Status of the row the decision inserts."""
    old_id: str | None = None
    needs_review: bool = False


@dataclass(slots=True)
class Outcome:
    """One proposal's outcome, as it goes into the trace envelope.

    Example:
        >>> Outcome("fact", "m1", "written", "new", key="fact:user:home_city",
        ...         proposed_by="rule:fact.home_city").dict()["outcome"]
        'written'
    """

    kind: str
    id: str | None
    outcome: Literal["written", "deduplicated", "rejected", "superseded", "contradicted",
                     "confirmed"]
    reason: str
    key: str | None = None
    old_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    proposed_by: str | None = None
    """The proposal's `proposed_by` (the rule or model that proposed it)."""

    def dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = {"kind": self.kind, "id": self.id, "outcome": self.outcome, "reason": self.reason,
               "key": self.key}
        if self.old_id:
            out["old_id"] = self.old_id
        if self.proposed_by:
            out["proposed_by"] = self.proposed_by
        return out


def verify(proposal: Proposal, settings: GateConfig, run_id: str | None) -> str | None:
    """Per-kind verification; returns the rejection reason or None."""
    kind = proposal.kind
    if kind == "policy":
        return "policies are authored explicitly (store.put), never promoted"
    if kind in ("procedure", "observation"):
        return f"{kind}s come from maintenance, not from promotion"
    if not math.isfinite(proposal.confidence):
        return "confidence is not finite"
    if kind == "preference":
        if not proposal.key:
            return "a preference needs a key"
        if proposal.value is None:
            return "a preference needs a value"
        if proposal.confidence < settings.preference_min_confidence:
            return (f"confidence {proposal.confidence:.2f} below the preference threshold "
                    f"{settings.preference_min_confidence:.2f}")
        return None
    if kind == "entity":
        if not run_id:
            return "an entity needs a source run"
        if not proposal.key or not isinstance(proposal.value, Mapping) or not str(
                proposal.value.get("name") or "").strip():
            return "an entity needs its id as the key and a value with its name"
        return None
    if kind == "fact":
        if not run_id:
            return "a fact needs a source run"
        if not (proposal.subject and proposal.predicate and proposal.content.strip()):
            return "a fact needs a subject, a predicate and content"
        if proposal.confidence < settings.fact_min_confidence:
            return (f"confidence {proposal.confidence:.2f} below the fact threshold "
                    f"{settings.fact_min_confidence:.2f}")
        return None
    if not proposal.task_complete and proposal.task_type != TURN:
        return "episodes promote on task completion"
    if not proposal.content.strip():
        return "an episode needs a summary (content)"
    return None


def decide(
    proposal: Proposal,
    *,
    scope: Scope,
    current: Current | None,
    settings: GateConfig,
    run_id: str | None,
    source: str,
    digest: str | None = None,
    proposed: bool = False,
) -> Decision:
    """Decide one proposal against the current record at its key (dedup, supersession, status).

    `digest` is the content hash of the record the proposal would write (what the store
    keeps for the current one); default: `proposal_hash`. `proposed`: a tenant fact from a
    user's (or agent's) run under review sharing: it stays provisional and needs review,
    whoever else states it, and never replaces the tenant's current value.

    Example:
        >>> p = Proposal(kind="fact", subject="user", predicate="home_city",
        ...              content="The user lives in Paris.", confidence=0.9)
        >>> old = Current("r1", "h-lyon", 0.9, "active")
        >>> decide(p, scope=Scope("t", "u"), current=old, settings=GateConfig(),
        ...        run_id="run-2", source="u").action
        'supersede'
    """
    reason = verify(proposal, settings, run_id)
    if reason is not None:
        return Decision("reject", reason)
    tenant_fact = proposal.kind == "fact" and scope.level == "tenant"
    digest = proposal_hash(proposal) if digest is None else digest
    if current is not None and current.content_hash == digest:
        if (tenant_fact and not proposed and current.status == "provisional"
                and source not in current.sources):
            return Decision("confirm", "second independent source confirms a tenant fact",
                            old_id=current.id)
        return Decision("dedup", "same content already remembered in this scope",
                        old_id=current.id)
    status = "provisional" if tenant_fact else "active"
    if proposed:
        return Decision("insert" if current is None else "contradict",
                        "a user's proposal for the tenant awaits an operator's review",
                        status="provisional", old_id=current.id if current else None,
                        needs_review=True)
    if current is None:
        why = ("tenant fact awaits a second independent source" if tenant_fact
               else "new memory")
        return Decision("insert", why, status=status)
    clean = proposal.correction or proposal.kind != "fact" or (
        proposal.confidence >= current.confidence - settings.supersede_margin
    )
    if clean:
        why = "correction" if proposal.correction else "newer value for the same key"
        return Decision("supersede", why, status=status, old_id=current.id)
    review = max(proposal.confidence, current.confidence) >= settings.review_threshold
    return Decision(
        "contradict",
        f"conflicts with a more confident current value ({current.confidence:.2f} vs "
        f"{proposal.confidence:.2f}); kept as provisional",
        status="provisional",
        old_id=current.id,
        needs_review=review,
    )
