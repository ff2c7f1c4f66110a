"""SQLite lexical retriever: the dialect's ranking against the one ranking on FTS5's postings.

Seeded random corpora (several tenants, users and agents, two ranked kinds, some superseded
and expired rows, some rows without text, a Zipf-like vocabulary with porter-stem siblings
so common terms match many rows and scores tie) are queried with 1-6 terms at several
depths. The reference indexes the texts of the scope's live rows (the scope and expiry
filtered in SQL) in an FTS5 table of the store's tokenizer, reads their postings back (an
`fts5vocab` instance table) and ranks them with `bm25_ranked` as one cell:
`SqliteDialect.lexical`, which ranks per-cell postings cached in this process, from kept
tokens or tokenized apart, must return exactly that list (same seqs, bit-identical scores,
same order), with or without a depth, and so must the cached postings after every kind of
change to the scope or to the rest of the table.
"""

from __future__ import annotations

import dataclasses
import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.errors import StoreNotSetUp
from langgraph_typed_memory.namespaces import Scope
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.protocol import Plan, Reads, Sql, interleave
from langgraph_typed_memory.store.core.search import scope_read
from langgraph_typed_memory.store.index.bm25 import bm25_ranked
from langgraph_typed_memory.store.index.fts5 import TOKENIZE, Tokenizer
from langgraph_typed_memory.store.index.postings import ScopePostings
from langgraph_typed_memory.store.index.scopes import TRIM_CHANGES
from langgraph_typed_memory.store.sqlite.dialect import SqliteDialect
from langgraph_typed_memory.store.sqlite.store import connect_sqlite

NOW = 1_000_000.0
WORDS = [f"w{i}" for i in range(120)] + ["run", "runs", "running", "cat", "cats"]
ZIPF = [1.0 / (rank + 1) for rank in range(len(WORDS))]
TENANTS = ["t1", "t2", "t3"]
USERS = [None, "u1", "u2"]
AGENTS = [None, "a1"]


def _run(conn: sqlite3.Connection, plan: Plan[Any]) -> Any:
    """Answer each statement of a plan on the connection; the plan's value (a plan may need
    none: tokens of known characters)."""
    try:
        request = next(plan)
        while True:
            if isinstance(request, Reads):  # plans run together (`interleave`)
                answer: Any = [conn.execute(r.text, r.params).fetchall() for r in request.steps]
            else:
                assert isinstance(request, Sql)
                answer = conn.execute(request.text, request.params).fetchall()
            request = plan.send(answer)
    except StopIteration as stop:
        return stop.value


def _fill(conn: sqlite3.Connection, rng: random.Random, rows: int) -> None:
    """Random rows straight into `memories`."""
    for i in range(rows):
        text = (None if rng.random() < 0.05 else
                " ".join(rng.choices(WORDS, ZIPF, k=rng.randint(1, 18))))
        status = rng.choices(["active", "superseded", "expired"], [0.85, 0.1, 0.05])[0]
        expires = rng.choice([None, None, None, NOW - 10.0, NOW + 10.0])
        _insert(conn, i, rng.choice(["fact", "episode"]), rng.choice(TENANTS),
                rng.choice(USERS), text, expires, agent=rng.choice(AGENTS), status=status,
                tokens=rng.random() < 0.5)
    conn.commit()


def _insert(conn: sqlite3.Connection, i: int, kind: str, tenant: str, user: str | None,
            text: str | None, expires: float | None = None, *, agent: str | None = None,
            status: str = "active", tokens: bool = False) -> int:
    """One row straight into `memories` (its triggers index the text), with its text's
    tokens kept (as the store writes it) or not (as a row written before the tokens were
    kept, or imported); its seq."""
    return int(conn.execute(
        "INSERT INTO memories (id, ns, key, value, kind, tenant_id, user_id, agent_id, "
        "status, search_text, created_at, updated_at, expires_at, search_tokens) "
        "VALUES (?, ?, ?, '{}', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
        [f"id{i}", f"ns{i}", f"k{i}", kind, tenant, user, agent, status, text, NOW, NOW,
         expires, Tokenizer().joined(text) if tokens else None],
    ).fetchone()[0])


@pytest.fixture(scope="module", params=[0, 1, 2])
def corpus(request: pytest.FixtureRequest) -> Iterator[tuple[sqlite3.Connection, int]]:
    conn = connect_sqlite(":memory:")
    SqliteMemoryStore(conn).setup()
    _fill(conn, random.Random(request.param), 1500)
    yield conn, request.param
    conn.close()


def _where(rng: random.Random) -> q.ScopeRead:
    """A random visible scope, as the store's ranked search filters it."""
    scope = Scope(rng.choice(TENANTS), user_id=rng.choice(USERS), agent_id=rng.choice(AGENTS))
    return scope_read(scope, rng.choice(["fact", "episode"]), "m.status = 'active'", NOW)


