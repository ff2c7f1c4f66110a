"""The record operations every plan shares, and the settings they read.

Search, promotion, the lifecycle sweeps, erasure, export and the maintenance jobs are plans
(generators of SQL requests, see `protocol.py`) that read and write typed records the same
way: a row becomes an `Item`, a status change appends to the audit log, a new version is
inserted with its vectors, an old one is superseded. `Records` holds those operations with
the store's settings (dialect, index, clock, gate, lifecycle, access buffer), and every plan
receives it. `Engine` (the batch dispatcher) is a `Records`, so a store hands its engine to
a plan; the plans themselves import this module, never the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
from langgraph.store.base import Item, SearchItem

from langgraph_typed_memory.config import (
    IndexSettings,
    LifecycleConfig,
    RetrievalConfig,
    TTLSettings,
)
from langgraph_typed_memory.errors import EmbeddingDimensionMismatch
from langgraph_typed_memory.gate import GateConfig
from langgraph_typed_memory.lifecycle import on_access
from langgraph_typed_memory.namespaces import (
    TypedNamespace,
    decode_namespace,
    encode_namespace,
    parse_namespace,
)
from langgraph_typed_memory.results import MemoryItem, iso_text
from langgraph_typed_memory.schemas import ValidatedRecord
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.access import AccessBuffer
from langgraph_typed_memory.store.core.filters import JsonGrammar
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Plan, Sql
from langgraph_typed_memory.store.index import (
    CellCache,
    CellFamily,
    ScopeVectorCache,
    VectorQuery,
    VectorRanking,
)

__all__ = ["Deferred", "Dialect", "Records", "dt", "emit", "ts"]


class Dialect(Protocol):
    """What differs between backends; everything else is shared SQL written with `?`."""

    name: str
    position_fn: str
    """SQL function (text, substring) -> 1-based position or 0."""
    range_ops: tuple[str, str]
    """Byte-order comparisons of text, at least and below (`queries.namespace_under`)."""
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
    def lock_scopes(self, names: Sequence[str], *, shared: bool) -> Sql | None:
        """The statement taking these advisory locks (`queries.scope_locks`) until the
        transaction ends, or None where writers are serialized anyway."""
        ...
    def dump_json(self, value: Any) -> Any: ...
    def load_json(self, value: Any) -> Any: ...
    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]: ...
    def key_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, list[Any]]]:
        """(ns, key) pairs as the rows of `queries.SQL_CURRENT_ROWS`' `{pairs}`, with their
        parameters: one (rows, parameters) per statement the dialect needs."""
        ...
    def encode_vector(self, vector: Sequence[float]) -> Any: ...
    def bulk(self, statement: q.Bulk, rows: list[list[Any]]) -> Sql:
        """The request running `statement` for many rows."""
        ...
    def one(self, statement: q.Bulk, row: list[Any]) -> Sql:
        """The request running `statement` for one row."""
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
        self, scope: q.ScopeRead, query: VectorQuery, depth: int | None
    ) -> Plan[VectorRanking | None]:
        """Top vector matches among the scope's live rows. The value holds a future, so the
        ranking may run while the caller's next statement does. `query` may be a plan of
        the vector, asked once the scope's cells are up to date (None: no ranking)."""
        ...

    def after_erasure(self) -> list[Sql]:
        """Statements that purge erased content from files and index structures."""
        ...

    def lazy_commit(self) -> list[Sql]:
        """Statements opening a transaction whose last moments may be lost in a crash (the
        access log's): its commit need not wait for the disk."""
        ...

    def vector_scores(
        self, seqs: Sequence[int], query: Sequence[float]
    ) -> Plan[list[tuple[int, float]]]: ...

    json: JsonGrammar
    """The JSON conditions a search filter is written in (`filters.filter_sql`)."""
    byte_order: str
    """What makes an ORDER BY of text byte order (a collation clause, or nothing)."""

    def put_untyped(self, row: list[Any], vectors: list[tuple[str, Any]]) -> Sql | None:
        """One statement putting an untyped item: `row` (`queries.INSERT_COLUMNS`' values)
        inserted, or its value, times and TTL written over the key's current item, whose
        vectors become `vectors` ((field, encoded vector)); None where the dialect cannot
        say it in one statement (the batch's transaction writes it)."""
        ...

    def untyped_top(
        self, prefix: str | None, now: float, extra: q.Clause | None,
        query: Sequence[float], depth: int,
    ) -> Plan[list[tuple[int, float]]]:
        """Best-first (seq, score) of the current untyped rows under the encoded `prefix`
        (None: all), live at `now`, passing `extra` (a filter's clause on alias `m`), that
        have vectors, each scored by its best vector's cosine similarity: the `depth`
        best."""
        ...


def ts(moment: datetime) -> float:
    """A time as the database stores it: seconds since the epoch."""
    return moment.timestamp()


@lru_cache(maxsize=16384)
def dt(seconds: float) -> datetime:
    """A stored time back as an aware UTC datetime (immutable: remembered, as the records a
    user's searches return come back turn after turn)."""
    return datetime.fromtimestamp(seconds, tz=UTC)


Deferred = dict[q.Bulk, list[list[Any]]]
"""Rows of insert statements a batch sends in bulk (executemany) before its commit."""


