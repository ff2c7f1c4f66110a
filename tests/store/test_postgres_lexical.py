"""The Postgres lexical retriever (`PostgresDialect.lexical`) against the one ranking on the
database's postings.

`PostgresDialect.lexical` ranks per-cell postings cached in this process and brought up to
date from the cells' counters. The reference reads the lexemes and occurrence counts of the
scope's live rows straight from `search_tsv` (scope and expiry filtered in SQL) and ranks them
with `bm25_ranked` as one cell: the same rows in the same order with the same scores, on
seeded random corpora spread over tenants, users and agents, with rows that are not active or
have expired, at several depths and without one.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import psycopg
import pytest

from langgraph_typed_memory import PostgresMemoryStore
from langgraph_typed_memory.namespaces import Scope
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.protocol import Plan, Reads, Sql
from langgraph_typed_memory.store.core.search import scope_read
from langgraph_typed_memory.store.index.bm25 import bm25_ranked
from langgraph_typed_memory.store.index.postings import ScopePostings
from langgraph_typed_memory.store.postgres.dialect import PostgresDialect
from langgraph_typed_memory.store.postgres.store import to_psycopg
from tests.conftest import FakeClock, fresh_database, hash_index

pytestmark = pytest.mark.skipif(bool(os.environ.get("TYPED_MEMORY_SKIP_POSTGRES")),
                                reason="TYPED_MEMORY_SKIP_POSTGRES is set")

NOW = 1_800_000_000.0
TENANTS = ("acme", "globex", "initech")
USERS = (None, "alice", "bob", "carol")
AGENTS = (None, None, None, "helper")
KINDS = ("fact", "episode")
STATUSES = ("active",) * 15 + ("superseded", "superseded", "revoked", "expired", "provisional")
DEPTHS = (None, 1, 3, 10, 50)


def _reference(
    read: q.ScopeRead, terms: list[str], depth: int | None
) -> Plan[list[tuple[int, float]]]:
    """`bm25_ranked` on the lexemes `search_tsv` holds for the scope's live rows."""
    where, params = read.live()
    rows: dict[int, dict[str, int]] = {}
    for seq, lexeme, count in (yield Sql(
            "SELECT m.seq, u.lexeme, cardinality(u.positions) FROM memories m "
            f"LEFT JOIN LATERAL unnest(m.search_tsv) AS u ON true WHERE {where}", params)):
        held = rows.setdefault(seq, {})
        if lexeme is not None:
            held[lexeme] = count
    entry = ScopePostings(0, 0)
    entry.append([(seq, list(held), list(held.values()), None)
                  for seq, held in sorted(rows.items())])
    lexemes = [lexeme for _, lexeme in (yield Sql(
        "SELECT u.i, v.lexeme FROM unnest(?::text[]) WITH ORDINALITY AS u (t, i), "
        "unnest(to_tsvector('english', u.t)) AS v ORDER BY u.i, v.positions[1]",
        [list(dict.fromkeys(terms))]))]
    return bm25_ranked([entry], lexemes, read.now, depth)


def _run(conn: psycopg.Connection[Any], plan: Plan[Any]) -> Any:
    """Drive a dialect plan on one connection."""
    def execute(request: Sql) -> list[tuple[Any, ...]]:
        return conn.execute(to_psycopg(request.text), request.params,
                            prepare=request.prepare).fetchall()

    request = next(plan)
    while True:
        if isinstance(request, Reads):  # several reads at once (an append to the cache)
            answer: Any = [execute(r) for r in request.steps]
        else:
            assert isinstance(request, Sql)
            answer = execute(request)
        try:
            request = plan.send(answer)
        except StopIteration as stop:
            return stop.value


@dataclass(frozen=True)
class Row:
    seq: int
    tenant: str
    user: str | None
    agent: str | None
    kind: str
    status: str
    expires_at: float | None
    words: frozenset[str]

    def visible(self, scope: Scope, kind: str) -> bool:
        """What `visible_scope_sql` + active + live select, in Python."""
        return (self.kind == kind and self.tenant == scope.tenant_id
                and self.user in (None, scope.user_id) and self.agent in (None, scope.agent_id)
                and self.status == "active"
                and (self.expires_at is None or self.expires_at > NOW))


@dataclass(frozen=True)
class Corpus:
    conn: psycopg.Connection[Any]
    rows: list[Row]
    words: list[str]


