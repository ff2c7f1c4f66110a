"""SQLite dialect: schema migrations and the statements that differ from Postgres.

Lexical search is FTS5 with the porter tokenizer (BM25). Vectors are float32 BLOBs ranked with
numpy after the SQL scope filter: the stdlib `sqlite3` of many Pythons cannot load extensions
such as sqlite-vec, and an exact scan keeps results exact (docs/backends.md has the figures).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from langgraph_typed_memory.scoring import cosine_scores
from langgraph_typed_memory.store import queries as q
from langgraph_typed_memory.store.protocol import Plan, Sql

MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "0001_memories",
        (
            """CREATE TABLE memories (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                ns TEXT NOT NULL,
                key TEXT NOT NULL,
                value TEXT NOT NULL,
                kind TEXT,
                tenant_id TEXT,
                user_id TEXT,
                agent_id TEXT,
                status TEXT NOT NULL DEFAULT 'active',
                confidence REAL,
                content_hash TEXT,
                superseded_by TEXT,
                search_text TEXT,
                occurred_at REAL,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                expires_at REAL,
                ttl_minutes REAL,
                source_run_id TEXT,
                source_turn INTEGER,
                policy_version TEXT,
                last_accessed_at REAL,
                access_count INTEGER NOT NULL DEFAULT 0
            )""",
            """CREATE UNIQUE INDEX memories_current ON memories (ns, key)
                WHERE status NOT IN ('superseded', 'revoked')""",
            "CREATE INDEX memories_ns ON memories (ns)",
            "CREATE INDEX memories_scope ON memories (tenant_id, kind, status, user_id, agent_id)",
            "CREATE INDEX memories_hash ON memories (content_hash, tenant_id)",
            """CREATE INDEX memories_expires ON memories (expires_at)
                WHERE expires_at IS NOT NULL""",
            """CREATE VIRTUAL TABLE memory_fts USING fts5(
                search_text, content='memories', content_rowid='seq',
                tokenize='porter unicode61')""",
            """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
                WHEN new.search_text IS NOT NULL BEGIN
                INSERT INTO memory_fts (rowid, search_text) VALUES (new.seq, new.search_text);
            END""",
            """CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories
                WHEN old.search_text IS NOT NULL BEGIN
                INSERT INTO memory_fts (memory_fts, rowid, search_text)
                VALUES ('delete', old.seq, old.search_text);
            END""",
            """CREATE TRIGGER memories_fts_update AFTER UPDATE OF search_text ON memories BEGIN
                INSERT INTO memory_fts (memory_fts, rowid, search_text)
                SELECT 'delete', old.seq, old.search_text WHERE old.search_text IS NOT NULL;
                INSERT INTO memory_fts (rowid, search_text)
                SELECT new.seq, new.search_text WHERE new.search_text IS NOT NULL;
            END""",
            """CREATE TABLE memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
        ),
    ),
    (
        "0002_vectors",
        (
            """CREATE TABLE memory_vectors (
                seq INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
                field TEXT NOT NULL,
                embedding BLOB NOT NULL,
                PRIMARY KEY (seq, field)
            )""",
        ),
    ),
    (
        "0003_gate_bookkeeping",
        (
            "ALTER TABLE memories ADD COLUMN repetitions INTEGER NOT NULL DEFAULT 1",
            "ALTER TABLE memories ADD COLUMN evidence TEXT",
            "ALTER TABLE memories ADD COLUMN contradicts TEXT",
            "ALTER TABLE memories ADD COLUMN needs_review INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    q.audit_migration("seq INTEGER PRIMARY KEY AUTOINCREMENT"),
    q.deletions_migration("TEXT"),
)


@dataclass(slots=True)
class _ScopeMatrix:
    """The unit-normalized vectors of one scope, as one matrix, with their expiry times."""

    version: tuple[int, int]
    seqs: np.ndarray
    matrix: np.ndarray
    expires: np.ndarray


class SqliteDialect:
    """The SQLite flavour of the statements the engine needs.

    Vector search keeps, per scope filter, the scope's vectors as one normalized float32
    matrix (an LRU of `cache_scopes` entries), so a query is one matrix-vector product. An
    entry is valid while this store has committed no write (`invalidate`) and no other
    connection has committed one (`PRAGMA data_version`).
    """

    def __init__(self, cache_scopes: int = 8) -> None:
        self.cache_scopes = cache_scopes
        self._cache: OrderedDict[tuple[Any, ...], _ScopeMatrix] = OrderedDict()
        self._writes = 0

    position_fn = "instr"
    name = "sqlite"

    def migrations(self, dims: int | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return MIGRATIONS

    def lock_migrations(self) -> Sql | None:
        return None  # BEGIN IMMEDIATE already serializes writers

    def dump_json(self, value: Any) -> Any:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def load_json(self, value: Any) -> Any:
        return json.loads(value)

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} IN (SELECT value FROM json_each(?))", [json.dumps(list(values))]

    def encode_vector(self, vector: Sequence[float]) -> Any:
        return np.asarray(vector, dtype=np.float32).tobytes()

    def lexical(
        self, where: str, params: Sequence[Any], terms: list[str], depth: int | None
    ) -> Plan[list[tuple[int, float]]]:
        """FTS5's BM25 over the scope-filtered rows, best first."""
        match = " OR ".join(f'"{t}"' for t in dict.fromkeys(terms))
        rows = yield Sql(
            "SELECT m.seq, -bm25(memory_fts) AS score FROM memory_fts "
            "JOIN memories m ON m.seq = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND {where} ORDER BY bm25(memory_fts)"
            + (" LIMIT ?" if depth is not None else ""),
            [match, *params, *([depth] if depth is not None else [])],
        )
        return [(seq, float(score)) for seq, score in rows]

    def after_erasure(self) -> list[Sql]:
        """Leave no trace of erased text in the file: merge the full-text segments (dropping
        deleted postings), rewrite the file without free pages (other connections, such as a
        checkpointer's, may have freed pages without zeroing them) and empty the WAL."""
        return [
            Sql("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')"),
            Sql("VACUUM"),
            Sql("PRAGMA wal_checkpoint(TRUNCATE)"),
        ]

    def invalidate(self, touched: set[tuple[str | None, str]] | None = None) -> None:
        """Drop cached scopes a committed write may have changed.

        `touched` holds (kind, tenant) pairs (kind None: every kind of the tenant); None
        drops everything. Cache keys start with the reader's kind and tenant parameters.
        """
        self._writes += 1
        if touched is None:
            self._cache.clear()
            return
        for key in list(self._cache):
            kind, tenant = key[1][0], key[1][1]
            if (kind, tenant) in touched or (None, tenant) in touched:
                del self._cache[key]
        for entry in self._cache.values():
            entry.version = (self._writes, entry.version[1])

    def vector_top_k(
        self, where: str, params: Sequence[Any], query: Sequence[float], depth: int | None,
        now: float,
    ) -> Plan[list[tuple[int, float]]]:
        version = (self._writes, (yield Sql("PRAGMA data_version"))[0][0])
        key = (where, tuple(params))
        entry = self._cache.get(key)
        if entry is None or entry.version != version:
            rows = yield Sql(
                "SELECT v.seq, v.embedding, m.expires_at FROM memory_vectors v "
                f"JOIN memories m ON m.seq = v.seq WHERE {where}",
                list(params),
            )
            entry = _scope_matrix(rows, version)
            self._cache[key] = entry
            while len(self._cache) > self.cache_scopes:
                self._cache.popitem(last=False)
        self._cache.move_to_end(key)
        if not len(entry.seqs):
            return []
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        scores = entry.matrix @ (q / norm) if norm else np.zeros(len(entry.seqs), np.float32)
        scores = np.where(entry.expires > now, scores, -np.inf)
        return _top(entry.seqs, scores, depth)

    def vector_scores(
        self, seqs: Sequence[int], query: Sequence[float]
    ) -> Plan[list[tuple[int, float]]]:
        clause, params = self.in_list("seq", seqs)
        rows = yield Sql(f"SELECT seq, embedding FROM memory_vectors WHERE {clause}", params)
        return _rank(rows, query, None)


def _scope_matrix(rows: list[tuple[Any, ...]], version: tuple[int, int]) -> _ScopeMatrix:
    if not rows:
        empty = np.zeros(0)
        return _ScopeMatrix(version, empty.astype(np.int64), empty.astype(np.float32), empty)
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    expires = np.array([np.inf if r[2] is None else r[2] for r in rows], dtype=np.float64)
    return _ScopeMatrix(version, np.array([r[0] for r in rows], dtype=np.int64),
                        matrix / norms, expires)


def _top(seqs: np.ndarray, scores: np.ndarray, depth: int | None) -> list[tuple[int, float]]:
    """Best-first (seq, score), one per record (max over its vectors), expired ones left out."""
    live = np.isfinite(scores)
    seqs, scores = seqs[live], scores[live]
    if depth is not None and len(scores) > depth * 4:
        keep = np.argpartition(-scores, depth * 4)[: depth * 4]  # enough for max-pooling
        seqs, scores = seqs[keep], scores[keep]
    order = np.argsort(-scores, kind="stable")
    best: dict[int, float] = {}
    for i in order:
        seq = int(seqs[i])
        if seq not in best:
            best[seq] = float(scores[i])
            if depth is not None and len(best) == depth:
                break
    return list(best.items())


def _rank(
    rows: list[tuple[Any, ...]], query: Sequence[float], depth: int | None
) -> list[tuple[int, float]]:
    """Max-pool cosine scores per record; best first."""
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    scores = cosine_scores(query, matrix)
    best: dict[int, float] = {}
    for (seq, _), score in zip(rows, scores.tolist(), strict=True):
        if score > best.get(seq, -2.0):
            best[seq] = score
    ranked = sorted(best.items(), key=lambda x: -x[1])
    return ranked if depth is None else ranked[:depth]
