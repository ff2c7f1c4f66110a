"""Postgres dialect: schema migrations and the statements that differ from SQLite.

Lexical search reads the lexemes of a stored `tsvector` (`english` configuration, made as a
record is written) into postings cached per scope cell and ranks them by BM25 (`bm25`), as
SQLite does. Vectors are pgvector columns ranked by an exact scan after the SQL scope filter,
so a scope filter can never starve the top-k the way a post-filtered approximate index can
(docs/backends.md has the measurements). A scope too large for the caches is ranked by its
vectors' sign bits, made by the server as it is read (`ScopeSketchCache`); one too large for
those by the database itself, its scope filter in the ranking statement (`large_scopes`,
docs/large-scopes.md).
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

from langgraph_typed_memory.namespaces import RANKED_KINDS
from langgraph_typed_memory.schemas import stored_json, stored_value
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.filters import JsonGrammar, Path
from langgraph_typed_memory.store.core.protocol import Plan, Sql
from langgraph_typed_memory.store.index import (
    APPENDS_COLUMN,
    BACKFILL,
    DEFAULT_CACHE_BYTES,
    LOAD_CHUNK,
    NAMESPACE_VERSIONS_TABLE,
    POSTGRES_JOIN,
    ROW_CELL,
    ROW_CHANGE,
    ROW_COLUMNS,
    VECTOR_CELL,
    VECTOR_CHANGE,
    VERSIONS_TABLE,
    CellCache,
    NamespaceVectorCache,
    OversizedScopes,
    ScopeLexicalCache,
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
)
from langgraph_typed_memory.store.postgres.large_scopes import (
    DEFAULT_EF_SEARCH,
    LargeScopes,
    cosine_or_zero,
)


def _migrations(dims: int | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    base: tuple[tuple[str, tuple[str, ...]], ...] = (
        (
            "0001_memories",
            (
                """CREATE TABLE memories (
                    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    ns TEXT NOT NULL,
                    key TEXT NOT NULL,
                    value JSONB NOT NULL,
                    kind TEXT,
                    tenant_id TEXT,
                    user_id TEXT,
                    agent_id TEXT,
                    status TEXT NOT NULL DEFAULT 'active',
                    confidence DOUBLE PRECISION,
                    content_hash TEXT,
                    superseded_by TEXT,
                    search_text TEXT,
                    search_tsv TSVECTOR GENERATED ALWAYS AS
                        (to_tsvector('english', coalesce(search_text, ''))) STORED,
                    occurred_at DOUBLE PRECISION,
                    created_at DOUBLE PRECISION NOT NULL,
                    updated_at DOUBLE PRECISION NOT NULL,
                    expires_at DOUBLE PRECISION,
                    ttl_minutes DOUBLE PRECISION,
                    source_run_id TEXT,
                    source_turn INTEGER,
                    policy_version TEXT,
                    last_accessed_at DOUBLE PRECISION,
                    access_count INTEGER NOT NULL DEFAULT 0
                )""",
                """CREATE UNIQUE INDEX memories_current ON memories (ns, key)
                    WHERE status NOT IN ('superseded', 'revoked')""",
                "CREATE INDEX memories_ns ON memories (ns text_pattern_ops)",
                """CREATE INDEX memories_scope
                    ON memories (tenant_id, kind, status, user_id, agent_id)""",
                "CREATE INDEX memories_hash ON memories (content_hash, tenant_id)",
                """CREATE INDEX memories_expires ON memories (expires_at)
                    WHERE expires_at IS NOT NULL""",
                "CREATE INDEX memories_fts ON memories USING GIN (search_tsv)",
                "CREATE TABLE memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            ),
        ),
        (
            "0003_gate_bookkeeping",
            (
                "ALTER TABLE memories ADD COLUMN repetitions INTEGER NOT NULL DEFAULT 1",
                "ALTER TABLE memories ADD COLUMN evidence JSONB",
                "ALTER TABLE memories ADD COLUMN contradicts JSONB",
                "ALTER TABLE memories ADD COLUMN needs_review BOOLEAN NOT NULL DEFAULT FALSE",
            ),
        ),
        q.audit_migration("seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"),
        q.deletions_migration("JSONB"),
        (
            "0008_scope_versions",
            (
                *VERSIONS_TABLE,
                _bump_function("memory_row_changed", ROW_CELL),
                """CREATE TRIGGER memories_version_delete AFTER DELETE ON memories
                    FOR EACH ROW WHEN (OLD.kind IS NOT NULL)
                    EXECUTE FUNCTION memory_row_changed()""",
                """CREATE TRIGGER memories_version_update AFTER UPDATE OF status, expires_at
                    ON memories FOR EACH ROW WHEN (NEW.kind IS NOT NULL)
                    EXECUTE FUNCTION memory_row_changed()""",
                BACKFILL,
            ),
        ),
        ("0010_scope_appends", (APPENDS_COLUMN,)),
        (
            # One full-text index per ranked kind: a lexical search (always of one kind, and
            # planned with its values) reads only its kind's postings, where the index of
            # every row sent it to the rows of the other kinds to drop them by the filter.
            # New entries wait in a pending list of at most 256 kB (default 4 MB) that every
            # search scans: after a bulk load the full lists cost the 100k fan-out ~7 ms.
            "0012_fts_per_kind",
            (
                "DROP INDEX memories_fts",
                *(f"CREATE INDEX memories_fts_{kind} ON memories USING GIN (search_tsv) "
                  f"WITH (gin_pending_list_limit = 256) WHERE kind = '{kind}'"
                  for kind in sorted(RANKED_KINDS)),
            ),
        ),
        (
            # Records added are counted per statement in `inserts` (not in `version`), so
            # the cached postings fetch new records alone (`index/tsvector`); an update counts
            # if it changes what the caches hold (`ROW_COLUMNS`: text, confidence, value...),
            # not when it sets a column again to its value (a restatement's status).
            "0013_scope_inserts",
            (
                "ALTER TABLE memory_scope_versions ADD COLUMN inserts BIGINT NOT NULL DEFAULT 0",
                f"""CREATE FUNCTION memories_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        {INSERTED_CELLS};
                        RETURN NULL;
                    END $$""",
                """CREATE TRIGGER memories_inserted AFTER INSERT ON memories
                    REFERENCING NEW TABLE AS added FOR EACH STATEMENT
                    EXECUTE FUNCTION memories_inserted()""",
                "DROP TRIGGER memories_version_update ON memories",
                f"""CREATE TRIGGER memories_version_update
                    AFTER UPDATE OF {", ".join(ROW_COLUMNS)} ON memories FOR EACH ROW
                    WHEN (NEW.kind IS NOT NULL AND ({row_changed("IS DISTINCT FROM")}))
                    EXECUTE FUNCTION memory_row_changed()""",
            ),
        ),
        (
            # Room in each new page of `memories` for updated row versions: the access
            # counts (columns no index covers) are then updated in place (HOT), where on
            # full pages each updated row was a new version entered in all nine indexes, the
            # GIN ones included (a flush of 64: ~4 ms, and ~20 ms when it filled a GIN pending
            # list; with room: ~1.7 ms, 93% HOT, at 100k: docs/lifecycle.md). Pages written
            # before the migration keep theirs until rewritten.
            "0014_memories_fillfactor",
            ("ALTER TABLE memories SET (fillfactor = 90)",),
        ),
        (
            # Each change counted in `version` but not in `appends` logs its record's seq
            # too, so a cached scope masks and refetches the records changed, where it
            # reloaded them all (the vectors' function: 0016).
            "0015_scope_changes",
            (
                changes_table("id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"),
                _bump_function("memory_row_changed", ROW_CELL, ROW_CHANGE),
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
        # The search caches read a scope cell's rows (all of them, or those after a seq) by
        # equality on the cell columns: with seq last in the scope index they come in seq
        # order from a range of it, not sorted, nor filtered from the whole cell.
        (
            "0020_scope_index_by_seq",
            (
                "DROP INDEX memories_scope",
                """CREATE INDEX memories_scope
                    ON memories (tenant_id, kind, status, user_id, agent_id, seq)""",
            ),
        ),
        # Reads append their uses to a log, folded in chunks into a narrow table of each
        # record's uses: updating the records' own wide rows made a new version of each (and
        # dead ones for vacuum) every few seconds under read traffic.
        ("0021_access_log", (
            """CREATE TABLE memory_access_log (
                entry BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                memory_id TEXT NOT NULL,
                n INTEGER NOT NULL,
                at DOUBLE PRECISION NOT NULL
            )""",
            """CREATE TABLE memory_access (
                memory_id TEXT PRIMARY KEY,
                n INTEGER NOT NULL,
                at DOUBLE PRECISION NOT NULL
            )""",
        )),
        # A record keeps its lexemes beside its text, each once per occurrence, for the
        # search caches' loads: unnesting the tsvector of each row read cost ~6 us a row.
        # Rows from before (and a lexeme holding a space, or no position) keep none and are
        # read from `search_tsv`, as they were.
        ("0022_search_tokens", (
            """CREATE FUNCTION memory_search_tokens(body TEXT) RETURNS TEXT
                LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
                SELECT CASE WHEN bool_or(strpos(u.lexeme, ' ') > 0
                                         OR cardinality(u.positions) = 0) THEN NULL
                       ELSE string_agg(array_to_string(
                           array_fill(u.lexeme, ARRAY[cardinality(u.positions)]), ' '), ' ')
                       END
                FROM unnest(to_tsvector('english', coalesce(body, ''))) AS u $$""",
            "ALTER TABLE memories ADD COLUMN search_tokens TEXT",
            """CREATE FUNCTION memory_keep_tokens() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    NEW.search_tokens := memory_search_tokens(NEW.search_text);
                    RETURN NEW;
                END $$""",
            """CREATE TRIGGER memories_search_tokens
                BEFORE INSERT OR UPDATE OF search_text ON memories
                FOR EACH ROW EXECUTE FUNCTION memory_keep_tokens()""",
        )),
        q.THREADS_MIGRATION,
        q.untyped_migration("ns text_pattern_ops"),
        # A record's text is parsed once as it is written. A bulk insert gives the tsvector
        # and the lexemes kept from it (`SQL_INSERT_ROWS`), where the generated column and
        # the row trigger of 0022 parsed it twice, the trigger per row: together ~90 ms of a
        # 2,000-record batch's ~350 ms insert. A write that gives neither (one record, an
        # import) and a changed text have a trigger make both.
        ("0027_search_parsed_once", (
            "ALTER TABLE memories ALTER COLUMN search_tsv DROP EXPRESSION",
            f"""CREATE FUNCTION memory_tsv_tokens(tsv TSVECTOR) RETURNS TEXT
                LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ {_TOKENS_OF_TSV} $$""",
            """CREATE OR REPLACE FUNCTION memory_keep_tokens() RETURNS trigger
                LANGUAGE plpgsql AS $$
                BEGIN
                    NEW.search_tsv := to_tsvector('english', coalesce(NEW.search_text, ''));
                    NEW.search_tokens := memory_tsv_tokens(NEW.search_tsv);
                    RETURN NEW;
                END $$""",
            "DROP TRIGGER memories_search_tokens ON memories",
            "DROP FUNCTION memory_search_tokens(TEXT)",
            """CREATE TRIGGER memories_search_made BEFORE INSERT ON memories FOR EACH ROW
                WHEN (NEW.search_tsv IS NULL) EXECUTE FUNCTION memory_keep_tokens()""",
            """CREATE TRIGGER memories_search_remade BEFORE UPDATE OF search_text
                ON memories FOR EACH ROW EXECUTE FUNCTION memory_keep_tokens()""",
        )),
    )
    if dims is None:
        return base
    return tuple(sorted(base + (
        (
            "0002_vectors",
            (
                "CREATE EXTENSION IF NOT EXISTS vector",
                f"""CREATE TABLE memory_vectors (
                    seq BIGINT NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
                    field TEXT NOT NULL,
                    embedding vector({int(dims)}) NOT NULL,
                    PRIMARY KEY (seq, field)
                )""",
            ),
        ),
        (
            "0009_vector_versions",
            (
                _bump_function("memory_vector_changed", VECTOR_CELL),
                """CREATE TRIGGER vectors_version AFTER INSERT OR DELETE ON memory_vectors
                    FOR EACH ROW EXECUTE FUNCTION memory_vector_changed()""",
            ),
        ),
        (
            # Added vectors are counted once per statement, in `appends` too: a row trigger
            # updated the cell's counter row once per vector, each update a new row version
            # in one transaction (the bulk insert's cost); deletions keep the row trigger.
            "0011_vector_appends",
            (
                "DROP TRIGGER vectors_version ON memory_vectors",
                """CREATE TRIGGER vectors_version AFTER DELETE ON memory_vectors
                    FOR EACH ROW EXECUTE FUNCTION memory_vector_changed()""",
                f"""CREATE FUNCTION memory_vectors_appended() RETURNS trigger
                    LANGUAGE plpgsql AS $$
                    BEGIN
                        {APPENDED_CELLS};
                        RETURN NULL;
                    END $$""",
                """CREATE TRIGGER vectors_appended AFTER INSERT ON memory_vectors
                    REFERENCING NEW TABLE AS added FOR EACH STATEMENT
                    EXECUTE FUNCTION memory_vectors_appended()""",
            ),
        ),
        ("0016_vector_changes",
         (_bump_function("memory_vector_changed", VECTOR_CELL, VECTOR_CHANGE),)),
        # Untyped namespaces count their changes, so that an untyped search ranks a
        # namespace's vectors cached in memory (`NamespaceVectorCache`) instead of having the
        # server scan them all each time. Added vectors are counted per statement (a bulk put
        # is one), with their cells' counts. A deleted or updated vector looks its record up
        # once, and counts a change of its cell (typed) or its namespace (untyped), or nothing
        # when its record's own deletion removed it (that deletion is counted).
        ("0026_namespace_versions", (
            NAMESPACE_VERSIONS_TABLE,
            "CREATE INDEX memory_namespace_versions_under "
            "ON memory_namespace_versions (ns text_pattern_ops)",
            # the vectors written before: how large each namespace is already
            "INSERT INTO memory_namespace_versions (ns, appends) SELECT m.ns, count(*) "
            "FROM memory_vectors v JOIN memories m ON m.seq = v.seq WHERE m.kind IS NULL "
            "GROUP BY m.ns",
            _trigger_function("memory_vectors_appended", APPENDED, replace=True),
            _trigger_function("memory_vector_changed", f"""
                SELECT m.kind, m.tenant_id, m.user_id, m.agent_id, m.ns INTO owner
                    FROM memories m WHERE m.seq = OLD.seq;
                IF NOT FOUND THEN
                    RETURN NULL;
                ELSIF owner.kind IS NULL THEN
                    {bump_namespace("VALUES (owner.ns, 1)", "changes")};
                ELSE
                    {bump_cell(_OWNER_CELL.format(last="1"))};
                    {log_change(_OWNER_CELL.format(last="OLD.seq"))};
                END IF""", replace=True, declare="owner RECORD;"),
            "DROP TRIGGER vectors_version ON memory_vectors",
            """CREATE TRIGGER vectors_version AFTER DELETE OR UPDATE ON memory_vectors
                FOR EACH ROW EXECUTE FUNCTION memory_vector_changed()""",
            _trigger_function("memory_namespace_changed", f"""
                IF TG_OP = 'DELETE' OR OLD.kind IS NULL THEN
                    {bump_namespace("VALUES (OLD.ns, 1)", "changes")};
                END IF;
                IF TG_OP = 'UPDATE' AND NEW.kind IS NULL
                        AND (OLD.kind IS NOT NULL OR NEW.ns <> OLD.ns) THEN
                    {bump_namespace("VALUES (NEW.ns, 1)", "changes")};
                END IF"""),
            """CREATE TRIGGER memories_namespace_delete AFTER DELETE ON memories
                FOR EACH ROW WHEN (OLD.kind IS NULL)
                EXECUTE FUNCTION memory_namespace_changed()""",
            """CREATE TRIGGER memories_namespace_update
                AFTER UPDATE OF ns, kind, status, expires_at ON memories FOR EACH ROW
                WHEN ((OLD.kind IS NULL OR NEW.kind IS NULL) AND (OLD.ns <> NEW.ns
                    OR OLD.kind IS DISTINCT FROM NEW.kind OR OLD.status <> NEW.status
                    OR coalesce(NEW.expires_at, 'Infinity') < coalesce(OLD.expires_at,
                                                                      'Infinity')))
                EXECUTE FUNCTION memory_namespace_changed()""",
        )),
    )))


_OWNER_CELL = "VALUES (owner.kind, owner.tenant_id, owner.user_id, owner.agent_id, {last})"
"""The cell of a vector's typed record, read into `owner` by `memory_vector_changed`."""


