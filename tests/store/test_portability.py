"""Encrypted export and import of a scope, on every backend.

The scope's rows are compared through an independent dump (every column the database has,
read with the test's own SQL), so a column the exporter forgets fails the round trip.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langgraph_typed_memory import (
    EmbeddingDimensionMismatch,
    ExportDecryptError,
    ExportFileError,
    ExportFormatError,
    ImportCollision,
    InvalidPassphrase,
    SqliteMemoryStore,
)
from langgraph_typed_memory.store.core.protocol import Sql
from langgraph_typed_memory.store.governance.envelope import seal, unseal
from tests.conftest import FakeClock, fresh_database, hash_index

CANARY = "zqport" + uuid.uuid4().hex[:12]
PASS = "correct horse battery staple"
N = 2**10  # the explicit, documented low scrypt cost: tests only
ALICE_PREFIXES = [("memories", "alice")]
ALL_PREFIXES = [("memories", "alice"), ("memories", "bob")]
PG_SKIPPED = bool(os.environ.get("TYPED_MEMORY_SKIP_POSTGRES"))


# ------------------------------------------------------------------ an independent dump


def sql(store: Any, text: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    def plan() -> Any:
        return (yield Sql(text, params or []))

    return store._run(plan())  # type: ignore[no-any-return]


def columns(store: Any, table: str) -> list[str]:
    if store.records.dialect.name == "sqlite":
        names = [r[0] for r in sql(store, f"SELECT name FROM pragma_table_info('{table}')")]
    else:
        names = [r[0] for r in sql(
            store, "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
            "ORDER BY ordinal_position", [table])]
    return [c for c in names if c not in ("seq", "search_tsv", "search_tokens")]


def _norm(store: Any, row: dict[str, Any]) -> dict[str, Any]:
    for col in ("value", "evidence", "contradicts", "counts"):
        if isinstance(row.get(col), str):
            row[col] = json.loads(row[col])
    if "needs_review" in row:
        row["needs_review"] = bool(row["needs_review"])
    return row


def dump(store: Any, tenant: str, user: str | None = None,
         prefixes: list[tuple[str, ...]] = ()) -> dict[str, Any]:
    """Every row of the scope (seq order, seq left out), its vectors, audit and deletions."""
    cols = columns(store, "memories")
    scope = "tenant_id = ?" + ("" if user is None else " AND user_id = ?")
    params = [tenant] if user is None else [tenant, user]
    rows = sql(store, f"SELECT seq, {', '.join(cols)} FROM memories WHERE kind IS NOT NULL "
                      f"AND {scope} ORDER BY seq", params)
    untyped = sql(store, f"SELECT seq, {', '.join(cols)} FROM memories WHERE kind IS NULL "
                         "ORDER BY seq")
    untyped = [r for r in untyped if any(
        tuple(r[1 + cols.index("ns")].split("."))[:len(p)] == p for p in prefixes)]
    picked = sorted(rows + untyped, key=lambda r: r[0])
    seq_id = {r[0]: r[1 + cols.index("id")] for r in picked}
    memories = [_norm(store, dict(zip(cols, r[1:], strict=True))) for r in picked]
    vectors: dict[tuple[str, str], list[float]] = {}
    if store.records.has_vector_table:
        pg = store.records.dialect.name == "postgres"
        for seq, fld, raw in sql(store, "SELECT seq, field, " + (
                "embedding::text" if pg else "embedding") + " FROM memory_vectors"):
            if seq in seq_id:
                vec = np.asarray(json.loads(raw), np.float32) if pg else np.frombuffer(
                    raw, np.float32)
                vectors[(seq_id[seq], fld)] = vec.tolist()
    audit_cols = columns(store, "memory_audit")
    audit = [_norm(store, dict(zip(audit_cols, r, strict=True))) for r in sql(
        store, f"SELECT {', '.join(audit_cols)} FROM memory_audit WHERE {scope} ORDER BY seq",
        params)]
    del_cols = columns(store, "memory_deletions")
    deletions = [_norm(store, dict(zip(del_cols, r, strict=True))) for r in sql(
        store, f"SELECT {', '.join(del_cols)} FROM memory_deletions WHERE {scope} "
               "ORDER BY at, id", params)]
    return {"memories": memories, "vectors": vectors, "audit": audit, "deletions": deletions}


def total_rows(store: Any) -> int:
    return sum(sql(store, f"SELECT count(*) FROM {t}")[0][0]
               for t in ("memories", "memory_audit", "memory_deletions"))


def searches(store: Any) -> list[Any]:
    out = []
    for user in ("alice", "bob"):
        for kind, query in (("fact", "where does the user live Lyon"), ("fact", CANARY),
                            ("episode", "quarterly report"), ("preference", None)):
            hits = store.search(("tenant:acme", f"user:{user}", kind), query=query)
            out.append((hits.retrieval_mode, [(h.key, h.status, round(h.score or 0.0, 6),
                                               h.memory.get("tier")) for h in hits]))
    out.append([i.key for i in store.search(("memories", "alice"), query="untyped note")])
    return out


# ------------------------------------------------------------------ a scope worth exporting


def city(name: str, confidence: float) -> dict[str, Any]:
    return {"kind": "fact", "subject": "user", "predicate": "home_city",
            "content": f"The user lives in {name}.", "value": name, "confidence": confidence,
            "grounding": f"I live in {name}"}


def populate(store: Any, clock: FakeClock) -> None:
    """Every kind and status, history, evidence, contradictions, vectors, TTL, untyped data
    and a deletion event, for alice and bob of acme, tenant-wide records, and another tenant."""
    store.put(("tenant:acme", "user:carol", "preference"), "tone", {"value": "gone"})
    store.erase("acme", "carol", reason="left the company")
    for user in ("alice", "bob"):
        word = CANARY if user == "alice" else "plainword"
        base = ("tenant:acme", f"user:{user}")
        who = {"tenant_id": "acme", "user_id": user}
        store.put((*base, "preference"), "tone", {"value": "formal"})
        clock.advance(minutes=5)
        store.put((*base, "preference"), "tone", {"value": f"terse {word}"})
        store.put((*base, "preference"), "lang", {"value": "fr"})
        store.delete((*base, "preference"), "lang")
        store.put((*base, "fact"), "note", {"subject": user, "predicate": "note",
                                            "content": f"{user} wrote {word} on the wiki",
                                            "metadata": {"tag": word, "project": "atlas"}})
        store.put((*base, "fact"), "short", {"subject": user, "predicate": "badge",
                                             "content": "temporary badge 42"}, ttl=60)
        store.promote([city("Lyon", 0.95)], run_id=f"r1-{user}", turn=1, **who)
        clock.advance(hours=1)
        store.promote([city("Nice", 0.72)], run_id=f"r2-{user}", turn=2, **who)
        store.promote([city("Lyon", 0.95)], run_id=f"r3-{user}", turn=3, **who)
        store.put((*base, "episode"), "q3", {"title": "Quarterly report",
                                            "summary": f"drafted the quarterly report {word}",
                                            "outcome": "success"})
        store.put((*base, "observation"), "o", {"category": "style", "quote": f"q {word}"})
        store.put((*base, "agent:bot", "procedure"), "p", {"rule": f"always cite {word}"})
        store.put((*base, "agent:bot", "fact"), "af", {"subject": user, "predicate": "seen",
                                                       "content": f"bot met {user}"})
        store.put(("memories", user), "m", {"text": f"untyped note {word}"})
        store.put(("memories", user, "deep"), "m2", {"text": "nested untyped note"})
        clock.advance(days=2)
    store.put(("tenant:acme", "policy"), "refunds", {"value": {"max": 500}, "created_by": "ops"})
    store.promote([{"kind": "fact", "subject": "acme", "predicate": "region", "scope": "tenant",
                    "content": "Acme runs in eu-west-1.", "confidence": 0.9}],
                  run_id="r9", tenant_id="acme", source="alice")
    store.put(("tenant:globex", "user:alice", "preference"), "tone", {"value": "globex"})
    # access tracking as a reader would leave it
    sql(store, "UPDATE memories SET access_count = 3, last_accessed_at = ? WHERE key = 'q3'",
        [clock().timestamp()])
    store.put(("memories", "carl"), "m", {"text": "not exported"})


@pytest.fixture
def source(backend_store_factory: Any, clock: FakeClock) -> Any:
    store = backend_store_factory(hash_index(), clock=clock)
    populate(store, clock)
    return store


# ------------------------------------------------------------------ round trips


def test_tenant_round_trip_reproduces_rows_vectors_audit_and_search(
        source, backend_store_factory, clock, tmp_path):
    before = dump(source, "acme", prefixes=ALL_PREFIXES)
    path = tmp_path / "acme.lgtm"
    report = source.export_scope(path, PASS, tenant_id="acme", untyped_prefixes=ALL_PREFIXES,
                                 scrypt_n=N)
    assert dump(source, "acme", prefixes=ALL_PREFIXES) == before  # exporting changes nothing
    assert report.records == {"preference": 6, "fact": 11, "episode": 2, "observation": 2,
                              "procedure": 2, "policy": 1, "untyped": 4}
    assert report.vectors == len(before["vectors"]) > 0
    assert report.audit_events == len(before["audit"]) and report.deletion_events == 1
    assert report.embedding == {"dims": 32, "model": "tests.fake_embeddings.HashEmbeddings"}
    assert report.bytes_written == path.stat().st_size
    assert oct(path.stat().st_mode & 0o777) == "0o600"

    target = backend_store_factory(hash_index(), clock=clock)
    imported = target.import_scope(path, PASS)
    assert imported.records == report.records and imported.warnings == []
    assert imported.vectors == report.vectors and imported.audit_events == report.audit_events
    assert dump(target, "acme", prefixes=ALL_PREFIXES) == before
    assert dump(target, "globex") == {"memories": [], "vectors": {}, "audit": [],
                                      "deletions": []}
    assert total_rows(target) == len(before["memories"]) + len(before["audit"]) + 1
    assert searches(target) == searches(source)
    ns = ("tenant:acme", "user:alice", "preference")
    assert [v.dict() for v in target.history(ns, "tone")] == [
        v.dict() for v in source.history(ns, "tone")]
    assert target.audit(ns, "lang") == source.audit(ns, "lang")
    assert target.check_invariants().ok


def test_user_scope_exports_only_that_user(source, backend_store_factory, clock, tmp_path):
    path = tmp_path / "alice.lgtm"
    alice = dump(source, "acme", "alice", ALICE_PREFIXES)
    report = source.export_scope(path, PASS, tenant_id="acme", user_id="alice",
                                 untyped_prefixes=ALICE_PREFIXES, scrypt_n=N)
    assert report.records == {"preference": 3, "fact": 5, "episode": 1, "observation": 1,
                              "procedure": 1, "untyped": 2}
    assert {m["user_id"] for m in alice["memories"] if m["kind"]} == {"alice"}
    target = backend_store_factory(hash_index(), clock=clock)
    target.import_scope(path, PASS)
    assert dump(target, "acme", "alice", ALICE_PREFIXES) == alice
    assert total_rows(target) == len(alice["memories"]) + len(alice["audit"])
    assert target.search(("tenant:acme", "user:bob", "preference")) == []
    assert target.search(("tenant:acme", "policy")) == []
    assert target.get(("memories", "bob"), "m") is None
    assert target.get(("tenant:globex", "user:alice", "preference"), "tone") is None
    # the exported scope is exactly the scope erasure removes
    erased = source.erase("acme", "alice", untyped_prefixes=ALICE_PREFIXES)
    assert erased.records == report.records and erased.audit_events == report.audit_events


def test_async_export_and_import(source, backend_store_factory, clock, tmp_path):
    path = tmp_path / "a.lgtm"
    before = dump(source, "acme", "bob")
    report = asyncio.run(source.aexport_scope(path, PASS, tenant_id="acme", user_id="bob",
                                              scrypt_n=N))
    target = backend_store_factory(hash_index(), clock=clock)
    imported = asyncio.run(target.aimport_scope(path, PASS))
    assert imported.records == report.records
    assert dump(target, "acme", "bob") == before


def test_progress_is_reported_and_a_raising_callback_aborts_the_import(
        source, backend_store_factory, clock, tmp_path):
    path = tmp_path / "p.lgtm"
    calls: list[tuple[str, int, int]] = []
    source.export_scope(path, PASS, tenant_id="acme", scrypt_n=N,
                        progress=lambda *a: calls.append(a))
    steps = list(dict.fromkeys(step for step, _, _ in calls))
    assert steps == ["memories", "vectors", "audit", "encrypt", "write"]
    for step in steps:
        done = [d for s, d, _ in calls if s == step]
        assert done == sorted(done) and calls[-1][1] == calls[-1][2]
        assert [c for c in calls if c[0] == step][-1][1] == [c for c in calls if c[0] == step][
            -1][2]

    class Cancelled(Exception):
        pass

    def cancel(step: str, done: int, total: int) -> None:
        if step == "audit":  # memories and vectors are written by then, in the transaction
            raise Cancelled

    target = backend_store_factory(hash_index(), clock=clock)
    with pytest.raises(Cancelled):
        target.import_scope(path, PASS, progress=cancel)
    assert total_rows(target) == 0
    seen: list[str] = []
    target.import_scope(path, PASS, progress=lambda s, d, t: seen.append(s))
    assert seen[0] == "decrypt" and "audit" in seen and total_rows(target) > 0


# ------------------------------------------------------------------ refusals write nothing


def test_wrong_passphrase_tampered_truncated_and_wrong_version(
        source, backend_store_factory, clock, tmp_path):
    path = tmp_path / "t.lgtm"
    source.export_scope(path, PASS, tenant_id="acme", scrypt_n=N)
    blob = path.read_bytes()
    target = backend_store_factory(hash_index(), clock=clock)

    def attempt(data: bytes, passphrase: str = PASS) -> ExportFileError:
        bad = tmp_path / "bad.lgtm"
        bad.write_bytes(data)
        with pytest.raises(ExportFileError) as err:
            target.import_scope(bad, passphrase)
        assert total_rows(target) == 0
        return err.value

    assert isinstance(attempt(blob, "correct horse battery stapler"), ExportDecryptError)
    header_end = 11 + int.from_bytes(blob[9:11], "big")
    salt_at = blob.index(b'"salt":"') + 8
    for pos in (header_end, len(blob) // 2, len(blob) - 1, salt_at):
        flipped = bytearray(blob)
        flipped[pos] = flipped[pos] ^ 0x01 if pos != salt_at else ord(
            "B" if blob[pos] != ord("B") else "C")
        assert isinstance(attempt(bytes(flipped)), ExportDecryptError), pos
    for cut in (0, 5, 10, header_end - 1, header_end, header_end + 10, len(blob) - 1):
        attempt(blob[:cut])
    assert isinstance(attempt(blob[:-1]), ExportDecryptError)
    wrong = attempt(blob[:8] + bytes([2]) + blob[9:])
    assert isinstance(wrong, ExportFormatError) and "format version 2" in str(wrong)
    assert isinstance(attempt(b"PK\x03\x04 not an export at all"), ExportFormatError)
    target.import_scope(path, PASS)  # the intact file still imports
    assert total_rows(target) > 0


def test_every_header_byte_is_authenticated(tmp_path):
    """Flipping any byte before the ciphertext fails cleanly (format or decryption error)."""
    blob = seal(json.dumps({"format": 1}).encode(), PASS, scrypt_n=N)
    header_end = 11 + int.from_bytes(blob[9:11], "big")
    for pos in range(header_end):
        flipped = bytearray(blob)
        flipped[pos] ^= 0x20
        with pytest.raises(ExportFileError):
            unseal(bytes(flipped), PASS)
    assert unseal(blob, PASS) == b'{"format": 1}'


def test_a_payload_outside_its_scope_or_of_another_format_is_refused(
        backend_store_factory, clock, tmp_path):
    target = backend_store_factory(hash_index(), clock=clock)
    path = tmp_path / "forged.lgtm"
    row = {"id": "x1", "ns": "tenant:globex.user:eve.preference", "key": "k", "value": {},
           "kind": "preference", "tenant_id": "globex", "user_id": "eve", "agent_id": None}
    forged = {"format": 1, "scope": {"tenant_id": "acme", "user_id": None,
                                     "untyped_prefixes": []},
              "embedding": None, "memories": [row], "vectors": [], "audit": [], "deletions": []}
    for payload in (forged, {**forged, "format": 2}, {"format": 1}):
        path.write_bytes(seal(json.dumps(payload).encode(), PASS, scrypt_n=N))
        with pytest.raises(ExportFormatError):
            target.import_scope(path, PASS)
    assert total_rows(target) == 0


def test_collisions_are_refused_and_named(source, backend_store_factory, clock, tmp_path):
    path = tmp_path / "c.lgtm"
    source.export_scope(path, PASS, tenant_id="acme", user_id="alice",
                        untyped_prefixes=ALICE_PREFIXES, scrypt_n=N)
    before = dump(source, "acme", prefixes=ALL_PREFIXES)
    with pytest.raises(ImportCollision, match="tenant:acme/user:alice: .*typed record"):
        source.import_scope(path, PASS)
    assert dump(source, "acme", prefixes=ALL_PREFIXES) == before

    target = backend_store_factory(hash_index(), clock=clock)
    target.put(("tenant:acme", "user:alice", "preference"), "other", {"value": 1})
    target.put(("memories", "alice"), "m", {"text": "already here"})
    rows = total_rows(target)
    with pytest.raises(ImportCollision) as err:
        target.import_scope(path, PASS)
    assert "tenant:acme/user:alice/preference other" in str(err.value)
    assert "memories/alice m" in str(err.value) and "store.erase('acme', 'alice'" in str(
        err.value)
    assert total_rows(target) == rows

    fresh = backend_store_factory(hash_index(), clock=clock)
    fresh.put(("tenant:acme", "user:bob", "preference"), "tone", {"value": "bob's"})
    fresh.import_scope(path, PASS)  # another user of the tenant is no collision
    with pytest.raises(ImportCollision):
        fresh.import_scope(path, PASS)  # importing twice never merges


def test_vectors_of_another_size_are_refused(source, backend_store_factory, clock, tmp_path):
    path = tmp_path / "d.lgtm"
    source.export_scope(path, PASS, tenant_id="acme", scrypt_n=N)
    for index in (hash_index(16), None):
        target = backend_store_factory(index, clock=clock)
        with pytest.raises(EmbeddingDimensionMismatch, match="32-d vectors"):
            target.import_scope(path, PASS)
        assert total_rows(target) == 0


def test_a_store_without_index_round_trips_into_one_with_an_index(
        backend_store_factory, clock, tmp_path):
    plain = backend_store_factory(None, clock=clock)
    plain.put(("tenant:acme", "user:alice", "fact"), "f", {"subject": "a", "predicate": "b",
                                                           "content": "lexical only"})
    path = tmp_path / "plain.lgtm"
    assert plain.export_scope(path, PASS, tenant_id="acme", scrypt_n=N).embedding is None
    target = backend_store_factory(hash_index(), clock=clock)
    assert target.import_scope(path, PASS).vectors == 0
    assert dump(target, "acme") == dump(plain, "acme")


def test_passphrases_and_arguments_are_checked(source, tmp_path):
    (tmp_path / "out").mkdir()
    path = tmp_path / "out" / "e.lgtm"
    for bad in ("", b"", None, 42):
        with pytest.raises(InvalidPassphrase):
            source.export_scope(path, bad, tenant_id="acme", scrypt_n=N)
    assert list(path.parent.iterdir()) == []
    source.export_scope(path, PASS, tenant_id="acme", scrypt_n=N)
    with pytest.raises(InvalidPassphrase, match="empty"):
        source.import_scope(path, "")
    for kwargs in ({"scrypt_n": 1000}, {"scrypt_n": 2**8}, {"tenant_id": ""},
                   {"untyped_prefixes": ("memories", "alice")}, {"progress": "yes"}):
        with pytest.raises(ValueError):
            source.export_scope(path, PASS, **{"tenant_id": "acme", **kwargs})


# ------------------------------------------------------------------ confidentiality


def _base64_forms(data: bytes) -> list[bytes]:
    """The base64 fragments `data` produces at each of the three byte alignments."""
    out = []
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + data)
        out.append(enc[(4 if pad else 0):-4])
    return [f for f in out if len(f) >= 8]


def test_the_file_reveals_no_plaintext(source, tmp_path):
    path = tmp_path / "canary.lgtm"
    passphrase = "canary passphrase " + uuid.uuid4().hex
    source.export_scope(path, passphrase, tenant_id="acme", user_id="alice",
                        untyped_prefixes=ALICE_PREFIXES, scrypt_n=N)
    blob = path.read_bytes()
    assert CANARY.encode() in unseal(blob, passphrase)  # the canary was exported...
    for secret in (CANARY, passphrase, "alice", "tenant:acme"):  # ...but is in no byte
        forms = [secret.encode(), secret.encode("utf-16-le"), secret.encode("utf-16-be"),
                 *_base64_forms(secret.encode())]
        for form in forms:
            assert form not in blob, (secret, form)


# ------------------------------------------------------------------ across backends


@pytest.mark.postgres
@pytest.mark.skipif(PG_SKIPPED, reason="TYPED_MEMORY_SKIP_POSTGRES is set")
def test_sqlite_to_postgres_and_back(pg_server, tmp_path):
    from langgraph_typed_memory import PostgresMemoryStore

    clock = FakeClock()
    first, second = tmp_path / "sqlite.lgtm", tmp_path / "pg.lgtm"
    with SqliteMemoryStore.from_conn_string(str(tmp_path / "a.db"), index=hash_index(),
                                            clock=clock) as lite:
        lite.setup()
        populate(lite, clock)
        original = dump(lite, "acme", prefixes=ALL_PREFIXES)
        found = searches(lite)
        lite.export_scope(first, PASS, tenant_id="acme", untyped_prefixes=ALL_PREFIXES,
                          scrypt_n=N)
    with PostgresMemoryStore.from_conn_string(fresh_database(pg_server), index=hash_index(),
                                              clock=clock) as pg:
        pg.setup()
        assert pg.import_scope(first, PASS).source_backend == "sqlite"
        assert dump(pg, "acme", prefixes=ALL_PREFIXES) == original
        assert pg.check_invariants().ok
        pg_found = searches(pg)
        pg.export_scope(second, PASS, tenant_id="acme", untyped_prefixes=ALL_PREFIXES,
                        scrypt_n=N)
    with SqliteMemoryStore.from_conn_string(str(tmp_path / "b.db"), index=hash_index(),
                                            clock=clock) as back:
        back.setup()
        assert back.import_scope(second, PASS).source_backend == "postgres"
        assert dump(back, "acme", prefixes=ALL_PREFIXES) == original
        assert back.check_invariants().ok
        assert searches(back) == found
    # rankings agree across backends (scores may differ: one BM25, but each backend tokenizes)
    assert [[k for k, *_ in hits] for _, hits in pg_found[:-1]] == [
        [k for k, *_ in hits] for _, hits in found[:-1]]


def test_file_path_may_be_a_string_and_is_replaced_atomically(source, tmp_path):
    (tmp_path / "out").mkdir()
    path = str(tmp_path / "out" / "s.lgtm")
    Path(path).write_bytes(b"old export")
    source.export_scope(path, PASS, tenant_id="acme", scrypt_n=N)
    assert Path(path).read_bytes().startswith(b"LGTMEXP")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["s.lgtm"]
