"""SQLite's lexical postings per scope cell, tokenized as FTS5 tokenizes.

Each scope cell's rows are read once into postings (token -> row numbers and occurrences,
`ScopePostings`) kept in this process and brought up to date from the cell's counters
(`index/scopes`: new records fetched alone, changed ones masked and fetched again). A search
ranks the cells the scope sees together with `bm25_ranked`, the ranking Postgres' postings
(`index/tsvector`) go through too. (FTS5's `bm25()` counted its statistics over a whole
full-text table, every tenant's rows, and read every row of the table holding a query term to
join it to `memories` and test the scope; the store keeps no full-text table now.)

Texts and query terms are tokenized in this process (`Tokenizer`), exactly as FTS5's
`porter unicode61` tokenizer makes its tokens: unicode61 with what it does to each character
outside ASCII learned from FTS5 itself (`index/unicode61`), then FTS5's porter stemmer
(`index/porter`). A record keeps its text's tokens (`Tokenizer.joined`, made when it is
written), which a cell load splits; a search or a cell load sends no statement to tokenize,
except the first time a character outside ASCII is met.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from langgraph_typed_memory.store.core.protocol import Plan, Sql
from langgraph_typed_memory.store.index.bm25 import PostingsCache
from langgraph_typed_memory.store.index.cells import CellCache
from langgraph_typed_memory.store.index.porter import stem
from langgraph_typed_memory.store.index.postings import (
    ScopePostings,
    Segment,
    token_postings,
)
from langgraph_typed_memory.store.index.unicode61 import Unicode61, probe

__all__ = ["TOKENIZE", "MAX_TOKEN_BYTES", "Tokenizer", "ScopeFts5Cache"]

TOKENIZE = "porter unicode61"
"""FTS5's tokenizer that `Tokenizer` reproduces (the probe table's, and the full-text tables'
while the store kept them)."""

MAX_TOKEN_BYTES = 32768
"""FTS5 keeps a token's first 32,768 bytes (a longer one is indexed cut)."""

_PROBES = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_tokenizer USING fts5("
    f"text, content='', tokenize='{TOKENIZE}')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_tokenizer_instances "
    "USING fts5vocab(temp, memory_tokenizer, instance)",
)
"""The connection's own FTS5 table that the probe texts of new characters go through."""

_INSTANCES = ("SELECT doc - ? AS doc, offset, term FROM temp.memory_tokenizer_instances "
              "WHERE doc >= ? AND doc < ?")
"""The token instances of one probe's texts (its rowids), numbered from 0."""

_ROWIDS = itertools.count(1, 1 << 22)
"""The first rowid of each probe's texts (a block of 2^22: room for two texts for every
character there is), never reused in the process: every store on a connection writes its
probes to the connection's one table."""


@lru_cache(maxsize=1 << 16)
def _token(word: str) -> str:
    """A unicode61 word as the index holds it: stemmed, then cut to `MAX_TOKEN_BYTES`."""
    token = stem(word)
    if len(token) * 4 > MAX_TOKEN_BYTES and len(raw := token.encode()) > MAX_TOKEN_BYTES:
        return raw[:MAX_TOKEN_BYTES].decode(errors="surrogateescape")
    return token


