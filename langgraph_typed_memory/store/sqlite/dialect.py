"""SQLite dialect: schema migrations and the statements that differ from Postgres.

Lexical search ranks postings cached per scope cell by BM25 (`bm25`), as Postgres does, made
from the tokens each record keeps (`search_tokens`: FTS5's `porter unicode61` tokens, made in
this process as FTS5 makes them, when the record is written). No full-text table is kept.
Vectors are float32 BLOBs ranked with numpy after the SQL scope filter: the stdlib `sqlite3`
of many Pythons cannot load extensions such as sqlite-vec, and an exact scan keeps results
exact (docs/backends.md has the figures).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

from langgraph_typed_memory.namespaces import RANKED_KINDS
from langgraph_typed_memory.schemas import stored_json
from langgraph_typed_memory.scoring import cosine_scores
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.filters import JsonGrammar, Path
from langgraph_typed_memory.store.core.protocol import Plan, Sql
from langgraph_typed_memory.store.index import (
    APPENDS_COLUMN,
    BACKFILL,
    DEFAULT_CACHE_BYTES,
    DEFAULT_RESCORED,
    LOAD_CHUNK,
    NAMESPACE_VERSIONS_TABLE,
    ROW_CELL,
    ROW_CHANGE,
    ROW_COLUMNS,
    SQLITE_JOIN,
    TOKENIZE,
    VECTOR_APPEND_CELL,
    VECTOR_CELL,
    VECTOR_CHANGE,
    VERSIONS_TABLE,
    CellCache,
    NamespaceVectorCache,
    OversizedScopes,
    ScopeFts5Cache,
    ScopeSketchCache,
    ScopeVectorCache,
    SketchSql,
    VectorQuery,
    VectorRanking,
    bump_cell,
    bump_namespace,
    changes_table,
    exact_row_bytes,
    log_change,
    row_changed,
    scores_of,
    sign_bits,
)

SQLITE_SKETCHES = SketchSql("v.sign_bits", "CASE WHEN v.sign_bits IS NULL THEN v.embedding END",
                            SQLITE_JOIN)
"""Where a large scope's sign bits come from: written beside each vector (`sign_bits`), or
made from its embedding for a vector written before they were kept."""

_UNTYPED_RECORD = "SELECT m.ns, 1 FROM memories m WHERE m.seq = {row}.seq AND m.kind IS NULL"
"""The namespace of the untyped record a `memory_vectors` trigger row (`{row}`) belongs to."""

FTS_TABLES = {kind: f"memory_fts_{kind}" for kind in sorted(RANKED_KINDS)}
"""The full-text table of each ranked kind, from migration 0012 until 0023 dropped them."""


def _full_text_per_kind() -> tuple[str, ...]:
    """Migration 0012: one FTS5 table per ranked kind, filled from `memories`, kept by
    triggers on the row's kind; the table of every row, and its triggers, dropped."""
    out = [
        "DROP TRIGGER memories_fts_insert",
        "DROP TRIGGER memories_fts_delete",
        "DROP TRIGGER memories_fts_update",
        "DROP TABLE memory_fts",
    ]
    for kind, table in FTS_TABLES.items():
        out += [
            f"""CREATE VIRTUAL TABLE {table} USING fts5(
                search_text, content='memories', content_rowid='seq',
                tokenize='{TOKENIZE}')""",
            f"""INSERT INTO {table} (rowid, search_text) SELECT seq, search_text FROM memories
                WHERE kind = '{kind}' AND search_text IS NOT NULL""",
            f"""CREATE TRIGGER {table}_insert AFTER INSERT ON memories
                WHEN new.kind = '{kind}' AND new.search_text IS NOT NULL BEGIN
                INSERT INTO {table} (rowid, search_text) VALUES (new.seq, new.search_text);
            END""",
            f"""CREATE TRIGGER {table}_delete AFTER DELETE ON memories
                WHEN old.kind = '{kind}' AND old.search_text IS NOT NULL BEGIN
                INSERT INTO {table} ({table}, rowid, search_text)
                VALUES ('delete', old.seq, old.search_text);
            END""",
            f"""CREATE TRIGGER {table}_update AFTER UPDATE OF search_text, kind ON memories
                WHEN old.kind = '{kind}' OR new.kind = '{kind}' BEGIN
                INSERT INTO {table} ({table}, rowid, search_text)
                SELECT 'delete', old.seq, old.search_text
                WHERE old.kind = '{kind}' AND old.search_text IS NOT NULL;
                INSERT INTO {table} (rowid, search_text) SELECT new.seq, new.search_text
                WHERE new.kind = '{kind}' AND new.search_text IS NOT NULL;
            END""",
        ]
    return tuple(out)


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
    (
        "0008_scope_versions",
        (
            *VERSIONS_TABLE,
            f"""CREATE TRIGGER memories_version_delete AFTER DELETE ON memories
                WHEN old.kind IS NOT NULL BEGIN
                {bump_cell(ROW_CELL.format(row="old"))};
            END""",
            f"""CREATE TRIGGER memories_version_update AFTER UPDATE OF status, expires_at
                ON memories WHEN new.kind IS NOT NULL BEGIN
                {bump_cell(ROW_CELL.format(row="new"))};
            END""",
            *(
                f"""CREATE TRIGGER vectors_version_{event.lower()} AFTER {event}
                    ON memory_vectors BEGIN
                    {bump_cell(VECTOR_CELL.format(row=row))};
                END"""
                for event, row in (("INSERT", "new"), ("DELETE", "old"))
            ),
            BACKFILL,
        ),
    ),
    (
        "0010_scope_appends",
        (
            APPENDS_COLUMN,
            "DROP TRIGGER vectors_version_insert",
            f"""CREATE TRIGGER vectors_version_insert AFTER INSERT ON memory_vectors BEGIN
                {bump_cell(VECTOR_APPEND_CELL.format(row="new"), append=True)};
            END""",
        ),
    ),
    (
        # An update counts if it changes what the vector cache holds (`ROW_COLUMNS`:
        # confidence and times for the priors, besides status and expiry), not when it sets
        # a column again to its value (a restatement's status).
        "0011_scope_row_changes",
        (
            "DROP TRIGGER memories_version_update",
            f"""CREATE TRIGGER memories_version_update AFTER UPDATE OF {", ".join(ROW_COLUMNS)}
                ON memories WHEN new.kind IS NOT NULL AND ({row_changed("IS NOT")}) BEGIN
                {bump_cell(ROW_CELL.format(row="new"))};
            END""",
        ),
    ),
    # A lexical search is always of one ranked kind: its own table holds only that kind's
    # postings, where one table for every row made the facts and episodes searches of a
    # fan-out each read both kinds' hits and drop the other's after the join (and BM25's
    # document count and mean length are now the kind's).
    ("0012_full_text_per_kind", _full_text_per_kind()),
    # Records added are counted per cell in `inserts` (not in `version`), so the cached
    # postings (`index/fts5`) fetch new records alone; each full-text table gets an
    # `fts5vocab` row table (no storage of its own), which counts the rows holding a token.
    (
        "0013_scope_inserts",
        (
            "ALTER TABLE memory_scope_versions ADD COLUMN inserts BIGINT NOT NULL DEFAULT 0",
            """CREATE TRIGGER memories_version_insert AFTER INSERT ON memories
                WHEN new.kind IS NOT NULL AND new.tenant_id IS NOT NULL BEGIN
                INSERT INTO memory_scope_versions
                    (kind, tenant_id, user_id, agent_id, version, inserts)
                VALUES (new.kind, new.tenant_id, new.user_id, new.agent_id, 0, 1)
                ON CONFLICT (kind, tenant_id, coalesce(user_id, ''), coalesce(agent_id, ''))
                DO UPDATE SET inserts = memory_scope_versions.inserts + 1;
            END""",
            *(f"CREATE VIRTUAL TABLE {table}_vocab USING fts5vocab({table}, row)"
              for table in FTS_TABLES.values()),
        ),
    ),
    # Each change counted in `version` but not in `appends` logs its record's seq too, so
    # a cached scope masks and refetches the records changed, where it reloaded them all.
    (
        "0015_scope_changes",
        (
            changes_table("id INTEGER PRIMARY KEY AUTOINCREMENT"),
            "DROP TRIGGER memories_version_delete",
            f"""CREATE TRIGGER memories_version_delete AFTER DELETE ON memories
                WHEN old.kind IS NOT NULL BEGIN
                {bump_cell(ROW_CELL.format(row="old"))};
                {log_change(ROW_CHANGE.format(row="old"))};
            END""",
            "DROP TRIGGER memories_version_update",
            f"""CREATE TRIGGER memories_version_update AFTER UPDATE OF {", ".join(ROW_COLUMNS)}
                ON memories WHEN new.kind IS NOT NULL AND ({row_changed("IS NOT")}) BEGIN
                {bump_cell(ROW_CELL.format(row="new"))};
                {log_change(ROW_CHANGE.format(row="new"))};
            END""",
            "DROP TRIGGER vectors_version_delete",
            f"""CREATE TRIGGER vectors_version_delete AFTER DELETE ON memory_vectors BEGIN
                {bump_cell(VECTOR_CELL.format(row="old"))};
                {log_change(VECTOR_CHANGE.format(row="old"))};
            END""",
        ),
    ),
    # A namespace's newest records (a search with {"$newest": true}) read in index order.
    ("0017_newest_by_namespace", ("CREATE INDEX memories_ns_seq ON memories (ns, seq)",)),
    # A user's turn log only grows, and superseded facts stay as history: the records one
    # turn wrote are found by their provenance (a run and a turn index), and a namespace's
    # newest active records by an index of the active ones alone, not by reading every row.
    ("0018_turn_log_lookups", (
        "CREATE INDEX memories_provenance ON memories (source_run_id, source_turn)",
        "CREATE INDEX memories_active_seq ON memories (ns, seq) WHERE status = 'active'",
        "DROP INDEX memories_ns_seq",
    )),
    # The records of a span of time (a search with {"$during": [start, end]}), latest first.
    ("0019_occurred_by_namespace", (
        "CREATE INDEX memories_active_occurred ON memories (ns, occurred_at, seq) "
        "WHERE status = 'active'",
    )),
    # Reads append their uses to a log, folded in chunks into a narrow table of each
    # record's uses: updating the records' own wide rows rewrote a page of the file per
    # record (64 records held the connection ~0.6 ms; appended, ~0.05 ms; folded 4,096 at a
    # time into the narrow table, ~4 us a record against ~26 us into the rows).
    ("0021_access_log", (
        """CREATE TABLE memory_access_log (
            entry INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL,
            n INTEGER NOT NULL,
            at REAL NOT NULL
        )""",
        """CREATE TABLE memory_access (
            memory_id TEXT PRIMARY KEY,
            n INTEGER NOT NULL,
            at REAL NOT NULL
        ) WITHOUT ROWID""",
    )),
    # A record keeps its text's tokens (`Tokenizer.joined`) beside it, made when it is
    # written: a search that reads a cell first splits them where it tokenized every text.
    # A change of the text that does not write its tokens too clears them (the text is then
    # tokenized when read, as are the records written before this migration).
    ("0022_search_tokens", (
        "ALTER TABLE memories ADD COLUMN search_tokens TEXT",
        """CREATE TRIGGER memories_tokens_stale AFTER UPDATE OF search_text ON memories
            WHEN new.search_tokens IS NOT NULL AND new.search_tokens IS old.search_tokens
                AND new.search_text IS NOT old.search_text BEGIN
            UPDATE memories SET search_tokens = NULL WHERE seq = new.seq;
        END""",
    )),
    # With the tokens kept beside each record, the full-text tables are read by nothing:
    # searches rank the cached postings. Their triggers indexed every insert, update and
    # delete (an eighth of a bulk load's time). The space they held is reused by later
    # writes, or returned by a VACUUM.
    ("0023_no_full_text_tables", tuple(
        statement for table in FTS_TABLES.values() for statement in (
            f"DROP TRIGGER {table}_insert", f"DROP TRIGGER {table}_delete",
            f"DROP TRIGGER {table}_update", f"DROP TABLE {table}_vocab", f"DROP TABLE {table}",
        ))),
    q.THREADS_MIGRATION,
    q.untyped_migration("ns"),
    # Untyped namespaces count their changes, so that an untyped search ranks a namespace's
    # vectors cached in memory (`NamespaceVectorCache`) instead of reading them all each
    # time. A vector's namespace is its record's; a record's deletion is counted by its
    # own trigger (its vectors, deleted by the cascade after it, find no record).
    ("0026_namespace_versions", (
        NAMESPACE_VERSIONS_TABLE + " WITHOUT ROWID",
        f"""CREATE TRIGGER vectors_namespace_insert AFTER INSERT ON memory_vectors BEGIN
            {bump_namespace(_UNTYPED_RECORD.format(row="new"), "appends")};
        END""",
        f"""CREATE TRIGGER vectors_namespace_delete AFTER DELETE ON memory_vectors BEGIN
            {bump_namespace(_UNTYPED_RECORD.format(row="old"), "changes")};
        END""",
        f"""CREATE TRIGGER memories_namespace_delete AFTER DELETE ON memories
            WHEN old.kind IS NULL BEGIN
            {bump_namespace("VALUES (old.ns, 1)", "changes")};
        END""",
        f"""CREATE TRIGGER memories_namespace_update
            AFTER UPDATE OF ns, kind, status, expires_at ON memories
            WHEN (old.kind IS NULL OR new.kind IS NULL) AND (old.ns IS NOT new.ns
                OR old.kind IS NOT new.kind OR old.status IS NOT new.status
                OR coalesce(new.expires_at, 1e308) < coalesce(old.expires_at, 1e308)) BEGIN
            {bump_namespace("SELECT old.ns, 1 WHERE old.kind IS NULL", "changes")};
            {bump_namespace("SELECT new.ns, 1 WHERE new.kind IS NULL AND "
                            "(old.kind IS NOT NULL OR new.ns IS NOT old.ns)", "changes")};
        END""",
    )),    # Each vector keeps its signs, one bit a dimension, made when it is written: a scope too
    # large for the exact matrices is ranked by them (`ScopeSketchCache`), and its first
    # search reads 48 bytes a vector instead of 1,536. Vectors written before have none;
    # their bits are made from the embedding when read.
    ("0027_sign_bits", ("ALTER TABLE memory_vectors ADD COLUMN sign_bits BLOB",)),
)

