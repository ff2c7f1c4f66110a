"""Executing the promotion gate: one transaction per batch of proposals (C1-C7).

`prepare` (pure) validates and scopes every proposal before any I/O; `execute` (a plan run
inside the store's write transaction) reads the current record at each proposal's key,
asks `gate.decide`, and writes the decision: insert, deduplicate (repetition count and
evidence), confirm, supersede (old row kept with its pointer), or contradict (links on both
sides, the weaker side provisional, needs_review when important).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from langgraph_typed_memory.errors import TypedMemoryError
from langgraph_typed_memory.gate import (
    Current,
    GateSettings,
    Outcome,
    Proposal,
    decide,
    is_stateful,
    parse_proposal,
    proposal_hash,
    record_key,
    target_scope,
)
from langgraph_typed_memory.lifecycle import on_access
from langgraph_typed_memory.namespaces import Scope, TypedNamespace
from langgraph_typed_memory.schemas import ValidatedRecord, validate_record
from langgraph_typed_memory.store import queries as q
from langgraph_typed_memory.store.protocol import Plan, Sql

if TYPE_CHECKING:
    from langgraph_typed_memory.store.engine import Engine

__all__ = ["PromoteOp", "Prepared", "prepare", "execute"]

WRITTEN: dict[str, Literal["written", "superseded", "contradicted"]] = {
    "insert": "written", "supersede": "superseded", "contradict": "contradicted"
}
MAX_EVIDENCE = 20


class PromoteOp(NamedTuple):
    """Offer proposals to the gate on behalf of a caller's scope."""

    scope: Scope
    proposals: Sequence[Proposal | Mapping[str, Any]]
    run_id: str | None = None
    turn: int | None = None
    source: str | None = None
    """Who observed the proposals (default: the caller's user, else agent, else 'app')."""


@dataclass(slots=True)
class Prepared:
    """A proposal made ready before any I/O."""

    index: int
    proposal: Proposal | None
    rejection: str | None = None
    typed: TypedNamespace | None = None
    key: str | None = None
    record: ValidatedRecord | None = None
    vectors: list[tuple[tuple[str, str], list[float]]] = field(default_factory=list)

    @property
    def embed_text(self) -> str | None:
        return self.record.embed_text if self.record is not None else None


def _value(p: Proposal, run_id: str | None, turn: int | None) -> dict[str, Any]:
    provenance = {"source_run_id": run_id, "source_turn": turn}
    if p.kind == "preference":
        return {"value": p.value, "confidence": p.confidence,
                "source": "user_stated" if p.grounding else "inferred", **provenance}
    if p.kind == "fact":
        return {"subject": p.subject, "predicate": p.predicate, "content": p.content,
                "value": p.value, "confidence": p.confidence, **provenance}
    session = {"metadata": {"session_id": p.session_id}} if p.session_id else {}
    return {"title": p.title or p.content[:80], "summary": p.content, "outcome": p.outcome,
            "context": list(p.context), "confidence": p.confidence, **provenance, **session}


def prepare(op: PromoteOp, settings: GateSettings) -> list[Prepared]:
    """Validate and scope each proposal; a bad one becomes a rejection, not an exception."""
    out = []
    for i, raw in enumerate(op.proposals):
        try:
            proposal = parse_proposal(raw)
        except TypedMemoryError as exc:
            out.append(Prepared(i, None, rejection=str(exc)))
            continue
        scope = target_scope(proposal, op.scope)
        typed = TypedNamespace(scope, proposal.kind)
        key = record_key(proposal, settings)
        prepared = Prepared(i, proposal, typed=typed, key=key)
        if proposal.kind in ("preference", "fact", "episode"):
            try:
                prepared.record = validate_record(
                    proposal.kind, key, _value(proposal, op.run_id, op.turn), typed.namespace()
                )
            except TypedMemoryError as exc:
                prepared.rejection = str(exc)
        out.append(prepared)
    return out


def _sibling(key: str, proposal: Proposal) -> str:
    """Where a contradicting value is kept, beside the current one."""
    return f"{key}~{proposal_hash(proposal)[:10]}"


def _source(op: PromoteOp) -> str:
    return op.source or op.scope.user_id or op.scope.agent_id or "app"