def _trigger_function(name: str, body: str, *, replace: bool = False, declare: str = ""
                      ) -> str:
    """An AFTER trigger's function (created, or with `replace` created or replaced): runs
    `body` with the variables `declare` declares, returns NULL."""
    create = "CREATE OR REPLACE" if replace else "CREATE"
    variables = f"DECLARE {declare}" if declare else ""
    return f"""{create} FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        {variables}
        BEGIN
            {body};
            RETURN NULL;
        END $$"""


def _appended_cells(source: str) -> str:
    """The count of added vectors per cell, of the records `source` gives as `m`."""
    return (
        "INSERT INTO memory_scope_versions (kind, tenant_id, user_id, agent_id, version, "
        "appends) SELECT m.kind, m.tenant_id, m.user_id, m.agent_id, count(*), count(*) "
        f"FROM {source} WHERE m.kind IS NOT NULL "
        "GROUP BY m.kind, m.tenant_id, m.user_id, m.agent_id "
        "ON CONFLICT (kind, tenant_id, coalesce(user_id, ''), coalesce(agent_id, '')) "
        "DO UPDATE SET version = memory_scope_versions.version + excluded.version, "
        "appends = memory_scope_versions.appends + excluded.appends"
    )


APPENDED_CELLS = _appended_cells("added JOIN memories m ON m.seq = added.seq")
"""The statement trigger's count of the vectors one statement added (`added`), per cell."""
APPENDED = (
    "WITH owners AS MATERIALIZED (SELECT m.kind, m.tenant_id, m.user_id, m.agent_id, m.ns "
    "FROM added JOIN memories m ON m.seq = added.seq), "
    f"cells AS ({_appended_cells('owners m')}) "
    + bump_namespace("SELECT m.ns, count(*) FROM owners m WHERE m.kind IS NULL GROUP BY m.ns",
                     "appends", "excluded.appends")
)
"""`APPENDED_CELLS` and the count of the vectors added per untyped namespace, from one read
of the added vectors' records."""

