"""What a batch of store operations does, written once for every backend and both I/O styles.

`Engine.run(ops)` is a generator (see `protocol.py`): it validates every operation before any
I/O, asks for the embeddings it needs, then yields SQL requests and turns the rows into
LangGraph `Item`s. Reads run first and see the state before the batch's writes, as in
LangGraph's `InMemoryStore`; writes run in one transaction, the last put to a key winning.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from langgraph_typed_memory.config import (
    IndexSettings,
    LifecycleSettings,
    RetrievalSettings,
    TTLSettings,
)
from langgraph_typed_memory.errors import (
    EmbeddingDimensionMismatch,
    EmbeddingFailed,
    InvalidRecord,
    SchemaVersionError,
)
from langgraph_typed_memory.gate import GateSettings
from langgraph_typed_memory.lifecycle import (
    check_retention_class,
    initial_status,
    on_access,
)
from langgraph_typed_memory.namespaces import (
    TypedNamespace,
    decode_namespace,
    encode_namespace,
    is_typed,
    parse_namespace,
)
from langgraph_typed_memory.results import MemoryItem
from langgraph_typed_memory.schemas import ValidatedRecord, check_json_value, validate_record
from langgraph_typed_memory.scoring import (
    matches_filter,
)
from langgraph_typed_memory.store import discovery, promotion
from langgraph_typed_memory.store import freshness as sweeps
from langgraph_typed_memory.store import queries as q
from langgraph_typed_memory.store.access import AccessBuffer
from langgraph_typed_memory.store.cell_cache import CellCache, CellFamily
from langgraph_typed_memory.store.protocol import (
    Begin,
    Commit,
    Embed,
    EmbedError,
    Plan,
    Sql,
    interleave,
)
from langgraph_typed_memory.store.validation import HistoryOp, validate_op
from langgraph_typed_memory.store.vector_cache import ScopeVectorCache, VectorRanking

__all__ = ["Engine", "Dialect", "HistoryOp"]




class Dialect(Protocol):
    """What differs between backends; everything else is shared SQL written with `?`."""

    name: str
    position_fn: str
    """SQL function (text, substring) -> 1-based position or 0."""
    cache: CellCache
    """The search caches' entries: what erasure asks to forget."""
    vectors: ScopeVectorCache
    """The cached vector matrices (and their records' priors) per scope cell."""
    @property
    def postings(self) -> CellFamily[Any]:
        """The cached full-text postings per scope cell."""
        ...

    def migrations(self, dims: int | None) -> tuple[tuple[str, tuple[str, ...]], ...]: ...
    def lock_migrations(self) -> Sql | None: ...
    def dump_json(self, value: Any) -> Any: ...
    def load_json(self, value: Any) -> Any: ...
    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]: ...
    def encode_vector(self, vector: Sequence[float]) -> Any: ...
    def bulk(self, text: str, rows: list[list[Any]]) -> Sql:
        """The statement(s) inserting many rows of one insert statement `text`."""
        ...
    def json_field(self, column: str, field: str) -> str:
        """SQL for a top-level field of a JSON column, as text (`field` is a constant)."""
        ...
    def lexical(
        self, scope: q.ScopeRead, terms: list[str], depth: int | None
    ) -> Plan[list[tuple[int, float]]]:
        """Best-first (seq, score) of the scope's live rows holding any of `terms` (all of
        them when `depth` is None)."""
        ...
    def vector_top_k(
        self, scope: q.ScopeRead, query: Sequence[float], depth: int | None
    ) -> Plan[VectorRanking]:
        """Top vector matches among the scope's live rows. The value holds a future, so the
        ranking may run while the caller's next statement does."""
        ...

    def after_erasure(self) -> list[Sql]:
        """Statements that purge erased content from files and index structures."""
        ...

    def vector_scores(
        self, seqs: Sequence[int], query: Sequence[float]
    ) -> Plan[list[tuple[int, float]]]: ...


def _ts(dt: datetime) -> float:
    return dt.timestamp()


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


