"""Executing the promotion gate: one transaction per batch of proposals.

`prepare` (pure) validates and scopes every proposal before any I/O; `execute` (a plan run
inside the store's write transaction) reads the current record at each proposal's key,
asks `gate.decide`, and writes the decision: insert, deduplicate (repetition count and
evidence), confirm, supersede (old row kept with its pointer), or contradict (links on both
sides, the weaker side provisional, needs_review when important).

Two steps tie logged turns (episodes with `task_type="turn"`) to what was said in them: a
superseded fact or preference takes with it the turns that stated it (the run and turn that
wrote it, and those of each restatement its evidence holds), so
a reader never meets the old value in a turn beside the new one in a fact; and a correction
that names only the old value (`replaces`) finds the record that holds it, or failing that
the turn that said it, which it supersedes with the corrected statement.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from langgraph_typed_memory.errors import EmbeddingDimensionMismatch, TypedMemoryError
from langgraph_typed_memory.gate import (
    TURN,
    Current,
    GateConfig,
    Outcome,
    Proposal,
    decide,
    is_stateful,
    own_scope,
    parse_proposal,
    proposal_hash,
    record_key,
    target_scope,
)
from langgraph_typed_memory.lifecycle import on_access
from langgraph_typed_memory.namespaces import Scope, TypedNamespace, encode_namespace
from langgraph_typed_memory.schemas import ValidatedRecord, validate_record
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.ops import PromoteOp
from langgraph_typed_memory.store.core.protocol import Embed, Plan, Sql

if TYPE_CHECKING:
    from langgraph_typed_memory.store.core.records import Records

__all__ = ["PromoteOp", "Prepared", "prepare", "execute"]

WRITTEN: dict[str, Literal["written", "superseded", "contradicted"]] = {
    "insert": "written", "supersede": "superseded", "contradict": "contradicted"
}
MAX_EVIDENCE = 20


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
    retires: tuple[int, str, str] | None = None
    """A logged turn (seq, id, key) the written record corrects and supersedes."""
    aimed: bool = False
    """A correction pointed at the record that held its old value (see `_aim`)."""
    proposed: bool = False
    """A user's (or agent's) fact about the tenant, kept for the tenant only as a proposal
    awaiting an operator's review (`GateConfig.tenant_sharing="review"`)."""
    note: str = ""
    """What the outcome's reason adds (a tenant fact kept in the user's own scope)."""

    @property
    def embed_text(self) -> str | None:
        return self.record.embed_text if self.record is not None else None


def _value(p: Proposal, run_id: str | None, turn: int | None) -> dict[str, Any]:
    common: dict[str, Any] = {"source_run_id": run_id, "source_turn": turn}
    if p.proposed_by is not None:
        common["proposed_by"] = p.proposed_by
    if p.occurred_at is not None:
        common["occurred_at"] = p.occurred_at.isoformat()
    metadata = {**p.metadata, **({"session_id": p.session_id} if p.session_id else {})}
    if metadata:
        common["metadata"] = metadata
    if p.kind == "preference":
        return {"value": p.value, "confidence": p.confidence,
                "source": "user_stated" if p.grounding else "inferred", **common}
    if p.kind == "fact":
        return {"subject": p.subject, "predicate": p.predicate, "content": p.content,
                "value": p.value, "confidence": p.confidence, **common}
    if p.kind == "entity":  # its fields are the value (`schemas.EntityMemory` checks them)
        return {**(p.value if isinstance(p.value, dict) else {}), "confidence": p.confidence,
                **common}
    episode = {"title": p.title or p.content[:80], "summary": p.content, "outcome": p.outcome,
               "context": list(p.context), "confidence": p.confidence, **common}
    optional = {"task_type": p.task_type, "salience": p.salience, "artifacts": p.artifacts}
    return {**episode, **{k: v for k, v in optional.items() if v is not None}}