_TEXT_AT = q.INSERT_COLUMNS.index("search_text")
_WITH_BITS = {
    statement: statement.value.replace("embedding)", "embedding, sign_bits)")[:-1] + ", ?)"
    for statement in (q.Bulk.VECTOR, q.Bulk.VECTOR_FOR_ID)}
"""The vector inserts with the vector's sign bits (`sign_bits`) as a last parameter."""

_SQLITE_TYPES = {"null": ("null",), "bool": ("true", "false"), "number": ("integer", "real"),
                 "string": ("text",), "array": ("array",), "object": ("object",)}
"""`json_type`'s names of each JSON type."""
_SCALARS = "json_type(m.value, ?) IN ('integer', 'real', 'true', 'false')"
"""A number or a boolean (`json_extract` reads true as 1, false as 0, as Python's == does)."""


class SqliteJson:
    """JSON conditions on `m.value` with SQLite's JSON functions; every path is a parameter
    (`$."key"[0]`: a quoted label finds only an object's key, never an array's element).

    Example:
        >>> SQLITE_JSON.equals(("meta", "tags", 0), "red")
        ("json_type(m.value, ?) = 'text' AND json_extract(m.value, ?) = ?", \
['$."meta"."tags"[0]', '$."meta"."tags"[0]', 'red'])
    """

    false = "0"

    def key_ok(self, key: str) -> bool:
        """A quoted label names a key written without escapes: no `"`, `\\`, control
        characters."""
        return '"' not in key and "\\" not in key and all(c >= " " for c in key)

    def _path(self, path: Path) -> str:
        return "$" + "".join(f"[{p}]" if isinstance(p, int) else f'."{p}"' for p in path)

    def type_in(self, path: Path, types: tuple[str, ...]) -> q.Clause:
        names = [n for t in types for n in _SQLITE_TYPES[t]]
        return (f"json_type(m.value, ?) IN ({', '.join(repr(n) for n in names)})",
                [self._path(path)])

    def absent(self, path: Path) -> q.Clause:
        return "coalesce(json_type(m.value, ?), 'null') = 'null'", [self._path(path)]

    def has_key(self, key: str) -> q.Clause:
        return "json_type(m.value, ?) IS NOT NULL", [self._path((key,))]

    def equals(self, path: Path, value: str | int | float | bool) -> q.Clause:
        at = self._path(path)
        if isinstance(value, str):
            return ("json_type(m.value, ?) = 'text' AND json_extract(m.value, ?) = ?",
                    [at, at, value])
        return f"{_SCALARS} AND json_extract(m.value, ?) = ?", [at, at, value]

    def compare(self, path: Path, op: str, bound: float) -> q.Clause:
        at = self._path(path)
        return (f"{_SCALARS} AND CAST(json_extract(m.value, ?) AS REAL) {op} ?",
                [at, at, bound])

    def length_is(self, path: Path, n: int) -> q.Clause:
        at = self._path(path)
        return ("json_type(m.value, ?) = 'array' AND json_array_length(m.value, ?) = ?",
                [at, at, n])

    def coalesce_false(self, sql: str) -> str:
        return f"coalesce({sql}, 0)"