INSERTED_CELLS = (
    "INSERT INTO memory_scope_versions (kind, tenant_id, user_id, agent_id, version, inserts) "
    "SELECT kind, tenant_id, user_id, agent_id, 0, count(*) FROM added "
    "WHERE kind IS NOT NULL AND tenant_id IS NOT NULL "
    "GROUP BY kind, tenant_id, user_id, agent_id "
    "ON CONFLICT (kind, tenant_id, coalesce(user_id, ''), coalesce(agent_id, '')) "
    "DO UPDATE SET inserts = memory_scope_versions.inserts + excluded.inserts"
)
"""The statement trigger's count of the records one statement added (`added`), per cell."""


def _json_insert(into: str, types: Sequence[str]) -> str:
    """`into` (an `INSERT INTO t (columns) `) for many rows in one statement: the rows come
    as one JSON array of arrays (`_json_rows`), each column cast to its type of `types`, and
    go in in their order.

    Example:
        >>> _json_insert("INSERT INTO t (a, b) ", ["text", "int4"])
        'INSERT INTO t (a, b) SELECT (r.row ->> 0)::text, (r.row ->> 1)::int4 FROM \
json_array_elements(?::json) WITH ORDINALITY AS r (row, i) ORDER BY r.i'
    """
    return (into + "SELECT " + ", ".join(f"(r.row ->> {i})::{t}" for i, t in enumerate(types))
            + " FROM json_array_elements(?::json) WITH ORDINALITY AS r (row, i) ORDER BY r.i")