def _vocabulary(conn: psycopg.Connection[Any], rng: random.Random, size: int) -> list[str]:
    """Pseudo-words that are not stop words and stem to distinct lexemes, so a row holds a
    term exactly when its text has the word."""
    syllables = "ba ko ri mu te sa lo vi ne da pe gu fi ro ta mi zo ke lu ha".split()
    words = list(dict.fromkeys(
        "".join(rng.choice(syllables) for _ in range(rng.randint(2, 3))) for _ in range(size * 2)
    ))
    lexemes = conn.execute(
        "SELECT w, to_tsquery('english', w)::text FROM unnest(%s::text[]) AS w", [words]
    ).fetchall()
    seen: dict[str, str] = {}
    for word, lexeme in lexemes:
        if lexeme and lexeme.count("'") == 2:
            seen.setdefault(lexeme, word)
    return sorted(seen.values())[:size]


def _load(conn: psycopg.Connection[Any], seed: int, count: int) -> Corpus:
    rng = random.Random(seed)
    words = _vocabulary(conn, rng, 60)
    zipf = [1 / (rank + 1) for rank in range(len(words))]
    rows, inserts = [], []
    for i in range(count):
        text = rng.choices(words, zipf, k=rng.randint(2, 18))
        row = Row(
            seq=0, tenant=rng.choice(TENANTS), user=rng.choice(USERS), agent=rng.choice(AGENTS),
            kind=rng.choice(KINDS), status=rng.choice(STATUSES),
            expires_at=rng.choice([None] * 8 + [NOW - 60, NOW + 60]), words=frozenset(text),
        )
        inserts.append((f"id{i}", f"tenant:{row.tenant}/{row.user}/{row.agent}/{row.kind}",
                        f"k{i}", "{}", row.kind, row.tenant, row.user, row.agent, row.status,
                        " ".join(text), NOW, NOW, row.expires_at))
        rows.append(row)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO memories (id, ns, key, value, kind, tenant_id, user_id, agent_id, "
            "status, search_text, created_at, updated_at, expires_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            inserts,
        )
    seqs = dict(conn.execute("SELECT id, seq FROM memories").fetchall())
    return Corpus(conn, [replace(r, seq=seqs[f"id{i}"]) for i, r in enumerate(rows)], words)


@pytest.fixture(scope="module", params=[11, 29])
def corpus(request: pytest.FixtureRequest) -> Iterator[Corpus]:
    """A seeded corpus in a fresh database with the store's schema."""
    url = fresh_database(request.getfixturevalue("pg_server"))
    with psycopg.connect(url, autocommit=True) as conn:
        PostgresMemoryStore(conn).setup()
        yield _load(conn, request.param, 1500)


def _queries(corpus: Corpus, seed: int, count: int) -> Iterator[tuple[Scope, str, list[str]]]:
    rng = random.Random(seed)
    for _ in range(count):
        scope = Scope(rng.choice(TENANTS), user_id=rng.choice(USERS),
                      agent_id=rng.choice(AGENTS))
        terms = rng.sample(corpus.words, rng.randint(1, 5))
        if rng.random() < 0.2:
            terms.append("zzyzx")  # a term no row holds
        yield scope, rng.choice(KINDS), terms


def _where(scope: Scope, kind: str) -> q.ScopeRead:
    return scope_read(scope, kind, "m.status = 'active'", NOW)


