"""Maintenance plans: compaction, consolidation, observations, promotion, feedback.

Each write plan is one short transaction over a handful of records, so maintenance can run
while the chat graph serves. A plan first claims its records with a conditional update
(`... WHERE status = 'active' RETURNING seq`): if another writer changed one of them since
maintenance read it, the plan raises `ConcurrentChange`, the transaction rolls back, and the
next run picks the records up again. The decisions come from `langgraph_typed_memory.maintenance`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph_typed_memory.errors import EmbeddingDimensionMismatch, InvalidRecord
from langgraph_typed_memory.maintenance.compaction import CompactionGroup, compacted_value
from langgraph_typed_memory.maintenance.feedback import (
    FeedbackResult,
    UnknownMemory,
    Verdict,
    observation_after,
)
from langgraph_typed_memory.maintenance.patterns import (
    Pattern,
    confidence_for,
    level_of,
    procedure_rule,
    promotion_due,
)
from langgraph_typed_memory.maintenance.records import MemoryRow
from langgraph_typed_memory.maintenance.settings import MaintenanceConfig
from langgraph_typed_memory.namespaces import (
    Scope,
    TypedNamespace,
    decode_namespace,
    encode_namespace,
    parse_namespace,
)
from langgraph_typed_memory.schemas import validate_record
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Embed, EmbedError, Plan, Sql

if TYPE_CHECKING:
    from langgraph_typed_memory.store.core.records import Records

__all__ = [
    "ConcurrentChange",
    "ROW_COLUMNS",
    "rows_plan",
    "scopes_plan",
    "compact_plan",
    "merge_plan",
    "observe_plan",
    "redetect_plan",
    "promote_plan",
    "feedback_plan",
]

ROW_COLUMNS = (
    "m.seq, m.id, m.ns, m.key, m.kind, m.tenant_id, m.user_id, m.agent_id, m.status, m.value, "
    "m.confidence, m.occurred_at, m.created_at, m.source_run_id, m.repetitions, m.evidence"
)
CURRENT_BY_KEY = f"m.ns = ? AND m.key = ? AND m.{q.CURRENT}"
MAX_EVIDENCE = 20
MAX_LISTED = 50


class ConcurrentChange(Exception):  # noqa: N818 - a signal between plan and runner
    """Records a maintenance plan claimed changed meanwhile; its transaction rolled back."""


def _row(records: Records, r: Sequence[Any]) -> MemoryRow:
    (seq, ident, ns, key, kind, tenant, user, agent, status, value, conf, occurred, created,
     run_id, reps, evidence) = r
    load = records.dialect.load_json
    return MemoryRow(
        int(seq), ident, ns, key, kind, tenant, user, agent, status, load(value),
        float(conf if conf is not None else 1.0),
        float(occurred if occurred is not None else created), float(created), run_id,
        int(reps or 1), (load(evidence) if evidence is not None else None) or [],
    )


def scope_sql(scope: Scope) -> tuple[str, list[Any]]:
    """Exactly one scope (not the wider ones): where maintenance reads and writes."""
    parts, params = ["m.tenant_id = ?"], [scope.tenant_id]
    for column, value in (("user_id", scope.user_id), ("agent_id", scope.agent_id)):
        if value is None:
            parts.append(f"m.{column} IS NULL")
        else:
            parts.append(f"m.{column} = ?")
            params.append(value)
    return " AND ".join(parts), params


def rows_plan(records: Records, where: str, params: Sequence[Any]) -> Plan[list[MemoryRow]]:
    """Typed records matching `where` (over `memories m`), oldest first."""
    rows = yield Sql(f"SELECT {ROW_COLUMNS} FROM memories m WHERE {where} ORDER BY m.seq",
                     list(params))
    return [_row(records, r) for r in rows]


def scopes_plan(records: Records, where: str, params: Sequence[Any]) -> Plan[list[Scope]]:
    """The distinct scopes of the records matching `where`."""
    rows = yield Sql(
        f"SELECT DISTINCT m.tenant_id, m.user_id, m.agent_id FROM memories m WHERE {where}",
        list(params))
    return sorted((Scope(t, u, a) for t, u, a in rows),
                  key=lambda s: (s.tenant_id, s.user_id or "", s.agent_id or ""))


def _now(records: Records) -> float:
    return records.clock().timestamp()


def _typed(ns: str) -> TypedNamespace:
    return parse_namespace(decode_namespace(ns))


def _claim(records: Records, seqs: Sequence[int], status: str, pointer: str | None) -> Plan[None]:
    """Move still-active records to `status` (pointing at `pointer`), or raise."""
    clause, params = records.dialect.in_list("seq", list(seqs))
    text = ", search_text = NULL" if status != "compacted" else ""
    got = yield Sql(
        f"UPDATE memories SET status = ?, superseded_by = ?, updated_at = ?{text} "
        f"WHERE {clause} AND status = 'active' RETURNING seq",
        [status, pointer, _now(records), *params])
    if len(got) != len(seqs):
        raise ConcurrentChange(f"{len(seqs) - len(got)} record(s) changed meanwhile")
    if records.has_vector_table:
        yield Sql(f"DELETE FROM memory_vectors WHERE {clause}", params)


def _lock_active(records: Records, seq: int) -> Plan[bool]:
    """Lock one record for this transaction if it is still active (Postgres row lock)."""
    got = yield Sql("UPDATE memories SET updated_at = updated_at WHERE seq = ? "
                    "AND status = 'active' RETURNING seq", [seq])
    return bool(got)


def _embed(records: Records, text: str | None) -> Plan[tuple[list[Any], str | None]]:
    """The vectors of a new record (outside any transaction); a failure degrades, noted."""
    if records.index is None or not text:
        return [], None
    answer = yield Embed([text])
    if isinstance(answer, EmbedError):
        return [], f"not embedded: embedder failed: {answer.error!r:.120}"
    try:
        records.check_vectors(answer, 1)
    except EmbeddingDimensionMismatch as exc:
        return [], f"not embedded: {exc}"
    return [((q.TYPED_FIELD, text), answer[0])], None


def compact_plan(
    records: Records, group: CompactionGroup, summary: str
) -> Plan[tuple[str, str | None]]:
    """Write the group's episode and mark its sources compacted, in one transaction.

    Returns the new episode's id and a note when it could not be embedded.
    """
    typed = _typed(group.ns)
    record = validate_record("episode", group.key, compacted_value(group, summary),
                             typed.namespace())
    vectors, note = yield from _embed(records, record.embed_text)
    new_id = uuid.uuid4().hex
    actor = "maintenance:compaction"
    yield Begin()
    yield from _claim(records, [r.seq for r in group.sources], "compacted", new_id)
    yield from records.insert_typed(new_id, typed, group.key, record, status="active",
                                   vectors=vectors)
    yield from records.transition(new_id, typed, group.key, None, "active",
                                 f"compacted from {len(group.sources)} episode(s) "
                                 f"({group.label})", actor=actor)
    for r in group.sources:
        yield from records.transition(r.id, typed, r.key, "active", "compacted",
                                     f"compacted into {new_id} ({group.label})", actor=actor)
    yield Commit()
    return new_id, note


def merge_plan(records: Records, survivor: MemoryRow, merged: Sequence[MemoryRow]) -> Plan[int]:
    """Fold near-identical records into `survivor` (repetitions, evidence); they become
    `merged`, pointing at it. One transaction; returns how many were merged."""
    d, typed, actor = records.dialect, _typed(survivor.ns), "maintenance:consolidation"
    trail = [*survivor.evidence, *(e for m in merged for e in m.evidence)][-MAX_EVIDENCE:]
    reps = survivor.repetitions + sum(m.repetitions for m in merged)
    yield Begin()
    got = yield Sql("UPDATE memories SET repetitions = ?, evidence = ?, updated_at = ? "
                    "WHERE seq = ? AND status = 'active' RETURNING seq",
                    [reps, d.dump_json(trail), _now(records), survivor.seq])
    if not got:
        raise ConcurrentChange("the surviving record changed meanwhile")
    yield from _claim(records, [m.seq for m in merged], "merged", survivor.id)
    for m in merged:
        yield from records.transition(m.id, typed, m.key, "active", "merged",
                                     f"near-identical to {survivor.id}: merged into it",
                                     actor=actor)
    yield from records.transition(survivor.id, typed, survivor.key, "active", "active",
                                 f"absorbed {len(merged)} near-identical record(s)", actor=actor)
    yield Commit()
    return len(merged)


def _observation_value(pattern: Pattern, confidence: float, settings: MaintenanceConfig,
                       feedback: str | None = None, agent: str | None = None,
                       detector: str = "rules") -> dict[str, Any]:
    level = level_of(confidence, settings.promotion_confidence)
    meta: dict[str, Any] = {"phrase": pattern.phrase, "detector": detector,
                            "sessions": list(pattern.sessions)[:MAX_LISTED]}
    if pattern.rule:
        meta["rule"] = pattern.rule
    return {
        "category": pattern.category[:64], "agent": agent, "quote": pattern.quote,
        "evidence": list(pattern.evidence)[:MAX_LISTED], "occurrences": pattern.occurrences,
        "confidence_level": level, "confidence": confidence, "feedback": feedback,
        "promotion_candidate": level == "high" and feedback not in ("wrong", "dismissed"),
        "metadata": meta,
    }


def observe_plan(
    records: Records, scope: Scope, pattern: Pattern, settings: MaintenanceConfig,
    detector: str = "rules",
) -> Plan[tuple[str | None, str | None]]:
    """Store a new observation at the pattern's key; (None, None) if one appeared meanwhile."""
    typed = TypedNamespace(scope, "observation")
    value = _observation_value(pattern, confidence_for(pattern.occurrences), settings,
                               agent=scope.agent_id, detector=detector)
    record = validate_record("observation", pattern.key, value, typed.namespace())
    vectors, note = yield from _embed(records, record.embed_text)
    new_id = uuid.uuid4().hex
    yield Begin()
    if (yield Sql(q.SQL_CURRENT_ROW, [encode_namespace(typed.namespace()), pattern.key])):
        yield Commit()
        return None, None
    yield from records.insert_typed(new_id, typed, pattern.key, record, status="active",
                                   vectors=vectors)
    yield from records.transition(
        new_id, typed, pattern.key, None, "active",
        f"pattern detected in {pattern.occurrences} sessions ({pattern.category})",
        actor="maintenance:detection")
    yield Commit()
    return new_id, note