SQLITE_JSON = SqliteJson()
_INSERT_ROW = (f"INSERT INTO memories ({', '.join(q.INSERT_COLUMNS)}, search_tokens) "
               f"VALUES ({', '.join('?' * (len(q.INSERT_COLUMNS) + 1))})")
"""`q.SQL_INSERT_ROW` with the text's tokens (`Tokenizer.joined`) after its columns."""


class SqliteDialect:
    """The SQLite flavour of the statements the engine needs.

    Vector search ranks normalized float32 matrices per scope cell (`ScopeVectorCache`) and
    lexical search postings per cell (`ScopeFts5Cache`), kept in one cache of at most
    `cache_bytes` (`CellCache`) and brought up to date from the cells' counters. A scope
    whose matrices and postings would not fit that bound (`OversizedScopes`; `dims` sizes
    its vectors) is ranked by its vectors' sign bits instead, the `rescored` nearest
    ranked exactly (`ScopeSketchCache`); its postings are still held.
    """

    def __init__(self, cache_bytes: int = DEFAULT_CACHE_BYTES, *, dims: int | None = None,
                 rescored: int = DEFAULT_RESCORED) -> None:
        self.cache = CellCache(cache_bytes)
        self.vectors = ScopeVectorCache(self.cache)
        self.sketches = ScopeSketchCache(self.cache, SQLITE_SKETCHES, rescored)
        self.large = OversizedScopes(self.cache, exact_row_bytes(dims), (self.vectors.name,))
        self.postings = ScopeFts5Cache(self.cache)
        for family in (self.vectors, self.postings, self.sketches):
            family.load_chunk = LOAD_CHUNK  # a large scope's cells are read in chunks
        self.namespaces = NamespaceVectorCache(self.cache, embedding="v.embedding",
                                               decode=_decode)

    position_fn = "instr"
    range_ops = (">=", "<")
    name = "sqlite"
    json: JsonGrammar = SQLITE_JSON
    byte_order = ""

    def migrations(self, dims: int | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return MIGRATIONS

    def lock_migrations(self) -> Sql | None:
        return None  # BEGIN IMMEDIATE already serializes writers

    def lock_scopes(self, names: Sequence[str], *, shared: bool) -> Sql | None:
        return None  # BEGIN IMMEDIATE already serializes writers

    def dump_json(self, value: Any) -> Any:
        return stored_json(value)

    def load_json(self, value: Any) -> Any:
        try:
            return orjson.loads(value)  # the same values as json's, in about half the time
        except orjson.JSONDecodeError:  # what only json reads: integers past 64 bits, NaN
            return json.loads(value)

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} IN (SELECT value FROM json_each(?))", [json.dumps(list(values))]

    def key_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, list[Any]]]:
        """A `VALUES` list per 500 pairs (two parameters each: below SQLite's limit).

        Example:
            >>> SqliteDialect().key_pairs([("a", "k1"), ("a", "k2")])
            [('VALUES (?, ?), (?, ?)', ['a', 'k1', 'a', 'k2'])]
        """
        return [(f"VALUES {', '.join(['(?, ?)'] * len(chunk))}",
                 [x for pair in chunk for x in pair])
                for chunk in (pairs[i : i + 500] for i in range(0, len(pairs), 500))]

    def json_field(self, column: str, field: str) -> str:
        return f"json_extract({column}, '$.{field}')"

    def encode_vector(self, vector: Sequence[float]) -> Any:
        return np.asarray(vector, dtype=np.float32).tobytes()

    def bulk(self, statement: q.Bulk, rows: list[list[Any]]) -> Sql:
        """Many rows of one statement: executemany (a record with its text's tokens, as
        `one` writes it).

        Example:
            >>> len(SqliteDialect().bulk(q.Bulk.AUDIT, [[1], [2]]).many)
            2
        """
        if statement is q.Bulk.ROW:
            return Sql(_INSERT_ROW, many=[self._with_tokens(row) for row in rows])
        if statement in _WITH_BITS:
            bits = sign_bits(np.stack([np.frombuffer(row[-1], np.float32) for row in rows]))
            return Sql(_WITH_BITS[statement], many=[
                [*row, word.tobytes()] for row, word in zip(rows, bits, strict=True)])
        return Sql(statement.value, many=rows)

    def one(self, statement: q.Bulk, row: list[Any]) -> Sql:
        """One row of a statement; a record with its text's tokens (`Tokenizer.joined`:
        None where the text holds a character no search has learned yet).

        Example:
            >>> sql = SqliteDialect().one(q.Bulk.ROW, [None] * len(q.INSERT_COLUMNS))
            >>> sql.text.split(") VALUES")[0][-15:], len(sql.params)
            (', search_tokens', 24)
        """
        if statement is q.Bulk.ROW:
            return Sql(_INSERT_ROW, self._with_tokens(row))
        if statement in _WITH_BITS:
            bits = sign_bits(np.frombuffer(row[-1], np.float32)[None, :])[0]
            return Sql(_WITH_BITS[statement], [*row, bits.tobytes()])
        return Sql(statement.value, row)

    def _with_tokens(self, row: list[Any]) -> list[Any]:
        return [*row, self.postings.tokenizer.joined(row[_TEXT_AT])]

    def lexical(
        self, scope: q.ScopeRead, terms: list[str], depth: int | None
    ) -> Plan[list[tuple[int, float]]]:
        """BM25 (`bm25_ranked`) over the scope's live rows of its kind, best first (ties:
        older row first; every matching row when `depth` is None).

        The terms become FTS5's `porter unicode61` tokens, made in this process
        (`Tokenizer`: a term it splits, `foo_bar`, gives each of its tokens; one it drops,
        none), and the scope's cached postings (`ScopeFts5Cache`) are ranked in this
        process: a statement reads the scope's counters (shared with the vector search beside
        it), followed by the texts of cells not held yet, cells that changed are brought up
        to date, and the rest is arithmetic.

        Max-score pruning (score the rows of the rarest terms first, stop once the depth-th
        score beats the other terms' bound idf x (k1 + 1)) was measured and left out: on the
        latency benchmark's corpus a term adds at most 1.3-1.5 idf to a row, far under that
        bound, so at depth 50 it never stopped early.

        Example (the first read: the counters of the cells, of every ranked kind, then the
        texts of the tenant-wide cell, not held yet):
            >>> scope = q.ScopeRead("fact", "acme", None, None, "m.status = 'active'", 5.0)
            >>> first = next(SqliteDialect().lexical(scope, ["lyon"], None))
            >>> first.steps[0].params, len(first.steps)
            (['episode', 'fact', 'observation', 'acme', '', '', '', ''], 2)
        """
        if scope.kind not in RANKED_KINDS:
            raise ValueError(f"no lexical search of kind {scope.kind!r}: lexical search "
                             f"ranks the kinds {sorted(RANKED_KINDS)}")
        # the cells' counters first: the vector search of the same scope, run beside this
        # one, asks for them in the same turn, and they go out once
        _, counted, loaded = yield from self.postings.counted_with_cold(
            scope, self.postings.select)
        tokens = yield from self.postings.tokenizer.tokens(list(dict.fromkeys(terms)))
        return (yield from self.postings.ranked(
            scope, [token for term in tokens for token in term], depth, counted, loaded))

    def lazy_commit(self) -> list[Sql]:
        """Nothing: in WAL mode with `synchronous=NORMAL` (`connect_sqlite`) no commit waits
        for the disk."""
        return []

    def after_erasure(self) -> list[Sql]:
        """Leave no trace of erased text in the file: rewrite it without free pages (other
        connections, such as a checkpointer's, may have freed pages without zeroing them)
        and empty the WAL."""
        return [Sql("VACUUM"), Sql("PRAGMA wal_checkpoint(TRUNCATE)")]

    def vector_top_k(
        self, scope: q.ScopeRead, query: VectorQuery, depth: int | None
    ) -> Plan[VectorRanking | None]:
        """Exact on the scope's cached matrices (`ScopeVectorCache`); a scope too large for
        them (`OversizedScopes.too_large`, measured before any row is read) by its sketches
        (`ScopeSketchCache`), its `rescored` nearest ranked exactly."""
        if (yield from self.large.too_large(scope, self.vectors)):
            return (yield from self.sketches.top_k(scope, query, depth, decode=_decode,
                                                   rescore=self._rescored))
        return (yield from self.vectors.top_k(
            scope, query, depth, embedding="v.embedding", decode=_decode,
            tier=self.json_field("m.value", "compaction_tier")))

    def _rescored(self, seqs: list[int], unit: np.ndarray
                  ) -> Plan[tuple[np.ndarray, np.ndarray]]:
        """A sketched scope's candidates rescored here: their vectors read by seq, scored
        as the exact regime's matrices score them (`scores_of`)."""
        rows = yield self._vectors_by_seq(seqs)
        held = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        return held, scores_of(_decode([r[1] for r in rows]), unit)

    def vector_scores(
        self, seqs: Sequence[int], query: Sequence[float]
    ) -> Plan[list[tuple[int, float]]]:
        return _rank((yield self._vectors_by_seq(seqs)), query, None)

    def _vectors_by_seq(self, seqs: Sequence[int]) -> Sql:
        """(seq, embedding) of each vector of the records given."""
        clause, params = self.in_list("seq", seqs)
        return Sql(f"SELECT seq, embedding FROM memory_vectors WHERE {clause}", params)

    def put_untyped(self, row: list[Any], vectors: list[tuple[str, Any]]) -> Sql | None:
        """None: the batch's transaction writes it (its statements cost no round trips)."""
        return None

    def untyped_top(
        self, prefix: str | None, now: float, extra: q.Clause | None,
        query: Sequence[float], depth: int,
    ) -> Plan[list[tuple[int, float]]]:
        """Without a filter, the namespaces' vectors cached in this process
        (`NamespaceVectorCache`); with one, the vectors of the rows it selects, read through
        the namespace index and ranked here. Exact: every vector is scored."""
        if extra is None:
            return (yield from self.namespaces.top_k(prefix, self.range_ops, now, query,
                                                     depth))
        where, params = q.untyped_where(prefix, self.range_ops, now, extra)
        rows = yield Sql(f"SELECT v.seq, v.embedding FROM memories m {SQLITE_JOIN} "
                         f"WHERE {where}", params)
        return _top(rows, query, depth)


