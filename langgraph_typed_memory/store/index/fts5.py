"""SQLite's lexical postings per scope cell, tokenized by FTS5.

Each scope cell's rows are read once into postings (token -> row numbers and occurrences,
`ScopePostings`) kept in this process and brought up to date from the cell's counters
(`index/scopes`: new records fetched alone, changed ones masked and fetched again). A search
ranks the cells the scope sees together with `bm25_ranked`, the ranking Postgres' postings
(`index/tsvector`) go through too, instead of FTS5's `bm25()`, whose statistics are the whole
full-text table's (every tenant's rows) and which read every row of the table holding a query
term to join it to `memories` and test the scope.

Texts are tokenized by FTS5 itself (`Tokenizer`): written to a temporary FTS5 table of the
connection with the full-text tables' tokenizer and their tokens read back from an
`fts5vocab` table; query terms' tokens are remembered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from langgraph_typed_memory.store.core.protocol import Plan, Sql
from langgraph_typed_memory.store.core.queries import Cell, ScopeRead
from langgraph_typed_memory.store.index.bm25 import bm25_ranked
from langgraph_typed_memory.store.index.cells import CellCache, CellFamily, Counted
from langgraph_typed_memory.store.index.postings import ScopePostings, Segment

__all__ = ["TOKENIZE", "Tokenizer", "ScopeFts5Cache"]

TOKENIZE = "porter unicode61"
"""The tokenizer of every full-text table (migration 0012) and of `Tokenizer`."""

_TOKENIZER = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_tokenizer USING fts5("
    f"text, content='', tokenize='{TOKENIZE}')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_tokenizer_instances "
    "USING fts5vocab(temp, memory_tokenizer, instance)",
)


_INSTANCES = ("(SELECT doc - ? AS doc, offset, term FROM temp.memory_tokenizer_instances "
              "WHERE doc >= ? AND doc < ?)")
"""The token instances of one call's texts (its rowids), numbered from 0."""


class Tokenizer:
    """FTS5's tokenizer, run on the store's connection.

    Each call writes its texts to `temp.memory_tokenizer`, a contentless FTS5 table (it keeps
    the tokens, never the texts), under rowids of its own: the reads of one batch run
    interleaved, so calls may overlap. It reads their tokens back, and the last call out
    empties the table (a contentless table can only be emptied whole; deleted rows left in
    the index would slow every later read of it). The tables are created on the first call
    (the temp schema is the connection's). Query terms' tokens are remembered, up to
    `remember` terms.

    Example:
        >>> Tokenizer().remember
        65536
    """

    def __init__(self, remember: int = 65536) -> None:
        self.remember = remember
        self._ready = False
        self._next = 1
        self._open = 0
        self._terms: dict[str, tuple[str, ...]] = {}

    def _instances(self, texts: Sequence[str | None], query: str) -> Plan[list[tuple[Any, ...]]]:
        """The rows of `query` over the token instances of `texts` (`{instances}`: rows of
        `doc`, the text's index, `offset` and `term`, from the `fts5vocab` instance
        table)."""
        if not self._ready:
            for statement in _TOKENIZER:
                yield Sql(statement)
            self._ready = True
        base, self._next = self._next, self._next + len(texts)
        self._open += 1
        try:
            yield Sql("INSERT INTO temp.memory_tokenizer (rowid, text) "
                      "SELECT ? + key, value FROM json_each(?) WHERE value IS NOT NULL",
                      [base, json.dumps(list(texts))])
            rows = yield Sql(query.format(instances=_INSTANCES), [base, base, base + len(texts)])
        finally:
            self._open -= 1
        if not self._open:
            yield Sql("INSERT INTO temp.memory_tokenizer (memory_tokenizer) "
                      "VALUES ('delete-all')")
        return rows  # type: ignore[no-any-return]

    def postings(self, texts: Sequence[str | None]) -> Plan[tuple[np.ndarray, Segment]]:
        """The texts' token counts, and for each token the texts holding it (indexes,
        ascending) with its occurrences in each (None holds none), as a `Segment`.

        SQLite lists each token's instances as one string (the instance table comes in
        token order, so its GROUP BY needs no sort) and numpy counts them: the 1.1M
        instances of 75k texts as one tuple each took ~2.5 s in this process."""
        found = yield from self._instances(
            texts, "SELECT term, count(*), group_concat(doc) FROM {instances} GROUP BY term")
        sizes = np.array([r[1] for r in found], np.int64)
        docs = np.fromstring(",".join(r[2] for r in found), np.int64, sep=",")
        token_of = np.repeat(np.arange(len(found)), sizes)
        if np.any((docs[1:] < docs[:-1]) & (token_of[1:] == token_of[:-1])):
            order = np.lexsort((docs, token_of))  # each token's texts ascending
            docs, token_of = docs[order], token_of[order]
        # One (token, text) pair per run of instances, counted.
        first = np.ones(len(docs), bool)
        first[1:] = (docs[1:] != docs[:-1]) | (token_of[1:] != token_of[:-1])
        starts = np.flatnonzero(first)
        counts = np.diff(np.append(starts, len(docs))).astype(np.int32)
        held = docs[starts].astype(np.int32)
        bounds = np.zeros(len(found) + 1, np.int64)
        np.cumsum(np.bincount(token_of[starts], minlength=len(found)), out=bounds[1:])
        lengths = np.bincount(docs, minlength=len(texts)).astype(np.int32)
        return lengths, Segment.of([row[0] for row in found], bounds, held, counts)

    def tokens(self, terms: Sequence[str]) -> Plan[list[tuple[str, ...]]]:
        """Each term's tokens in order: usually one, none for a term the tokenizer drops,
        several for one it splits (`foo_bar`)."""
        new = [t for t in dict.fromkeys(terms) if t not in self._terms]
        if new:
            found: list[list[tuple[int, str]]] = [[] for _ in new]
            for i, offset, token in (yield from self._instances(
                    new, "SELECT doc, offset, term FROM {instances}")):
                found[i].append((offset, token))
            if len(self._terms) + len(new) > self.remember:
                self._terms.clear()
            for term, tokens in zip(new, found, strict=True):
                self._terms[term] = tuple(token for _, token in sorted(tokens))
        return [self._terms[t] for t in terms]