def redetect_plan(
    records: Records, current: MemoryRow, pattern: Pattern, settings: MaintenanceConfig
) -> Plan[bool]:
    """Raise an active observation's occurrences when its pattern recurred in more sessions.
    Returns False (nothing written) when the count did not grow."""
    old = current.value
    if pattern.occurrences <= int(old.get("occurrences") or 1):
        return False
    typed = _typed(current.ns)
    confidence = max(current.confidence, confidence_for(pattern.occurrences))
    merged = Pattern(pattern.category, pattern.phrase, pattern.quote,
                     tuple(dict.fromkeys([*old.get("evidence", []), *pattern.evidence])),
                     pattern.sessions, pattern.rule or (old.get("metadata") or {}).get("rule"))
    value = {**old, **{k: v for k, v in _observation_value(
        merged, confidence, settings, old.get("feedback"), old.get("agent"),
        (old.get("metadata") or {}).get("detector", "rules")).items()
        if k not in ("category", "quote")}}
    record = validate_record("observation", current.key, value, typed.namespace())
    yield Begin()
    got = yield Sql("UPDATE memories SET value = ?, confidence = ?, updated_at = ? "
                    "WHERE seq = ? AND status = 'active' RETURNING seq",
                    [records.dialect.dump_json(record.value), confidence, _now(records),
                     current.seq])
    if not got:
        raise ConcurrentChange("the observation changed meanwhile")
    yield from records.transition(current.id, typed, current.key, "active", "active",
                                 f"pattern seen again: {pattern.occurrences} sessions",
                                 actor="maintenance:detection")
    yield Commit()
    return True