def _decode(blobs: list[Any]) -> np.ndarray:
    """float32 BLOBs of equal size into one (n, dims) matrix."""
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)


def _top(rows: list[tuple[Any, ...]], query: Sequence[float], depth: int
         ) -> list[tuple[int, float]]:
    """`_rank` of many rows in numpy: the best vectors are picked by partition (more of
    them while records with several vectors leave fewer than `depth` records), then pooled.

    Example:
        >>> rows = [(1, np.float32([1, 0]).tobytes()), (2, np.float32([0, 1]).tobytes()),
        ...         (1, np.float32([0, 1]).tobytes())]
        >>> _top(rows, [0.0, 1.0], 2)
        [(2, 1.0), (1, 1.0)]
    """
    if not rows or depth <= 0:
        return []
    seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    scores = cosine_scores(query, _decode([r[1] for r in rows])).astype(np.float64)
    take = min(len(rows), depth)
    while True:
        best = np.argpartition(-scores, take - 1)[:take] if take < len(rows) else \
            np.arange(len(rows))
        pooled = _rank([(int(seqs[i]), None) for i in best], [], None,
                       [float(scores[i]) for i in best])
        if len(pooled) >= depth or take == len(rows):
            return pooled[:depth]
        take = min(len(rows), take * 4)


def _rank(
    rows: list[tuple[Any, ...]], query: Sequence[float], depth: int | None,
    scored: list[float] | None = None,
) -> list[tuple[int, float]]:
    """Max-pool cosine scores per record; best first."""
    if not rows:
        return []
    if scored is None:
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
            len(rows), -1)
        scored = cosine_scores(query, matrix).tolist()
    best: dict[int, float] = {}
    for (seq, _), score in zip(rows, scored, strict=True):
        if score > best.get(seq, -2.0):
            best[seq] = score
    ranked = sorted(best.items(), key=lambda x: -x[1])
    return ranked if depth is None else ranked[:depth]
