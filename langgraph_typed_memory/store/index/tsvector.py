"""Postgres' lexical postings per scope cell, valid while the cell's counters hold.

Each scope cell's rows are read once, as (seq, lexemes kept beside the text, expiry), into
postings (lexeme -> row numbers and occurrence counts, `ScopePostings`) kept in this process and
brought up to date like the vector matrices (`index/scopes`: new records are fetched alone,
changed ones masked and fetched again). A search ranks the cells the scope sees together with
`bm25_ranked`, the ranking SQLite's postings (`index/fts5`) go through too.

Read as one statement, a ranking read every row holding a query term, ~2.5 us each, most of it
the heap fetch of a wide row to test the scope, and common words match thousands of rows (the
100k scope of the latency benchmark: ~10 ms of a fan-out's ~19).
"""

from __future__ import annotations

from typing import Any

from langgraph_typed_memory.store.index.bm25 import PostingsCache
from langgraph_typed_memory.store.index.postings import (
    ScopePostings,
    repeated,
    token_postings,
)

__all__ = ["ScopeLexicalCache"]


_SELECT = ("SELECT m.seq, m.search_tokens, "
           "CASE WHEN m.search_tokens IS NULL THEN tsvector_to_array(m.search_tsv) END, "
           "CASE WHEN m.search_tokens IS NULL THEN array(SELECT cardinality(u.positions) "
           "FROM unnest(m.search_tsv) AS u) END, "
           "m.expires_at FROM memories m WHERE {where}")
"""A scope's rows for the postings: the lexemes a record keeps (`search_tokens`, each once
per occurrence), or for a record keeping none its tsvector's lexemes and their occurrence
counts. Loading the 75k facts of the latency benchmark's scope takes ~2 s (half the fetch,
half the postings; measured once): a reload (the first search, a trimmed log, dead rows
past a quarter) costs that much once."""


class _Kept(ScopePostings):
    """Postings filled from `_SELECT`'s rows."""

    __slots__ = ()

    def append(self, rows: Any) -> None:
        lengths, segment = token_postings([
            kept.split(" ") if kept is not None else repeated(lexemes, counts)
            for _, kept, lexemes, counts, _ in rows])
        self.add([r[0] for r in rows], [r[4] for r in rows], lengths, segment)


class ScopeLexicalCache(PostingsCache):
    """Postgres' postings per scope cell (`PostingsCache`), from the lexemes each record
    keeps.

    Example:
        >>> from langgraph_typed_memory.store.index.cells import CellCache
        >>> cache = ScopeLexicalCache(CellCache())
        >>> len(cache), cache.full_loads
        (0, 0)
    """

    SELECT = _SELECT
    entry = _Kept