_TOKENS_OF_TSV = """SELECT CASE WHEN bool_or(strpos(u.lexeme, ' ') > 0
                                  OR cardinality(u.positions) = 0) THEN NULL
                ELSE string_agg(array_to_string(
                    array_fill(u.lexeme, ARRAY[cardinality(u.positions)]), ' '), ' ')
                END
                FROM unnest(tsv) AS u"""
"""The lexemes a record keeps beside its tsvector `tsv`, each once per occurrence (NULL
where a lexeme holds a space or has no position: the record is then read from the tsvector)."""
_ROW_TYPES = ("text", "text", "text", "jsonb", "text", "text", "text", "text", "text",
              "float8", "text", "text", "float8", "float8", "float8", "float8", "float8",
              "text", "int4", "text", "jsonb", "jsonb", "bool")
"""The Postgres types of `queries.SQL_INSERT_ROW`'s columns, in order."""
_SEARCH_TEXT = q.INSERT_COLUMNS.index("search_text")
SQL_INSERT_ROWS = (
    f"INSERT INTO memories ({', '.join(q.INSERT_COLUMNS)}, search_tsv, search_tokens) SELECT "
    + ", ".join(f"(r.row ->> {i})::{t}" for i, t in enumerate(_ROW_TYPES))
    + ", r.tsv, memory_tsv_tokens(r.tsv) FROM (SELECT e.row, e.i, to_tsvector('english', "
    f"coalesce(e.row ->> {_SEARCH_TEXT}, '')) AS tsv FROM json_array_elements(?::json) "
    "WITH ORDINALITY AS e (row, i) OFFSET 0) AS r ORDER BY r.i"
)
"""`queries.SQL_INSERT_ROW` for many rows in one statement (the statement trigger of
migration 0013 counts them once: executemany ran it once per row), the rows sent as one JSON
array: psycopg escaping every value as an element of a text array took a quarter of a bulk
load's time in Python. Each text is parsed once, for its tsvector and the lexemes kept from
it (`OFFSET 0` keeps the planner from writing the parse out twice)."""
_AUDIT_TYPES = ("text",) * 7 + ("float8",) + ("text",) * 5
"""The Postgres types of `queries.SQL_AUDIT_INSERT`'s columns, in order."""
SQL_AUDIT_ROWS = _json_insert(q.SQL_AUDIT_INTO, _AUDIT_TYPES)
"""`queries.SQL_AUDIT_INSERT` for many rows in one statement (executemany sent one statement
per record written: a fifth of a bulk load's time)."""


def _json_rows(rows: list[list[Any]]) -> str:
    """`_json_insert`'s parameter: the rows as a JSON array (orjson, in C), each JSON
    column (a `Jsonb`) as its text, as `json_text` writes it.

    Example:
        >>> from psycopg.types.json import Jsonb
        >>> print(_json_rows([["id", 2.5, Jsonb({"a": 1e20}, dumps=json_text), None]]))
        [["id",2.5,"{\\"a\\":100000000000000000000.0}",null]]
    """
    from psycopg.types.json import Jsonb

    return orjson.dumps([[json_text(v.obj) if isinstance(v, Jsonb) else v for v in row]
                         for row in rows]).decode()

SQL_UPSERT_UNTYPED = (
    f"{q.SQL_INSERT_ROW} ON CONFLICT (ns, key) WHERE {q.CURRENT} "
    "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, "
    "expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes"
)
"""An untyped item inserted, or written over the key's current one (which keeps its id,
seq and creation time)."""
SQL_PUT_UNTYPED = (
    f"WITH item AS ({SQL_UPSERT_UNTYPED} RETURNING seq), "
    "dropped AS (DELETE FROM memory_vectors v USING item "
    "WHERE v.seq = item.seq AND v.field <> ALL(?::text[])) "
    "INSERT INTO memory_vectors (seq, field, embedding) "
    "SELECT item.seq, x.field, x.embedding::vector "
    "FROM item, unnest(?::text[], ?::text[]) AS x (field, embedding) "
    "ON CONFLICT (seq, field) DO UPDATE SET embedding = excluded.embedding"
)
"""An untyped put in one statement (`SQL_UPSERT_UNTYPED`) with its vectors: those of fields
no longer embedded deleted, the others inserted or written over (disjoint rows: a statement's parts
see the same snapshot, so a vector deleted and inserted again in it would collide)."""

