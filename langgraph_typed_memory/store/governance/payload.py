"""The payload of an export file: its columns, and the checks every record passes before an
import writes anything (the write path's own checks: the typed grammar, the scope, the
record schema, keys, JSON without NaN, one current version per key, links inside the file).
Pure: a refusal is an `ExportFormatError` naming the record and the problem.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from langgraph_typed_memory.errors import ExportFormatError, TypedMemoryError
from langgraph_typed_memory.namespaces import (
    TypedNamespace,
    decode_namespace,
    encode_namespace,
    is_typed,
    parse_namespace,
)
from langgraph_typed_memory.schemas import check_json_value, validate_record
from langgraph_typed_memory.store.core.ops import (
    MAX_NAMESPACE_BYTES,
    check_key,
    check_namespace,
)
from langgraph_typed_memory.store.governance.envelope import FORMAT_VERSION
from langgraph_typed_memory.store.governance.invariants import WRITTEN_STATUSES

__all__ = ["MEMORY_COLUMNS", "AUDIT_COLUMNS", "DELETION_COLUMNS", "JSON_COLUMNS",
           "CheckedPayload", "check_payload", "refused", "shown", "vector_array"]

MEMORY_COLUMNS = (
    "id", "ns", "key", "value", "kind", "tenant_id", "user_id", "agent_id", "status",
    "confidence", "content_hash", "superseded_by", "search_text", "occurred_at", "created_at",
    "updated_at", "expires_at", "ttl_minutes", "source_run_id", "source_turn",
    "policy_version", "last_accessed_at", "access_count", "repetitions", "evidence",
    "contradicts", "needs_review",
)
"""Every column of `memories` except `seq` (backend-internal) and the text's derived tokens
(Postgres' tsvector and `search_tokens`, made by the database from the imported text;
SQLite's `search_tokens`, left empty by an import: an imported record is tokenized when a
search first reads it)."""
AUDIT_COLUMNS = (
    "memory_id", "ns", "key", "kind", "tenant_id", "user_id", "agent_id", "at", "actor",
    "from_status", "to_status", "reason", "run_id",
)
"""Every column of `memory_audit` except `seq`, in `SQL_AUDIT_INSERT`'s order."""
DELETION_COLUMNS = ("id", "at", "tenant_id", "user_id", "actor", "reason", "counts")
JSON_COLUMNS = frozenset({"value", "evidence", "contradicts", "counts"})

_NUM = (int, float)
_TYPES: dict[str, tuple[tuple[type, ...], bool]] = {
    # column: (accepted types, nullable)
    **dict.fromkeys(("id", "ns", "key", "status", "memory_id", "actor", "to_status", "reason"),
                    ((str,), False)),
    **dict.fromkeys(("kind", "tenant_id", "user_id", "agent_id", "content_hash", "superseded_by",
                     "search_text", "source_run_id", "policy_version", "from_status",
                     "run_id"), ((str,), True)),
    **dict.fromkeys(("confidence", "occurred_at", "expires_at", "ttl_minutes",
                     "last_accessed_at"), (_NUM, True)),
    **dict.fromkeys(("created_at", "updated_at", "at"), (_NUM, False)),
    "source_turn": ((int,), True),
    **dict.fromkeys(("access_count", "repetitions"), ((int,), False)),
    "needs_review": ((bool,), False),
    "value": ((dict,), False),
    "counts": ((dict,), False),
    **dict.fromkeys(("evidence", "contradicts"), ((list,), True)),
}
_INT4 = 2**31 - 1
_RANGES = {"confidence": (0.0, 1.0), "source_turn": (0, _INT4), "access_count": (0, _INT4),
           "repetitions": (0, _INT4)}
"""The bounds of the numeric columns that have them (Postgres' INTEGER is 32-bit)."""
NOT_CURRENT = frozenset({"superseded", "revoked"})
"""The statuses of a key's past versions; any other is its current version, of which the
databases hold one per (namespace, key) (the unique index `memories_current`)."""
POINTING = frozenset({"superseded", "compacted", "merged"})
"""The statuses whose `superseded_by` names the record that replaced them."""
MAX_ID_CHARS = 256
"""The longest id an import accepts (record, event, run ids and hashes; the store writes
32-character ones): they are indexed, and Postgres bounds an index entry."""
_ID_COLUMNS = ("id", "superseded_by", "content_hash", "source_run_id", "policy_version",
               "memory_id", "run_id")