def prepare(op: PromoteOp, settings: GateConfig) -> list[Prepared]:
    """Validate and scope each proposal; a bad one becomes a rejection, not an exception."""
    out = []
    for i, raw in enumerate(op.proposals):
        try:
            proposal = parse_proposal(raw)
        except TypedMemoryError as exc:
            out.append(Prepared(i, None, rejection=str(exc)))
            continue
        scope = target_scope(proposal, op.scope, settings.tenant_sharing)
        typed = TypedNamespace(scope, proposal.kind)
        key = record_key(proposal, settings)
        prepared = Prepared(i, proposal, typed=typed, key=key)
        if proposal.scope == "tenant" and proposal.kind == "fact" and op.scope.level != "tenant":
            prepared.proposed = scope.level == "tenant"
            prepared.note = ("" if prepared.proposed else
                             "; about the tenant, kept in the caller's own scope (tenant "
                             "sharing is off)")
        unaimed = proposal.replaces is not None and not (proposal.subject and proposal.predicate)
        if proposal.kind in ("preference", "fact", "episode", "entity") and not (
                unaimed and proposal.kind == "fact"):
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
    records: Records, op: PromoteOp, prepared: list[Prepared], settings: GateConfig
) -> Plan[list[Outcome]]:
    """Decide and write each proposal, in order, inside the caller's transaction."""
    d = records.dialect
    source = _source(op)
    actor = f"gate:{source}"
    outcomes: list[Outcome] = []
    for item in prepared:
        if item.proposal is not None and item.proposal.replaces is not None and (
                item.rejection is None and item.proposal.kind in ("fact", "preference")):
            item.rejection = yield from _aim(records, op, item, settings)
        p = item.proposal
        if (p is None or item.rejection is not None or item.typed is None or item.key is None
                or (item.record is None and p.kind == "fact")):
            kind = p.kind if p is not None else "unknown"
            outcomes.append(Outcome(kind, None, "rejected", item.rejection or "invalid"))
            continue
        ns = encode_namespace(item.typed.namespace())
        if p.kind == "fact" and p.correction and p.subject and p.predicate and not is_stateful(
                p, settings) and not item.aimed:
            # A correction of a fact keyed by its content: what it corrects is the newest
            # current fact on the same subject and predicate.
            prefix = f"{p.subject} {p.predicate} ".lower()
            found = yield Sql(q.SQL_KEY_FOR_CORRECTION, [ns, len(prefix), prefix])
            item.key = found[0][0] if found else item.key
        rows = yield Sql(q.SQL_CURRENT_FOR_GATE, [ns, item.key])
        current = None
        if rows:
            seq, ident, digest, conf, status, evidence, *_ = rows[0]
            sources = tuple(e.get("source", "") for e in (d.load_json(evidence) or [])
                            if isinstance(e, dict)) if evidence is not None else ()
            current = Current(ident, digest or "", float(conf or 0.0), status, sources)
        decision = decide(p, scope=item.typed.scope, current=current, settings=settings,
                          run_id=op.run_id, source=source,
                          digest=item.record.content_hash if item.record is not None else None,
                          proposed=item.proposed)
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
            seq, ident, _, _, status, evidence, *_ = target
            trail = (d.load_json(evidence) if evidence is not None else None) or []
            trail = [*trail, evidence_entry][-MAX_EVIDENCE:]
            # Restating an expired record is a use: its expiry is reversed.
            new_status = "active" if decision.action == "confirm" else on_access(status)
            now = records.clock().timestamp()
            yield Sql(q.SQL_REPEAT, [d.dump_json(trail), new_status, now, now, seq])
            key = _sibling(item.key, p) if sibling_rows else item.key
            if new_status != status:
                why = decision.reason if decision.action == "confirm" else (
                    f"{decision.reason}; restated while expired: expiry reversed")
                yield from records.transition(ident, item.typed, key, status, new_status,
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
            yield from records.supersede(rows[0][0], new_id)
            yield from records.transition(rows[0][1], item.typed, item.key, rows[0][4],
                                         "superseded", f"{decision.reason}: replaced by {new_id}",
                                         actor=actor, run_id=op.run_id)
            if p.kind in ("fact", "preference"):
                for run_id, turn in _stated_in(rows[0], d.load_json):
                    yield from _retire_turns(records, op, own_scope(op.scope), run_id, turn,
                                             new_id, actor)
        elif decision.action == "contradict" and rows:
            key = _sibling(item.key, p)
            contradicts = [rows[0][1]]
            old_links = (d.load_json(rows[0][6]) if rows[0][6] is not None else None) or []
            yield Sql(q.SQL_LINK_CONTRADICTION,
                      [d.dump_json([*old_links, new_id]), decision.needs_review, rows[0][0]])
            yield from records.transition(
                rows[0][1], item.typed, item.key, rows[0][4], rows[0][4],
                f"contradicted by {new_id}" + ("; needs review" if decision.needs_review else ""),
                actor=actor, run_id=op.run_id)
        if item.retires is not None:
            yield from _retire(records, op, own_scope(op.scope), item.retires, new_id, actor,
                               "corrected by a later statement")
        yield from records.insert_typed(
            new_id, item.typed, key, item.record, status=decision.status,
            vectors=item.vectors, policy_version=settings.version,
            evidence=[evidence_entry], contradicts=contradicts,
            needs_review=decision.needs_review,
        )
        yield from records.transition(new_id, item.typed, key, None, decision.status,
                                     decision.reason, actor=actor, run_id=op.run_id)
        outcomes.append(Outcome(p.kind, new_id, WRITTEN[decision.action],
                                decision.reason + item.note, key=key, old_id=decision.old_id))
    for item, outcome in zip(prepared, outcomes, strict=True):
        if item.proposal is not None:
            outcome.proposed_by = item.proposal.proposed_by
    return outcomes


# ----------------------------------------------------------------------------- turns


def _retire(records: Records, op: PromoteOp, scope: Scope, turn: tuple[int, str, str],
            by: str, actor: str, why: str) -> Plan[None]:
    """Supersede one logged turn by the record `by` (the statement that replaces it)."""
    seq, ident, key = turn
    yield from records.supersede(seq, by)
    yield from records.transition(ident, TypedNamespace(scope, "episode"), key, "active",
                                 "superseded", f"{why}: {by}", actor=actor, run_id=op.run_id)


def _stated_in(row: Sequence[Any], load_json: Callable[[Any], Any]
               ) -> list[tuple[str | None, int | None]]:
    """The (run, turn) pairs that stated a current record (`SQL_CURRENT_FOR_GATE`'s row):
    the one that wrote it, then each one its evidence holds (a restatement, on another
    day or in another thread, is a turn that stated it too).

    Example:
        >>> import json
        >>> row = (1, "m1", "h", 0.9, "active",
        ...        json.dumps([{"run_id": "r1", "turn": 2}, {"run_id": "r2", "turn": 0}]),
        ...        None, "r1", 2)
        >>> _stated_in(row, json.loads)
        [('r1', 2), ('r2', 0)]
    """
    evidence = (load_json(row[5]) if row[5] is not None else None) or []
    stated = [(row[7], row[8]), *((e.get("run_id"), e.get("turn")) for e in evidence
                                  if isinstance(e, dict))]
    return list(dict.fromkeys(stated))


def _retire_turns(records: Records, op: PromoteOp, scope: Scope, run_id: str | None,
                  turn: int | None, by: str, actor: str) -> Plan[None]:
    """The logged turns that stated a superseded record (its run and turn) go with it: those
    of the caller's own log (`scope`), wherever the record was kept."""
    if run_id is None or turn is None:
        return
    ns = encode_namespace(TypedNamespace(scope, "episode").namespace())
    for seq, ident, key, value in (yield Sql(q.SQL_STATED_IN_TURN, [ns, run_id, turn])):
        if (records.dialect.load_json(value) or {}).get("task_type") == TURN:
            yield from _retire(records, op, scope, (seq, ident, key), by, actor,
                               "what it stated was superseded")


_SPACES = re.compile(r"\s+")


def _norm(text: Any) -> str:
    return _SPACES.sub(" ", str(text if text is not None else "")).strip().lower()


def _holds(text: str, needle: str) -> bool:
    """Whether normalized `text` holds `needle` as whole words."""
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", text) is not None


def _swap(text: str, old: str, new: str) -> str | None:
    """`text` with every whole-word `old` (any case) made `new`; None if it has none."""
    pattern = re.compile(rf"(?<!\w){re.escape(old.strip())}(?!\w)", re.I)
    return pattern.sub(new.replace("\\", "\\\\"), text) if pattern.search(text) else None


def _aim(records: Records, op: PromoteOp, item: Prepared, settings: GateConfig
         ) -> Plan[str | None]:
    """Point a correction that names its old value (`replaces`) at what holds that value.

    The newest current fact or preference of the scope whose value (or, for a fact, whose
    content) holds the old value gives the key, subject and predicate, and (for a proposal
    with no predicate of its own) its content with the old value swapped for the new one.
    Failing that, the newest logged turn (not this one) whose text holds it is superseded by
    the proposal (a fact, whose content stays what the proposal says: the correcting words,
    never the old turn with a value swapped in). With neither, a proposal complete on its own
    goes on as it is; one that is not is rejected (the reason is returned).
    """
    p, scope, d = item.proposal, item.typed.scope, records.dialect  # type: ignore[union-attr]
    assert p is not None and p.replaces is not None
    old, new = _norm(p.replaces), _text_of(p.value)
    sql = q.sql_holding_text(d.position_fn)
    best: tuple[int, str, str, dict[str, Any]] | None = None
    for kind in ("fact", "preference") if p.kind == "fact" else ("preference", "fact"):
        ns = encode_namespace(TypedNamespace(scope, kind).namespace())  # type: ignore[arg-type]
        for _, _, key, value, _, _ in (yield Sql(sql, [ns, old])):
            value = d.load_json(value) or {}
            if _elsewhere(p, kind, key, value):
                continue
            held = _norm(_text_of(value.get("value")))
            rank = 0 if held == old else 1 if held and _holds(held, old) else 2 if (
                kind == "fact" and _holds(_norm(value.get("content")), old)) else 3
            if rank < 3 and (best is None or rank < best[0]):
                best = (rank, kind, key, value)
    if best is not None:
        _, kind, key, value = best
        if kind == "preference":  # a withdrawal ("stop with the tables") keeps what else
            update: dict[str, Any] = {"kind": "preference", "key": key}  # the turn said
            if p.value is None:
                update["value"] = p.content.partition(": ")[2] or p.content
        else:
            # a statement complete on its own keeps its words; a bare new value ("it's
            # oolong these days") takes the old record's, with the value swapped
            content = None if p.predicate or not new else _swap(
                str(value.get("content") or ""), p.replaces, new)
            update = {"kind": "fact", "subject": value.get("subject"),
                      "predicate": value.get("predicate"), "content": content or p.content}
        item.key = key
        item.typed = TypedNamespace(scope, kind)  # type: ignore[arg-type]
        return (yield from _revalidate(records, op, item, p.model_copy(
            update={**update, "correction": True})))
    ns = encode_namespace(TypedNamespace(own_scope(op.scope), "episode").namespace())
    for seq, ident, key, value, run_id, turn in (yield Sql(sql, [ns, old])):
        value = d.load_json(value) or {}
        speaker, _, said = str(value.get("summary") or "").partition(": ")
        if value.get("task_type") != TURN or (run_id, turn) == (op.run_id, op.turn) or (
                not _holds(_norm(said), old)):
            continue
        aimed = p.model_copy(update={  # its content stays the correcting words as said
            "kind": "fact", "subject": p.subject or speaker or "user",
            "predicate": p.predicate or "statement", "correction": True})
        item.typed = TypedNamespace(scope, "fact")
        item.key = record_key(aimed, settings)
        item.retires = (seq, ident, key)
        return (yield from _revalidate(records, op, item, aimed))
    if p.kind == "preference" or (p.subject and p.predicate):
        return None  # complete on its own: written as it is
    return f"corrects {p.replaces!r}, which no current memory in this scope holds"


def _elsewhere(p: Proposal, kind: str, key: str, value: dict[str, Any]) -> bool:
    """Whether a record holding the old value is about something else than a proposal that
    already says what it is about (a fact's predicate sharing no word with the proposal's, a
    preference's other key)."""
    if p.kind == "fact" and p.predicate:  # "main_current_account" may correct "main_bank_account"
        words = set(_norm(p.predicate).split("_"))
        return kind != "fact" or not words & set(_norm(value.get("predicate")).split("_"))
    if p.kind == "preference" and p.key:
        return kind != "preference" or key != p.key
    return False


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _revalidate(records: Records, op: PromoteOp, item: Prepared, aimed: Proposal
                ) -> Plan[str | None]:
    """Validate the aimed proposal again and embed its text if it changed."""
    assert item.typed is not None and item.key is not None
    item.proposal, item.aimed = aimed, True
    try:
        item.record = validate_record(aimed.kind, item.key, _value(aimed, op.run_id, op.turn),
                                      item.typed.namespace())
    except TypedMemoryError as exc:
        return str(exc)
    text = item.record.embed_text
    if records.index is None or not text or (item.vectors and item.vectors[0][0][1] == text):
        item.vectors = [] if not text else item.vectors
        return None
    answer = yield Embed([text])
    try:
        records.check_vectors(answer, 1)  # the dimension, and no NaN or infinity
    except EmbeddingDimensionMismatch:  # degrades to lexical retrieval of it, as elsewhere
        item.vectors = []
    else:
        item.vectors = [((q.TYPED_FIELD, text), list(answer[0]))]
    return None