def _reference(
    conn: sqlite3.Connection, read: q.ScopeRead, terms: list[str], depth: int | None
) -> list[tuple[int, float]]:
    """`bm25_ranked` on the postings FTS5 makes of the scope's live rows: their texts
    indexed by a full-text table of the store's tokenizer, read back through `fts5vocab`."""
    where, params = read.live()
    conn.execute("DROP TABLE IF EXISTS temp.reference_instances")
    conn.execute("DROP TABLE IF EXISTS temp.reference")
    conn.execute(f"CREATE VIRTUAL TABLE temp.reference USING fts5(x, tokenize='{TOKENIZE}')")
    conn.execute("CREATE VIRTUAL TABLE temp.reference_instances "
                 "USING fts5vocab(temp, reference, instance)")
    rows: dict[int, dict[str, int]] = {}
    for seq, text in conn.execute(
            f"SELECT m.seq, m.search_text FROM memories m WHERE {where} ORDER BY m.seq", params):
        rows[seq] = {}
        conn.execute("INSERT INTO temp.reference (rowid, x) VALUES (?, ?)", [seq, text])
    for seq, token, count in conn.execute(
            "SELECT doc, term, count(*) FROM temp.reference_instances GROUP BY doc, term"):
        rows[seq][token] = count
    entry = ScopePostings(0, 0)
    entry.append([(seq, list(held), list(held.values()), None) for seq, held in rows.items()])
    tokens = _run(conn, SqliteDialect().postings.tokenizer.tokens(list(dict.fromkeys(terms))))
    return bm25_ranked([entry], [t for term in tokens for t in term], read.now, depth)


def test_lexical_equals_reference(corpus: tuple[sqlite3.Connection, int]) -> None:
    conn, seed = corpus
    rng = random.Random(100 + seed)
    dialect = SqliteDialect()
    tied = 0
    for _ in range(150):
        read = _where(rng)
        terms = rng.choices(WORDS + ["absent"], ZIPF + [0.02], k=rng.randint(1, 6))
        for depth in (1, 3, 10, 50, None):
            expected = _reference(conn, read, terms, depth)
            got = _run(conn, dialect.lexical(read, terms, depth))
            assert got == expected, (terms, depth, read)
            scores = [score for _, score in expected]
            tied += len(scores) - len(set(scores))
    assert tied > 0  # the corpora exercise the tie order


def test_no_full_text_table_is_kept(monkeypatch) -> None:
    """The store keeps no full-text table nor trigger feeding one: a database set up while
    it kept them (before migration 0023) loses them at its next set-up and ranks as before."""
    conn = connect_sqlite(":memory:")
    monkeypatch.setattr(SqliteDialect, "migrations", lambda self, dims, every=(
        SqliteDialect.migrations): tuple(m for m in every(self, dims) if m[0] < "0023"))
    SqliteMemoryStore(conn).setup()
    _fill(conn, random.Random(3), 300)
    monkeypatch.undo()

    def full_text() -> set[str]:
        return {name for name, in conn.execute(
            "SELECT name FROM sqlite_master WHERE name LIKE 'memory_fts%'")}

    assert {"memory_fts_fact", "memory_fts_episode_vocab", "memory_fts_observation_insert",
            "memory_fts_fact_data"} <= full_text()  # tables, shadow tables, triggers
    read = scope_read(Scope("t1", user_id="u1"), "fact", "m.status = 'active'", NOW)
    before = _run(conn, SqliteDialect().lexical(read, ["w1", "run"], 20))
    SqliteMemoryStore(conn).setup()
    assert not full_text() and before
    assert _run(conn, SqliteDialect().lexical(read, ["w1", "run"], 20)) == before == \
        _reference(conn, read, ["w1", "run"], 20)
    fresh = connect_sqlite(":memory:")
    SqliteMemoryStore(fresh).setup()
    assert not {name for name, in fresh.execute(
        "SELECT name FROM sqlite_master WHERE name LIKE 'memory_fts%'")}
    conn.close()
    fresh.close()