def refused(what: str) -> ExportFormatError:
    return ExportFormatError(
        f"The export decrypted but its content is not valid: {what.rstrip('.')}. It was not "
        "written by a compatible store.export_scope; nothing was imported."
    )


def _check_row(row: Any, columns: Sequence[str], where: str) -> None:
    """The row has exactly `columns`, each of its column's type."""
    if not isinstance(row, dict) or set(row) != set(columns):
        raise refused(f"{where} does not have the columns {list(columns)}")
    for col in columns:
        types, nullable = _TYPES[col]
        value = row[col]
        if value is None and nullable:
            continue
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise refused(f"{where} column {col!r} holds {type(value).__name__}")


def _check_values(row: dict[str, Any], columns: Sequence[str], where: str) -> None:
    """The row holds only what every backend stores faithfully: no NaN or infinity, NUL
    byte, lone surrogate or integer past 64 bits (`schemas.check_json_value`)."""
    try:
        for col in columns:
            check_json_value(row[col], where, col)
    except TypedMemoryError as exc:
        raise refused(str(exc)) from None


def shown(value: Any) -> str:
    """`repr(value)`, a long string cut to 60 characters."""
    if isinstance(value, str) and len(value) > 60:
        value = value[:57] + "..."
    return repr(value)


def _check_ids(row: dict[str, Any], where: str) -> None:
    for col in _ID_COLUMNS:
        value = row.get(col)
        if value is not None and not 0 < len(value) <= MAX_ID_CHARS:
            raise refused(f"{where}: {col} {shown(value)} is {len(value)} characters; an id "
                          f"holds 1 to {MAX_ID_CHARS}")


def _typed_namespace(text: str, key: str, where: str) -> TypedNamespace:
    """The typed namespace stored as `text`, checked as a write checks it with `key`."""
    try:
        ns = check_namespace(decode_namespace(text), "namespace")
        typed = parse_namespace(ns)
        check_key(key, ns)
    except TypedMemoryError as exc:
        raise refused(f"{where}: {exc}") from None
    if encode_namespace(ns) != text:
        raise refused(f"{where}: its namespace is stored as {shown(text)}, not as the store "
                      f"writes {ns!r}")
    return typed


def _label(m: dict[str, Any]) -> str:
    """A record as an error names it: namespace, key and id (cut short if long)."""
    return (f"the {m['kind'] or 'untyped'} record {shown('/'.join(decode_namespace(m['ns'])))}"
            f" {shown(m['key'])} (id {shown(m['id'])})")


def _check_memory(m: dict[str, Any], tenant_id: str, user_id: str | None,
                  prefixes: Sequence[tuple[str, ...]]) -> None:
    """What the write path checks of a record, and that it lies in the export's scope."""
    what = _label(m)
    _check_values(m, MEMORY_COLUMNS, what)
    _check_ids(m, what)
    if m["status"] not in WRITTEN_STATUSES:
        raise refused(f"{what}: status {shown(m['status'])} is none the store writes "
                      f"({', '.join(WRITTEN_STATUSES)})")
    for col, (low, high) in _RANGES.items():
        if m[col] is not None and not low <= m[col] <= high:
            raise refused(f"{what}: {col}={m[col]!r} is outside [{low}, {high}]")
    ns = decode_namespace(m["ns"])
    if m["kind"] is None:
        if is_typed(ns):
            raise refused(f"{what} has no kind but its namespace is typed: every record under "
                          "'tenant:' is typed (a kind, scope columns and a value of the kind's "
                          "schema)")
        try:
            check_namespace(ns, "namespace")
            check_key(m["key"], ns)
        except TypedMemoryError as exc:
            raise refused(f"{what}: {exc}") from None
        if len(m["ns"].encode("utf-8")) > MAX_NAMESPACE_BYTES:
            raise refused(f"{what}: its namespace is over {MAX_NAMESPACE_BYTES} bytes")
        if (m["tenant_id"], m["user_id"], m["agent_id"]) != (None, None, None) or not any(
                ns[:len(p)] == p for p in prefixes):
            raise refused(f"{what} is outside the export's untyped prefixes")
        return
    typed = _typed_namespace(m["ns"], m["key"], what)
    s = typed.scope
    if (typed.kind, s.tenant_id, s.user_id, s.agent_id) != (
            m["kind"], m["tenant_id"], m["user_id"], m["agent_id"]):
        raise refused(f"{what}: its kind and scope columns ({m['kind']}, tenant_id="
                      f"{shown(m['tenant_id'])}, user_id={shown(m['user_id'])}, agent_id="
                      f"{shown(m['agent_id'])}) disagree with its namespace")
    if s.tenant_id != tenant_id or (user_id is not None and s.user_id != user_id):
        raise refused(f"{what} is outside the exported scope")
    try:
        validate_record(typed.kind, m["key"], m["value"], ns)
    except TypedMemoryError as exc:
        raise refused(f"{what}: {exc}") from None