def _matrix(vectors: list[Any]) -> np.ndarray:
    """The vectors as one matrix: the one they are rows of when so (as the drivers hand an
    embedder's answer on), else stacked.

    Example:
        >>> m = np.ones((2, 3)); _matrix(list(m)) is m, _matrix([[1.0], [2.0]]).shape
        (True, (2, 1))
    """
    base = getattr(vectors[0], "base", None)
    if (isinstance(base, np.ndarray) and base.ndim == 2 and len(base) == len(vectors)
            and all(v.base is base for v in vectors)):
        return base
    return np.asarray(vectors, dtype=np.float64)


def emit(dialect: Dialect, statement: q.Bulk, row: list[Any], deferred: Deferred | None
         ) -> Plan[None]:
    """Run one insert now, or add its row to `deferred`."""
    if deferred is None:
        yield dialect.one(statement, row)
    else:
        deferred.setdefault(statement, []).append(row)


class Records:
    """The store's settings and the record operations plans share."""

    def __init__(
        self,
        dialect: Dialect,
        *,
        index: IndexSettings | None,
        retrieval: RetrievalConfig,
        ttl: TTLSettings,
        clock: Callable[[], datetime],
        gate: GateConfig | None = None,
        lifecycle: LifecycleConfig | None = None,
    ) -> None:
        self.gate = gate or GateConfig()
        self.lifecycle = lifecycle or LifecycleConfig()
        self.access = AccessBuffer(self.lifecycle, clock, dialect.bulk, dialect.lazy_commit())
        """Retrievals not yet written (access counts)."""
        self.dialect = dialect
        self.index = index
        self.retrieval = retrieval
        self.ttl = ttl
        self.clock = clock

    @property
    def has_vector_table(self) -> bool:
        """SQLite always has the vector table; Postgres only once set up with an index."""
        return self.index is not None or self.dialect.name == "sqlite"

    def check_vectors(self, vectors: Any, expected: int) -> None:
        """Raise `EmbeddingDimensionMismatch` unless the embedder returned `expected`
        finite vectors of the index's dimension."""
        if not isinstance(vectors, list) or len(vectors) != expected:
            raise EmbeddingDimensionMismatch(
                f"The embedder returned {len(vectors) if isinstance(vectors, list) else vectors!r}"
                f" vectors for {expected} texts."
            )
        dims = self.index.dims if self.index else 0
        for v in vectors:
            if len(v) != dims:
                raise EmbeddingDimensionMismatch(
                    f"The embedder returned a {len(v)}-d vector but the index config says "
                    f"dims={dims}; fix dims or the embedder."
                )
        if vectors and not np.isfinite(_matrix(vectors)).all():
            raise EmbeddingDimensionMismatch(
                "The embedder returned a vector holding NaN or infinity; fix the embedder.")

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
                    created_at=dt(created_at), updated_at=dt(updated_at),
                )
            return SearchItem(namespace, key, value, dt(created_at), dt(updated_at), score)
        memory.pop("search", None)
        return MemoryItem(
            namespace=namespace,
            key=key,
            value=value,
            created_at=dt(created_at),
            updated_at=dt(updated_at),
            score=score,
            memory={
                "id": ident,
                "kind": kind,
                "scope": {"tenant_id": tenant, "user_id": user, "agent_id": agent},
                "status": status,
                "confidence": confidence,
                "superseded_by": superseded_by,
                "occurred_at": iso_text(dt(occurred_at)) if occurred_at is not None else None,
                "provenance": {
                    "source_run_id": row[16],
                    "source_turn": row[17],
                    "policy_version": row[18],
                    "proposed_by": value.get("proposed_by") if isinstance(value, dict) else None,
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

    def reactivate(self, items: Sequence[Item], *, actor: str) -> Plan[None]:
        """Expiry is reversed on access: expired items among `items` become active,
        audited, in one transaction; their `memory` says so (`reactivated`)."""
        expired = [i for i in items if isinstance(i, MemoryItem) and i.status == "expired"]
        if not expired:
            return
        now = ts(self.clock())
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

    def supersede(self, old_seq: int, new_id: str) -> Plan[None]:
        """Mark a current row superseded by `new_id`; drop its index entries."""
        yield Sql(q.SQL_SUPERSEDE, [new_id, ts(self.clock()), old_seq])
        yield from self.drop_vectors(old_seq)

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
        yield from emit(self.dialect, q.Bulk.AUDIT, [
            memory_id, encode_namespace(typed.namespace()), key, typed.kind, scope.tenant_id,
            scope.user_id, scope.agent_id, ts(self.clock()), actor, before, after, reason,
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
        now = ts(self.clock())
        scope, value, d = typed.scope, record.value, self.dialect
        occurred = ts(record.occurred_at) if record.occurred_at else None
        yield from emit(d, q.Bulk.ROW, [
            new_id, encode_namespace(typed.namespace()), key, d.dump_json(value), typed.kind,
            scope.tenant_id, scope.user_id, scope.agent_id, status, record.confidence,
            record.content_hash, record.search_text, occurred, now, now, expires, ttl,
            value.get("source_run_id"), value.get("source_turn"), policy_version,
            d.dump_json(evidence) if evidence is not None else None,
            d.dump_json(contradicts) if contradicts is not None else None, needs_review,
        ], deferred)
        for (field, _), vec in vectors:
            yield from emit(d, q.Bulk.VECTOR_FOR_ID, [new_id, field, d.encode_vector(vec)],
                            deferred)

    def drop_vectors(self, seq: int) -> Plan[None]:
        """Delete a record's vectors (it left the search indexes)."""
        # Without an index config the Postgres schema has no vector table (its column type
        # needs the dimension); deleting a record still cascades to any vectors it had.
        if self.index is not None:
            yield Sql(q.SQL_DROP_VECTORS, [seq])