def test_cached_postings_follow_every_change() -> None:
    """Records added to the scope are appended to its postings; records added elsewhere
    change nothing here; an update of text, status or expiry, and a delete, patch the scope
    (the record masked, its row fetched again); expiry at query time is masked. After each,
    the ranking is the reference's. A change the log cannot account for (trimmed) reloads."""
    conn = connect_sqlite(":memory:")
    SqliteMemoryStore(conn).setup()
    rng = random.Random(5)
    _fill(conn, rng, 600)
    read = scope_read(Scope("t1", user_id="u1"), "fact", "m.status = 'active'", NOW)
    dialect = SqliteDialect()
    cache = dialect.postings
    queries = [rng.choices(WORDS, ZIPF, k=rng.randint(1, 5)) for _ in range(12)]

    def check(at: float = NOW) -> None:
        later = dataclasses.replace(read, now=at)
        for terms in queries:
            assert _run(conn, dialect.lexical(later, terms, 20)) == \
                _reference(conn, later, terms, 20), terms

    check()
    loads = cache.full_loads  # the cells of the scope: tenant-wide and the user's
    assert (loads, cache.appended_loads) == (2, 0)
    seqs = [_insert(conn, 10_000 + i, "fact", "t1", "u1", "w0 w1 run " * (i + 1),
                    tokens=True) for i in range(3)]
    check()
    assert (cache.full_loads, cache.appended_loads) == (loads, 1)
    for i, text in enumerate((None, "_ -")):  # rows without a token
        _insert(conn, 10_100 + i, "fact", "t1", "u1", text)
        check()
    assert (cache.full_loads, cache.appended_loads) == (loads, 3)
    before = [_run(conn, dialect.lexical(read, terms, 20)) for terms in queries]
    for i in range(5):  # other scopes, other kinds: not this scope's rows nor statistics
        _insert(conn, 20_000 + i, "fact", "t2", None, "w0 w0 w2 cats")
        _insert(conn, 30_000 + i, "episode", "t1", "u1", "w1 w3")
    check()
    assert cache.full_loads == loads
    assert [_run(conn, dialect.lexical(read, terms, 20)) for terms in queries] == before
    changes = [
        ("UPDATE memories SET search_text = 'w5 w5 cat' WHERE seq = ?", [seqs[0]]),
        ("UPDATE memories SET status = 'superseded' WHERE seq = ?", [seqs[1]]),
        ("UPDATE memories SET expires_at = ? WHERE seq = ?", [NOW + 5.0, seqs[2]]),
        ("DELETE FROM memories WHERE seq = ?", [seqs[0]]),
    ]
    where, params = read.visible()
    held = [r[0] for r in conn.execute(f"SELECT m.seq FROM memories m WHERE {where} "
                                       "AND m.seq < 600", params)]
    older = rng.sample(held, 3)  # records held since the first load
    changes += [
        ("UPDATE memories SET search_text = 'w1 w1 w1 dog' WHERE seq = ?", [older[0]]),
        ("UPDATE memories SET status = 'revoked' WHERE seq = ?", [older[1]]),
        ("DELETE FROM memories WHERE seq IN (?, ?)", older[1:]),
        ("UPDATE memories SET search_text = 'w0 w2' WHERE seq = ?", [older[0]]),
    ]
    for statement, values in changes:
        patched = cache.patched_loads
        conn.execute(statement, values)
        check()
        assert cache.full_loads == loads and cache.patched_loads > patched, statement
    check(at=NOW + 6.0)  # seqs[2] has expired: masked, no reload
    assert cache.full_loads == loads
    patched = cache.patched_loads
    # The log trimmed past a change the cache has not read: counted, not found, reloaded.
    conn.execute("UPDATE memories SET search_text = 'w3 w3' WHERE seq = ?", [older[0]])
    conn.execute(TRIM_CHANGES, [0])
    check()
    assert (cache.full_loads, cache.patched_loads) == (loads + 1, patched)
    conn.close()