def _check_audit_event(a: Any, where: str, tenant_id: str, user_id: str | None) -> None:
    """An audit event is of a typed record of the scope, as the store records one."""
    _check_row(a, AUDIT_COLUMNS, where)
    _check_values(a, AUDIT_COLUMNS, where)
    _check_ids(a, where)
    if a["kind"] is None or a["tenant_id"] is None:
        raise refused(f"{where} has no kind or tenant: only typed records are audited")
    typed = _typed_namespace(a["ns"], a["key"], where)
    s = typed.scope
    if (typed.kind, s.tenant_id, s.user_id, s.agent_id) != (
            a["kind"], a["tenant_id"], a["user_id"], a["agent_id"]):
        raise refused(f"{where}: its kind and scope columns disagree with its namespace")
    if a["tenant_id"] != tenant_id or (user_id is not None and a["user_id"] != user_id):
        raise refused(f"{where} is outside the exported scope")
    if a["to_status"] not in WRITTEN_STATUSES or a["from_status"] not in (
            None, *WRITTEN_STATUSES):
        raise refused(f"{where}: a status is none the store writes")


def _check_versions(memories: Sequence[dict[str, Any]]) -> None:
    """One current version per key, as the databases' unique index `memories_current` holds."""
    current: dict[tuple[str, str], dict[str, Any]] = {}
    for m in memories:
        if m["status"] in NOT_CURRENT:
            continue
        first = current.setdefault((m["ns"], m["key"]), m)
        if first is not m:
            raise refused(f"{_label(m)} has two current versions ({first['id']} and {m['id']}, "
                          f"statuses {first['status']} and {m['status']}); all but one of a "
                          f"key's versions are {' or '.join(sorted(NOT_CURRENT))}")


def _check_links(memories: Sequence[dict[str, Any]], audit: Sequence[dict[str, Any]],
                 user_id: str | None) -> dict[str, str]:
    """`superseded_by` and `contradicts` name records of the export (a contradicted record
    may also be one the export's audit trail shows forgotten). In a user's export a
    `superseded_by` may name a record outside it (a tenant-wide record that replaced one of
    the user's): those are returned, target id to the record naming it, for the import to
    find in the target database."""
    ids = {m["id"] for m in memories}
    forgotten = {a["memory_id"] for a in audit if a["to_status"] == "forgotten"}
    outside: dict[str, str] = {}
    for m in memories:
        target = m["superseded_by"]
        if target is None and m["status"] in POINTING:
            raise refused(f"{_label(m)} is {m['status']} but its superseded_by is null")
        if target is not None and target not in ids:
            if user_id is None:
                raise refused(f"{_label(m)}: superseded_by {shown(target)} names no record of "
                              "the export")
            outside.setdefault(target, _label(m))
        for other in m["contradicts"] or ():
            if not isinstance(other, str) or (other not in ids and other not in forgotten):
                raise refused(f"{_label(m)}: contradicts {other!r} names no record of the export "
                              "(nor one its audit trail shows forgotten)")
    return outside


class CheckedPayload(NamedTuple):
    """What `check_payload` found: the scope, and the links to verify in the target."""

    tenant_id: str
    user_id: str | None
    untyped_prefixes: list[tuple[str, ...]]
    outside_links: dict[str, str]
    """A user's export only: `superseded_by` targets outside the export (tenant-wide records
    that replaced some of the user's), each with the record that names it."""


