"""SQLite lexical ranking on cached postings per scope cell: FTS5's `bm25()`, reproduced.

As one statement (`SqliteDialect.lexical`), a ranking reads every row of the kind's
full-text table holding a query term, calls `bm25()` on each and joins it to `memories` to
test the scope: ~2.2 ms p50 and ~4.6 ms p95 for the facts search of the latency benchmark's 100k
scope, a third of the fan-out. Here, as on Postgres (`lexical_cache`), each scope cell's rows
are read once into postings (token -> row numbers and occurrences) kept in this process and
brought up to date from the cell's counters (`scope_cache`); a query adds a few arrays in
numpy. A row's score depends on the table's statistics and the row alone, so each cell is
ranked apart and the lists merged by (score, seq).

FTS5's BM25 (fts5_aux.c) scores a row, for a query of phrases p_1 .. p_n (here each term is a
phrase of one token), as

    sum over i of  idf_i * f_i * (k1 + 1) / (f_i + k1 * (1 - b + b * D / avgdl))

with k1 = 1.2, b = 0.75, idf_i = ln((N - n_i + 0.5) / (n_i + 0.5)) (1e-6 where that is not
positive), N and avgdl over every row of the kind's full-text table (FTS5 knows no scopes),
n_i the rows of the table holding p_i, f_i its occurrences in the row and D the row's token
count. N and the token total come from the table's averages record, each n_i from an
`fts5vocab` table (one statement); f_i and D come from the
postings. The same operations run in the same order, so the scores are FTS5's to the bit, and
each query term counts as a phrase of its own (two that stem alike count twice, as in FTS5):
the tests compare whole rankings with the statement's on random corpora.

Texts are tokenized by FTS5 itself (`Tokenizer`): written to a temporary FTS5 table of the
connection with the full-text tables' tokenizer and their tokens read back from an
`fts5vocab` table; query terms' tokens are remembered.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from langgraph_typed_memory.store.cell_cache import CellCache, CellFamily, Counted
from langgraph_typed_memory.store.lexical_cache import ScopePostings, Segment, at_least_kth
from langgraph_typed_memory.store.protocol import Plan, Sql
from langgraph_typed_memory.store.queries import Cell, ScopeRead

__all__ = ["TOKENIZE", "Tokenizer", "ScopeFts5Cache", "averages", "bm25_ranked"]

TOKENIZE = "porter unicode61"
"""The tokenizer of every full-text table (migration 0012) and of `Tokenizer`."""

K1, B = 1.2, 0.75
"""FTS5's BM25 constants (`bm25()` without arguments)."""

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


def averages(record: bytes | None) -> tuple[int, int]:
    """(rows, tokens) of a full-text table from its averages record (`%_data` id 1: the row
    count, then each column's token total, as SQLite varints); (0, 0) for an empty table.

    Example (75,000 rows holding 1,126,116 tokens):
        >>> averages(bytes.fromhex("84c978c4dd64"))
        (75000, 1126116)
    """
    values, value, read = [], 0, 0
    for byte in record or b"":
        read += 1
        if read == 9:  # the ninth byte of a varint gives all its 8 bits
            value, byte = (value << 8) | byte, 0
        else:
            value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(value)
            value, read = 0, 0
    return (values[0], sum(values[1:])) if values else (0, 0)


_SELECT = "SELECT m.seq, m.search_text, m.expires_at FROM memories m WHERE {where}"
"""A cell's rows for the postings, tokenized by `Tokenizer.postings`: by the scope index,
whose equal cell columns leave its entries in seq order (also for the rows after a seq)."""

_STATS = ("SELECT (SELECT block FROM {table}_data WHERE id = 1), "
          "(SELECT json_group_array(json_array(term, doc)) FROM {table}_vocab "
          "WHERE term IN (SELECT value FROM json_each(?)))")
