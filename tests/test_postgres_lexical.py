"""The Postgres lexical retriever (`PostgresDialect.lexical`) against the statement it replaced.

The statement was rewritten for speed (each row matched against each term once, as it is read,
instead of rows joined to terms twice); the ranking must not change: the same rows in the same
order with the same scores (to float rounding), on seeded random corpora spread over tenants,
users and agents, with rows that are not active or have expired. `_reference` is the replaced
statement, verbatim except where it left ties to the plan: its IDF sums are added in term order
and its 2 x depth cut breaks ties by seq, as the new statement does. One change is deliberate:
terms that stem alike count once (the replaced statement counted such a term's df twice).
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
from langgraph_typed_memory.store import queries as q
from langgraph_typed_memory.store.discovery import scope_read
from langgraph_typed_memory.store.postgres import to_psycopg
from langgraph_typed_memory.store.postgres_sql import PostgresDialect
from langgraph_typed_memory.store.protocol import Plan, Reads, Sql
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
    where: str, params: list[Any], terms: list[str], depth: int | None
) -> Plan[list[tuple[int, float]]]:
    """The statement `PostgresDialect.lexical` ran before, ties made deterministic."""
    quoted = [f"'{t}'" for t in dict.fromkeys(terms)]
    any_term = " | ".join(quoted)
    keep = "" if depth is None else f" ORDER BY idf DESC, len, hits.seq LIMIT {2 * int(depth)}"
    rows = yield Sql(
        "WITH terms AS MATERIALIZED (SELECT to_tsquery('english', t) AS q, i "
        "FROM unnest(?::text[]) WITH ORDINALITY AS u (t, i)), "
        "hits AS MATERIALIZED (SELECT m.seq, m.search_tsv FROM memories m "
        f"WHERE m.search_tsv @@ to_tsquery('english', ?) AND {where}), "
        "df AS (SELECT terms.q, min(terms.i) AS i, count(*) AS n FROM terms JOIN hits "
        "ON hits.search_tsv @@ terms.q GROUP BY terms.q), "
        "total AS (SELECT GREATEST((SELECT reltuples FROM pg_class "
        "WHERE oid = 'memories'::regclass), 2 * max(n), 1) AS n FROM df), "
        "best AS (SELECT hits.seq, min(length(hits.search_tsv)) AS len, "
        "sum(ln(1 + (total.n - df.n + 0.5) / (df.n + 0.5)) ORDER BY df.i) AS idf "
        f"FROM hits JOIN df ON hits.search_tsv @@ df.q, total GROUP BY hits.seq{keep}) "
        "SELECT best.seq, best.idf + 0.01 * ts_rank_cd(m.search_tsv, "
        "to_tsquery('english', ?)) AS score FROM best JOIN memories m ON m.seq = best.seq "
        "ORDER BY score DESC, best.seq" + (" LIMIT ?" if depth is not None else ""),
        [quoted, any_term, *params, any_term, *([depth] if depth is not None else [])],
        prepare=False,
    )
    return [(seq, float(score)) for seq, score in rows]


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
        # N comes from the table's statistics: autovacuum must not change them mid-test.
        conn.execute("ALTER TABLE memories SET (autovacuum_enabled = false)")
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


@pytest.mark.parametrize("analyzed", [False, True], ids=["no-statistics", "analyzed"])
def test_ranking_equals_the_replaced_statement(corpus: Corpus, analyzed: bool) -> None:
    if analyzed:  # N: 2 x the largest df without statistics, the table's rows with them
        corpus.conn.execute("ANALYZE memories")
    dialect, compared = PostgresDialect(), 0
    for n, (scope, kind, terms) in enumerate(_queries(corpus, 7, 60)):
        read = _where(scope, kind)
        depth = DEPTHS[n % len(DEPTHS)]
        found = _run(corpus.conn, dialect.lexical(read, terms, depth))
        _assert_same(found, _run(corpus.conn, _reference(*read.live(), terms, depth)))
        compared += bool(found)
    assert compared > 40  # most queries match something
    assert dialect.postings.full_loads  # the ranked queries ran on cached postings


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
    """'painting' and 'paint' are one lexeme: asking for both ranks as asking for one (the
    replaced statement counted such a term's df twice)."""
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


class _Rollback(Exception):
    """Leaves a `transaction()` block by rolling it back."""


@pytest.mark.parametrize("kind", ["fact", "episode", "observation"])
def test_a_search_reads_its_kinds_full_text_index_only(corpus: Corpus, kind: str) -> None:
    """Migration 0012 indexes each ranked kind apart: the lexical statement, planned with its
    values, must be able to use its kind's index. The planner is asked whether it can, not
    whether it would on this small table: in a transaction rolled back, with sequential scans
    off and the scope index dropped."""
    read = _where(Scope("acme", user_id="alice"), kind)
    statement = next(PostgresDialect().lexical(read, corpus.words[:3], None))
    with pytest.raises(_Rollback), corpus.conn.transaction():
        corpus.conn.execute("SET LOCAL enable_seqscan = off")
        corpus.conn.execute("DROP INDEX memories_scope")
        plan = "\n".join(r[0] for r in corpus.conn.execute(
            "EXPLAIN " + to_psycopg(statement.text), statement.params, prepare=False))
        raise _Rollback
    assert f"memories_fts_{kind}" in plan
    assert not any(f"memories_fts_{other}" in plan for other in ("fact", "episode")
                   if other != kind)


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
        cache = reader._engine.dialect.postings  # type: ignore[attr-defined]

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


def test_a_cached_hybrid_search_takes_two_round_trips(
    pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hybrid search runs its two rankings together: their first statements (the vector
    cache's counters, the terms' lexemes with the postings' counters) share a round trip,
    then the page's rows take one; after a write both caches fetch the new record in one
    more (sequential rankings took three and five)."""
    from langgraph_typed_memory.store import postgres as pg_module

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