def test_records_keep_their_texts_tokens_until_the_text_changes() -> None:
    """The store writes a record's tokens beside its text, in a `put` and in a batch; a
    text with a character no search has learned yet, and any change of the text that does
    not write its tokens too, leave none (the text is tokenized when a search reads it); a
    migrated database of records without tokens searches as one with them."""
    conn = connect_sqlite(":memory:")
    store = SqliteMemoryStore(conn)
    store.setup()
    facts = ("tenant:t1", "user:u1", "fact")

    def kept() -> dict[str, tuple[str, str | None]]:
        return {key: (text, tokens) for key, text, tokens in conn.execute(
            "SELECT key, search_text, search_tokens FROM memories ORDER BY seq")}

    store.put(facts, "a", {"subject": "user", "predicate": "pet", "content": "Runs with cats"})
    store.batch([PutOp(facts, "b", {"subject": "user", "predicate": "home",
                                    "content": "Lives in Ätna's shadow"}),
                 PutOp(facts, "c", {"subject": "user", "predicate": "job",
                                    "content": "Teaches running"})])
    rows = kept()
    tokenizer = Tokenizer()
    assert rows["a"][1] == tokenizer.joined(rows["a"][0]) and "cat" in rows["a"][1].split()
    assert rows["c"][1] == tokenizer.joined(rows["c"][0]) is not None
    assert rows["b"][1] is None  # "Ä": not learned from FTS5 yet
    ranked = [h.key for h in store.search(facts, query="cats running atna")]
    assert set(ranked) == {"a", "b", "c"}
    store.put(facts, "d", {"subject": "user", "predicate": "trip", "content": "Saw Ätna"})
    assert kept()["d"][1] == "user trip saw atna"  # learned by the search
    store.search(facts, query="中")  # learned: a token of 10,930 of them is cut mid-character
    store.put(facts, "e", {"subject": "user", "predicate": "long", "content": "中" * 10_930})
    assert kept()["e"][1] is None
    conn.execute("UPDATE memories SET search_text = 'w1 w2' WHERE key = 'a'")
    conn.execute("UPDATE memories SET search_text = search_text WHERE key = 'c'")
    rows = kept()
    assert rows["a"] == ("w1 w2", None) and rows["c"][1] is not None
    def ranked_by_a_new_store() -> list[tuple[str, float]]:
        return [(h.key, h.score) for h in SqliteMemoryStore(conn, clock=lambda: moment).search(
            facts, query="cats running atna teaches")]

    moment = datetime.now(UTC)  # scores decay with time: both rankings at one moment
    with_tokens = ranked_by_a_new_store()
    conn.execute("UPDATE memories SET search_tokens = NULL")
    assert ranked_by_a_new_store() == with_tokens and len(with_tokens) == 3
    conn.close()


def test_a_database_not_migrated_since_an_upgrade_says_to_call_setup(monkeypatch) -> None:
    """A database set up by an older version (no kept tokens yet) refuses a write with
    `StoreNotSetUp` naming the fix, writes nothing, and takes the write once migrated."""
    conn = connect_sqlite(":memory:")
    monkeypatch.setattr(SqliteDialect, "migrations", lambda self, dims, every=(
        SqliteDialect.migrations): tuple(m for m in every(self, dims) if m[0] < "0022"))
    SqliteMemoryStore(conn).setup()
    monkeypatch.undo()
    store = SqliteMemoryStore(conn)
    facts = ("tenant:t1", "user:u1", "fact")
    value = {"subject": "user", "predicate": "pet", "content": "Runs with cats"}
    with pytest.raises(StoreNotSetUp, match="older than this version.*store.setup()"):
        store.put(facts, "a", value)
    with pytest.raises(StoreNotSetUp, match="older than this version"):
        store.search(facts, query="cats")
    assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
    store.setup()
    store.put(facts, "a", value)
    assert [h.key for h in store.search(facts, query="cats")] == ["a"]
    conn.close()


def test_terms_the_tokenizer_splits_or_drops(corpus: tuple[sqlite3.Connection, int]) -> None:
    """FTS5's own tokenizer turns terms into tokens: a term of several tokens gives each of
    them, one of none gives nothing, and the ranking is the reference's either way."""
    conn, _ = corpus
    dialect = SqliteDialect()
    tokens = _run(conn, dialect.postings.tokenizer.tokens(["running", "w1_w2", "_", "cats"]))
    assert tokens == [("run",), ("w1", "w2"), (), ("cat",)]
    read = _where(random.Random(11))
    for terms in (["w1_w2"], ["w1_w2", "w3"], ["_", "w1"], ["running", "runs", "w0"]):
        assert _run(conn, dialect.lexical(read, terms, 10)) == _reference(conn, read, terms, 10)
    assert _run(conn, dialect.lexical(read, ["w1_w2"], None)) == \
        _run(conn, dialect.lexical(read, ["w1", "w2"], None))


def test_interleaved_rankings_keep_their_own_tokens(
    corpus: tuple[sqlite3.Connection, int],
) -> None:
    """The reads of a batch run interleaved: rankings tokenizing at once each get their own
    tokens and the reference's ranking."""
    conn, _ = corpus
    rng = random.Random(12)
    dialect = SqliteDialect()
    reads = [_where(rng) for _ in range(4)]
    terms = [[f"w{i}", f"w{i + 40}", f"w{i + 80}"] for i in range(4)]
    together = _run(conn, interleave([dialect.lexical(r, t, 10)
                                      for r, t in zip(reads, terms, strict=True)]))
    assert together == [_reference(conn, r, t, 10) for r, t in zip(reads, terms, strict=True)]
    # ASCII texts are tokenized in this process: the probe table is never created
    # (interleaved probes of new characters: tests/store/test_fts5_tokenizer.py)
    probes = conn.execute("SELECT count(*) FROM sqlite_temp_master WHERE name = "
                          "'memory_tokenizer'").fetchone()
    assert probes == (0,)