SQL_NOTE_ACCESS_ROWS = (
    "INSERT INTO memory_access_log (memory_id, n, at) "
    "SELECT * FROM unnest(?::text[], ?::int4[], ?::float8[])"
)
"""`queries.SQL_NOTE_ACCESS` for many records in one statement, in place of executemany's
statement per record."""
SQL_NOTE_ACCESS_JOINED = (
    "INSERT INTO memory_access_log (memory_id, n, at) "
    "SELECT * FROM unnest(string_to_array(?, ','), string_to_array(?, ',')::int4[], "
    "string_to_array(?, ',')::float8[])"
)
"""`SQL_NOTE_ACCESS_ROWS` with each column sent as one comma-joined text: the background
thread's flush of 2,048 records spent ~3.9 ms of its ~9.5 ms in the driver turning three
lists into array parameters, one element at a time and holding the interpreter, while the
reads it shares the process with waited for it; joining them takes ~0.3 ms."""


def _access_columns(rows: list[list[Any]]) -> Sql:
    """Access log rows (record id, count, time) as `SQL_NOTE_ACCESS_JOINED`'s three texts;
    as arrays (`SQL_NOTE_ACCESS_ROWS`) when an id is empty or holds a comma. A count or a
    time is written once however many rows share it (a read stamps all its records with
    one time); `repr` writes a float that reads back as the same double.

    Example:
        >>> _access_columns([["m1", 2, 5.0], ["m2", 1, 5.0]]).params
        ['m1,m2', '2,1', '5.0,5.0']
        >>> _access_columns([["a,b", 1, 5.0]]).params
        [['a,b'], [1], [5.0]]
    """
    ids = [r[0] for r in rows]
    joined = ",".join(ids)
    if not all(ids) or joined.count(",") != len(ids) - 1:
        return Sql(SQL_NOTE_ACCESS_ROWS, [ids, [r[1] for r in rows], [r[2] for r in rows]])
    counts = {n: str(int(n)) for n in {r[1] for r in rows}}
    times = {t: repr(float(t)) for t in {r[2] for r in rows}}
    return Sql(SQL_NOTE_ACCESS_JOINED, [joined, ",".join([counts[r[1]] for r in rows]),
                                        ",".join([times[r[2]] for r in rows])])

SQL_INSERT_VECTORS_FOR_IDS = (
    "INSERT INTO memory_vectors (seq, field, embedding) "
    "SELECT m.seq, x.field, (?::float4[])[(x.i - 1) * ?::int + 1 : x.i * ?::int]::vector "
    "FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS x(id, field, i) "
    "JOIN memories m ON m.id = x.id"
)
"""`queries.SQL_INSERT_VECTOR_FOR_ID` for many rows in one statement: the vectors come as one
float4 array in binary (`Float4Block`), the i-th row's vector its i-th slice of `dims`
values. pgvector parsing the vectors' text forms took three quarters of the statement's time
(and formatting them a tenth of the load's in Python)."""


FLOAT4_OID = 700
"""Postgres' type oid of `float4`."""
FLOAT4_ARRAY_OID = 1021
"""Postgres' type oid of `float4[]`, the type a `Float4Block` is sent as."""


class Float4Block:
    """Equal-sized float32 vectors, sent to Postgres as one `float4[]` parameter in binary
    (the store registers the dumper: `postgres.store`).

    Example:
        >>> block = Float4Block([np.float32([1, 2]), np.float32([3, 4])])
        >>> block.matrix.shape, block.dims
        ((2, 2), 2)
    """

    def __init__(self, vectors: Sequence[np.ndarray]) -> None:
        self.matrix = np.stack(vectors).astype(np.float32, copy=False)
        self.dims = int(self.matrix.shape[1])

    def binary(self) -> bytes:
        """Postgres' binary form of the one-dimensional `float4[]` of every value in order:
        a header, then each value as its length (4) and its big-endian bytes."""
        flat = np.empty(self.matrix.size, dtype=[("n", ">i4"), ("v", ">f4")])
        flat["n"] = 4
        flat["v"] = self.matrix.ravel()
        return struct.pack(">iiiii", 1, 0, FLOAT4_OID, self.matrix.size, 1) + flat.tobytes()


def _bump_function(name: str, cell: str, change: str | None = None) -> str:
    """A trigger function (created or replaced) counting a change of the cell of its OLD
    (delete) or NEW row and, with `change` (its `log_change` source), logging it."""
    def body(row: str) -> str:
        logged = "" if change is None else f"{log_change(change.format(row=row))};"
        return f"{bump_cell(cell.format(row=row))}; {logged}"

    return f"""CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                {body("OLD")}
            ELSE
                {body("NEW")}
            END IF;
            RETURN NULL;
        END $$"""


def _with_literal(statement: q.Bulk, row: list[Any]) -> list[Any]:
    """`row` of `statement`, its vector (last, as `encode_vector` made it) in its text form.

    Example:
        >>> _with_literal(q.Bulk.VECTOR, [7, "text", np.float32([0.5, 1])])
        [7, 'text', '[0.5,1.0]']
    """
    if statement in (q.Bulk.VECTOR, q.Bulk.VECTOR_FOR_ID):
        return [*row[:-1], _vector_literal(row[-1])]
    return row


def _vector_literal(vector: Sequence[float] | np.ndarray) -> str:
    """pgvector's text form of a vector, its float32 values written as the shortest decimals
    that read back to them (orjson, in C: formatting each value in Python took a third of
    a bulk load's time).

    Example:
        >>> _vector_literal([0.1, -2.0, 1e-9])
        '[0.1,-2.0,1e-9]'
    """
    return orjson.dumps(np.asarray(vector, np.float32),
                        option=orjson.OPT_SERIALIZE_NUMPY).decode()