class Tokenizer:
    """FTS5's `porter unicode61` tokenizer, run in this process.

    What unicode61 does with a character outside ASCII is learned from the connection's
    FTS5 the first time a text holds it: the characters' probe texts (`unicode61.probe`) are
    written to `temp.memory_tokenizer`, a contentless FTS5 table with the `TOKENIZE`
    tokenizer (it keeps tokens, never texts), under rowids of their own (the reads of one
    batch run interleaved, so probes may overlap), their tokens read back from an
    `fts5vocab` table, and the last probe out empties the table (a contentless table can only
    be emptied whole). The tables are created by the first probe (the temp schema is the
    connection's). Query terms' tokens are remembered, up to `remember` terms.

    Example:
        >>> Tokenizer().split("The runners' foo_bar, 2 Ponies")
        ['the', 'runner', 'foo', 'bar', '2', 'poni']
    """

    def __init__(self, remember: int = 65536) -> None:
        self.remember = remember
        self.chars = Unicode61()
        self._ready = False
        self._open = 0
        self._terms: dict[str, tuple[str, ...]] = {}

    def _learn(self, texts: Iterable[str]) -> Plan[None]:
        """Learn the characters of `texts` not known yet from the connection's FTS5."""
        chars = sorted(self.chars.unknown(texts))
        if not chars:
            return
        probes = [text for char in chars for text in probe(char)]
        if not self._ready:
            for statement in _PROBES:
                yield Sql(statement)
            self._ready = True
        base = next(_ROWIDS)
        self._open += 1
        try:
            yield Sql("INSERT INTO temp.memory_tokenizer (rowid, text) "
                      "SELECT ? + key, value FROM json_each(?)", [base, json.dumps(probes)])
            rows = yield Sql(_INSTANCES, [base, base, base + len(probes)])
        finally:
            self._open -= 1
        if not self._open:
            yield Sql("INSERT INTO temp.memory_tokenizer (memory_tokenizer) "
                      "VALUES ('delete-all')")
        found: list[list[tuple[int, str]]] = [[] for _ in probes]
        for doc, offset, token in rows:
            found[doc].append((offset, token))
        self.chars.learn(chars, [[token for _, token in sorted(f)] for f in found])

    def split(self, text: str) -> list[str]:
        """The tokens of `text`, in order; its characters must be known (`_learn`)."""
        return [_token(word) for word in self.chars.words(text)]

    def joined(self, text: str | None) -> str | None:
        """The tokens of `text` as a record keeps them beside it (`search_tokens`), in
        order, joined by spaces (no token holds one: unicode61 separates tokens at it); None
        for no text, no token, or a character not learned yet (`_learn`: the record is
        tokenized when a search reads it).

        Example:
            >>> Tokenizer().joined("The runners' ponies"), Tokenizer().joined("Ätna")
            ('the runner poni', None)
        """
        if not text or self.chars.unknown(text):
            return None
        joined = " ".join(self.split(text))
        if len(joined) * 4 > MAX_TOKEN_BYTES:  # a token cut inside a character: not UTF-8
            try:
                joined.encode()
            except UnicodeEncodeError:
                return None
        return joined or None

    def postings(
        self, texts: Sequence[str | None], joined: Sequence[str | None] | None = None,
    ) -> Plan[tuple[np.ndarray, Segment]]:
        """The texts' token counts, and for each token the texts holding it (indexes,
        ascending) with its occurrences in each (None holds none), as a `Segment`
        (`token_postings`). `joined[i]`, where not None, is text i's tokens as `joined` made
        them when it was written: split, not tokenized again.

        45 texts take 0.2 ms, where FTS5 took 0.9 ms and three statements; kept tokens are
        split in a third of the time their texts took to tokenize (docs/backends.md)."""
        stored = joined or [None] * len(texts)
        yield from self._learn(t for t, j in zip(texts, stored, strict=True) if t and j is None)
        return token_postings([kept.split(" ") if kept is not None
                               else self.split(text) if text else None
                               for text, kept in zip(texts, stored, strict=True)])

    def tokens(self, terms: Sequence[str]) -> Plan[list[tuple[str, ...]]]:
        """Each term's tokens in order: usually one, none for a term the tokenizer drops,
        several for one it splits (`foo_bar`)."""
        new = [t for t in dict.fromkeys(terms) if t not in self._terms]
        if new:
            yield from self._learn(new)
            if len(self._terms) + len(new) > self.remember:
                self._terms.clear()
            for term in new:
                self._terms[term] = tuple(self.split(term))
        return [self._terms[t] for t in terms]


_SELECT = ("SELECT m.seq, CASE WHEN m.search_tokens IS NULL THEN m.search_text END, "
           "m.expires_at, m.search_tokens FROM memories m WHERE {where}")
"""A cell's rows for the postings, tokenized by `Tokenizer.postings` (from the tokens kept
beside a text where there are; the text itself only where there are none): by the scope
index, whose equal cell columns leave its entries in seq order (also for the rows after a
seq)."""


class _Tokenized(ScopePostings):
    """Postings whose rows come tokenized (`ScopeFts5Cache._tokenized`)."""

    __slots__ = ()

    def append(self, rows: Any) -> None:
        self.add(*rows)


class ScopeFts5Cache(PostingsCache):
    """FTS5-tokenized postings per scope cell (`PostingsCache`): a cell's texts are split
    into the tokens they keep, or tokenized when they keep none.

    Example:
        >>> cache = ScopeFts5Cache(CellCache())
        >>> len(cache), cache.full_loads
        (0, 0)
    """

    SELECT = _SELECT
    entry = _Tokenized

    def __init__(self, cache: CellCache) -> None:
        super().__init__(cache, prepare=self._tokenized)
        self.tokenizer = Tokenizer()

    def _tokenized(self, rows: list[tuple[Any, ...]]) -> Plan[tuple[Any, ...]]:
        """(seqs, expiry times, lengths, postings) of (seq, text, expires_at, tokens) rows,
        tokenized; a row's length is its token count (FTS5's document size)."""
        lengths, postings = yield from self.tokenizer.postings([r[1] for r in rows],
                                                               [r[3] for r in rows])
        return [r[0] for r in rows], [r[2] for r in rows], lengths, postings