"""What a ranking reads beside the cells' counters: the full-text table's averages record
and the row count (n_i) of each query token, from its `fts5vocab` row table."""


class _Tokenized(ScopePostings):
    """Postings whose rows come tokenized (`ScopeFts5Cache._tokenized`)."""

    __slots__ = ()

    def append(self, rows: Any) -> None:
        self.add(*rows)


class ScopeFts5Cache(CellFamily[ScopePostings]):
    """Postings of a full-text table per scope cell, checked against the cells' counters each
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
        self, scope: ScopeRead, table: str, tokens: Sequence[str], depth: int,
        counted: dict[Cell, Counted],
    ) -> Plan[list[tuple[int, float]]]:
        """`bm25_ranked` over the scope's rows of `table` (the scope's kind's full-text
        table), for the query's terms of one token each, `tokens`: per cell (a row's score
        depends on the table and the row alone), merged; the cells brought up to date first
        from `counted`, their counters as the caller read them (`counters_sql`)."""
        record, held = (yield Sql(_STATS.format(table=table),
                                  [json.dumps(list(dict.fromkeys(tokens)))]))[0]
        cells = yield from self.views(
            scope, counted,
            lambda where, params: Sql(_SELECT.format(where=where), params), _Tokenized,
            prepare=self._tokenized)
        rows, total = averages(record)
        df = dict(json.loads(held))
        found = [hit for cell in cells
                 for hit in bm25_ranked(cell, tokens, df, rows, total, scope.now, depth)]
        return sorted(found, key=lambda hit: (-hit[1], hit[0]))[:depth]


def bm25_ranked(
    entry: ScopePostings, tokens: Sequence[str], df: Mapping[str, int], rows: int,
    total: int, now: float, depth: int,
) -> list[tuple[int, float]]:
    """The `depth` best (seq, score) among the rows of `entry` live at `now` holding any of
    `tokens` (one per query term, in the query's order), by FTS5's BM25 over a table of
    `rows` rows and `total` tokens where `df[token]` rows hold each token; ties: older
    row first.

    Example (a table of 10 rows and 30 tokens, two rows holding "tulip"; row 12 has
    expired):
        >>> entry = ScopePostings(0, 0)
        >>> entry.add([7, 9, 12], [None, None, 5.0], [3, 4, 1], Segment.of(
        ...     ["red", "tulip", "pot", "rose"], starts=[0, 1, 3, 4, 5],
        ...     rows=[0, 0, 1, 1, 2], counts=[1, 2, 1, 3, 1]))
        >>> [(seq, round(score, 4)) for seq, score in bm25_ranked(
        ...     entry, ["tulip", "rose"], {"tulip": 2, "rose": 1}, rows=10, total=30,
        ...     now=10.0, depth=5)]
        [(7, 1.6827), (9, 1.0769)]
    """
    if depth < 1 or rows < 1:
        return []
    live = entry.live(now)
    avgdl = float(total) / float(rows)
    lengths = entry.lengths
    scores = np.zeros(entry.size)
    hit = np.zeros(entry.size, bool)
    for token in tokens:
        rows_of, counts = entry.holding(token, live)
        freq = counts.astype(np.float64)
        n = df.get(token, 0)
        idf = math.log((rows - n + 0.5) / (n + 0.5))
        size = (1 - B) + B * lengths[rows_of].astype(np.float64) / avgdl  # as FTS5 adds it
        scores[rows_of] += (idf if idf > 0.0 else 1e-6) * (
            (freq * (K1 + 1.0)) / (freq + K1 * size))
        hit[rows_of] = True
    found = np.flatnonzero(hit)
    best = scores[found]
    if len(found) > depth:
        kept = at_least_kth(best, depth)
        found, best = found[kept], best[kept]
    seqs = entry.seqs[found]
    order = np.lexsort((seqs, -best))[:depth]
    return list(zip(seqs[order].tolist(), best[order].tolist(), strict=True))