_SELECT = "SELECT m.seq, m.search_text, m.expires_at FROM memories m WHERE {where}"
"""A cell's rows for the postings, tokenized by `Tokenizer.postings`: by the scope index,
whose equal cell columns leave its entries in seq order (also for the rows after a seq)."""


class _Tokenized(ScopePostings):
    """Postings whose rows come tokenized (`ScopeFts5Cache._tokenized`)."""

    __slots__ = ()

    def append(self, rows: Any) -> None:
        self.add(*rows)


class ScopeFts5Cache(CellFamily[ScopePostings]):
    """FTS5-tokenized postings per scope cell, checked against the cells' counters each
    query (`inserts`: the records added, migration 0013); a search ranks the cells it sees
    together.

    Example:
        >>> cache = ScopeFts5Cache(CellCache())
        >>> len(cache), cache.full_loads
        (0, 0)
    """

    def __init__(self, cache: CellCache) -> None:
        super().__init__(cache, "postings", "inserts")
        self.tokenizer = Tokenizer()

    def _tokenized(self, rows: list[tuple[Any, ...]]) -> Plan[tuple[Any, ...]]:
        """(seqs, expiry times, lengths, postings) of (seq, text, expires_at) rows, tokenized;
        a row's length is its token count (FTS5's document size)."""
        lengths, postings = yield from self.tokenizer.postings([r[1] for r in rows])
        return [r[0] for r in rows], [r[2] for r in rows], lengths, postings

    def ranked(
        self, scope: ScopeRead, tokens: Sequence[str], depth: int | None,
        counted: dict[Cell, Counted],
    ) -> Plan[list[tuple[int, float]]]:
        """`bm25_ranked` over the scope's rows for the query's `tokens`, its cells brought up
        to date first from `counted`, their counters as the caller read them
        (`counters_sql`)."""
        cells = yield from self.views(
            scope, counted,
            lambda where, params: Sql(_SELECT.format(where=where), params), _Tokenized,
            prepare=self._tokenized)
        return bm25_ranked(cells, tokens, scope.now, depth)