def procedure_key(observation_key: str) -> str:
    """The key of the procedure promoted from an observation (one per observation)."""
    return "procedure:" + observation_key.removeprefix("observation:")


def _promote(records: Records, obs: MemoryRow, value: dict[str, Any], why: str,
             actor: str) -> Plan[str | None]:
    """Inside a transaction: write the observation's procedure unless one is current."""
    scope = _typed(obs.ns).scope
    typed = TypedNamespace(scope, "procedure")
    key = procedure_key(obs.key)
    if (yield Sql(q.SQL_CURRENT_ROW, [encode_namespace(typed.namespace()), key])):
        return None
    record = validate_record("procedure", key, {
        "rule": procedure_rule(value), "source_observation": obs.id,
        "confidence": float(value.get("confidence", obs.confidence)),
        "metadata": {"observation_key": obs.key, "category": value.get("category")},
    }, typed.namespace())
    new_id = uuid.uuid4().hex
    yield from records.insert_typed(new_id, typed, key, record, status="active", vectors=[])
    yield from records.transition(new_id, typed, key, None, "active",
                                 f"promoted from observation {obs.id}: {why}", actor=actor)
    return new_id


def promote_plan(
    records: Records, obs: MemoryRow, settings: MaintenanceConfig
) -> Plan[str | None]:
    """Promote an observation to a procedure if it is (still) due; returns the new id."""
    yield Begin()
    if not (yield from _lock_active(records, obs.seq)):
        yield Commit()
        return None
    fresh = yield from rows_plan(records, "m.seq = ?", [obs.seq])
    value = fresh[0].value
    if not promotion_due(value, "active", obs.created_at, _now(records),
                         delay_hours=settings.promotion_delay_hours):
        yield Commit()
        return None
    why = ("confirmed as correct" if value.get("feedback") == "correct" else
           f"high confidence, not rejected or dismissed within "
           f"{settings.promotion_delay_hours:g} hours")
    new_id = yield from _promote(records, fresh[0], value, why, "maintenance:promotion")
    yield Commit()
    return new_id