_QUERY_LEXEMES = """SELECT array(SELECT v.lexeme
    FROM unnest(?::text[]) WITH ORDINALITY AS u (t, i), unnest(to_tsvector('english', u.t)) AS v
    ORDER BY u.i, v.positions[1])"""
"""The lexemes of a search's terms, in the terms' order, as the full-text column's
`to_tsvector('english', ...)` makes them: one for most terms, none for a stop word, several
for a term the parser splits (`foo_bar`; `foo-bar` gives `foo-bar`, `foo` and `bar`, as in
a text)."""


_PG_TYPES = {"null": ("null",), "bool": ("boolean",), "number": ("number",),
             "string": ("string",), "array": ("array",), "object": ("object",)}
"""`jsonb_typeof`'s names of each JSON type."""


class PostgresJson:
    """JSON conditions on `m.value` with jsonb operators; every key is a parameter
    (`-> ?::text` finds only an object's key, never an array's element; `-> ?::int` an
    array's element).

    Example:
        >>> POSTGRES_JSON.equals(("meta", 0), 1)
        ("(m.value -> ?::text -> ?::int = ?::jsonb OR m.value -> ?::text -> ?::int = \
'true'::jsonb)", ['meta', 0, '1', 'meta', 0])
    """

    false = "false"

    def key_ok(self, key: str) -> bool:
        return "\x00" not in key

    def _at(self, path: Path) -> q.Clause:
        steps = "".join(" -> ?::int" if isinstance(p, int) else " -> ?::text" for p in path)
        return f"m.value{steps}", list(path)

    def type_in(self, path: Path, types: tuple[str, ...]) -> q.Clause:
        at, params = self._at(path)
        names = [n for t in types for n in _PG_TYPES[t]]
        return f"jsonb_typeof({at}) IN ({', '.join(repr(n) for n in names)})", params

    def absent(self, path: Path) -> q.Clause:
        at, params = self._at(path)
        return f"coalesce(jsonb_typeof({at}), 'null') = 'null'", params

    def has_key(self, key: str) -> q.Clause:
        return "(m.value -> ?::text) IS NOT NULL", [key]

    def equals(self, path: Path, value: str | int | float | bool) -> q.Clause:
        at, params = self._at(path)
        if isinstance(value, str):
            return f"{at} = to_jsonb(?::text)", [*params, value]
        if isinstance(value, bool):  # True == 1 == 1.0 in Python
            number = "1" if value else "0"
            return (f"({at} = ?::jsonb OR {at} = ?::jsonb)",
                    [*params, json.dumps(value), *params, number])
        text = json.dumps(value)
        if value in (0, 1):
            truth = "'true'::jsonb" if value == 1 else "'false'::jsonb"
            return f"({at} = ?::jsonb OR {at} = {truth})", [*params, text, *params]
        return f"{at} = ?::jsonb", [*params, text]

    def compare(self, path: Path, op: str, bound: float) -> q.Clause:
        at, params = self._at(path)
        return (f"(CASE jsonb_typeof({at}) WHEN 'number' THEN ({at})::float8 "
                f"WHEN 'boolean' THEN CASE WHEN ({at})::boolean THEN 1.0 ELSE 0.0 END END) "
                f"{op} ?::float8", [*params, *params, *params, bound])

    def length_is(self, path: Path, n: int) -> q.Clause:
        at, params = self._at(path)
        return (f"CASE WHEN jsonb_typeof({at}) = 'array' THEN jsonb_array_length({at}) = ? "
                "ELSE false END", [*params, *params, n])

    def coalesce_false(self, sql: str) -> str:
        return f"coalesce({sql}, false)"


POSTGRES_JSON = PostgresJson()


def json_text(value: Any) -> str:
    """A value as JSON text that jsonb reads back as the same Python value (`stored_json`:
    -0.0 as 0.0). A float of magnitude 1e16 or more, which Python writes with an exponent
    (`1e+300`) and jsonb would print as an integer, is written as its exact digits with a
    fraction (`1000...0.0`); the value is walked for one only when its text holds "e+".

    Example:
        >>> json_text({"big": 1e20, "n": 10, "small": 1e-7, "zero": -0.0})
        '{"big":100000000000000000000.0,"n":10,"small":1e-07,"zero":0.0}'
    """
    text = stored_json(value)
    if "e+" not in text:
        return text
    return _written(stored_value(value))


