"""Encrypted export and import of a scope's memory.

A scope is what erasure (`erasure.py`) removes: a user (every typed record of the tenant with
that `user_id`, user and user+agent scopes, all kinds and statuses) or, without a user, a whole
tenant; plus the untyped namespaces under the prefixes the caller names. The export holds
every column of those rows, their vectors, their audit trail and the scope's deletion events.

The file is a small authenticated header followed by AES-256-GCM ciphertext of the
zlib-compressed JSON payload (the layout is in docs/governance.md):

    magic "LGTMEXP\\0" | format version (1 byte) | header length (2 bytes, big endian) |
    header JSON (KDF parameters, salt, nonce) | ciphertext + 16-byte GCM tag

The whole prefix up to the ciphertext is the associated data, so changing any byte of the file
fails decryption. The key is scrypt(passphrase, salt) and is never written anywhere.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from langgraph_typed_memory.errors import (
    EmbeddingDimensionMismatch,
    ExportFileError,
    ExportFormatError,
    ImportCollision,
    InvalidQuery,
    NothingToExport,
)
from langgraph_typed_memory.namespaces import (
    decode_namespace,
)
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Plan, Sql
from langgraph_typed_memory.store.governance.envelope import (
    DEFAULT_SCRYPT_N,
    FORMAT_VERSION,
    check_cost,
    check_max_scrypt_n,
    passphrase_bytes,
    seal,
    unseal,
)
from langgraph_typed_memory.store.governance.erasure import (
    SQL_INSERT_DELETION,
    scope_filter,
    untyped_prefix_filter,
)
from langgraph_typed_memory.store.governance.payload import (
    AUDIT_COLUMNS,
    DELETION_COLUMNS,
    JSON_COLUMNS,
    MEMORY_COLUMNS,
    CheckedPayload,
    check_payload,
    refused,
    shown,
    vector_array,
)

if TYPE_CHECKING:
    from langgraph_typed_memory.store.core.records import Records

__all__ = [
    "ExportReport",
    "ImportReport",
    "Progress",
    "FORMAT_VERSION",
    "DEFAULT_SCRYPT_N",
    "export_plan",
    "import_plan",
    "check_payload",
    "CheckedPayload",
    "export_to_file",
    "import_from_file",
]

Progress = Callable[[str, int, int], None]
"""`progress(step, done, total)`: called as an export or import advances."""

CHUNK = 500
_EXPORTED = {"access_count": q.ACCESS_COUNT, "last_accessed_at": q.LAST_ACCESS}
"""What an export reads for the columns that count a record's uses: with those folded from
the access log."""

@dataclass(slots=True)
class ExportReport:
    """What `export_scope` wrote (counts only; the file holds the content, encrypted).

    Example:
        >>> ExportReport("a.lgtm", "acme", "alice", records={"fact": 2}).records
        {'fact': 2}
    """

    path: str
    tenant_id: str
    user_id: str | None
    records: dict[str, int] = field(default_factory=dict)
    """Records exported per kind (`untyped` for untyped namespaces), every status included."""
    vectors: int = 0
    audit_events: int = 0
    deletion_events: int = 0
    bytes_written: int = 0
    embedding: dict[str, Any] | None = None
    """`{"dims", "model"}` of the vectors, or None when the store has no index."""


@dataclass(slots=True)
class ImportReport:
    """What `import_scope` wrote.

    Example:
        >>> ImportReport("a.lgtm", "acme", None, source_backend="sqlite").warnings
        []
    """

    path: str
    tenant_id: str
    user_id: str | None
    records: dict[str, int] = field(default_factory=dict)
    vectors: int = 0
    audit_events: int = 0
    deletion_events: int = 0
    exported_at: str = ""
    source_backend: str = ""
    warnings: list[str] = field(default_factory=list)
    """E.g. the export's embedder differs by name from this store's (same dims)."""


# ---------------------------------------------------------------- reading the scope


def _typed_where(tenant_id: str, user_id: str | None) -> tuple[str, list[Any]]:
    """The same scope as erasure: every typed row of the tenant, or of the tenant's user."""
    where, params = scope_filter(tenant_id, user_id, "m.")
    return f"m.kind IS NOT NULL AND {where}", params