def _procedures_from(records: Records, obs: MemoryRow) -> Plan[list[MemoryRow]]:
    rows = yield from rows_plan(records, "m.tenant_id = ? AND m.kind = 'procedure' "
                                "AND m.status = 'active'", [obs.tenant_id])
    return [r for r in rows if r.value.get("source_observation") == obs.id]


def _set_value(records: Records, row: MemoryRow, value: dict[str, Any], confidence: float,
               status: str) -> Plan[None]:
    typed = _typed(row.ns)
    record = validate_record(row.kind, row.key, value, typed.namespace())  # type: ignore[arg-type]
    text = ", search_text = NULL" if status != "active" else ""
    yield Sql(f"UPDATE memories SET value = ?, confidence = ?, status = ?, updated_at = ?{text} "
              "WHERE seq = ?", [records.dialect.dump_json(record.value), confidence, status,
                                _now(records), row.seq])
    if status != "active" and records.has_vector_table:
        yield Sql(q.SQL_DROP_VECTORS, [row.seq])


def _revoke(records: Records, proc: MemoryRow, reason: str, actor: str) -> Plan[None]:
    yield Sql(q.SQL_REVOKE, [_now(records), proc.seq])
    yield from records.transition(proc.id, _typed(proc.ns), proc.key, "active", "revoked",
                                 reason, actor=actor)