def _assert_same(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    assert [seq for seq, _ in found] == [seq for seq, _ in expected]
    for (_, score), (_, want) in zip(found, expected, strict=True):
        assert math.isclose(score, want, rel_tol=0, abs_tol=1e-9)


def test_ranking_equals_the_one_function_on_the_databases_postings(corpus: Corpus) -> None:
    dialect, compared = PostgresDialect(), 0
    for n, (scope, kind, terms) in enumerate(_queries(corpus, 7, 80)):
        read = _where(scope, kind)
        depth = DEPTHS[n % len(DEPTHS)]
        found = _run(corpus.conn, dialect.lexical(read, terms, depth))
        assert found == _run(corpus.conn, _reference(read, terms, depth)), (terms, depth)
        compared += bool(found)
    assert compared > 50  # most queries match something
    assert dialect.postings.full_loads  # the queries ran on cached postings


def test_ranks_exactly_the_visible_rows_holding_a_term(corpus: Corpus) -> None:
    dialect = PostgresDialect()
    for scope, kind, terms in _queries(corpus, 3, 30):
        read = _where(scope, kind)
        found = _run(corpus.conn, dialect.lexical(read, terms, None))
        expected = {r.seq for r in corpus.rows
                    if r.visible(scope, kind) and r.words & set(terms)}
        assert {seq for seq, _ in found} == expected
        limited = _run(corpus.conn, dialect.lexical(read, terms, 3))
        assert len(limited) == min(3, len(expected))


def test_a_rarer_term_outweighs_a_common_one(corpus: Corpus) -> None:
    scope, kind = Scope("acme", user_id="alice"), "fact"
    visible = [r for r in corpus.rows if r.visible(scope, kind)]
    df = {w: sum(w in r.words for r in visible) for w in corpus.words}
    common = max(df, key=lambda w: df[w])
    rare = min((w for w in df if df[w]), key=lambda w: df[w])
    read = _where(scope, kind)
    found = _run(corpus.conn, PostgresDialect().lexical(read, [common, rare], 50))
    holds_rare = {r.seq for r in visible if rare in r.words}
    assert {seq for seq, _ in found[: len(holds_rare)]} == holds_rare


def test_terms_that_stem_alike_count_once(corpus: Corpus) -> None:
    """'painting' and 'paint' are one lexeme: asking for both ranks as asking for one."""
    texts = ["paint the fence", "painting a portrait", "fence and gate", "a gate"]
    corpus.conn.execute(
        "INSERT INTO memories (id, ns, key, value, kind, tenant_id, status, search_text, "
        "created_at, updated_at) SELECT 'paint' || i, 'tenant:paint/fact', 'k' || i, '{}', "
        "'fact', 'paint', 'active', t, 0, 0 FROM unnest(%s::text[]) WITH ORDINALITY AS u (t, i)",
        [texts],
    )
    read = _where(Scope("paint"), "fact")
    dialect = PostgresDialect()
    both = _run(corpus.conn, dialect.lexical(read, ["painting", "paint", "fence"], 10))
    one = _run(corpus.conn, dialect.lexical(read, ["paint", "fence"], 10))
    assert both == one and len(one) == 3


def test_terms_the_parser_splits_or_drops(corpus: Corpus) -> None:
    """`to_tsvector` turns terms into lexemes, as it does a text: a term it splits gives its
    parts, a stop word nothing."""
    read = _where(Scope("acme", user_id="alice"), "fact")
    first, second = corpus.words[:2]
    dialect = PostgresDialect()
    split = _run(corpus.conn, dialect.lexical(read, [f"{first}_{second}", "the"], None))
    assert split and split == _run(corpus.conn, dialect.lexical(read, [first, second], None))
    assert split == _run(corpus.conn, _reference(read, [f"{first}_{second}", "the"], None))
    assert _run(corpus.conn, dialect.lexical(read, ["the", "of"], None)) == []


def test_cached_postings_follow_every_change(pg_server: Any) -> None:
    """A reader store ranks from cached postings while another store (its own connection)
    writes: new records join without a reload; a correction (new text), a deletion, an
    expiry and a text changed by hand in SQL are all seen at the next search."""
    url = fresh_database(pg_server)
    clock = FakeClock()
    facts = ("tenant:acme", "user:alice", "fact")
    with psycopg.connect(url, autocommit=True) as w, psycopg.connect(url, autocommit=True) as r:
        writer, reader = PostgresMemoryStore(w, clock=clock), PostgresMemoryStore(r, clock=clock)
        writer.setup()
        cache = reader.records.dialect.postings  # type: ignore[attr-defined]

        def found(query: str) -> set[str]:
            return {item.key for item in reader.search(facts, query=query)}

        def put(key: str, text: str, **kw: Any) -> None:
            writer.put(facts, key, {"subject": "alice", "predicate": key, "content": text},
                       **kw)

        put("garden", "the garden has red tulips")
        assert found("tulips") == {"garden"} and cache.full_loads == 1
        put("balcony", "tulips on the balcony", ttl=60)
        put("office", "yellow tulips at the office")
        assert found("tulips") == {"garden", "balcony", "office"}
        assert (cache.full_loads, cache.appended_loads) == (1, 1)
        put("garden", "the garden has white roses")  # a correction: a new version
        assert found("tulips") == {"balcony", "office"} and found("roses") == {"garden"}
        writer.delete(facts, "office")
        assert found("tulips") == {"balcony"}
        clock.advance(minutes=61)
        assert found("tulips") == set()
        w.execute("UPDATE memories SET search_text = 'tulips everywhere' "
                  "WHERE key = 'garden' AND status = 'active'")
        assert found("tulips") == {"garden"}
        # Patched for the correction, the deletion and the text (an expiry is masked).
        assert (cache.full_loads, cache.appended_loads, cache.patched_loads) == (1, 1, 3)


def test_records_keep_their_lexemes_and_those_without_rank_alike(pg_server: Any) -> None:
    """Each record keeps its tsvector's lexemes beside its text, once per occurrence, kept
    up to date when the text changes by any statement; a record keeping none (written
    before the store kept them) is read from its tsvector and ranks the same."""
    url = fresh_database(pg_server)
    facts = ("tenant:acme", "user:alice", "fact")
    moment = FakeClock()
    with psycopg.connect(url, autocommit=True) as conn:
        store = PostgresMemoryStore(conn, clock=moment)
        store.setup()
        for key, text in (("a", "Tulips, tulips and more TULIPS in the garden"),
                          ("b", "the garden gnome runs; gnomes run"), ("c", "the and a"),
                          ("d", "e-mail bob@example.com about v1.2.3 at 10:30")):
            store.put(facts, key, {"subject": "alice", "predicate": key, "content": text})

        def kept() -> dict[str, tuple[list[str], list[str]]]:
            return {key: (sorted((tokens or "").split()), sorted(
                lexeme for lexeme, n in zip(lexemes, counts, strict=True) for _ in range(n)))
                for key, tokens, lexemes, counts in conn.execute(
                    "SELECT key, search_tokens, tsvector_to_array(search_tsv), "
                    "array(SELECT cardinality(u.positions) FROM unnest(search_tsv) u) "
                    "FROM memories")}

        # A row written without them (one statement, as an import writes) gets them made
        # alike by the database: a put's statement parses its text once for both.
        conn.execute("INSERT INTO memories (id, ns, key, value, search_text, created_at, "
                     "updated_at) SELECT 'raw', 'notes', 'raw', '{}', search_text, 0, 0 "
                     "FROM memories WHERE key = 'a'")
        made = conn.execute("SELECT key, search_tsv::text, search_tokens FROM memories "
                            "WHERE key IN ('a', 'raw') ORDER BY key").fetchall()
        assert made[0][1:] == made[1][1:] and made[0][2]
        conn.execute("DELETE FROM memories WHERE key = 'raw'")
        rows = kept()
        assert all(tokens == lexemes for tokens, lexemes in rows.values())
        assert rows["a"][0].count("tulip") == 3 and "gnome" in rows["b"][0]
        conn.execute("UPDATE memories SET search_text = 'roses roses' WHERE key = 'b'")
        conn.execute("UPDATE memories SET search_text = NULL WHERE key = 'c'")
        assert kept()["b"][0] == ["rose", "rose"] and kept()["c"] == ([], [])

        def ranked() -> list[tuple[str, float]]:
            return [(h.key, h.score) for h in PostgresMemoryStore(conn, clock=moment).search(
                facts, query="tulips garden roses")]

        with_tokens = ranked()
        conn.execute("UPDATE memories SET search_tokens = NULL")
        assert ranked() == with_tokens and {k for k, _ in with_tokens} == {"a", "b"}


@pytest.mark.perf_contract
def test_a_cached_hybrid_search_takes_two_round_trips(
    pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hybrid search runs its two rankings together: their first statements (the vector
    cache's counters, the terms' lexemes with the postings' counters) share a round trip,
    then the page's rows take one; after a write both caches fetch the new record in one
    more (sequential rankings took three and five)."""
    from langgraph_typed_memory.store.postgres import store as pg_module

    facts = ("tenant:acme", "user:alice", "fact")
    trips: list[list[str]] = []
    real = pg_module.drive_sync

    def counting(plan: Any, execute: Any, *args: Any, reads: Any = None, **kw: Any) -> Any:
        def one(request: Any) -> Any:
            trips.append([getattr(request, "text", type(request).__name__)])
            return execute(request)

        def together(steps: Any) -> Any:
            trips.append([step.text for step in steps])
            return reads(steps)

        return real(plan, one, *args, reads=together if reads else None, **kw)

    with psycopg.connect(fresh_database(pg_server), autocommit=True) as conn:
        store = PostgresMemoryStore(conn, index=hash_index(), clock=FakeClock())
        store.setup()
        for i, text in enumerate(("red tulips in the garden", "tulips on the balcony",
                                  "a blue door", "roses, tulips and a garden gnome")):
            store.put(facts, f"k{i}", {"subject": "alice", "predicate": f"p{i}",
                                       "content": text})
        monkeypatch.setattr(pg_module, "drive_sync", counting)

        def search() -> list[str]:
            trips.clear()
            found = store.search(facts, query="tulips in the garden")
            assert found.retrieval_mode == "hybrid"  # type: ignore[attr-defined]
            return [item.key for item in found]

        search()  # loads both caches
        assert search()[0] == "k0" and len(trips) == 2
        # the counters (asked by both caches, sent once) and the lexemes, pipelined
        assert len(trips[0]) == 2
        store.put(facts, "k4", {"subject": "alice", "predicate": "p4",
                                "content": "tulips in the garden again"})
        assert "k4" in search() and len(trips) == 3
        assert search()[0] in ("k0", "k4") and len(trips) == 2


def test_both_backends_rank_the_same_tokens_alike(pg_server: Any) -> None:
    """Rows whose words both tokenizers keep as they are (FTS5's porter tokens and the
    `english` lexemes agree, no stop word) rank alike on SQLite and Postgres: the same
    records in the same order with the same scores, to the bit."""
    from langgraph_typed_memory import SqliteMemoryStore
    from langgraph_typed_memory.store.sqlite.dialect import SqliteDialect
    from langgraph_typed_memory.store.sqlite.store import connect_sqlite
    from tests.store.test_sqlite_lexical import _run as run_sqlite

    rng = random.Random(41)
    lite = connect_sqlite(":memory:")
    SqliteMemoryStore(lite).setup()
    sqlite = SqliteDialect()
    with psycopg.connect(fresh_database(pg_server), autocommit=True) as conn:
        PostgresMemoryStore(conn).setup()
        candidates = _vocabulary(conn, rng, 80)
        porter = run_sqlite(lite, sqlite.postings.tokenizer.tokens(candidates))
        english = dict(conn.execute(
            "SELECT w, to_tsvector('english', w)::text FROM unnest(%s::text[]) AS w",
            [candidates]).fetchall())
        words = [w for w, tokens in zip(candidates, porter, strict=True)
                 if tokens == (w,) and english[w] == f"'{w}':1"]
        assert len(words) >= 30
        zipf = [1 / (rank + 1) for rank in range(len(words))]
        rows = []
        for i in range(800):
            text = " ".join(rng.choices(words, zipf, k=rng.randint(1, 15)))
            rows.append((f"id{i}", f"ns{i}", f"k{i}", "{}", rng.choice(KINDS),
                         rng.choice(TENANTS), rng.choice(USERS), rng.choice(AGENTS),
                         rng.choice(STATUSES), text, NOW, NOW,
                         rng.choice([None] * 8 + [NOW - 60, NOW + 60])))
        insert = ("INSERT INTO memories (id, ns, key, value, kind, tenant_id, user_id, agent_id, "
                  "status, search_text, created_at, updated_at, expires_at) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        lite.executemany(insert, rows)
        lite.commit()
        with conn.cursor() as cur:
            cur.executemany(to_psycopg(insert), rows)
        ids = [dict(lite.execute("SELECT seq, id FROM memories").fetchall()),
               dict(conn.execute("SELECT seq, id FROM memories").fetchall())]
        postgres, compared = PostgresDialect(), 0
        for n in range(120):
            scope = Scope(rng.choice(TENANTS), user_id=rng.choice(USERS),
                          agent_id=rng.choice(AGENTS))
            read = _where(scope, rng.choice(KINDS))
            terms = rng.sample(words, rng.randint(1, 5))
            depth = DEPTHS[n % len(DEPTHS)]
            found = [[(names[seq], score) for seq, score in ranking] for names, ranking in zip(
                ids, (run_sqlite(lite, sqlite.lexical(read, terms, depth)),
                      _run(conn, postgres.lexical(read, terms, depth))), strict=True)]
            assert found[0] == found[1], (terms, depth)
            compared += len(found[0])
        assert compared > 300
    lite.close()