@dataclass(slots=True)
class _Write:
    """A validated put or delete, ready to execute."""

    op: PutOp
    ns: str
    typed: TypedNamespace | None
    record: ValidatedRecord | None
    texts: list[tuple[str, str]]
    """(field, text) pairs to embed."""
    vectors: list[list[float]] | None = None


def _prefix_sql(prefix: tuple[str, ...]) -> tuple[str, list[Any]]:
    joined = encode_namespace(prefix)
    return q.NS_PREFIX, [joined, len(joined) + 1, joined + "."]


class Engine:
    """The shared behaviour of every store class."""

    def __init__(
        self,
        dialect: Dialect,
        *,
        index: IndexSettings | None,
        retrieval: RetrievalSettings,
        ttl: TTLSettings,
        clock: Callable[[], datetime],
        gate: GateSettings | None = None,
        lifecycle: LifecycleSettings | None = None,
    ) -> None:
        self.gate = gate or GateSettings()
        self.lifecycle = lifecycle or LifecycleSettings()
        self.access = AccessBuffer(self.lifecycle, clock, dialect.bulk)
        """Retrievals not yet written (access counts)."""
        self.dialect = dialect
        self.index = index
        self.retrieval = retrieval
        self.ttl = ttl
        self.clock = clock

    # ---------------------------------------------------------------- set-up

    def setup(self) -> Plan[None]:
        """Apply pending migrations, each in its own transaction with its bookkeeping row.

        A database that is up to date is only read, so a role without DDL rights can call
        it (docs/operations.md)."""
        d = self.dialect
        dims = self.index.dims if self.index else None
        try:
            applied = {r[0] for r in (yield Sql(q.SQL_APPLIED))}
        except Exception:  # a new database: no bookkeeping table yet
            yield Sql(q.SQL_MIGRATIONS_TABLE)
            applied = set()
        for name, statements in d.migrations(dims):
            if name in applied:
                continue
            yield Begin()
            lock = d.lock_migrations()
            if lock is not None:
                yield lock
            if name not in {r[0] for r in (yield Sql(q.SQL_APPLIED))}:
                for statement in statements:
                    yield Sql(statement)
                yield Sql(q.SQL_RECORD_MIGRATION, [name, _ts(self.clock())])
            yield Commit()
        if dims is not None:
            rows = yield Sql(q.SQL_META_GET, ["dims"])
            if not rows:
                yield Sql(q.SQL_META_SET, ["dims", str(dims)])
            elif int(rows[0][0]) != dims:
                raise SchemaVersionError(
                    f"This database stores {rows[0][0]}-d vectors but the index config says "
                    f"dims={dims}. Use the embedder the database was built with, or a new "
                    "database."
                )

    def sweep_ttl(self) -> Plan[int]:
        """Delete rows whose TTL has passed; returns how many. Typed records are audited as
        `forgotten`, with their older versions (`freshness.ttl_plan`)."""
        return (yield from sweeps.ttl_plan(self))

    # ---------------------------------------------------------------- batch

    def run(self, ops: Iterable[Op]) -> Plan[list[Result]]:
        """Execute a batch: validate all, embed, read, then write in one transaction."""
        ops = list(ops)
        writes: dict[tuple[tuple[str, ...], str], _Write] = {}
        promotions: dict[int, list[promotion.Prepared]] = {}
        for i, op in enumerate(ops):
            validate_op(op)
            if isinstance(op, PutOp):
                writes[(op.namespace, op.key)] = self._prepare_write(op)
            elif isinstance(op, promotion.PromoteOp):
                promotions[i] = promotion.prepare(op, self.gate)
        queries = sorted(
            {op.query for op in ops if isinstance(op, SearchOp) and op.query and self.index}
        )
        texts = [t for w in writes.values() for _, t in w.texts]
        if texts:
            vectors = yield Embed(texts)
            if isinstance(vectors, EmbedError):
                raise EmbeddingFailed(
                    f"The embedder raised while indexing {len(texts)} text(s): "
                    f"{vectors.error!r}. Nothing was written; retry, or put with index=False."
                ) from vectors.error
            self._check_vectors(vectors, len(texts))
            it = iter(vectors)
            for w in writes.values():
                w.vectors = [next(it) for _ in w.texts]
        degraded_promotions = yield from self._embed_proposals(promotions)
        query_vectors: dict[str, list[float] | EmbedError] = {}
        if queries:
            answer = yield Embed(queries, query=True)
            if isinstance(answer, EmbedError):
                query_vectors = dict.fromkeys(queries, answer)
            else:
                try:
                    self._check_vectors(answer, len(queries))
                    query_vectors = dict(zip(queries, answer, strict=True))
                except EmbeddingDimensionMismatch as exc:
                    query_vectors = dict.fromkeys(queries, EmbedError(exc))

        # The reads run together, ranked searches first: their vector rankings, started in
        # worker threads, overlap the other reads' statements.
        order = sorted(range(len(ops)), key=lambda i: not (
            isinstance(ops[i], SearchOp) and ops[i].query))  # type: ignore[union-attr]
        results: list[Result] = [None] * len(ops)
        values = yield from interleave([self._read(ops[i], query_vectors) for i in order])
        for i, value in zip(order, values, strict=True):
            results[i] = value
        if writes or promotions:
            yield Begin()
            yield from self.access.flush()  # buffered access counts ride along
            currents = yield from self._current_rows([(w.ns, w.op.key) for w in writes.values()])
            deferred: Deferred = {}  # the puts' new rows, vectors and audit, sent in bulk
            for w in writes.values():
                yield from self._write(w, currents.get((w.ns, w.op.key)), deferred)
            for text in sorted(deferred, key=_BULK_ORDER.index):
                yield self.dialect.bulk(text, deferred[text])
            for i, prepared in promotions.items():
                op = ops[i]
                assert isinstance(op, promotion.PromoteOp)
                outcomes = yield from promotion.execute(self, op, prepared, self.gate)
                if degraded_promotions:
                    for outcome in outcomes:
                        outcome.reason += f" ({degraded_promotions})"
                results[i] = outcomes
            yield Commit()
        return results

    def _read(
        self, op: Op, query_vectors: dict[str, list[float] | EmbedError]
    ) -> Plan[Result]:
        """One read op of a batch (None for a write)."""
        if isinstance(op, GetOp):
            return (yield from self._get(op))
        if isinstance(op, SearchOp):
            return (yield from self._search(op, query_vectors.get(op.query or "")))
        if isinstance(op, ListNamespacesOp):
            return (yield from self._list_namespaces(op))
        if isinstance(op, HistoryOp):
            ns = encode_namespace(op.namespace)
            if op.audit:
                return [_audit_event(r) for r in (yield Sql(q.SQL_AUDIT_FOR_KEY, [ns, op.key]))]
            return [self.to_item(r) for r in (yield Sql(q.SQL_HISTORY, [ns, op.key]))]
        return None

    def _embed_proposals(self, promotions: dict[int, list[promotion.Prepared]]) -> Plan[str]:
        """Embed what the gate may write. An embedder failure degrades (no vectors), recorded."""
        items = [p for prepared in promotions.values() for p in prepared
                 if self.index and p.embed_text and p.rejection is None]
        if not items:
            return ""
        answer = yield Embed([p.embed_text or "" for p in items])
        if isinstance(answer, EmbedError):
            return f"not embedded: embedder failed: {answer.error!r:.120}"
        try:
            self._check_vectors(answer, len(items))
        except EmbeddingDimensionMismatch as exc:
            return f"not embedded: {exc}"
        for p, vector in zip(items, answer, strict=True):
            p.vectors = [((q.TYPED_FIELD, p.embed_text or ""), vector)]
        return ""

    # ---------------------------------------------------------------- validation

    def _prepare_write(self, op: PutOp) -> _Write:
        ns = encode_namespace(op.namespace)
        if not is_typed(op.namespace):
            if op.value is None:
                return _Write(op, ns, None, None, [])
            if not isinstance(op.value, dict):
                raise InvalidRecord(
                    f"value for {op.key!r} in {op.namespace!r} must be a dict, "
                    f"got {type(op.value).__name__}."
                )
            check_json_value(op.value, f"{op.key!r} in {op.namespace!r}")
            return _Write(op, ns, None, None, self._untyped_texts(op))
        typed = parse_namespace(op.namespace)
        if op.value is None:
            return _Write(op, ns, typed, None, [])
        record = validate_record(typed.kind, op.key, op.value, op.namespace)
        check_retention_class(record.value, self.lifecycle, f"{typed.kind} {op.key!r}")
        texts = []
        if self.index and record.embed_text and op.index is not False:
            texts = [(q.TYPED_FIELD, record.embed_text)]
        return _Write(op, ns, typed, record, texts)

    def _untyped_texts(self, op: PutOp) -> list[tuple[str, str]]:
        if not self.index or op.index is False:
            return []
        if op.index is None:
            paths = self.index.paths
        else:
            paths = tuple((f, tokenize_path(f)) for f in op.index)
        out: list[tuple[str, str]] = []
        for path, tokens in paths:
            found = get_text_at_path(op.value, tokens)
            if len(found) > 1:
                out.extend((f"{path}.{i}", t) for i, t in enumerate(found))
            elif found:
                out.append((path, found[0]))
        return out

    def _check_vectors(self, vectors: Any, expected: int) -> None:
        if not isinstance(vectors, list) or len(vectors) != expected:
            raise EmbeddingDimensionMismatch(
                f"The embedder returned {len(vectors) if isinstance(vectors, list) else vectors!r}"
                f" vectors for {expected} texts."
            )
        dims = self.index.dims if self.index else 0
        for v in vectors:
            if len(v) != dims or not all(math.isfinite(x) for x in v):
                raise EmbeddingDimensionMismatch(
                    f"The embedder returned a {len(v)}-d vector (or one with NaN/inf) but the "
                    f"index config says dims={dims}; fix dims or the embedder."
                )

    # ---------------------------------------------------------------- reads

    def to_item(self, row: tuple[Any, ...], score: float | None = None, **memory: Any) -> Item:
        (seq, ident, ns, key, value, kind, tenant, user, agent, status, confidence,
         superseded_by, occurred_at, created_at, updated_at, *_rest) = row
        namespace = decode_namespace(ns)
        value = self.dialect.load_json(value)
        if kind is None:
            cls = SearchItem if memory.get("search") else None
            if cls is None:
                return Item(
                    value=value, key=key, namespace=namespace,
                    created_at=_dt(created_at), updated_at=_dt(updated_at),
                )
            return SearchItem(namespace, key, value, _dt(created_at), _dt(updated_at), score)
        memory.pop("search", None)
        return MemoryItem(
            namespace=namespace,
            key=key,
            value=value,
            created_at=_dt(created_at),
            updated_at=_dt(updated_at),
            score=score,
            memory={
                "id": ident,
                "kind": kind,
                "scope": {"tenant_id": tenant, "user_id": user, "agent_id": agent},
                "status": status,
                "confidence": confidence,
                "superseded_by": superseded_by,
                "occurred_at": _dt(occurred_at).isoformat() if occurred_at is not None else None,
                "provenance": {
                    "source_run_id": row[16],
                    "source_turn": row[17],
                    "policy_version": row[18],
                },
                "repetitions": row[22],
                "evidence": self._list(row[23]),
                "contradicts": self._list(row[24]),
                "needs_review": bool(row[25]),
                **memory,
            },
        )

    def _list(self, stored: Any) -> list[Any]:
        """A stored JSON list (most rows hold none, or an empty one)."""
        return [] if stored is None or stored == "[]" else self.dialect.load_json(stored)

    def _refresh(self, seqs: list[int], refresh: bool) -> Plan[None]:
        if not seqs or not refresh:
            return
        clause, params = self.dialect.in_list("seq", seqs)
        yield Sql(q.SQL_REFRESH_TTL.format(clause=clause), [_ts(self.clock()), *params])

    def _get(self, op: GetOp) -> Plan[Item | None]:
        rows = yield Sql(q.SQL_GET, [encode_namespace(op.namespace), op.key,
                                     _ts(self.clock())])
        if not rows:
            return None
        yield from self._refresh([rows[0][0]], op.refresh_ttl)
        item = self.to_item(rows[0])
        if isinstance(item, MemoryItem):
            yield from self.reactivate([item], actor="store.get")
            yield from self.access.note([item.memory["id"]])
        return item

    # ---------------------------------------------------------- lifecycle (access, history, expiry)

    def reactivate(self, items: Sequence[Item], *, actor: str) -> Plan[None]:
        """Expiry is reversed on access: expired items among `items` become active,
        audited, in one transaction; their `memory` says so (`reactivated`)."""
        expired = [i for i in items if isinstance(i, MemoryItem) and i.status == "expired"]
        if not expired:
            return
        now = _ts(self.clock())
        yield Begin()
        for item in expired:
            if not (yield Sql(q.SQL_REACTIVATE, [now, now, item.memory["id"]])):
                continue  # already reactivated or replaced by a concurrent writer
            typed = parse_namespace(item.namespace)
            after = on_access("expired")
            yield from self.transition(item.memory["id"], typed, item.key, "expired", after,
                                       f"read while expired ({actor}): expiry reversed on "
                                       "access", actor=actor)
            item.memory.update(status=after, reactivated=True)
        yield Commit()

    def _list_namespaces(self, op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
        sql, params = q.SQL_LIST_NS, [_ts(self.clock())]
        for cond in op.match_conditions or ():
            if cond.match_type == "prefix" and cond.path and "*" not in cond.path:
                clause, extra = _prefix_sql(cond.path)
                sql, params = f"{sql} AND {clause}", [*params, *extra]
        rows = yield Sql(sql, params)
        namespaces = [decode_namespace(r[0]) for r in rows]
        for cond in op.match_conditions or ():
            namespaces = [ns for ns in namespaces if _matches(cond.match_type, cond.path, ns)]
        if op.max_depth is not None:
            namespaces = [ns[: op.max_depth] for ns in namespaces]
        unique = sorted(set(namespaces))
        return unique[op.offset : op.offset + op.limit]

    def _search(
        self, op: SearchOp, query_vector: list[float] | EmbedError | None
    ) -> Plan[list[Item]]:
        if is_typed(op.namespace_prefix):
            return (yield from discovery.typed_search(self, op, query_vector))
        return (yield from self._untyped_search(op, query_vector))

    def _untyped_search(
        self, op: SearchOp, query_vector: list[float] | EmbedError | None
    ) -> Plan[list[Item]]:
        clause, params = _prefix_sql(op.namespace_prefix)
        if not op.namespace_prefix:
            clause, params = "1 = 1", []
        rows = yield Sql(
            f"SELECT {q.COLUMNS} FROM memories m WHERE m.kind IS NULL AND {clause} "
            f"AND m.{q.CURRENT} AND {q.LIVE} ORDER BY m.seq",
            [*params, _ts(self.clock())],
        )
        rows = [r for r in rows if matches_filter(self.dialect.load_json(r[4]), op.filter)]
        if not (op.query and isinstance(query_vector, list)):
            page = rows[op.offset : op.offset + op.limit]
            yield from self._refresh([r[0] for r in page], op.refresh_ttl)
            return [self.to_item(r, search=True) for r in page]
        scored = (
            (yield from self.dialect.vector_scores([r[0] for r in rows], query_vector))
            if rows else []
        )
        by_seq = {r[0]: r for r in rows}
        scored_seqs = {seq for seq, _ in scored}
        page_scored = scored[op.offset : op.offset + op.limit]
        out = [self.to_item(by_seq[seq], score, search=True) for seq, score in page_scored]
        if len(out) < op.limit:
            scoreless = [r for r in rows if r[0] not in scored_seqs]
            out.extend(self.to_item(r, search=True) for r in scoreless[: op.limit - len(out)])
        yield from self._refresh([by_seq[seq][0] for seq, _ in page_scored], op.refresh_ttl)
        return out

    # ---------------------------------------------------------------- writes

    def _current_rows(
        self, pairs: list[tuple[str, str]]
    ) -> Plan[dict[tuple[str, str], tuple[Any, ...]]]:
        """The current row (seq, id, value, content_hash, status) of each (ns, key), read in
        chunks of 500 pairs."""
        out: dict[tuple[str, str], tuple[Any, ...]] = {}
        for start in range(0, len(pairs), 500):
            chunk = pairs[start : start + 500]
            sql = q.SQL_CURRENT_ROWS.format(pairs=", ".join(["(?, ?)"] * len(chunk)))
            for ns, key, *row in (yield Sql(sql, [x for pair in chunk for x in pair])):
                out[(ns, key)] = tuple(row)
        return out

    def _write(
        self, w: _Write, old: tuple[Any, ...] | None, deferred: Deferred | None = None
    ) -> Plan[None]:
        op, now = w.op, _ts(self.clock())
        if op.value is None:
            if old is None:
                return
            if w.typed is None:
                yield Sql(q.SQL_DELETE, [old[0]])
            else:
                yield Sql(q.SQL_REVOKE, [now, old[0]])
                yield from self._drop_vectors(old[0])
                yield from self.transition(old[1], w.typed, op.key, old[4], "revoked",
                                           "deleted with store.delete", actor="store.delete",
                                           deferred=deferred)
            return
        expires = now + op.ttl * 60.0 if op.ttl else None
        if w.typed is None:
            value = self.dialect.dump_json(op.value)
            if old is not None:
                yield Sql(q.SQL_UPDATE_UNTYPED, [value, now, expires, op.ttl, old[0]])
                yield from self._drop_vectors(old[0])
                seq = old[0]
            else:
                seq = (yield Sql(q.SQL_INSERT, [
                    uuid.uuid4().hex, w.ns, op.key, value, None, None, None, None, "active",
                    None, None, None, None, now, now, expires, op.ttl, None, None, None,
                    None, None, False,
                ]))[0][0]
            yield from self._insert_vectors(seq, w, deferred)
            return
        record, typed = w.record, w.typed
        assert record is not None and typed is not None
        if old is not None and old[3] == record.content_hash and (
            self.dialect.load_json(old[2]) == record.value
        ):
            yield Sql(q.SQL_TOUCH, [now, expires, op.ttl, old[0]])  # same value: no new version
            return
        new_id = uuid.uuid4().hex
        if old is not None:
            yield from self.supersede(old[0], new_id)
            yield from self.transition(old[1], typed, op.key, old[4], "superseded",
                                       f"replaced by {new_id} (store.put)", actor="store.put",
                                       deferred=deferred)
        status = initial_status(typed.kind, typed.scope)
        yield from self.insert_typed(
            new_id, typed, op.key, record, status=status,
            vectors=list(zip(w.texts, w.vectors or [], strict=False)), expires=expires,
            ttl=op.ttl, deferred=deferred,
        )
        yield from self.transition(new_id, typed, op.key, None, status,
                                   "written with store.put", actor="store.put",
                                   deferred=deferred)

    def supersede(self, old_seq: int, new_id: str) -> Plan[None]:
        """Mark a current row superseded by `new_id`; drop its index entries."""
        yield Sql(q.SQL_SUPERSEDE, [new_id, _ts(self.clock()), old_seq])
        yield from self._drop_vectors(old_seq)

    def transition(
        self,
        memory_id: str,
        typed: TypedNamespace,
        key: str,
        before: str | None,
        after: str,
        reason: str,
        *,
        actor: str,
        run_id: str | None = None,
        deferred: Deferred | None = None,
    ) -> Plan[None]:
        """Append one lifecycle transition to the audit log, in the caller's transaction
        (with `deferred`, the row joins the bulk statements sent before the commit)."""
        scope = typed.scope
        yield from _emit(q.SQL_AUDIT_INSERT, [
            memory_id, encode_namespace(typed.namespace()), key, typed.kind, scope.tenant_id,
            scope.user_id, scope.agent_id, _ts(self.clock()), actor, before, after, reason,
            run_id,
        ], deferred)

    def insert_typed(
        self,
        new_id: str,
        typed: TypedNamespace,
        key: str,
        record: ValidatedRecord,
        *,
        status: str,
        vectors: list[tuple[tuple[str, str], list[float]]],
        expires: float | None = None,
        ttl: float | None = None,
        policy_version: str | None = None,
        evidence: list[dict[str, Any]] | None = None,
        contradicts: list[str] | None = None,
        needs_review: bool = False,
        deferred: Deferred | None = None,
    ) -> Plan[None]:
        """Insert one typed record and its vectors: now, or with `deferred` in bulk before
        the commit."""
        now = _ts(self.clock())
        scope, value, d = typed.scope, record.value, self.dialect
        occurred = _ts(record.occurred_at) if record.occurred_at else None
        yield from _emit(q.SQL_INSERT_ROW, [
            new_id, encode_namespace(typed.namespace()), key, d.dump_json(value), typed.kind,
            scope.tenant_id, scope.user_id, scope.agent_id, status, record.confidence,
            record.content_hash, record.search_text, occurred, now, now, expires, ttl,
            value.get("source_run_id"), value.get("source_turn"), policy_version,
            d.dump_json(evidence) if evidence is not None else None,
            d.dump_json(contradicts) if contradicts is not None else None, needs_review,
        ], deferred)
        for (field, _), vec in vectors:
            yield from _emit(q.SQL_INSERT_VECTOR_FOR_ID, [new_id, field, d.encode_vector(vec)],
                             deferred)

    @property
    def has_vector_table(self) -> bool:
        """SQLite always has the vector table; Postgres only once set up with an index."""
        return self.index is not None or self.dialect.name == "sqlite"

    def _drop_vectors(self, seq: int) -> Plan[None]:
        # Without an index config the Postgres schema has no vector table (its column type
        # needs the dimension); deleting a record still cascades to any vectors it had.
        if self.index is not None:
            yield Sql(q.SQL_DROP_VECTORS, [seq])

    def _insert_vectors(self, seq: int, w: _Write, deferred: Deferred | None) -> Plan[None]:
        if not w.texts or not w.vectors:
            return
        for (field, _), vec in zip(w.texts, w.vectors, strict=True):
            yield from _emit(q.SQL_INSERT_VECTOR, [seq, field, self.dialect.encode_vector(vec)],
                             deferred)


Deferred = dict[str, list[list[Any]]]
"""Rows of insert statements a batch sends in bulk (executemany) before its commit."""
_BULK_ORDER = [q.SQL_INSERT_ROW, q.SQL_INSERT_VECTOR_FOR_ID, q.SQL_INSERT_VECTOR,
               q.SQL_AUDIT_INSERT]
"""Records before their vectors."""


def _emit(text: str, row: list[Any], deferred: Deferred | None) -> Plan[None]:
    """Run one insert now, or add its row to `deferred`."""
    if deferred is None:
        yield Sql(text, row)
    else:
        deferred.setdefault(text, []).append(row)


def _audit_event(row: tuple[Any, ...]) -> dict[str, Any]:
    memory_id, at, actor, before, after, reason, run_id = row
    return {"memory_id": memory_id, "at": _dt(at).isoformat(), "actor": actor,
            "from_status": before, "to_status": after, "reason": reason, "run_id": run_id}


def _matches(match_type: str, path: tuple[str, ...], ns: tuple[str, ...]) -> bool:
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path, strict=False) if match_type == "prefix" else zip(
        reversed(ns), reversed(path), strict=False
    )
    return all(p == "*" or n == p for n, p in pairs)