def check_payload(payload: Any) -> CheckedPayload:
    """Validate a decrypted payload as the write path would, before anything is written.

    Every record must parse as the store writes it: a typed record's namespace by the typed
    grammar with matching kind and scope columns, inside the declared scope, and its value
    by its kind's schema; an untyped record outside the typed namespaces, under a declared
    prefix; keys within the store's limit; no NaN, infinity, NUL byte or lone surrogate
    anywhere; one current version per key; `superseded_by` and `contradicts` naming records
    of the payload; vectors, audit and deletion events of the payload's records and scope.

    Raises:
        ExportFormatError: naming the record (namespace, key, id) and what is wrong.

    Example:
        >>> check_payload({"format": 1, "scope": {"tenant_id": "acme", "user_id": None,
        ...     "untyped_prefixes": [["memories"]]}, "embedding": None, "memories": [],
        ...     "vectors": [], "audit": [], "deletions": []}).untyped_prefixes
        [('memories',)]
    """
    if not isinstance(payload, dict) or payload.get("format") != FORMAT_VERSION:
        raise refused("no payload of format version 1")
    try:
        scope = payload["scope"]
        tenant_id, user_id = scope["tenant_id"], scope["user_id"]
        raw_prefixes = scope["untyped_prefixes"]
        lists = [payload[k] for k in ("memories", "vectors", "audit", "deletions")]
        embedding = payload["embedding"]
    except (KeyError, TypeError) as exc:
        raise refused(f"missing {exc}") from None
    if not isinstance(tenant_id, str) or not (user_id is None or isinstance(user_id, str)):
        raise refused("the scope has no tenant_id")
    if not isinstance(raw_prefixes, list) or not all(
            isinstance(p, list) and p and all(isinstance(x, str) and x for x in p)
            for p in raw_prefixes):
        raise refused("the untyped prefixes must be lists of non-empty labels")
    prefixes = [tuple(p) for p in raw_prefixes]
    if not all(isinstance(x, list) for x in lists):
        raise refused("memories, vectors, audit and deletions must be lists")
    memories, vectors, audit, deletions = lists
    for i, m in enumerate(memories):
        _check_row(m, MEMORY_COLUMNS, f"memory #{i}")
    for i, a in enumerate(audit):
        _check_audit_event(a, f"audit event #{i}", tenant_id, user_id)
    seen: set[str] = set()
    for m in memories:
        if m["id"] in seen:
            raise refused(f"memory id {shown(m['id'])} appears twice")
        seen.add(m["id"])
        _check_memory(m, tenant_id, user_id, prefixes)
    _check_versions(memories)
    outside = _check_links(memories, audit, user_id)
    dims = embedding.get("dims") if isinstance(embedding, dict) else None
    fields: set[tuple[str, str]] = set()
    for i, v in enumerate(vectors):
        if not isinstance(v, dict) or set(v) != {"id", "field", "dims", "vector"} or not (
                isinstance(v["id"], str) and isinstance(v["field"], str)) or v[
                "id"] not in seen or v["dims"] != dims:
            raise refused(f"vector #{i} does not belong to an exported record with dims={dims}")
        if (v["id"], v["field"]) in fields or not v["field"]:
            raise refused(f"vector #{i}: field {shown(v['field'])} of {v['id']} is empty or "
                          "appears twice")
        try:
            check_json_value(v["field"], f"vector #{i}", "field")
        except TypedMemoryError as exc:
            raise refused(str(exc)) from None
        fields.add((v["id"], v["field"]))
    events: set[str] = set()
    for i, d in enumerate(deletions):
        _check_row(d, DELETION_COLUMNS, f"deletion event #{i}")
        _check_values(d, DELETION_COLUMNS, f"deletion event #{i}")
        _check_ids(d, f"deletion event #{i}")
        if d["tenant_id"] != tenant_id or (user_id is not None and d["user_id"] != user_id):
            raise refused(f"deletion event #{i} is outside the exported scope")
        if d["id"] in events:
            raise refused(f"deletion event id {shown(d['id'])} appears twice")
        events.add(d["id"])
    return CheckedPayload(tenant_id, user_id, prefixes, outside)


def vector_array(v: dict[str, Any]) -> np.ndarray:
    try:
        vec = np.frombuffer(base64.b64decode(v["vector"], validate=True), dtype="<f4")
    except (ValueError, TypeError):
        raise refused(f"the vector of {v['id']} is not base64 float32") from None
    if vec.size != v["dims"] or not np.all(np.isfinite(vec)):
        raise refused(f"the vector of {v['id']} has {vec.size} values, not {v['dims']}")
    return vec.astype(np.float32)