def _scope_where(tenant_id: str, user_id: str | None, prefixes: Sequence[tuple[str, ...]],
                 range_ops: tuple[str, str]) -> tuple[str, list[Any]]:
    parts = [_typed_where(tenant_id, user_id),
             *(untyped_prefix_filter(p, range_ops, "m.") for p in prefixes)]
    return "(" + " OR ".join(f"({w})" for w, _ in parts) + ")", [x for _, ps in parts for x in ps]


def _model_name(records: Records) -> str | None:
    if records.index is None:
        return None
    emb = records.index.embeddings
    name = f"{type(emb).__module__}.{type(emb).__qualname__}"
    model = getattr(emb, "model", None) or getattr(emb, "model_name", None)
    return f"{name}:{model}" if isinstance(model, str) else name


def _decode_vector(records: Records, raw: Any) -> np.ndarray:
    if records.dialect.name == "postgres":
        return np.asarray(json.loads(raw), dtype=np.float32)
    return np.frombuffer(bytes(raw), dtype=np.float32)


def _row_dict(records: Records, columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    out = dict(zip(columns, row, strict=True))
    for col in JSON_COLUMNS.intersection(out):
        if out[col] is not None:
            out[col] = records.dialect.load_json(out[col])
    if "needs_review" in out:
        out["needs_review"] = bool(out["needs_review"])
    return out


def export_plan(
    records: Records,
    tenant_id: str,
    user_id: str | None,
    *,
    untyped_prefixes: Sequence[tuple[str, ...]] = (),
    progress: Progress | None = None,
) -> Plan[dict[str, Any]]:
    """Read the scope in one consistent snapshot; returns the payload (a JSON-able dict)."""
    tick = progress or (lambda step, done, total: None)
    where, params = _scope_where(tenant_id, user_id, untyped_prefixes, records.dialect.range_ops)
    yield Begin()
    if records.dialect.name == "postgres":  # one snapshot for every statement below
        yield Sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    yield from records.access.fold()  # the logged uses count in the exported records
    total = int((yield Sql(f"SELECT count(*) FROM memories m WHERE {where}", params))[0][0])
    memories: list[dict[str, Any]] = []
    ids: dict[int, str] = {}
    last = None
    tick("memories", 0, total)
    while True:
        after = "" if last is None else " AND m.seq > ?"
        rows = yield Sql(
            f"SELECT m.seq, {', '.join(_EXPORTED.get(c, 'm.' + c) for c in MEMORY_COLUMNS)} "
            f"FROM memories m {q.ACCESS_JOIN} WHERE {where}{after} ORDER BY m.seq LIMIT ?",
            [*params, *([] if last is None else [last]), CHUNK],
        )
        for seq, *values in rows:
            ids[seq] = values[0]
            memories.append(_row_dict(records, MEMORY_COLUMNS, values))
        if rows:
            last = rows[-1][0]
            tick("memories", len(memories), total)
        if len(rows) < CHUNK:
            break
    vectors: list[dict[str, Any]] = []
    if records.has_vector_table and memories:
        expr = "v.embedding::text" if records.dialect.name == "postgres" else "v.embedding"
        rows = yield Sql(
            f"SELECT v.seq, v.field, {expr} FROM memory_vectors v JOIN memories m "
            f"ON m.seq = v.seq WHERE {where} ORDER BY v.seq, v.field", params)
        for seq, fld, raw in rows:
            vec = _decode_vector(records, raw)
            vectors.append({"id": ids[seq], "field": fld, "dims": int(vec.size),
                            "vector": base64.b64encode(vec.astype("<f4").tobytes()).decode()})
        tick("vectors", len(vectors), len(vectors))
    audit_where, audit_params = scope_filter(tenant_id, user_id)
    rows = yield Sql(f"SELECT {', '.join(AUDIT_COLUMNS)} FROM memory_audit "
                     f"WHERE {audit_where} ORDER BY seq", audit_params)
    audit = [_row_dict(records, AUDIT_COLUMNS, r) for r in rows]
    tick("audit", len(audit), len(audit))
    rows = yield Sql(f"SELECT {', '.join(DELETION_COLUMNS)} FROM memory_deletions "
                     f"WHERE {audit_where} ORDER BY at, id", audit_params)
    deletions = [_row_dict(records, DELETION_COLUMNS, r) for r in rows]
    yield Commit()
    embedding = None
    if records.index is not None:
        embedding = {"dims": records.index.dims, "model": _model_name(records)}
    try:
        version = metadata.version("langgraph-typed-memory")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        version = "unknown"
    return {
        "format": FORMAT_VERSION,
        "exported_at": records.clock().isoformat(),
        "source": {"backend": records.dialect.name, "package_version": version},
        "scope": {"tenant_id": tenant_id, "user_id": user_id,
                  "untyped_prefixes": [list(p) for p in untyped_prefixes]},
        "embedding": embedding,
        "memories": memories,
        "vectors": vectors,
        "audit": audit,
        "deletions": deletions,
    }


def _counts(memories: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in memories:
        kind = m["kind"] or "untyped"
        counts[kind] = counts.get(kind, 0) + 1
    return counts


# ---------------------------------------------------------------- writing the scope


def _describe(scope: tuple[str, str | None]) -> str:
    tenant, user = scope
    return f"tenant:{tenant}" + ("" if user is None else f"/user:{user}")


def _record_paths(rows: Sequence[Sequence[Any]]) -> list[str]:
    """Each stored (namespace, key) once, written as `typed-memory explain` takes it."""
    return list(dict.fromkeys(f"{'/'.join(decode_namespace(ns))} {key}" for ns, key in rows))


def _erase_hint(tenant_id: str, user_id: str | None) -> str:
    command = f"typed-memory erase --tenant {shlex.quote(tenant_id)}" + (
        "" if user_id is None else f" --user {shlex.quote(user_id)}")
    call = f"store.erase({tenant_id!r}" + ("" if user_id is None else f", {user_id!r}") + ")"
    return f"`{command}`, or {call} in Python"


def _collisions(records: Records, payload: dict[str, Any], tenant_id: str, user_id: str | None
                ) -> Plan[list[str]]:
    d = records.dialect
    found: list[str] = []
    where, params = _typed_where(tenant_id, user_id)
    rows = yield Sql(f"SELECT m.ns, m.key FROM memories m WHERE {where} ORDER BY m.seq", params)
    if rows:
        paths = _record_paths(rows)
        found.append(f"{len(paths)} typed record(s) of {_describe((tenant_id, user_id))}, "
                     f"{len(rows)} version(s) in all (e.g. {', '.join(paths[:5])})")
    audit_where, audit_params = scope_filter(tenant_id, user_id)
    count = (yield Sql(f"SELECT count(*) FROM memory_audit WHERE {audit_where}", audit_params))
    if count[0][0]:
        found.append(f"{count[0][0]} audit event(s) of {_describe((tenant_id, user_id))}")
    ids = [m["id"] for m in payload["memories"]]
    for start in range(0, len(ids), CHUNK):
        clause, extra = d.in_list("id", ids[start:start + CHUNK])
        taken = [r[0] for r in (yield Sql(f"SELECT id FROM memories WHERE {clause}", extra))]
        if taken:
            found.append(f"record id(s) {', '.join(taken[:5])} already exist")
    untyped = {(m["ns"], m["key"]) for m in payload["memories"] if m["kind"] is None}
    if untyped:
        clause, extra = d.in_list("ns", sorted({ns for ns, _ in untyped}))
        rows = yield Sql(f"SELECT ns, key FROM memories WHERE kind IS NULL AND {clause}", extra)
        clash = sorted(set(map(tuple, rows)) & untyped)
        if clash:
            found.append(f"{len(clash)} untyped item(s) already exist (e.g. "
                         + ", ".join(_record_paths(clash)[:5]) + ")")
    events = [e["id"] for e in payload["deletions"]]
    if events:
        clause, extra = d.in_list("id", events)
        taken = [r[0] for r in (yield Sql(f"SELECT id FROM memory_deletions WHERE {clause}",
                                          extra))]
        if taken:
            found.append(f"deletion event(s) {', '.join(taken[:5])} already exist")
    return found


def _source_backend(payload: dict[str, Any]) -> str:
    source = payload.get("source")
    return str(source.get("backend", "")) if isinstance(source, dict) else ""


def _missing_links(records: Records, outside: dict[str, str], tenant_id: str
                   ) -> Plan[list[tuple[str, str]]]:
    """The links out of a user's export that name no record of its tenant in this store."""
    targets = sorted(outside)
    held: set[str] = set()
    for start in range(0, len(targets), CHUNK):
        clause, extra = records.dialect.in_list("id", targets[start:start + CHUNK])
        held.update(r[0] for r in (yield Sql(
            f"SELECT id FROM memories WHERE tenant_id = ? AND {clause}", [tenant_id, *extra])))
    return [(t, outside[t]) for t in targets if t not in held]


def import_plan(records: Records, payload: dict[str, Any], *, path: str = "",
                progress: Progress | None = None) -> Plan[ImportReport]:
    """Check the payload (`check_payload`), then write it in one transaction; refuses,
    writing nothing, on any invalid record or collision.

    Raises:
        ExportFormatError: the payload is malformed, has rows outside its scope or a record
            the write path would refuse, or links to records this store does not hold.
        EmbeddingDimensionMismatch: the export's vectors do not fit this store's index.
        ImportCollision: the store already holds some of the scope.
    """
    tick = progress or (lambda step, done, total: None)
    tenant_id, user_id, _, outside = check_payload(payload)
    vectors = [(v["id"], v["field"], vector_array(v)) for v in payload["vectors"]]
    source = payload["embedding"]
    dims = records.index.dims if records.index is not None else None
    report = ImportReport(path, tenant_id, user_id, records=_counts(payload["memories"]),
                          vectors=len(vectors), audit_events=len(payload["audit"]),
                          deletion_events=len(payload["deletions"]),
                          exported_at=str(payload.get("exported_at", "")),
                          source_backend=_source_backend(payload))
    if vectors and (source or {}).get("dims") != dims:
        raise EmbeddingDimensionMismatch(
            f"The export holds {source['dims']}-d vectors from {source.get('model')}, but this "
            f"store's index is {'absent' if dims is None else f'{dims}-d'}. Open the store "
            f"with index={{'dims': {source['dims']}, 'embed': <the same embedder>}} (or a new "
            "database for it); nothing was imported."
        )
    if vectors and source.get("model") != _model_name(records):
        report.warnings.append(
            f"the export's vectors come from {source.get('model')}, this store embeds with "
            f"{_model_name(records)} (same dims): make sure it is the same model."
        )
    d = records.dialect
    yield Begin()
    missing = yield from _missing_links(records, outside, tenant_id)
    if missing:
        target, label = missing[0]
        raise ExportFormatError(
            f"Cannot import {_describe((tenant_id, user_id))}: {len(missing)} record(s) of the "
            "export were replaced by records outside it that this store does not hold (e.g. "
            f"{label}, superseded by {shown(target)}). A user's records can be replaced by "
            "tenant-wide ones, which a user's export leaves out: import the tenant's export "
            "first (export_scope without user_id), or import the whole tenant instead. "
            "Nothing was written."
        )
    found = yield from _collisions(records, payload, tenant_id, user_id)
    if found:
        raise ImportCollision(
            f"Cannot import {_describe((tenant_id, user_id))}: this store already holds "
            + "; ".join(found) + ". Import never merges: erase "
            f"{_describe((tenant_id, user_id))} here first ({_erase_hint(tenant_id, user_id)}) "
            "or import into another database. Nothing was written."
        )
    insert = (f"INSERT INTO memories ({', '.join(MEMORY_COLUMNS)}) "
              f"VALUES ({', '.join('?' for _ in MEMORY_COLUMNS)})")
    memories = payload["memories"]
    by_id: dict[str, list[tuple[str, np.ndarray]]] = {}
    for ident, fld, vec in vectors:
        by_id.setdefault(ident, []).append((fld, vec))
    tick("memories", 0, len(memories))
    written_vectors = 0
    for start in range(0, len(memories), CHUNK):
        chunk = memories[start:start + CHUNK]
        yield Sql(insert, many=[[
            d.dump_json(m[c]) if c in JSON_COLUMNS and m[c] is not None else m[c]
            for c in MEMORY_COLUMNS] for m in chunk])
        wanted = [m["id"] for m in chunk if m["id"] in by_id]
        if wanted:
            clause, extra = d.in_list("id", wanted)
            seqs = dict((yield Sql(f"SELECT id, seq FROM memories WHERE {clause}", extra)))
            rows = [[seqs[i], fld, d.encode_vector(vec.tolist())]
                    for i in wanted for fld, vec in by_id[i]]
            yield d.bulk(q.Bulk.VECTOR, rows)
            written_vectors += len(rows)
            tick("vectors", written_vectors, len(vectors))
        tick("memories", start + len(chunk), len(memories))
    audit = payload["audit"]
    for start in range(0, len(audit), CHUNK):
        chunk = audit[start:start + CHUNK]
        yield d.bulk(q.Bulk.AUDIT, [[a[c] for c in AUDIT_COLUMNS] for a in chunk])
        tick("audit", start + len(chunk), len(audit))
    for event in payload["deletions"]:
        yield Sql(SQL_INSERT_DELETION, [event[c] if c != "counts" else d.dump_json(event[c])
                                        for c in DELETION_COLUMNS])
    tick("deletions", len(payload["deletions"]), len(payload["deletions"]))
    yield Commit()
    return report


# ---------------------------------------------------------------- files


def _check_scope(tenant_id: Any, user_id: Any, prefixes: Any) -> list[tuple[str, ...]]:
    if not isinstance(tenant_id, str) or not tenant_id:
        raise InvalidQuery(f"tenant_id={tenant_id!r}: give the tenant to export, e.g. 'acme'.")
    if user_id is not None and (not isinstance(user_id, str) or not user_id):
        raise InvalidQuery(f"user_id={user_id!r}: give a user id, or None for the whole tenant.")
    if isinstance(prefixes, (str, tuple)) and prefixes and isinstance(prefixes[0], str):
        raise InvalidQuery(f"untyped_prefixes={prefixes!r}: give a list of namespace tuples, "
                           "e.g. [('memories', 'alice')].")
    out = [tuple(p) for p in prefixes]
    if not all(p and all(isinstance(x, str) and x for x in p) for p in out):
        raise InvalidQuery(f"untyped_prefixes={prefixes!r}: each prefix is a non-empty tuple "
                           "of labels, e.g. ('memories', 'alice').")
    return out


def _check_progress(progress: Any) -> None:
    if progress is not None and not callable(progress):
        raise InvalidQuery(f"progress={progress!r}: give a callable (step, done, total) or None.")


def _nothing_message(tenant_id: str, user_id: str | None,
                     prefixes: Sequence[tuple[str, ...]]) -> str:
    """Why an export of a scope holding nothing writes no file.

    Example:
        >>> text = _nothing_message("acme", "bob", [("memories", "bob")])
        >>> "of tenant:acme/user:bob, nor anything under memories/bob." in text
        True
    """
    untyped = "".join(f", nor anything under {'/'.join(p)}" for p in prefixes)
    return (f"Nothing to export: this store holds no record, audit event or deletion event "
            f"of {_describe((tenant_id, user_id))}{untyped}. Ids are matched exactly: check "
            "the tenant and user ids (`typed-memory inspect --tenant ...` lists what is "
            "stored). No file was written; pass allow_empty=True (the CLI's --allow-empty) "
            "to write an empty export anyway.")


def export_to_file(
    run: Callable[[Plan[Any]], Any],
    records: Records,
    path: str | os.PathLike[str],
    passphrase: str | bytes,
    *,
    tenant_id: str,
    user_id: str | None = None,
    untyped_prefixes: Sequence[tuple[str, ...]] = (),
    progress: Progress | None = None,
    scrypt_n: int = DEFAULT_SCRYPT_N,
    allow_empty: bool = False,
) -> ExportReport:
    """Read the scope with `run`, encrypt it, and write it atomically (mode 0600) to `path`.

    Raises:
        NothingToExport: the store holds nothing of the scope (and not `allow_empty`); no
            file is written.
    """
    passphrase_bytes(passphrase)
    check_cost(scrypt_n)
    _check_progress(progress)
    prefixes = _check_scope(tenant_id, user_id, untyped_prefixes)
    tick = progress or (lambda step, done, total: None)
    payload = run(export_plan(records, tenant_id, user_id, untyped_prefixes=prefixes,
                              progress=progress))
    if not allow_empty and not (payload["memories"] or payload["audit"] or payload["deletions"]):
        raise NothingToExport(_nothing_message(tenant_id, user_id, prefixes))
    tick("encrypt", 0, 1)
    plaintext = json.dumps(payload, ensure_ascii=False, separators=(",", ":"),
                           allow_nan=False).encode("utf-8")
    blob = seal(plaintext, passphrase, scrypt_n=scrypt_n)
    tick("encrypt", 1, 1)
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tick("write", 1, 1)
    return ExportReport(str(target), tenant_id, user_id, records=_counts(payload["memories"]),
                        vectors=len(payload["vectors"]), audit_events=len(payload["audit"]),
                        deletion_events=len(payload["deletions"]), bytes_written=len(blob),
                        embedding=payload["embedding"])


def import_from_file(
    run: Callable[[Plan[Any]], Any],
    records: Records,
    path: str | os.PathLike[str],
    passphrase: str | bytes,
    *,
    progress: Progress | None = None,
    max_scrypt_n: int = DEFAULT_SCRYPT_N,
) -> ImportReport:
    """Decrypt and check the file at `path`, then write its scope with `run` (one transaction).

    `max_scrypt_n` is the largest scrypt cost the file's header may ask for (default: what
    `export_to_file` writes by default); the header is refused before any key derivation.
    """
    passphrase_bytes(passphrase)
    check_max_scrypt_n(max_scrypt_n)
    _check_progress(progress)
    tick = progress or (lambda step, done, total: None)
    tick("decrypt", 0, 1)
    try:
        sealed = Path(path).read_bytes()
    except OSError as exc:
        raise ExportFileError(f"Cannot read the export file {str(path)!r}: {exc.strerror or exc}."
                              " Check the path; nothing was imported.") from None
    plaintext = unseal(sealed, passphrase, max_scrypt_n=max_scrypt_n)
    try:
        payload = json.loads(plaintext)
    except ValueError:
        raise refused("the payload is not JSON") from None
    tick("decrypt", 1, 1)
    return run(import_plan(records, payload, path=str(path), progress=progress))  # type: ignore[no-any-return]
