"""Scopes too large for the search caches, ranked by Postgres itself.

A ranked search of a scope whose cells fit the cache bound (`cache_bytes`) is answered
exactly in this process (`index/cells`: vector matrices and full-text postings per cell).
A scope whose matrices do not fit is ranked by its vectors' sign bits, rescored exactly
from the database, its postings still held (`index/sketches`). A scope whose sketches and
postings do not fit either keeps no copy in the process: its vectors are ranked by pgvector
in the database (by its HNSW index when the operator created it: `HNSW_INDEX`) and its words
by Postgres' full-text search, both in the statement that applies the scope filter, so the
filter holds before anything is ranked. The search's `retrieval_mode` then ends in
`+database` (docs/large-scopes.md).

The size of a scope is measured from its cells' counters (`index/oversized`).

Without the index the database ranks such a scope by an exact scan: recall 1.0, memory
bounded, seconds a search at a million rows. The index is not created by `setup()`, as
maintaining it on every insert cut bulk ingest about five-fold in the measurements
(docs/large-scopes.md); an operator whose scopes outgrow the sketches creates it once. With
it the vector ranking is approximate. `ef_search` (pgvector's `hnsw.ef_search`, set for the
one statement's transaction) is the recall knob. The scan is iterative
(`hnsw.iterative_scan = relaxed_order`): where the scope filter drops rows the index found,
pgvector reads on until the limit is met, and the rows are put in exact distance order
after it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.namespaces import RANKED_KINDS
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Plan, Sql
from langgraph_typed_memory.store.core.queries import ScopeRead
from langgraph_typed_memory.store.index import (
    CellCache,
    OversizedScopes,
    VectorRanking,
    sketch_row_bytes,
)

__all__ = ["DEFAULT_EF_SEARCH", "HNSW_INDEX", "DatabaseHits", "LargeScopes", "cosine_or_zero",
           "finding", "lexeme_shares", "lexical_sql", "tsquery_text", "vector_sql"]

logger = logging.getLogger(__name__)

DEFAULT_EF_SEARCH = 100
"""pgvector's `hnsw.ef_search` for a large scope's vector search: the candidates the index
keeps while it walks its graph. Higher is slower and nearer the exact ranking."""

HNSW_INDEX = ("CREATE INDEX CONCURRENTLY IF NOT EXISTS memory_vectors_hnsw ON memory_vectors "
              "USING hnsw (embedding vector_cosine_ops)")
"""The index that ranks a large scope's vectors fast (cosine distance, as the caches rank):
created by an operator (`psql -c`, outside a transaction), never by `setup()`."""

DATABASE_DEPTH = 1000
"""The candidates a database-ranked search returns when the search asks for every one
(a search with a value filter): the caches rank every row, the index stops here."""


def cosine_or_zero(sim: Any) -> float:
    """A cosine pgvector computed, as a float: 0 where it has none (NaN or NULL: a zero
    vector).

    Example:
        >>> cosine_or_zero(float("nan")), cosine_or_zero(0.5)
        (0.0, 0.5)
    """
    return 0.0 if sim is None or sim != sim else float(sim)


def _ranked_kind(kind: str) -> str:
    """`kind` as an SQL literal, from the ranked kinds only (a partial full-text index per
    kind is used only where the statement names its kind)."""
    if kind not in RANKED_KINDS:
        raise ValueError(f"not a ranked kind: {kind!r}")
    return f"'{kind}'"


def vector_sql(scope: ScopeRead, vector: str, limit: int) -> Sql:
    """The `limit` rows of `memory_vectors` nearest `vector` (a pgvector literal) among the
    scope's live rows, nearest first (ties: older record first): (seq, cosine). The scope
    filter is in the statement's WHERE, so the index scan reads on (iteratively) until
    `limit` rows pass it; the outer ORDER BY puts the relaxed order in exact order.

    Example:
        >>> read = ScopeRead("fact", "acme", None, None, "m.status = 'active'", 5.0)
        >>> sql = vector_sql(read, "[1,0]", 20)
        >>> sql.params[1:], "ORDER BY v.embedding <=> ?::vector LIMIT ?" in sql.text
        (['fact', 'acme', 5.0, '[1,0]', 20], True)
    """
    where, params = scope.live()
    return Sql(
        "WITH near AS MATERIALIZED (SELECT v.seq, v.embedding <=> ?::vector AS distance "
        f"FROM memory_vectors v JOIN memories m ON m.seq = v.seq WHERE {where} "
        "ORDER BY v.embedding <=> ?::vector LIMIT ?) "
        "SELECT seq, 1 - distance FROM near ORDER BY distance, seq",
        [vector, *params, vector, limit])


def tsquery_text(lexemes: Sequence[str], joined: Literal["|", "&"] = "|") -> str:
    """The lexemes as a tsquery's text matching any of them (`joined` "&": all of them),
    each quoted (so it is taken as it is, not parsed again).

    Example:
        >>> print(tsquery_text(["lyon", "o'hara", "lyon"]))
        'lyon' | 'o''hara'
    """
    return f" {joined} ".join("'" + lx.replace("\\", "\\\\").replace("'", "''") + "'"
                              for lx in dict.fromkeys(lexemes))


COMMON_SHARE = 0.03
"""A lexeme in more than this share of the table's rows (Postgres' statistics) does not
bring rows into a large scope's word search alone: a word every row holds cost the search
all of them (~100 ms at 63k matches, measured once). On the latency benchmark's texts at
96k rows, 40 queries kept the same top 10 as the search on every word (at 0.01, 0.87)."""
LEXEME_SHARES = (
    "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
    "WHERE schemaname = current_schema() AND tablename = 'memories' "
    "AND attname = 'search_tsv'")
"""The commonest lexemes of the full-text column and the share of rows holding each, as the
last `ANALYZE` counted them (none before the first)."""
SHARES_READ_EVERY = 1000
"""Word searches between two reads of `LEXEME_SHARES`."""


def lexeme_shares(rows: Sequence[Sequence[Any]]) -> dict[str, float]:
    """`LEXEME_SHARES`' answer as lexeme -> share of rows (the frequencies list ends with
    three summary values, left out).

    Example:
        >>> lexeme_shares([(["red", "tulip"], [0.3, 0.02, 0.02, 0.3, 0.0])])
        {'red': 0.3, 'tulip': 0.02}
    """
    if not rows or rows[0][0] is None:
        return {}
    lexemes, shares = rows[0]
    return {lx: float(share) for lx, share in zip(lexemes, shares, strict=False)}


def finding(lexemes: Sequence[str], shares: Mapping[str, float]) -> tuple[str, str]:
    """The tsquery texts of a large scope's word search: the rows are ranked on every
    lexeme (any of them), and found by the uncommon ones (any of them), or by all of them
    together when every one is common (`COMMON_SHARE`).

    Example:
        >>> finding(["red", "tulip", "lyon"], {"red": 0.3, "tulip": 0.001})
        ("'red' | 'tulip' | 'lyon'", "'tulip' | 'lyon'")
        >>> finding(["red", "pot"], {"red": 0.3, "pot": 0.2})
        ("'red' | 'pot'", "'red' & 'pot'")
    """
    ranked = tsquery_text(lexemes)
    rare = [lx for lx in lexemes if shares.get(lx, 0.0) <= COMMON_SHARE]
    if rare:
        return ranked, tsquery_text(rare)
    return ranked, tsquery_text(lexemes, "&")


def lexical_sql(scope: ScopeRead, lexemes: Sequence[str], limit: int,
                shares: Mapping[str, float] | None = None) -> Sql:
    """The `limit` best of the scope's live rows found by `lexemes` (`finding`, with the
    table's lexeme `shares`; every row holding any when None), by Postgres' `ts_rank` on all
    of them (normalized by the log of the text's length), best first (ties: older record
    first): (seq, rank). The kind is written out, so the kind's full-text index serves.

    Example:
        >>> read = ScopeRead("fact", "acme", None, None, "m.status = 'active'", 5.0)
        >>> sql = lexical_sql(read, ["lyon"], 20)
        >>> sql.params, "m.kind = 'fact' AND m.search_tsv @@ f" in sql.text
        (["'lyon'", "'lyon'", 'fact', 'acme', 5.0, 20], True)
    """
    where, params = scope.live()
    ranked, found = finding(lexemes, shares or {})
    return Sql(
        "SELECT m.seq, ts_rank(m.search_tsv, q, 1) AS rank FROM memories m, "
        f"CAST(? AS tsquery) AS q, CAST(? AS tsquery) AS f WHERE {where} "
        f"AND m.kind = {_ranked_kind(scope.kind)} AND m.search_tsv @@ f "
        "ORDER BY rank DESC, m.seq LIMIT ?",
        [ranked, found, *params, limit])


class DatabaseHits(list[tuple[int, float]]):
    """A lexical ranking (seq, score), best first, made by the database."""

    regime = "database"


class DatabaseRanking(VectorRanking):
    """A vector ranking made by the database's index: it holds no cells (priors are read
    with the candidates)."""

    regime = "database"


class LargeScopes(OversizedScopes):
    """Which scopes are too large for the sketches and postings (`OversizedScopes`: no entry
    of theirs is kept), and how the database ranks them. `ef_search` is the recall knob.

    Example:
        >>> large = LargeScopes(CellCache(2**20), 384)
        >>> large.ef_search, len(large)
        (100, 0)
    """

    def __init__(self, cache: CellCache, dims: int | None,
                 ef_search: int = DEFAULT_EF_SEARCH) -> None:
        if ef_search < 1 or ef_search > 1000:
            raise ConfigurationError(f"ef_search must be between 1 and 1000 (pgvector's range), "
                             f"not {ef_search}")
        super().__init__(cache, sketch_row_bytes(dims), ("vectors", "sketches", "postings"))
        self.ef_search = ef_search
        self._shares: dict[str, float] | None = None
        self._word_searches = 0

    def vector_top_k(
        self, scope: ScopeRead, query: Sequence[float] | Callable[[], Plan[Any]],
        depth: int | None, encode: Callable[[Sequence[float]], str],
    ) -> Plan[DatabaseRanking | None]:
        """The scope's nearest records by the HNSW index, best first, one per record (its
        nearest vector), at most `depth` (`DATABASE_DEPTH` when None): the `depth` nearest
        vectors are read, so a record indexed on several texts leaves room for fewer (asking
        twice as many made every search read on twice as far in the index)."""
        vector = (yield from query()) if callable(query) else query
        if vector is None:
            return None
        wanted = DATABASE_DEPTH if depth is None else depth
        if wanted < 1:
            return DatabaseRanking([], ())
        yield Begin()
        yield Sql("SELECT set_config('hnsw.ef_search', ?, true), "
                  "set_config('hnsw.iterative_scan', 'relaxed_order', true)",
                  [str(self.ef_search)])
        rows = yield vector_sql(scope, encode(vector), wanted)
        yield Commit()
        best: dict[int, float] = {}
        for seq, sim in rows:
            if seq not in best:
                best[seq] = cosine_or_zero(sim)
                if len(best) == wanted:
                    break
        return DatabaseRanking(list(best.items()), ())

    def lexical(self, scope: ScopeRead, lexemes: Sequence[str], depth: int | None
                ) -> Plan[DatabaseHits]:
        """The scope's records best matching `lexemes`, by Postgres' full-text ranking, found
        through the uncommon ones (`finding`; the table's statistics are read again every
        `SHARES_READ_EVERY` searches)."""
        if not lexemes or depth == 0:
            return DatabaseHits()
        self._word_searches += 1
        if self._shares is None or self._word_searches % SHARES_READ_EVERY == 0:
            self._shares = lexeme_shares((yield Sql(LEXEME_SHARES, shared=True)))
        rows = yield lexical_sql(scope, lexemes, DATABASE_DEPTH if depth is None else depth,
                                 self._shares)
        return DatabaseHits((int(seq), float(rank)) for seq, rank in rows)