def execute(
    engine: Engine, op: PromoteOp, prepared: list[Prepared], settings: GateSettings
) -> Plan[list[Outcome]]:
    """Decide and write each proposal, in order, inside the caller's transaction."""
    d = engine.dialect
    source = _source(op)
    actor = f"gate:{source}"
    outcomes: list[Outcome] = []
    for item in prepared:
        p = item.proposal
        if p is None or item.rejection is not None or item.typed is None or item.key is None:
            kind = p.kind if p is not None else "unknown"
            outcomes.append(Outcome(kind, None, "rejected", item.rejection or "invalid"))
            continue
        ns = ".".join(item.typed.namespace())
        if p.kind == "fact" and p.correction and p.subject and p.predicate and not is_stateful(
                p, settings):
            # A correction of a fact keyed by its content: what it corrects is the newest
            # current fact on the same subject and predicate.
            prefix = f"{p.subject} {p.predicate} ".lower()
            found = yield Sql(q.SQL_KEY_FOR_CORRECTION, [ns, len(prefix), prefix])
            item.key = found[0][0] if found else item.key
        rows = yield Sql(q.SQL_CURRENT_FOR_GATE, [ns, item.key])
        current = None
        if rows:
            seq, ident, digest, conf, status, evidence, _ = rows[0]
            sources = tuple(e.get("source", "") for e in (d.load_json(evidence) or [])
                            if isinstance(e, dict)) if evidence is not None else ()
            current = Current(ident, digest or "", float(conf or 0.0), status, sources)
        decision = decide(p, scope=item.typed.scope, current=current, settings=settings,
                          run_id=op.run_id, source=source)
        evidence_entry = {"source": source, "run_id": op.run_id, "turn": op.turn,
                          "grounding": (p.grounding or "")[:500]}
        if decision.action == "reject":
            outcomes.append(Outcome(p.kind, None, "rejected", decision.reason, key=item.key))
            continue
        sibling_rows: list[Any] = []
        if decision.action == "contradict":
            # The same challenger offered again lands on its sibling key: a repetition.
            sibling_rows = yield Sql(q.SQL_CURRENT_FOR_GATE, [ns, _sibling(item.key, p)])
        if decision.action in ("dedup", "confirm") or sibling_rows:
            target = sibling_rows[0] if sibling_rows else rows[0]
            seq, ident, _, _, status, evidence, _ = target
            trail = (d.load_json(evidence) if evidence is not None else None) or []
            trail = [*trail, evidence_entry][-MAX_EVIDENCE:]
            # Restating an expired record is a use: its expiry is reversed (F2).
            new_status = "active" if decision.action == "confirm" else on_access(status)
            now = engine.clock().timestamp()
            yield Sql(q.SQL_REPEAT, [d.dump_json(trail), new_status, now, now, seq])
            key = _sibling(item.key, p) if sibling_rows else item.key
            if new_status != status:
                why = decision.reason if decision.action == "confirm" else (
                    f"{decision.reason}; restated while expired: expiry reversed")
                yield from engine.transition(ident, item.typed, key, status, new_status,
                                             why, actor=actor, run_id=op.run_id)
            reason = ("the same challenger is already recorded" if sibling_rows
                      else decision.reason)
            outcomes.append(Outcome(
                p.kind, ident, "confirmed" if decision.action == "confirm" else "deduplicated",
                reason, key=key,
            ))
            continue
        assert item.record is not None
        new_id = uuid.uuid4().hex
        key = item.key
        contradicts: list[str] | None = None
        if decision.action == "supersede" and rows:
            yield from engine.supersede(rows[0][0], new_id)
            yield from engine.transition(rows[0][1], item.typed, item.key, rows[0][4],
                                         "superseded", f"{decision.reason}: replaced by {new_id}",
                                         actor=actor, run_id=op.run_id)
        elif decision.action == "contradict" and rows:
            key = _sibling(item.key, p)
            contradicts = [rows[0][1]]
            old_links = (d.load_json(rows[0][6]) if rows[0][6] is not None else None) or []
            yield Sql(q.SQL_LINK_CONTRADICTION,
                      [d.dump_json([*old_links, new_id]), decision.needs_review, rows[0][0]])
            yield from engine.transition(
                rows[0][1], item.typed, item.key, rows[0][4], rows[0][4],
                f"contradicted by {new_id}" + ("; needs review" if decision.needs_review else ""),
                actor=actor, run_id=op.run_id)
        yield from engine.insert_typed(
            new_id, item.typed, key, item.record, status=decision.status,
            vectors=item.vectors, policy_version=settings.version,
            evidence=[evidence_entry], contradicts=contradicts,
            needs_review=decision.needs_review,
        )
        yield from engine.transition(new_id, item.typed, key, None, decision.status,
                                     decision.reason, actor=actor, run_id=op.run_id)
        outcomes.append(Outcome(p.kind, new_id, WRITTEN[decision.action], decision.reason,
                                key=key, old_id=decision.old_id))
    return outcomes