def feedback_plan(
    records: Records, namespace: tuple[str, ...], key: str, verdict: Verdict, *, actor: str,
    reason: str | None, settings: MaintenanceConfig,
) -> Plan[FeedbackResult]:
    """Apply a verdict to an observation or a procedure, in one transaction."""
    typed = parse_namespace(namespace)
    if typed.kind not in ("observation", "procedure"):
        raise InvalidRecord(
            f"feedback applies to observation and procedure records; {namespace!r} holds "
            f"{typed.kind} records.")
    ns, why = encode_namespace(typed.namespace()), f"feedback {verdict}" + (f": {reason}" if reason
                                                                     else "")
    yield Begin()
    yield Sql(f"UPDATE memories SET updated_at = updated_at WHERE ns = ? AND key = ? "
              f"AND {q.CURRENT}", [ns, key])
    rows = yield from rows_plan(records, CURRENT_BY_KEY, [ns, key])
    if not rows:
        raise UnknownMemory(f"no current {typed.kind} at key {key!r} in {namespace!r}; "
                            "check the key with store.search or store.history.")
    row = rows[0]
    if typed.kind == "procedure":
        result = yield from _procedure_feedback(records, row, verdict, why, actor, settings)
    else:
        result = yield from _observation_feedback(records, row, verdict, why, actor, settings)
    yield Commit()
    return result


def _observation_feedback(
    records: Records, row: MemoryRow, verdict: Verdict, why: str, actor: str,
    settings: MaintenanceConfig,
) -> Plan[FeedbackResult]:
    result = FeedbackResult(row.id, "observation", verdict, row.status, row.confidence)
    if row.status != "active":
        if verdict == "wrong" and row.status == "rejected":
            result.changed = False
            return result
        raise InvalidRecord(f"observation {row.key!r} is {row.status}; only active "
                            "observations take feedback.")
    if verdict != "correct" and row.value.get("feedback") == verdict:
        result.changed = False
        return result
    value, confidence, status = observation_after(
        row.value, row.confidence, verdict, boost=settings.feedback_boost,
        high=settings.promotion_confidence)
    yield from _set_value(records, row, value, confidence, status)
    yield from records.transition(row.id, _typed(row.ns), row.key, "active", status, why,
                                 actor=actor)
    result.status, result.confidence = status, confidence
    procedures = yield from _procedures_from(records, row)
    if verdict == "wrong":
        for proc in procedures:
            yield from _revoke(records, proc, f"demoted: source observation {row.id} was "
                               f"marked wrong", actor)
            result.revoked.append(proc.id)
    elif verdict == "correct":
        for proc in procedures:
            count = int(proc.value.get("confirmation_count") or 0) + 1
            yield from _set_value(records, proc, {**proc.value, "confirmation_count": count},
                                  proc.confidence, "active")
            yield from records.transition(proc.id, _typed(proc.ns), proc.key, "active",
                                         "active", f"confirmed ({count}): {why}", actor=actor)
        if not procedures and promotion_due(value, status, row.created_at, _now(records),
                                            delay_hours=settings.promotion_delay_hours):
            new_id = yield from _promote(records, row, value, "confirmed as correct", actor)
            if new_id:
                result.promoted.append(new_id)
    return result


def _procedure_feedback(
    records: Records, row: MemoryRow, verdict: Verdict, why: str, actor: str,
    settings: MaintenanceConfig,
) -> Plan[FeedbackResult]:
    result = FeedbackResult(row.id, "procedure", verdict, row.status, row.confidence)
    if verdict == "correct":
        count = int(row.value.get("confirmation_count") or 0) + 1
        yield from _set_value(records, row, {**row.value, "confirmation_count": count},
                              row.confidence, "active")
        yield from records.transition(row.id, _typed(row.ns), row.key, "active", "active",
                                     f"confirmed ({count}): {why}", actor=actor)
        return result
    yield from _revoke(records, row, f"{why} (procedure {verdict})", actor)
    result.status = "revoked"
    result.revoked.append(row.id)
    source = row.value.get("source_observation")
    if source:
        found = yield from rows_plan(records, "m.id = ? AND m.status = 'active'", [source])
        if found:
            obs = found[0]
            value, confidence, status = observation_after(
                obs.value, obs.confidence, verdict, boost=settings.feedback_boost,
                high=settings.promotion_confidence)
            yield from _set_value(records, obs, value, confidence, status)
            yield from records.transition(obs.id, _typed(obs.ns), obs.key, "active", status,
                                         f"{why} (on procedure {row.id})", actor=actor)
    return result
