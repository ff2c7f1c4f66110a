"""Bad input: a typed error naming the field, nothing written, nothing existing lost.

Each case of `BAD` does one bad operation on a seeded store of every backend. The case passes
when the operation raises the expected typed error (or, for the promotion gate, answers with
a rejected outcome) whose message names the field or value, and when the store reads back
exactly as before: every public read (`list_namespaces`, `search` of every namespace, `get` and
`history` of every key) and every raw table row (read through a separate connection).

Each case of `DATA` feeds characters that mean something to SQL, LIKE, GLOB or full-text
syntax: those must not error, must round-trip as plain data, and must leave the seed intact.

Cases where the package differs from that promise are marked `xfail(strict=True)` with a `BUG:`
reason, so the suite stays green while the bug is visible (and fails once it is fixed).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp
from psycopg_pool import ConnectionPool

from langgraph_typed_memory import (
    AsyncPostgresMemoryStore,
    AsyncSqliteMemoryStore,
    EmbeddingDimensionMismatch,
    InvalidNamespace,
    InvalidQuery,
    InvalidRecord,
    PostgresMemoryStore,
    SqliteMemoryStore,
    StatusNotAllowed,
    UnknownKind,
)
from langgraph_typed_memory.errors import TypedMemoryError
from langgraph_typed_memory.namespaces import is_typed
from langgraph_typed_memory.store.sqlite.store import connect_sqlite
from tests.conftest import (
    ALL_BACKENDS,
    SQLITE_BACKENDS,
    FakeClock,
    _LoopThread,
    fresh_database,
)
from tests.fake_embeddings import HashEmbeddings

DIMS = 32
ACME = ("tenant:acme",)
POLICIES = ("tenant:acme", "policy")
ALICE_PREFS = ("tenant:acme", "user:alice", "preference")
ALICE_FACTS = ("tenant:acme", "user:alice", "fact")
BOB_FACTS = ("tenant:acme", "user:bob", "fact")
TENANT_FACTS = ("tenant:acme", "fact")
ALICE_EPISODES = ("tenant:acme", "user:alice", "episode")
BOT_PROCEDURES = ("tenant:acme", "agent:bot", "procedure")
ALICE_BOT_OBSERVATIONS = ("tenant:acme", "user:alice", "agent:bot", "observation")
DOCS = ("docs",)
DOCS_SUB = ("docs", "sub")
ALICE = {"tenant_id": "acme", "user_id": "alice", "run_id": "run-bad"}
TOO_LONG = "x" * 32_001


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def cyclic() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


class MarkedEmbeddings(HashEmbeddings):
    """The shared fake embedder, except for two marker words that make it misbehave.

    A text containing `wrongdim` gets a vector one dimension short, one containing
    `nanvector` a vector of NaNs: an index config whose embedder returns wrong sizes.
    """

    def _embed(self, text: str) -> list[float]:
        if "wrongdim" in text.lower():
            return [0.1] * (self.dims - 1)
        if "nanvector" in text.lower():
            return [math.nan] * self.dims
        return super()._embed(text)


def fact(content: str = "Alice has a cat.", **extra: Any) -> dict[str, Any]:
    return {"subject": "alice", "predicate": "pet", "content": content, **extra}


def proposal(content: str = "The user has a cat named Miso.", **extra: Any) -> dict[str, Any]:
    return {"kind": "fact", "subject": "user", "predicate": "pet", "content": content,
            "confidence": 0.9, **extra}


def seed(store: BaseStore) -> None:
    """Memory of every kind and state: active, superseded, revoked, provisional, gate-written."""
    store.batch([
        PutOp(POLICIES, "refunds", {"value": {"max_usd": 50}, "created_by": "ops"}),
        PutOp(ALICE_PREFS, "format", {"value": "xml"}),
        PutOp(ALICE_FACTS, "city", fact("Alice lives in Lyon.", predicate="city")),
        PutOp(ALICE_FACTS, "pet", fact()),
        PutOp(BOB_FACTS, "city", fact("Bob lives in Oslo.", subject="bob", predicate="city")),
        PutOp(TENANT_FACTS, "hq", fact("Acme is based in Berlin.", subject="acme")),
        PutOp(ALICE_EPISODES, "e1", {"title": "Refund 42", "summary": "Approved a refund."}),
        PutOp(BOT_PROCEDURES, "p1", {"rule": "Confirm the order id before refunding."}),
        PutOp(ALICE_BOT_OBSERVATIONS, "o1", {"category": "format", "quote": "prefers tables"}),
        PutOp(DOCS, "d1", {"text": "quarterly report", "n": 1}),
        PutOp(DOCS_SUB, "d2", {"text": "meeting notes", "tags": ["a", "b"]}, ttl=600),
    ])
    store.batch([
        PutOp(ALICE_PREFS, "format", {"value": "json"}),  # supersedes: two versions in history
        PutOp(ALICE_FACTS, "pet", None),  # revoked, kept for the audit trail
    ])
    store.promote([{"kind": "preference", "key": "tone", "value": "terse", "confidence": 0.9},
                   proposal("The user lives in Paris.", predicate="home_city")],
                  tenant_id="acme", user_id="alice", run_id="run-seed", turn=1)


SEED_KEYS = [
    (POLICIES, "refunds"), (ALICE_PREFS, "format"), (ALICE_PREFS, "tone"), (ALICE_FACTS, "city"),
    (ALICE_FACTS, "pet"), (ALICE_FACTS, "fact:user:home_city"), (BOB_FACTS, "city"),
    (TENANT_FACTS, "hq"), (ALICE_EPISODES, "e1"), (BOT_PROCEDURES, "p1"),
    (ALICE_BOT_OBSERVATIONS, "o1"), (DOCS, "d1"), (DOCS_SUB, "d2"),
]
SEED_NAMESPACES = sorted({ns for ns, _ in SEED_KEYS})


def open_store(
    backend: str, request: pytest.FixtureRequest, path: Path
) -> tuple[BaseStore, Callable[[], None]]:
    """A set-up store of one backend (as conftest's factory builds them) and its closer."""
    kwargs: dict[str, Any] = {
        "index": {"dims": DIMS, "embed": MarkedEmbeddings(DIMS), "fields": ["text"]},
        "clock": FakeClock(),
    }
    if backend in SQLITE_BACKENDS:
        conn = connect_sqlite(":memory:" if backend == "sqlite_memory" else str(path))
        cls = AsyncSqliteMemoryStore if backend == "async_sqlite" else SqliteMemoryStore
        store = cls(conn, **kwargs)
        SqliteMemoryStore(conn, **kwargs).setup()  # sync: an async test's loop may be running
        return store, conn.close
    url = fresh_database(request.getfixturevalue("pg_server"))
    if backend == "postgres":
        pg_conn = psycopg.connect(url, autocommit=True)
        pg_store = PostgresMemoryStore(pg_conn, **kwargs)
        pg_store.setup()
        return pg_store, pg_conn.close
    if backend == "postgres_pool":
        pool = ConnectionPool(url, min_size=1, max_size=4, kwargs={"autocommit": True}, open=True)
        pool_store = PostgresMemoryStore(pool, **kwargs)
        pool_store.setup()
        return pool_store, pool.close
    assert backend == "async_postgres", f"unknown backend {backend!r}"
    loop = _LoopThread()

    async def create() -> tuple[Any, AsyncPostgresMemoryStore]:
        aconn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        async_store = AsyncPostgresMemoryStore(aconn, **kwargs)
        await async_store.setup()
        return aconn, async_store

    aconn, async_store = loop.run(create())

    def close() -> None:
        loop.run(aconn.close())
        loop.stop()

    return async_store, close


class SharedStore:
    """One seeded store per backend for the whole module, replaced after a case that failed.

    A fresh Postgres database per case would cost most of this module's run time. Sharing is
    safe because every case proves the store unchanged (error cases) or untouched outside its
    own namespaces (data cases); a case that fails (a known bug may have written something)
    marks the store dirty, and the next case gets a freshly seeded one.
    """

    def __init__(self, backend: str, request: pytest.FixtureRequest, tmp: Path) -> None:
        self.backend, self.request, self.tmp = backend, request, tmp
        self.store: BaseStore | None = None
        self.close: Callable[[], None] = lambda: None
        self.opened = 0
        self.dirty = False

    def checkout(self) -> BaseStore:
        """The shared store, freshly seeded if the previous case did not check in."""
        if self.store is None or self.dirty:
            self.discard()
            self.opened += 1
            self.store, self.close = open_store(
                self.backend, self.request, self.tmp / f"bad{self.opened}.db"
            )
            seed(self.store)
        self.dirty = True
        return self.store

    def checkin(self) -> None:
        """Called when every check of a case passed: the store is still as described."""
        self.dirty = False

    def discard(self) -> None:
        if self.store is not None:
            self.close()
            self.store = None


@pytest.fixture(scope="module", params=ALL_BACKENDS)
def shared(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedStore]:
    holder = SharedStore(request.param, request, tmp_path_factory.mktemp(request.param))
    yield holder
    holder.discard()


# ------------------------------------------------------------------ snapshots


def _state(item: Any) -> Any:
    return None if item is None else item.dict()


def public_view(store: BaseStore, namespaces: list[tuple[str, ...]] | None = None) -> dict:
    """Everything the public reads show: namespaces, searches, gets and histories."""
    listed = store.list_namespaces(limit=10_000)
    spaces = listed if namespaces is None else namespaces
    searches = store.batch([SearchOp(ns, None, 10_000, 0, None) for ns in spaces])
    found = {(tuple(i.namespace), i.key) for items in searches for i in items}
    keys = sorted(found | set(SEED_KEYS))
    gets = store.batch([GetOp(ns, key) for ns, key in keys])
    view: dict[Any, Any] = {"namespaces": listed}
    for ns, items in zip(spaces, searches, strict=True):
        view["search", ns] = [_state(i) for i in items]
    for (ns, key), item in zip(keys, gets, strict=True):
        view["get", ns, key] = _state(item)
        if is_typed(ns):
            view["history", ns, key] = [_state(v) for v in store.history(ns, key)]
    return view


_ACCESS_TRACKING = {"last_accessed_at", "access_count"}  # reads may update these (access tracking)


def _rows(cursor: Any, table: str) -> dict[Any, tuple[Any, ...]]:
    names = [d[0] for d in cursor.description]
    keep = [i for i, n in enumerate(names) if n not in _ACCESS_TRACKING]
    rows = [tuple(r[i] for i in keep) for r in cursor.fetchall()]
    width = {"memories": 1, "memory_vectors": 2}.get(table)
    return {(r[:width] if width else repr(r)): r for r in rows}


def raw_tables(store: BaseStore) -> dict[str, dict[Any, tuple[Any, ...]]]:
    """Every row of every table, read outside the store (a second connection where possible)."""
    if isinstance(store, (SqliteMemoryStore, AsyncSqliteMemoryStore)):
        path = store.conn.execute("PRAGMA database_list").fetchone()[2]
        conn = sqlite3.connect(path) if path else store.conn  # ":memory:" has no second door
        try:
            tables = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            return {t: _rows(conn.execute(f'SELECT * FROM "{t}"'), t) for t in tables}
        finally:
            if path:
                conn.close()
    pg = store.conn
    dsn = pg.conninfo if isinstance(pg, ConnectionPool) else pg.info.dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")]
        return {t: _rows(conn.execute(f'SELECT * FROM "{t}"'), t) for t in tables}


def snapshot(store: BaseStore) -> tuple[dict, dict]:
    return public_view(store), raw_tables(store)


# ------------------------------------------------------------------ the catalogue


class Rejected:
    """The gate's answer to a bad proposal: a rejected outcome naming the field, no exception."""


@dataclass(frozen=True)
class Bad:
    id: str
    op: Callable[[BaseStore], Any]
    error: type[Exception] | type[Rejected]
    names: str
    """Substring the error message (or rejection reason) must contain."""
    bug: str | None = None
    bug_on: tuple[str, ...] | None = None
    """Backends where the bug shows (None: all)."""


BAD: list[Bad] = [
    # ---- malformed namespaces
    Bad("put-empty-namespace", lambda s: s.put((), "k", {"text": "x"}),
        InvalidNamespace, "empty"),
    Bad("put-empty-label", lambda s: s.put(("docs", ""), "k", {"text": "x"}),
        InvalidNamespace, "('docs', '')"),
    Bad("put-dot-in-label", lambda s: s.put(("docs", "a.b"), "k", {"text": "x"}),
        InvalidNamespace, "'a.b'"),
    Bad("put-non-str-label", lambda s: s.put(("docs", 5), "k", {"text": "x"}),
        InvalidNamespace, "5"),
    Bad("put-reserved-root", lambda s: s.put(("langgraph", "x"), "k", {"text": "x"}),
        InvalidNamespace, "langgraph"),
    Bad("put-nul-in-label", lambda s: s.put(("docs\x00",), "k", {"text": "x"}),
        InvalidNamespace, "NUL"),
    Bad("search-dot-in-prefix", lambda s: s.search(("docs", "a.b")),
        InvalidNamespace, "'a.b'"),
    Bad("delete-empty-label", lambda s: s.delete(("docs", ""), "d1"),
        InvalidNamespace, "('docs', '')"),
    Bad("batch-put-empty-label", lambda s: s.batch([PutOp(("docs", ""), "k", {"text": "x"})]),
        InvalidNamespace, "('docs', '')"),
    Bad("batch-put-dot-in-label", lambda s: s.batch([PutOp(("a.b",), "k", {"text": "x"})]),
        InvalidNamespace, "'a.b'"),
    Bad("put-namespace-is-a-list", lambda s: s.put(["docs"], "k", {"text": "x"}),
        InvalidNamespace, "['docs']"),
    Bad("put-bytes-label", lambda s: s.put((b"x",), "k", {"text": "x"}),
        InvalidNamespace, "b'x'"),
    Bad("get-namespace-is-an-int", lambda s: s.get(5, "k"), InvalidNamespace, "namespace 5"),
    Bad("search-namespace-is-none", lambda s: s.search(None), InvalidNamespace, "None"),
    Bad("delete-namespace-is-none", lambda s: s.delete(None, "k"), InvalidNamespace, "None"),
    Bad("get-key-is-none", lambda s: s.get(DOCS, None), InvalidRecord, "key None"),
    Bad("put-key-is-bytes", lambda s: s.put(DOCS, b"k", {"text": "x"}), InvalidRecord,
        "key b'k'"),
    Bad("list-namespaces-prefix-is-an-int", lambda s: s.list_namespaces(prefix=5),
        InvalidQuery, "match path 5"),
    Bad("list-namespaces-dot-in-prefix", lambda s: s.list_namespaces(prefix=("a.b",)),
        InvalidNamespace, "'a.b'"),
    Bad("list-namespaces-surrogate-in-suffix",
        lambda s: s.list_namespaces(suffix=("a\ud800",)), InvalidNamespace, "surrogate"),
    Bad("list-namespaces-max-depth-bool", lambda s: s.list_namespaces(max_depth=True),
        InvalidQuery, "max_depth=True"),
    Bad("batch-of-none", lambda s: s.batch(None), InvalidQuery, "ops=None"),
    Bad("batch-of-a-non-op", lambda s: s.batch([GetOp(DOCS, "d1"), 5]), InvalidQuery,
        "Unknown operation 5"),
    Bad("namespace-over-1600-bytes", lambda s: s.put(("\u00e9" * 801,), "k", {"text": "x"}),
        InvalidNamespace, "1602 bytes"),
    Bad("key-over-1024-bytes", lambda s: s.put(DOCS, "\U0001f600" * 257, {"text": "x"}),
        InvalidRecord, "1028 bytes"),
    Bad("put-lone-surrogate-in-label", lambda s: s.put(("docs\ud800",), "k", {"text": "x"}),
        InvalidNamespace, "surrogate"),
    Bad("typed-label-without-prefix", lambda s: s.put(("tenant:acme", "bob", "fact"), "k", fact()),
        InvalidNamespace, "'bob'"),
    Bad("typed-empty-tenant-id", lambda s: s.put(("tenant:", "fact"), "k", fact()),
        InvalidNamespace, "'tenant:'"),
    Bad("typed-agent-before-user",
        lambda s: s.put(("tenant:acme", "agent:a", "user:b", "fact"), "k", fact()),
        InvalidNamespace, "'user:b'"),
    Bad("typed-two-users",
        lambda s: s.search(("tenant:acme", "user:alice", "user:bob", "fact"), query="cat"),
        InvalidNamespace, "'user:bob'"),
    Bad("typed-colon-in-id", lambda s: s.put(("tenant:a:b", "fact"), "k", fact()),
        InvalidNamespace, "'a:b'"),
    Bad("typed-control-char-in-id", lambda s: s.get(("tenant:a\x01", "fact"), "k"),
        InvalidNamespace, r"'a\x01'"),
    Bad("typed-id-too-long", lambda s: s.put(("tenant:" + "a" * 129, "fact"), "k", fact()),
        InvalidNamespace, "invalid id"),
    # ---- unknown kinds
    Bad("put-unknown-kind", lambda s: s.put(("tenant:acme", "user:alice", "fcat"), "k", fact()),
        UnknownKind, "'fcat'"),
    Bad("put-missing-kind", lambda s: s.put(("tenant:acme", "user:alice"), "k", fact()),
        UnknownKind, "'user:alice'"),
    Bad("put-tenant-only", lambda s: s.put(ACME, "k", fact()), UnknownKind, "('tenant:acme',)"),
    Bad("search-unknown-kind", lambda s: s.search(("tenant:acme", "gossip"), query="x"),
        UnknownKind, "'gossip'"),
    Bad("get-unknown-kind", lambda s: s.get(("tenant:acme", "Fact"), "city"),
        UnknownKind, "'Fact'"),
    Bad("history-of-untyped-namespace", lambda s: s.history(DOCS, "d1"),
        InvalidNamespace, "not typed"),
    # ---- wrong value types
    Bad("typed-value-is-a-str", lambda s: s.put(ALICE_FACTS, "k", "Alice has a cat"),
        InvalidRecord, "got str"),
    Bad("typed-value-is-a-list", lambda s: s.put(ALICE_FACTS, "k", [fact()]),
        InvalidRecord, "got list"),
    Bad("untyped-value-is-a-list", lambda s: s.put(DOCS, "k", ["x"]),
        InvalidRecord, "got list"),
    Bad("untyped-value-is-a-set", lambda s: s.put(DOCS, "k", {"x"}),
        InvalidRecord, "got set"),
    Bad("set-inside-untyped-value", lambda s: s.put(DOCS, "k", {"tags": {"a"}}),
        InvalidRecord, "value.tags is a set"),
    Bad("set-inside-typed-metadata", lambda s: s.put(ALICE_FACTS, "k", fact(metadata={"s": {1}})),
        InvalidRecord, "value.metadata.s"),
    Bad("policy-value-is-a-list",
        lambda s: s.put(POLICIES, "k", {"value": [1], "created_by": "ops"}),
        InvalidRecord, "value: Input should be a valid dictionary"),
    Bad("confidence-is-a-word", lambda s: s.put(ALICE_FACTS, "k", fact(confidence="high")),
        InvalidRecord, "confidence"),
    Bad("negative-source-turn", lambda s: s.put(ALICE_FACTS, "k", fact(source_turn=-1)),
        InvalidRecord, "source_turn"),
    Bad("source-turn-beyond-int32", lambda s: s.put(ALICE_FACTS, "k", fact(source_turn=2**31)),
        InvalidRecord, "source_turn"),
    Bad("unknown-field", lambda s: s.put(ALICE_FACTS, "k", fact(colour="red")),
        InvalidRecord, "colour"),
    Bad("bad-preference-source",
        lambda s: s.put(ALICE_PREFS, "k", {"value": 1, "source": "rumour"}),
        InvalidRecord, "source"),
    Bad("bad-compaction-tier",
        lambda s: s.put(ALICE_EPISODES, "k", {"title": "t", "summary": "s", "compaction_tier": 3}),
        InvalidRecord, "compaction_tier"),
    # ---- missing required fields, per kind
    Bad("policy-without-created_by", lambda s: s.put(POLICIES, "k", {"value": {}}),
        InvalidRecord, "created_by"),
    Bad("preference-without-value", lambda s: s.put(ALICE_PREFS, "k", {"source": "inferred"}),
        InvalidRecord, "value: Field required"),
    # ---- a policy's or preference's value is in every prompt of its scope: bounded
    Bad("preference-value-too-long", lambda s: s.put(ALICE_PREFS, "k", {"value": TOO_LONG}),
        InvalidRecord, "shown in full in every prompt"),
    Bad("policy-value-too-long",
        lambda s: s.put(POLICIES, "k", {"value": {"rule": TOO_LONG}, "created_by": "ops"}),
        InvalidRecord, "shown in full in every prompt"),
    Bad("proposal-preference-value-too-long",
        lambda s: s.promote([{"kind": "preference", "key": "style", "value": TOO_LONG,
                              "confidence": 0.9}], **ALICE),
        Rejected, "shown in full in every prompt"),
    Bad("fact-without-content",
        lambda s: s.put(ALICE_FACTS, "k", {"subject": "a", "predicate": "b"}),
        InvalidRecord, "content"),
    Bad("fact-without-subject",
        lambda s: s.put(ALICE_FACTS, "k", {"predicate": "b", "content": "c"}),
        InvalidRecord, "subject"),
    Bad("episode-without-summary", lambda s: s.put(ALICE_EPISODES, "k", {"title": "t"}),
        InvalidRecord, "summary"),
    Bad("procedure-without-rule", lambda s: s.put(BOT_PROCEDURES, "k", {"confidence": 0.9}),
        InvalidRecord, "rule"),
    Bad("observation-without-quote",
        lambda s: s.put(ALICE_BOT_OBSERVATIONS, "k", {"category": "format"}),
        InvalidRecord, "quote"),
    # ---- computed fields
    Bad("caller-sets-status", lambda s: s.put(ALICE_FACTS, "city", fact(status="active")),
        StatusNotAllowed, "status"),
    Bad("caller-sets-superseded_by",
        lambda s: s.put(ALICE_FACTS, "city", fact(superseded_by="x")),
        StatusNotAllowed, "superseded_by"),
    Bad("caller-sets-content_hash",
        lambda s: s.put(ALICE_FACTS, "k", fact(content_hash="0" * 64)),
        StatusNotAllowed, "content_hash"),
    Bad("caller-sets-preference-status",
        lambda s: s.put(ALICE_PREFS, "format", {"value": "csv", "status": "superseded"}),
        StatusNotAllowed, "status"),
    Bad("caller-sets-access_count", lambda s: s.put(ALICE_FACTS, "k", fact(access_count=9)),
        StatusNotAllowed, "access_count"),
    # ---- oversized content
    Bad("fact-content-too-long", lambda s: s.put(ALICE_FACTS, "k", fact(TOO_LONG)),
        InvalidRecord, "content: String should have at most 32000"),
    Bad("episode-summary-too-long",
        lambda s: s.put(ALICE_EPISODES, "k", {"title": "t", "summary": TOO_LONG}),
        InvalidRecord, "summary"),
    Bad("procedure-rule-too-long", lambda s: s.put(BOT_PROCEDURES, "k", {"rule": TOO_LONG}),
        InvalidRecord, "rule"),
    # ---- NUL bytes and lone surrogates
    Bad("nul-in-content", lambda s: s.put(ALICE_FACTS, "k", fact("a\x00b")),
        InvalidRecord, "value.content contains a NUL byte"),
    Bad("surrogate-in-content", lambda s: s.put(ALICE_FACTS, "k", fact("a\ud800b")),
        InvalidRecord, "value.content contains a lone surrogate"),
    Bad("nul-in-key", lambda s: s.put(ALICE_FACTS, "k\x00", fact()),
        InvalidRecord, "key contains a NUL byte"),
    Bad("surrogate-in-key", lambda s: s.put(DOCS, "k\udc00", {"text": "x"}),
        InvalidRecord, "key contains a lone surrogate"),
    Bad("nul-in-untyped-dict-key", lambda s: s.put(DOCS, "k", {"a\x00": 1}),
        InvalidRecord, "key contains a NUL byte"),
    Bad("nul-in-metadata", lambda s: s.put(ALICE_FACTS, "k", fact(metadata={"p": "x\x00"})),
        InvalidRecord, "value.metadata.p"),
    Bad("nul-in-query", lambda s: s.search(ALICE_FACTS, query="cat\x00"),
        InvalidQuery, "query"),
    Bad("surrogate-in-query", lambda s: s.search(DOCS, query="report \udfff"),
        InvalidQuery, "query"),
    Bad("surrogate-in-filter-key",
        lambda s: s.search(ALICE_FACTS, filter={"metadata\ud800": 1}),
        InvalidQuery, "filter"),
    # ---- non-finite numbers
    Bad("nan-confidence", lambda s: s.put(ALICE_FACTS, "k", fact(confidence=math.nan)),
        InvalidRecord, "value.confidence is nan"),
    Bad("infinite-confidence",
        lambda s: s.put(ALICE_PREFS, "k", {"value": 1, "confidence": math.inf}),
        InvalidRecord, "value.confidence is inf"),
    Bad("minus-infinity-untyped", lambda s: s.put(DOCS, "k", {"x": -math.inf}),
        InvalidRecord, "value.x is -inf"),
    # ---- integers past 64 bits, nesting too deep
    Bad("integer-past-64-bits", lambda s: s.put(DOCS, "k", {"x": 2**64}),
        InvalidRecord, "value.x is 18446744073709551616"),
    Bad("integer-of-5000-digits", lambda s: s.put(DOCS, "k", {"x": 10**5000}),
        InvalidRecord, "value.x is <int of 16610 bits>"),
    Bad("typed-integer-past-64-bits",
        lambda s: s.put(ALICE_FACTS, "k", fact(value=-(2**63) - 1)), InvalidRecord,
        "value.value is -9223372036854775809"),
    Bad("value-nested-2000-deep", lambda s: s.put(DOCS, "k", {"x": nested(2_000)}),
        InvalidRecord, "nested more than 64 levels"),
    Bad("value-nested-900-deep", lambda s: s.put(ALICE_FACTS, "k", fact(value=nested(900))),
        InvalidRecord, "nested more than 64 levels"),
    Bad("value-holding-itself", lambda s: s.put(DOCS, "k", {"x": cyclic()}),
        InvalidRecord, "nested more than 64 levels"),
    Bad("filter-nested-2000-deep", lambda s: s.search(DOCS, filter={"x": nested(2_000)}),
        InvalidQuery, "nested more than 64 levels"),
    Bad("filter-integer-of-5000-digits", lambda s: s.search(DOCS, filter={"n": 10**5000}),
        InvalidQuery, "filter.n is <int of 16610 bits>"),
    Bad("proposal-nested-2000-deep",
        lambda s: s.promote([proposal(value=nested(2_000))], **ALICE),
        Rejected, "nested more than 64 levels"),
    # ---- keys
    Bad("empty-key", lambda s: s.put(ALICE_FACTS, "", fact()), InvalidRecord, "key ''"),
    Bad("key-too-long", lambda s: s.put(DOCS, "k" * 1025, {"text": "x"}), InvalidRecord, "1025"),
    Bad("value-key-differs", lambda s: s.put(ALICE_PREFS, "format", {"key": "fmt", "value": 1}),
        InvalidRecord, "'fmt'"),
    # ---- filters, queries and windows
    Bad("filter-is-a-string", lambda s: s.search(DOCS, filter="n = 1; DROP TABLE memories"),
        InvalidQuery, "filter must be a dict"),
    Bad("filter-unknown-operator", lambda s: s.search(ALICE_FACTS, filter={"n": {"$where": 1}}),
        InvalidQuery, "$where"),
    Bad("filter-non-str-key", lambda s: s.search(DOCS, filter={1: "x"}),
        InvalidQuery, "filter key 1"),
    Bad("limit-negative", lambda s: s.search(ALICE_FACTS, query="cat", limit=-1),
        InvalidQuery, "limit=-1"),
    Bad("limit-absurd", lambda s: s.search(DOCS, limit=10**18 + 1), InvalidQuery,
        "limit=1000000000000000001"),
    Bad("offset-negative", lambda s: s.search(ALICE_PREFS, offset=-1), InvalidQuery, "offset=-1"),
    Bad("offset-absurd", lambda s: s.search(DOCS, query="report", offset=10**18 + 1),
        InvalidQuery, "offset=1000000000000000001"),
    Bad("limit-not-int", lambda s: s.search(DOCS, limit=2.5), InvalidQuery, "limit=2.5"),
    Bad("query-too-long", lambda s: s.search(ALICE_FACTS, query="cat " * 2_500),
        InvalidQuery, "10000 characters"),
    Bad("query-not-str", lambda s: s.search(ALICE_FACTS, query=42),
        InvalidQuery, "query 42"),
    Bad("list-namespaces-limit-negative", lambda s: s.list_namespaces(limit=-1),
        InvalidQuery, "limit=-1"),
    Bad("list-namespaces-max-depth-zero", lambda s: s.list_namespaces(max_depth=0),
        InvalidQuery, "max_depth=0"),
    # ---- ttl
    Bad("ttl-zero", lambda s: s.put(DOCS, "d1", {"text": "new"}, ttl=0), InvalidRecord, "ttl=0"),
    Bad("ttl-negative", lambda s: s.put(ALICE_FACTS, "k", fact(), ttl=-5),
        InvalidRecord, "ttl=-5"),
    Bad("ttl-nan", lambda s: s.put(DOCS, "k", {"text": "x"}, ttl=math.nan),
        InvalidRecord, "ttl=nan"),
    Bad("ttl-infinite", lambda s: s.put(ALICE_PREFS, "format", {"value": "csv"}, ttl=math.inf),
        InvalidRecord, "ttl=inf"),
    Bad("ttl-past-the-limit", lambda s: s.put(DOCS, "k", {"text": "x"}, ttl=1e308),
        InvalidRecord, "ttl=1e+308"),
    Bad("ttl-is-a-str", lambda s: s.put(DOCS, "k", {"text": "x"}, ttl="5"),
        InvalidRecord, "ttl='5'"),
    Bad("index-is-a-str", lambda s: s.put(DOCS, "k", {"text": "x"}, index="text"),
        InvalidRecord, "index='text'"),
    Bad("refresh-ttl-not-bool", lambda s: s.get(DOCS, "d1", refresh_ttl="yes"),
        InvalidQuery, "refresh_ttl='yes'"),
    # ---- timestamps
    Bad("occurred-at-year-1",
        lambda s: s.put(ALICE_FACTS, "k", fact(occurred_at="0001-01-01T00:00:00+00:00")),
        InvalidRecord, "occurred_at"),
    Bad("occurred-at-year-9999",
        lambda s: s.put(ALICE_EPISODES, "k",
                        {"title": "t", "summary": "s", "occurred_at": "9999-12-31T23:59:59Z"}),
        InvalidRecord, "occurred_at"),
    Bad("occurred-at-not-a-date",
        lambda s: s.put(ALICE_FACTS, "k", fact(occurred_at="yesterday")),
        InvalidRecord, "occurred_at"),
    # ---- embeddings of the wrong dimension
    Bad("typed-embedding-wrong-dims", lambda s: s.put(ALICE_FACTS, "k", fact("wrongdim cat")),
        EmbeddingDimensionMismatch, f"dims={DIMS}"),
    Bad("untyped-embedding-wrong-dims", lambda s: s.put(DOCS, "k", {"text": "wrongdim"}),
        EmbeddingDimensionMismatch, "31-d"),
    Bad("embedding-with-nan", lambda s: s.put(DOCS, "d1", {"text": "nanvector"}),
        EmbeddingDimensionMismatch, "NaN"),
    # ---- one bad op spoils its whole batch
    Bad("batch-valid-then-wrong-dims",
        lambda s: s.batch([PutOp(DOCS, "fine", {"text": "fine"}),
                           PutOp(ALICE_FACTS, "city", fact("wrongdim"))]),
        EmbeddingDimensionMismatch, f"dims={DIMS}"),
    Bad("batch-delete-then-bad-put",
        lambda s: s.batch([PutOp(ALICE_FACTS, "city", None),
                           PutOp(ALICE_PREFS, "format", {"value": "csv", "colour": "red"})]),
        InvalidRecord, "colour"),
    # ---- the promotion gate
    Bad("promote-proposals-is-a-str", lambda s: s.promote("fact", **ALICE),
        InvalidQuery, "proposals"),
    Bad("promote-proposals-is-none", lambda s: s.promote(None, **ALICE),
        InvalidQuery, "proposals"),
    Bad("promote-too-many", lambda s: s.promote([proposal()] * 10_001, **ALICE),
        InvalidQuery, "10001 proposals"),
    Bad("promote-tenant-id-not-str",
        lambda s: s.promote([proposal()], tenant_id=7, user_id="alice", run_id="r"),
        InvalidNamespace, "7"),
    Bad("promote-user-id-surrogate",
        lambda s: s.promote([proposal()], tenant_id="acme", user_id="al\ud800", run_id="r"),
        InvalidNamespace, "surrogate"),
    Bad("promote-tenant-id-with-colon",
        lambda s: s.promote([proposal()], tenant_id="ac:me", run_id="r"),
        InvalidNamespace, "'ac:me'"),
    Bad("proposal-is-an-int", lambda s: s.promote([42], **ALICE),
        Rejected, "got int"),
    Bad("proposal-confidence-a-word", lambda s: s.promote([proposal(confidence="high")], **ALICE),
        Rejected, "confidence"),
    Bad("proposal-confidence-nan", lambda s: s.promote([proposal(confidence=math.nan)], **ALICE),
        Rejected, "confidence"),
    Bad("proposal-unknown-kind", lambda s: s.promote([{"kind": "gossip", "content": "x"}], **ALICE),
        Rejected, "kind"),
    Bad("proposal-sets-status", lambda s: s.promote([proposal(status="active")], **ALICE),
        Rejected, "status"),
    Bad("proposal-sets-user_id", lambda s: s.promote([proposal(user_id="bob")], **ALICE),
        Rejected, "user_id"),
    Bad("proposal-content-too-long", lambda s: s.promote([proposal(TOO_LONG)], **ALICE),
        Rejected, "content"),
    Bad("proposal-content-nul", lambda s: s.promote([proposal("cat\x00")], **ALICE),
        Rejected, "NUL"),
    Bad("proposal-negative-turn",
        lambda s: s.promote([proposal()], tenant_id="acme", user_id="alice", run_id="r", turn=-1),
        InvalidQuery, "turn=-1"),
    Bad("proposal-key-nul",
        lambda s: s.promote([{"kind": "preference", "key": "tone\x00", "value": "brief",
                              "confidence": 0.9}], **ALICE),
        Rejected, "key"),
    Bad("proposal-grounding-nul",
        lambda s: s.promote([proposal(grounding="I have a cat\x00")], **ALICE),
        Rejected, "grounding"),
    Bad("promote-source-nul",
        lambda s: s.promote([proposal()], source="tool\x00", **ALICE),
        InvalidQuery, "source"),
]


@pytest.mark.parametrize("case", BAD, ids=[c.id for c in BAD])
def test_bad_input_is_refused_and_changes_nothing(
    shared: SharedStore, request: pytest.FixtureRequest, case: Bad
) -> None:
    if case.bug and (case.bug_on is None or shared.backend in case.bug_on):
        request.applymarker(pytest.mark.xfail(strict=True, reason=case.bug))
    store = shared.checkout()
    before = snapshot(store)
    if case.error is Rejected:
        outcomes = case.op(store)
        assert outcomes and all(o.outcome == "rejected" for o in outcomes), outcomes
        assert all(case.names in o.reason for o in outcomes), [o.reason for o in outcomes]
    else:
        with pytest.raises(case.error) as raised:
            case.op(store)
        assert isinstance(raised.value, TypedMemoryError)
        assert case.names in str(raised.value)
    assert snapshot(store) == before
    shared.checkin()


# ------------------------------------------------------------------ metacharacters are data


SQL = "k'; DROP TABLE memories; --"
WILD = ["%", "_", "*", "?", "[a-z]", "\\", "%_%", "a%", "_b"]


def _keys(items: list[Any]) -> list[str]:
    return sorted(i.key for i in items)


def untyped_keys_are_data(store: BaseStore) -> None:
    ns = ("meta-keys",)
    for key in [SQL, *WILD]:
        store.put(ns, key, {"text": f"value of {key}", "key": key})
    for key in [SQL, *WILD]:
        assert store.get(ns, key).value == {"text": f"value of {key}", "key": key}
    assert _keys(store.search(ns, limit=100)) == sorted([SQL, *WILD])
    store.delete(ns, "%")
    assert store.get(ns, "%") is None and store.get(ns, "%_%") is not None
    assert len(store.search(ns, limit=100)) == len(WILD)


def untyped_labels_are_data(store: BaseStore) -> None:
    for label in ["do%", "doc_", "d*", "do?s", "[d]ocs", "docs'", "do\\cs"]:
        store.put((label,), "k", {"text": label})
        assert [i.value["text"] for i in store.search((label,))] == [label]
        assert store.list_namespaces(prefix=(label,)) == [(label,)]
    store.put(("docs%",), "k", {"text": "x"})
    assert store.list_namespaces(prefix=("docs",)) == [("docs",), ("docs", "sub")]
    assert _keys(store.search(("docs",))) == ["d1", "d2"]


def typed_ids_are_data(store: BaseStore) -> None:
    scopes = {"acm_": "al%", "acme%": "_", "a'cme": "alice' OR '1'='1", "%": "*"}
    for tenant, user in scopes.items():
        ns = (f"tenant:{tenant}", f"user:{user}", "fact")
        store.put(ns, SQL, fact(f"Alice lives in Lyon, says {tenant}", predicate="city"))
        store.put(ns, "%", fact(f"Alice has a cat, says {tenant}"))
        for found in (store.search(ns, query="Alice Lyon cat", limit=50), store.search(ns)):
            assert _keys(found) == sorted([SQL, "%"])
            assert {i.memory["scope"]["tenant_id"] for i in found} == {tenant}
        assert store.get(ns, SQL).value["content"].endswith(tenant)
        assert [v.status for v in store.history(ns, "%")] == ["active"]
    assert store.list_namespaces(prefix=("tenant:acm_",)) == [("tenant:acm_", "user:al%", "fact")]


def filters_are_data(store: BaseStore) -> None:
    ns = ("meta-filters", "untyped")
    store.put(ns, "a", {"text": "a%b", "we'ird%key": "1' OR '1'='1", "n": {"x_y": "*"}})
    store.put(ns, "b", {"text": "aXb", "we'ird%key": "anything", "n": {"xzy": "q"}})
    assert _keys(store.search(ns, filter={"text": "a%b"})) == ["a"]
    assert _keys(store.search(ns, filter={"text": "a_b"})) == []
    assert _keys(store.search(ns, filter={"we'ird%key": "1' OR '1'='1"})) == ["a"]
    assert _keys(store.search(ns, filter={"n": {"x_y": "*"}})) == ["a"]
    assert _keys(store.search(ns, filter={"text": {"$ne": "a%b"}})) == ["b"]
    typed = ("tenant:meta-filters", "user:u", "fact")
    store.put(typed, "f", fact("a fact", metadata={"project": "p%'; --"}))
    store.put(typed, "g", fact("a fact", metadata={"project": "pX"}))
    hits = store.search(typed, query="fact", filter={"metadata": {"project": "p%'; --"}})
    assert _keys(hits) == ["f"]


NASTY_QUERIES = ["' OR 1=1 --", '"', '"unbalanced', "*", "NEAR(a b)", "a AND OR NOT b", "%",
                 "_", "\\", "content:x", "^cat", "-cat", "(", ")", "{x}", "x:*", "!cat & dog",
                 "'':*", "cat | dog", "<->", "50%_off*"]


def queries_are_data(store: BaseStore) -> None:
    mine = ("tenant:meta-queries", "user:u", "fact")
    store.put(mine, "deal", fact("Refund 50% of order_id 7, marked * 'urgent'"))
    for query in NASTY_QUERIES:
        for ns in (mine, ALICE_FACTS, ALICE_PREFS, DOCS, ()):
            found = store.search(ns, query=query, limit=20)
            if is_typed(ns):
                scopes = {tuple(i.namespace[:-1]) for i in found}  # own or tenant-wide
                assert scopes <= {ns[:-1], ns[:1]}, (query, ns, scopes)
    assert _keys(store.search(mine, query="50% order_id")) == ["deal"]


def exotic_unicode_round_trips(store: BaseStore) -> None:
    ns = ("meta-unicode", "\u00fcn\u00ef\u200dc\u00f6d\u00e9", "\u05e9\u05dc\u05d5\u05dd")
    value = {"text": "emoji \U0001f600 combining e\u0301 line\u2028sep", "rtl": "\u202eabc"}
    store.put(ns, "\U0001f511", value)
    assert store.get(ns, "\U0001f511").value == value
    typed = ("tenant:m\u00e9ta", "user:\U0001f600", "fact")
    content = "Alice ate cr\u00eapes \U0001f95e with e\u0301clairs"
    store.put(typed, "k\u00e9", fact(content))
    assert store.get(typed, "k\u00e9").value["content"] == content
    assert _keys(store.search(typed, query="cr\u00eapes")) == ["k\u00e9"]


def largest_content_round_trips(store: BaseStore) -> None:
    ns = ("tenant:meta-long", "user:u", "episode")
    summary = ("word " * 6_400)[:32_000]
    store.put(ns, "long", {"title": "long", "summary": summary})
    assert store.get(ns, "long").value["summary"] == summary


def wrong_dims_query_degrades(store: BaseStore) -> None:
    found = store.search(ALICE_FACTS, query="wrongdim Lyon")
    assert found.retrieval_mode == "lexical" and _keys(found) == ["city"]
    assert "embedder failed" in found.degraded[0]


def epoch_occurred_at_round_trips(store: BaseStore) -> None:
    ns = ("tenant:meta-epoch", "user:u", "fact")
    store.put(ns, "epoch", fact(occurred_at="1970-01-01T00:00:00+00:00"))
    assert store.get(ns, "epoch").memory["occurred_at"] == "1970-01-01T00:00:00+00:00"


def floats_round_trip(store: BaseStore) -> None:
    value = {"big": 1e300, "max": 1e308, "e16": 1e16, "neg_big": -2.5e20, "tiny": 5e-324,
             "small": 1e-7, "neg_zero": -0.0, "third": 1 / 3, "two": 2.0,
             "nested": [{"x": 1e22}, -0.0], "int": 2**63 - 1, "neg_int": -(2**63)}
    store.put(("meta-floats",), "floats", value)
    back = store.get(("meta-floats",), "floats").value
    assert back == value
    assert all(type(back[k]) is type(value[k]) for k in value)
    assert type(back["nested"][0]["x"]) is float
    # -0.0 is stored as 0.0 on every backend (Postgres' JSON has no signed zero)
    assert math.copysign(1, back["neg_zero"]) == 1 == math.copysign(1, back["nested"][1])
    hits = store.search(("meta-floats",), filter={"max": 1e308, "two": 2, "neg_zero": 0})
    assert [i.key for i in hits] == ["floats"]


@dataclass(frozen=True)
class Data:
    id: str
    check: Callable[[BaseStore], None]
    bug: str | None = None
    bug_on: tuple[str, ...] | None = None


DATA = [
    Data("untyped-keys", untyped_keys_are_data),
    Data("untyped-labels", untyped_labels_are_data),
    Data("typed-ids", typed_ids_are_data),
    Data("filters", filters_are_data),
    Data("queries", queries_are_data),
    Data("unicode", exotic_unicode_round_trips),
    Data("largest-content", largest_content_round_trips),
    Data("wrong-dims-query", wrong_dims_query_degrades),
    Data("epoch-occurred-at", epoch_occurred_at_round_trips),
    Data("floats", floats_round_trip),
]


@pytest.mark.parametrize("case", DATA, ids=[c.id for c in DATA])
def test_metacharacters_are_data(
    shared: SharedStore, request: pytest.FixtureRequest, case: Data
) -> None:
    if case.bug and (case.bug_on is None or shared.backend in case.bug_on):
        request.applymarker(pytest.mark.xfail(strict=True, reason=case.bug))
    store = shared.checkout()
    view, raw = public_view(store, SEED_NAMESPACES), raw_tables(store)
    case.check(store)
    after_view, after_raw = public_view(store, SEED_NAMESPACES), raw_tables(store)
    assert set(view.pop("namespaces")) <= set(after_view.pop("namespaces"))
    assert after_view == view
    for table in ("memories", "memory_vectors"):
        assert {k: after_raw[table].get(k) for k in raw[table]} == raw[table]
    shared.checkin()


def test_like_fallback_takes_wildcards_literally(
    backend_store_factory: Callable[..., BaseStore],
) -> None:
    store = backend_store_factory(None)  # no embedder: lexical, then LIKE
    ns = ("tenant:meta", "user:u", "fact")
    store.put(ns, "pct", fact("Alice is 100% sure"))
    store.put(ns, "under", fact("Alice uses snake_case"))
    store.put(ns, "plain", fact("Alice is quite sure"))
    for query, expected in [("%", ["pct"]), ("_", ["under"]), ("%%", []), ("'", [])]:
        found = store.search(ns, query=query)
        assert found.retrieval_mode == "like", query
        assert _keys(found) == expected, query
