"""What a batch of store operations does, written once for every backend and both I/O styles.

`Engine.run(ops)` is a generator (see `protocol.py`): it validates every operation before any
I/O, asks for the embeddings it needs, then yields SQL requests and turns the rows into
LangGraph `Item`s. Reads run first and see the state before the batch's writes, as in
LangGraph's `InMemoryStore`; writes run in one transaction, the last put to a key winning.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from langgraph_typed_memory.errors import (
    EmbeddingDimensionMismatch,
    EmbeddingFailed,
    InvalidRecord,
    SchemaVersionError,
)
from langgraph_typed_memory.lifecycle import (
    check_retention_class,
    initial_status,
)
from langgraph_typed_memory.namespaces import (
    TypedNamespace,
    encode_namespace,
    is_typed,
    parse_namespace,
)
from langgraph_typed_memory.results import MemoryItem
from langgraph_typed_memory.schemas import ValidatedRecord, check_json_value, validate_record
from langgraph_typed_memory.store.core import promote, search, untyped
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.ops import HistoryOp, validate_op
from langgraph_typed_memory.store.core.protocol import (
    Begin,
    Commit,
    Embed,
    EmbedError,
    Plan,
    Sql,
    interleave,
)
from langgraph_typed_memory.store.core.records import Deferred, Records, dt, emit, ts
from langgraph_typed_memory.store.governance import sweeps

__all__ = ["Engine", "HistoryOp"]




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




class Engine(Records):
    """The shared behaviour of every store class: a batch of operations, set-up and the
    TTL sweep, on the record operations of `Records`."""

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
            yield Begin(read_committed=True)
            lock = d.lock_migrations()
            if lock is not None:
                yield lock
            if name not in {r[0] for r in (yield Sql(q.SQL_APPLIED))}:
                for statement in statements:
                    yield Sql(statement)
                yield Sql(q.SQL_RECORD_MIGRATION, [name, ts(self.clock())])
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
        if len(ops) == 1 and isinstance(ops[0], GetOp):  # `store.get`: one read, nothing else
            validate_op(ops[0])
            return [(yield from self._get(ops[0]))]
        writes: dict[tuple[tuple[str, ...], str], _Write] = {}
        promotions: dict[int, list[promote.Prepared]] = {}
        for i, op in enumerate(ops):
            validate_op(op)
            if isinstance(op, PutOp):
                writes[(op.namespace, op.key)] = self._prepare_write(op)
            elif isinstance(op, promote.PromoteOp):
                promotions[i] = promote.prepare(op, self.gate)
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
            self.check_vectors(vectors, len(texts))
            it = iter(vectors)
            for w in writes.values():
                w.vectors = [next(it) for _ in w.texts]
        degraded_promotions = yield from self._embed_proposals(promotions)
        query_vectors = None
        if queries:  # embedded while the reads start; a search waits where it needs them
            assert self.index is not None
            query_vectors = search.QueryVectors(
                self, queries, (yield Embed(queries, query=True, wait=False)),
                self.index.embed_timeout)

        if len(ops) == 1 and len(writes) == 1:  # `store.put` / `store.delete` of an untyped key
            alone = self._untyped_alone(next(iter(writes.values())))
            if alone is not None:
                yield alone
                return [None]

        # The reads run together, ranked searches first: their statements share the first
        # round trips while the query is embedded, and on SQLite, which runs a round trip's
        # statements in order, the cells' counters are read before the listings
        # (tests/store/test_fanout_statements.py holds the order).
        order = sorted(range(len(ops)), key=lambda i: not (
            isinstance(ops[i], SearchOp) and ops[i].query))  # type: ignore[union-attr]
        results: list[Result] = [None] * len(ops)
        values = yield from interleave([self._read(ops[i], query_vectors) for i in order])
        for i, value in zip(order, values, strict=True):
            results[i] = value
        if writes or promotions:
            yield Begin()
            held = self.dialect.lock_scopes(
                _written_scopes(writes.values(), promotions.values()), shared=True)
            if held is not None:  # an erasure of a scope written here waits, or is waited for
                yield held
            if self.access.due():  # buffered access counts ride along when they are due
                yield from self.access.flush()
            currents = yield from self._current_rows([(w.ns, w.op.key) for w in writes.values()])
            deferred: Deferred = {}  # the puts' new rows, vectors and audit, sent in bulk
            for w in writes.values():
                yield from self._write(w, currents.get((w.ns, w.op.key)), deferred)
            for statement in sorted(deferred, key=_BULK_ORDER.index):
                yield self.dialect.bulk(statement, deferred[statement])
            for i, prepared in promotions.items():
                op = ops[i]
                assert isinstance(op, promote.PromoteOp)
                outcomes = yield from promote.execute(self, op, prepared, self.gate)
                if degraded_promotions:
                    for outcome in outcomes:
                        outcome.reason += f" ({degraded_promotions})"
                results[i] = outcomes
            yield Commit()
        return results

    def _read(self, op: Op, query_vectors: search.QueryVectors | None) -> Plan[Result]:
        """One read op of a batch (None for a write)."""
        if isinstance(op, GetOp):
            return (yield from self._get(op))
        if isinstance(op, SearchOp):
            return (yield from self._search(op, query_vectors if op.query else None))
        if isinstance(op, ListNamespacesOp):
            return (yield from self._list_namespaces(op))
        if isinstance(op, HistoryOp):
            ns = encode_namespace(op.namespace)
            if op.audit:
                return [_audit_event(r) for r in (yield Sql(q.SQL_AUDIT_FOR_KEY, [ns, op.key]))]
            return [self.to_item(r) for r in (yield Sql(q.SQL_HISTORY, [ns, op.key]))]
        return None

    def _embed_proposals(self, promotions: dict[int, list[promote.Prepared]]) -> Plan[str]:
        """Embed what the gate may write. An embedder failure degrades (no vectors), recorded."""
        items = [p for prepared in promotions.values() for p in prepared
                 if self.index and p.embed_text and p.rejection is None]
        if not items:
            return ""
        answer = yield Embed([p.embed_text or "" for p in items])
        if isinstance(answer, EmbedError):
            return f"not embedded: embedder failed: {answer.error!r:.120}"
        try:
            self.check_vectors(answer, len(items))
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

    # ---------------------------------------------------------------- reads

    def _refresh(self, seqs: list[int], refresh: bool) -> Plan[None]:
        if not seqs or not refresh:
            return
        clause, params = self.dialect.in_list("seq", seqs)
        yield Sql(q.SQL_REFRESH_TTL.format(clause=clause), [ts(self.clock()), *params])

    def _get(self, op: GetOp) -> Plan[Item | None]:
        rows = yield Sql(q.SQL_GET, [encode_namespace(op.namespace), op.key,
                                     ts(self.clock())])
        if not rows:
            return None
        # a row without an expiry has no TTL to refresh: no UPDATE statement
        yield from self._refresh([rows[0][0]], op.refresh_ttl and
                                 rows[0][q.EXPIRES_AT] is not None)
        item = self.to_item(rows[0])
        if isinstance(item, MemoryItem):
            yield from self.reactivate([item], actor="store.get")
            yield from self.access.note([item.memory["id"]])
        return item

    # ---------------------------------------------------------- lifecycle (access, history, expiry)

    def _list_namespaces(self, op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
        return (yield from untyped.list_namespaces(self, op))

    def _search(
        self, op: SearchOp, query_vectors: search.QueryVectors | None
    ) -> Plan[list[Item]]:
        if is_typed(op.namespace_prefix):
            return (yield from search.typed_search(self, op, query_vectors))
        query_vector = None
        if query_vectors is not None and op.query:
            query_vector = yield from query_vectors.get(op.query)
        return (yield from self._untyped_search(op, query_vector))

    def _untyped_search(
        self, op: SearchOp, query_vector: list[float] | EmbedError | None
    ) -> Plan[list[Item]]:
        ranked = None if not op.query or isinstance(query_vector, EmbedError) else query_vector
        return (yield from untyped.untyped_search(self, op, ranked, self._refresh))

    # ---------------------------------------------------------------- writes

    def _current_rows(
        self, pairs: list[tuple[str, str]]
    ) -> Plan[dict[tuple[str, str], tuple[Any, ...]]]:
        """The current row (seq, id, value, content_hash, status) of each (ns, key)."""
        out: dict[tuple[str, str], tuple[Any, ...]] = {}
        for rows, params in self.dialect.key_pairs(pairs):
            for ns, key, *row in (yield Sql(q.SQL_CURRENT_ROWS.format(pairs=rows), params)):
                out[(ns, key)] = tuple(row)
        return out

    def _write(
        self, w: _Write, old: tuple[Any, ...] | None, deferred: Deferred | None = None
    ) -> Plan[None]:
        op, now = w.op, ts(self.clock())
        if op.value is None:
            if old is None:
                return
            if w.typed is None:
                yield Sql(q.SQL_DELETE, [old[0]])
            else:
                yield Sql(q.SQL_REVOKE, [now, old[0]])
                yield from self.drop_vectors(old[0])
                yield from self.transition(old[1], w.typed, op.key, old[4], "revoked",
                                           "deleted with store.delete", actor="store.delete",
                                           deferred=deferred)
            return
        expires = _expires(op, now)
        if w.typed is None:
            row = self._untyped_row(w, now, expires)
            if old is not None:
                yield Sql(q.SQL_UPDATE_UNTYPED, [row[3], now, expires, op.ttl, old[0]])
                yield from self.drop_vectors(old[0])
                seq = old[0]
            else:
                seq = (yield Sql(q.SQL_INSERT, row))[0][0]
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

    def _untyped_row(self, w: _Write, now: float, expires: float | None) -> list[Any]:
        """The values of a new untyped record (`queries.INSERT_COLUMNS`) for a put."""
        return [uuid.uuid4().hex, w.ns, w.op.key, self.dialect.dump_json(w.op.value), None,
                None, None, None, "active", None, None, None, None, now, now, expires,
                w.op.ttl, None, None, None, None, None, False]

    def _untyped_alone(self, w: _Write) -> Sql | None:
        """A batch's only write, when it is an untyped put or delete the dialect says in one
        statement (atomic without a transaction: no lock, no read of the key's item first;
        untyped items keep no audit); None: the write runs in the batch's transaction."""
        if w.typed is not None:
            return None
        if w.op.value is None:
            return Sql(q.SQL_DELETE_UNTYPED, [w.ns, w.op.key])
        vectors = [(field, self.dialect.encode_vector(vector))
                   for (field, _), vector in zip(w.texts, w.vectors or [], strict=True)]
        now = ts(self.clock())
        return self.dialect.put_untyped(self._untyped_row(w, now, _expires(w.op, now)),
                                        vectors)

    def _insert_vectors(self, seq: int, w: _Write, deferred: Deferred | None) -> Plan[None]:
        if not w.texts or not w.vectors:
            return
        for (field, _), vec in zip(w.texts, w.vectors, strict=True):
            yield from emit(self.dialect, q.Bulk.VECTOR,
                            [seq, field, self.dialect.encode_vector(vec)], deferred)


_BULK_ORDER = list(q.Bulk)
"""The order deferred statements are sent in: records before their vectors."""


def _expires(op: PutOp, now: float) -> float | None:
    """When a put's item expires (its `ttl` in minutes from `now`; None: never)."""
    return now + op.ttl * 60.0 if op.ttl else None


def _written_scopes(writes: Iterable[_Write],
                    promotions: Iterable[list[promote.Prepared]]) -> list[str]:
    """The scope locks (`queries.scope_locks`) of the typed records a batch writes."""
    return q.scope_locks([*(w.typed.scope for w in writes if w.typed is not None),
                          *(p.typed.scope for ps in promotions for p in ps
                            if p.typed is not None)])


def _audit_event(row: tuple[Any, ...]) -> dict[str, Any]:
    memory_id, at, actor, before, after, reason, run_id = row
    return {"memory_id": memory_id, "at": dt(at).isoformat(), "actor": actor,
            "from_status": before, "to_status": after, "reason": reason, "run_id": run_id}