def _written(value: Any) -> str:
    if isinstance(value, float) and math.isfinite(value) and abs(value) >= 1e16:
        return f"{int(value)}.0"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_written(v)}"
                              for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_written(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


POSTGRES_SKETCHES = SketchSql(
    bits="substring(varbit_send(binary_quantize(v.embedding)) FROM 5)", unbitted="NULL",
    join=POSTGRES_JOIN, msb_first=True)
"""A large scope's sign bits, made by pgvector (`binary_quantize`: 1 where a coordinate is
positive) as the cell is read: only they leave the server, without their length header."""
_COSINES_BY_SEQ = ("SELECT seq, 1 - (embedding <=> ?::vector) FROM memory_vectors "
                   "WHERE seq = ANY(?)")
"""Each vector of the records given, with its cosine with a query vector (NaN for a zero
vector)."""
POSTGRES_RESCORED = 250
"""The candidates a Postgres sketch-ranked search rescores exactly (SQLite's default is
higher): each is a vector fetched by seq from the table's pages, about 20 us, where SQLite
reads them from its mapped file."""

SQL_LOCK = "pg_advisory_xact_lock(hashtextextended(?, 0))"
SQL_LOCK_SHARED = "pg_advisory_xact_lock_shared(hashtextextended(?, 0))"


class PostgresDialect:
    """The Postgres flavour of the statements the engine needs.

    Vector search ranks normalized float32 matrices per scope cell (`ScopeVectorCache`),
    lexical search postings per cell (`ScopeLexicalCache`), kept in one cache of at most
    `cache_bytes` (`CellCache`) and brought up to date from the cells' counters. A scope
    whose matrices and postings do not fit that bound (`OversizedScopes`) is ranked by its
    vectors' sign bits instead, the `rescored` nearest ranked exactly (`ScopeSketchCache`,
    the bits made by the server as a cell is read); its postings are still held. A scope
    whose sketches and postings do not fit either is ranked by the database (`LargeScopes`:
    pgvector's HNSW index at `ef_search`, and Postgres' full-text ranking). `dims` sizes
    the vectors.
    """

    def __init__(self, cache_bytes: int = DEFAULT_CACHE_BYTES, *, dims: int | None = None,
                 rescored: int = POSTGRES_RESCORED, ef_search: int = DEFAULT_EF_SEARCH
                 ) -> None:
        self.cache = CellCache(cache_bytes)
        self.vectors = ScopeVectorCache(self.cache)
        self.postings = ScopeLexicalCache(self.cache)
        self.sketches = ScopeSketchCache(self.cache, POSTGRES_SKETCHES, rescored)
        for family in (self.postings, self.sketches):
            family.load_chunk = LOAD_CHUNK  # a large scope's cells are read in chunks
        self.large = OversizedScopes(self.cache, exact_row_bytes(dims), (self.vectors.name,))
        self.in_database = LargeScopes(self.cache, dims, ef_search)
        self.dims = dims
        self.namespaces = NamespaceVectorCache(
            self.cache, embedding="vector_send(v.embedding)", decode=_decode,
            join=POSTGRES_JOIN, row_bytes=None if dims is None else 4 * dims)

    position_fn = "strpos"
    range_ops = ("~>=~", "~<~")
    name = "postgres"
    json: JsonGrammar = POSTGRES_JSON
    byte_order = ' COLLATE "C"'

    def migrations(self, dims: int | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return _migrations(dims)

    def lock_migrations(self) -> Sql | None:
        return Sql("SELECT pg_advisory_xact_lock(7305924117)")

    def lock_scopes(self, names: Sequence[str], *, shared: bool) -> Sql | None:
        """Advisory locks keyed by a 64-bit hash of each name, taken in the order given."""
        if not names:
            return None
        take = SQL_LOCK_SHARED if shared else SQL_LOCK
        return Sql("SELECT " + ", ".join([take] * len(names)), list(names))

    def dump_json(self, value: Any) -> Any:
        from psycopg.types.json import Jsonb

        return Jsonb(value, dumps=json_text)

    def load_json(self, value: Any) -> Any:
        return value

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(?)", [list(values)]

    def key_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, list[Any]]]:
        """Every pair in one statement, as two text arrays unnested: its text does not
        change with the count (a `VALUES` list of 500 pairs took ~25 ms to send and plan).

        Example:
            >>> PostgresDialect().key_pairs([("a", "k1"), ("a", "k2")])
            [('SELECT * FROM unnest(?::text[], ?::text[])', [['a', 'a'], ['k1', 'k2']])]
        """
        if not pairs:
            return []
        return [("SELECT * FROM unnest(?::text[], ?::text[])",
                 [[ns for ns, _ in pairs], [key for _, key in pairs]])]

    def json_field(self, column: str, field: str) -> str:
        return f"({column} ->> '{field}')"

    def encode_vector(self, vector: Sequence[float]) -> Any:
        """The vector as float32 values; its text form is written where a statement takes
        one vector (`one`, `put_untyped`), a binary block where it takes many (`bulk`)."""
        return np.asarray(vector, dtype=np.float32)

    def bulk(self, statement: q.Bulk, rows: list[list[Any]]) -> Sql:
        """Records, their vectors, audit rows and access log entries go in one statement
        each (the statement triggers count them once); other rows by executemany.

        Example:
            >>> d = PostgresDialect()
            >>> params = d.bulk(q.Bulk.VECTOR_FOR_ID, [["id1", "f", d.encode_vector([1, 2])],
            ...                                      ["id2", "f", d.encode_vector([3, 4])]]
            ...                 ).params
            >>> params[0].matrix.tolist(), params[1:]
            ([[1.0, 2.0], [3.0, 4.0]], [2, 2, ['id1', 'id2'], ['f', 'f']])
            >>> d.bulk(q.Bulk.NOTE_ACCESS, [["m1", 2, 5.0]]).params
            ['m1', '2', '5.0']
        """
        if statement is q.Bulk.NOTE_ACCESS:
            return _access_columns(rows)
        if statement is q.Bulk.ROW:
            return Sql(SQL_INSERT_ROWS, [_json_rows(rows)])
        if statement is q.Bulk.AUDIT:
            return Sql(SQL_AUDIT_ROWS, [_json_rows(rows)])
        if statement is q.Bulk.VECTOR_FOR_ID:
            ids, fields, vectors = ([*col] for col in zip(*rows, strict=True))
            block = Float4Block(vectors)
            return Sql(SQL_INSERT_VECTORS_FOR_IDS, [block, block.dims, block.dims, ids, fields])
        return Sql(statement.value, many=[_with_literal(statement, row) for row in rows])

    def one(self, statement: q.Bulk, row: list[Any]) -> Sql:
        """One row of a statement, as it is written (a vector in its text form)."""
        return Sql(statement.value, _with_literal(statement, row))

    def lexical(
        self, scope: q.ScopeRead, terms: list[str], depth: int | None
    ) -> Plan[list[tuple[int, float]]]:
        """BM25 (`bm25_ranked`) over the scope's live rows of its kind, best first (ties:
        older row first; every matching row when `depth` is None).

        One round trip turns the terms into lexemes (`_QUERY_LEXEMES`) and reads the
        scope's counters, both statements shared with the other searches of the batch run
        beside it (the vector searches, the other kinds' searches of the same query); the
        scope's cached postings (`ScopeLexicalCache`) are brought up to date and ranked in
        this process.

        A scope no cache holds is measured first (`OversizedScopes.too_large`: its
        counters): one too large for the exact caches keeps its postings while they fit
        beside its sketches; one too large for those is ranked by the database, never
        loaded.

        Example (the first statements' values; a server runs them):
            >>> scope = q.ScopeRead("fact", "acme", None, None, "m.status = 'active'", 5.0)
            >>> plan = PostgresDialect().lexical(scope, ["lyon", "gare", "lyon"], 10)
            >>> next(plan).text.startswith("SELECT user_id, agent_id")  # the counters
            True
            >>> plan.send([]).steps[0].params  # no records yet: a scope that fits
            [['lyon', 'gare']]
        """
        if ((yield from self.large.too_large(scope, self.postings))
                and (yield from self.in_database.too_large(scope, self.postings))):
            parsed = yield Sql(_QUERY_LEXEMES, [list(dict.fromkeys(terms))], shared=True)
            return (yield from self.in_database.lexical(scope, parsed[0][0] or [], depth))
        (parsed,), counted, loaded = yield from self.postings.counted_with_cold(
            scope, self.postings.select,
            Sql(_QUERY_LEXEMES, [list(dict.fromkeys(terms))], shared=True))
        return (yield from self.postings.ranked(
            scope, parsed[0][0] or [], depth, counted, loaded))

    def after_erasure(self) -> list[Sql]:
        """Nothing: deleted tuples are invisible to SQL; VACUUM reclaims them."""
        return []

    def lazy_commit(self) -> list[Sql]:
        """The transaction's commit returns before its WAL reaches the disk (a crash may
        lose it; the database stays consistent)."""
        return [Sql("SET LOCAL synchronous_commit TO OFF")]

    def vector_top_k(
        self, scope: q.ScopeRead, query: VectorQuery, depth: int | None
    ) -> Plan[VectorRanking | None]:
        """Exact: the scope's vectors are ranked in this process (`ScopeVectorCache`), fetched
        in pgvector's binary form. The cells' loads read vectors by seq, so the HNSW index
        never makes these results approximate (a post-filtered index loses most in-scope matches:
        docs/backends.md). A scope too large for the matrices is ranked by its sketches
        (`ScopeSketchCache`), its `rescored` nearest read by seq and ranked exactly; one too
        large for the sketches by the HNSW index, its scope filter in the same statement
        (`LargeScopes`)."""
        if (yield from self.large.too_large(scope, self.vectors)):
            if (yield from self.in_database.too_large(scope, self.sketches)):
                return (yield from self.in_database.vector_top_k(scope, query, depth,
                                                                 _vector_literal))
            return (yield from self.sketches.top_k(scope, query, depth, decode=_decode,
                                                   rescore=self._rescored))
        return (yield from self.vectors.top_k(
            scope, query, depth, embedding="vector_send(v.embedding)", decode=_decode,
            tier=self.json_field("m.value", "compaction_tier"), join=POSTGRES_JOIN,
        ))

    def _rescored(self, seqs: list[int], unit: np.ndarray
                  ) -> Plan[tuple[np.ndarray, np.ndarray]]:
        """A sketched scope's candidates rescored by pgvector, where their vectors are: only
        the scores leave the server (fetching the vectors took twice as long). The cosine
        is pgvector's (float32 sums), within rounding of the exact regime's."""
        rows = yield Sql(_COSINES_BY_SEQ, [_vector_literal(unit), seqs])
        held = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        scores = np.fromiter((cosine_or_zero(r[1]) for r in rows), np.float64, len(rows))
        return held, scores

    def vector_scores(
        self, seqs: Sequence[int], query: Sequence[float]
    ) -> Plan[list[tuple[int, float]]]:
        rows = yield Sql(_COSINES_BY_SEQ, [_vector_literal(query), list(seqs)])
        return _max_pool(rows)

    def put_untyped(self, row: list[Any], vectors: list[tuple[str, Any]]) -> Sql | None:
        """`SQL_PUT_UNTYPED`: one round trip, where the batch's transaction took five.

        Example:
            >>> d = PostgresDialect(dims=2)
            >>> d.put_untyped(["id"], [("text", d.encode_vector([1, 0]))]).params
            ['id', ['text'], ['text'], ['[1.0,0.0]']]
        """
        if self.dims is None:  # no vectors table
            return Sql(SQL_UPSERT_UNTYPED, row)
        fields = [field for field, _ in vectors]
        return Sql(SQL_PUT_UNTYPED, [*row, fields, fields,
                                     [_vector_literal(v) for _, v in vectors]])

    def untyped_top(
        self, prefix: str | None, now: float, extra: q.Clause | None,
        query: Sequence[float], depth: int,
    ) -> Plan[list[tuple[int, float]]]:
        """pgvector scores the vectors of the live untyped rows under `prefix` passing
        `extra` (read through the namespace index) and returns the `depth` best: only they
        leave the server. Without a filter, a namespace asked again whose vectors fit the
        cache is ranked from them instead (`NamespaceVectorCache`, fetched in pgvector's
        binary form). Exact either way: every vector is scored."""
        def server() -> Sql:
            where = q.untyped_where(prefix, self.range_ops, now, extra)
            return Sql(
                "SELECT m.seq, max(coalesce(nullif(1 - (v.embedding <=> ?::vector), "
                f"'NaN'::float8), 0)) AS sim FROM memories m {POSTGRES_JOIN} WHERE {where[0]} "
                "GROUP BY m.seq ORDER BY sim DESC, m.seq LIMIT ?",
                [_vector_literal(query), *where[1], depth])

        if extra is None:
            return (yield from self.namespaces.top_k(prefix, self.range_ops, now, query, depth,
                                                     server))
        return [(seq, float(sim)) for seq, sim in (yield server())]


def _decode(values: list[Any]) -> np.ndarray:
    """pgvector's binary form (int16 dims, int16 unused, big-endian float4s) into an
    (n, dims) float32 matrix."""
    raw = np.frombuffer(b"".join(bytes(v) for v in values), dtype=np.uint8)
    rows = raw.reshape(len(values), -1)[:, 4:]
    return np.ascontiguousarray(rows).view(">f4").astype(np.float32)


def _max_pool(rows: list[tuple[Any, ...]]) -> list[tuple[int, float]]:
    best: dict[int, float] = {}
    for seq, sim in rows:
        sim = cosine_or_zero(sim)
        if sim > best.get(seq, -2.0):
            best[seq] = sim
    return sorted(best.items(), key=lambda x: -x[1])
