"""The search caches kept in this process, per scope cell, and the one lexical ranking.

What the rest of the store uses, and the only names it imports from this room:

- the caches a dialect holds: `CellCache` (the byte-bounded cache of cells, which erasure
  asks to `forget`), `ScopeVectorCache` (exact vector ranking on cached matrices of a
  `VectorQuery`, answered as a `VectorRanking`), `NamespaceVectorCache` (the same ranking
  of an untyped search's namespaces, kept valid by their counters), and the full-text
  postings filled from each backend's tokens:
  `ScopeFts5Cache` (SQLite, FTS5's `porter unicode61` tokenizer, `TOKENIZE`) and
  `ScopeLexicalCache` (Postgres, `to_tsvector`), both ranked by `bm25`;
- which scopes are too large for a regime (`OversizedScopes`, measured at
  `exact_row_bytes` or `sketch_row_bytes` a vector), and the sign-bit sketches that rank
  a scope too large for the exact caches (`ScopeSketchCache`, `sign_bits`, read as each
  backend's `SketchSql` says);
- reading the cells' counters with a search (`counters_sql`, `counted_cells`, `answers_of`);
- the bookkeeping the database keeps for the caches, which the dialects' migrations create:
  the counter table and triggers (`VERSIONS_TABLE`, `bump_cell`, the `*_CELL` and `*_CHANGE`
  sources, `ROW_COLUMNS`, `row_changed`, `changes_table`, `log_change`, `APPENDS_COLUMN`,
  `BACKFILL`), the untyped namespaces' counters (`NAMESPACE_VERSIONS_TABLE`,
  `bump_namespace`), trimmed by the sweeps (`TRIM_CHANGES`) and cleared by erasure
  (`FORGET_CHANGES`).
"""

from __future__ import annotations

from langgraph_typed_memory.store.index.cells import (
    DEFAULT_CACHE_BYTES,
    LOAD_CHUNK,
    CellCache,
    CellFamily,
    answers_of,
    counted_cells,
    counters_sql,
)
from langgraph_typed_memory.store.index.fts5 import TOKENIZE, ScopeFts5Cache
from langgraph_typed_memory.store.index.oversized import (
    OversizedScopes,
    exact_row_bytes,
    sketch_row_bytes,
)
from langgraph_typed_memory.store.index.scopes import (
    APPENDS_COLUMN,
    BACKFILL,
    FORGET_CHANGES,
    NAMESPACE_VERSIONS_TABLE,
    ROW_CELL,
    ROW_CHANGE,
    ROW_COLUMNS,
    TRIM_CHANGES,
    VECTOR_APPEND_CELL,
    VECTOR_CELL,
    VECTOR_CHANGE,
    VERSIONS_TABLE,
    bump_cell,
    bump_namespace,
    changes_table,
    log_change,
    row_changed,
)
from langgraph_typed_memory.store.index.sketches import (
    DEFAULT_RESCORED,
    ScopeSketchCache,
    SketchSql,
    sign_bits,
)
from langgraph_typed_memory.store.index.tsvector import ScopeLexicalCache
from langgraph_typed_memory.store.index.vectors import (
    POSTGRES_JOIN,
    SQLITE_JOIN,
    NamespaceVectorCache,
    ScopeVectorCache,
    VectorRanking,
    scores_of,
)
from langgraph_typed_memory.store.index.vectors import Query as VectorQuery

__all__ = [
    "APPENDS_COLUMN", "BACKFILL", "DEFAULT_CACHE_BYTES", "DEFAULT_RESCORED", "FORGET_CHANGES",
    "LOAD_CHUNK", "NAMESPACE_VERSIONS_TABLE", "POSTGRES_JOIN", "ROW_CELL", "ROW_CHANGE",
    "ROW_COLUMNS", "SQLITE_JOIN", "TOKENIZE", "TRIM_CHANGES", "VECTOR_APPEND_CELL", "VECTOR_CELL",
    "VECTOR_CHANGE", "VERSIONS_TABLE", "CellCache", "CellFamily", "NamespaceVectorCache",
    "OversizedScopes", "ScopeFts5Cache", "ScopeLexicalCache", "ScopeSketchCache",
    "ScopeVectorCache", "SketchSql", "VectorQuery", "VectorRanking",
    "answers_of", "bump_cell", "bump_namespace", "changes_table", "counted_cells",
    "counters_sql", "exact_row_bytes", "log_change", "row_changed", "scores_of", "sign_bits",
    "sketch_row_bytes",
]
