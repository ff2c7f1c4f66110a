"""What an import refuses before it writes anything, on every backend.

An export is authenticated by its passphrase, not by who wrote it: whoever holds the
passphrase can seal any payload. So an import checks the header's key-derivation cost before
deriving a key, and every record as the write path would before its one transaction. The
payloads here are genuine exports with one thing changed, sealed again with the passphrase.
"""

from __future__ import annotations

import copy
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langgraph_typed_memory import (
    ConfigurationError,
    ExportFormatError,
    SqliteMemoryStore,
)
from langgraph_typed_memory.store.governance import envelope
from langgraph_typed_memory.store.governance.envelope import seal, unseal
from langgraph_typed_memory.store.governance.portability import import_from_file
from tests.conftest import FakeClock, hash_index
from tests.store.test_portability import PASS, sql, total_rows

N = 2**10  # the explicit, documented low scrypt cost: tests only
ALICE = ("tenant:acme", "user:alice")
PREFS = "tenant:acme.user:alice.preference"
FACTS = "tenant:acme.user:alice.fact"
NOTES = "memories.alice"


# ------------------------------------------------------------------ sealing any payload


def sealed(path: Path, payload: Any, passphrase: str = PASS) -> Path:
    """Seal `payload` as an export file, as anyone holding the passphrase can (NaN and
    infinities written as JSON's `NaN`/`Infinity`, as Python's json writes them)."""
    path.write_bytes(seal(json.dumps(payload).encode(), passphrase, scrypt_n=N))
    return path


def with_header(blob: bytes, **changes: Any) -> bytes:
    """`blob` with its header's fields changed (its GCM tag no longer matches)."""
    size = int.from_bytes(blob[9:11], "big")
    header = json.loads(blob[11:11 + size])
    header.update(changes)
    raw = json.dumps(header).encode()
    return blob[:9] + struct.pack(">H", len(raw)) + raw + blob[11 + size:]


def _export(store: Any, path: Path, **scope: Any) -> dict[str, Any]:
    store.export_scope(path, PASS, tenant_id="acme", scrypt_n=N, **scope)
    return json.loads(unseal(path.read_bytes(), PASS))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Genuine payloads (the tenant's, and alice's with her untyped notes) of a small store:
    a superseded preference, a fact with its vector, an untyped note, a tenant policy."""
    clock = FakeClock()
    out = tmp_path_factory.mktemp("genuine")
    with SqliteMemoryStore.from_conn_string(":memory:", index=hash_index(),
                                            clock=clock) as store:
        store.setup()
        store.put((*ALICE, "preference"), "tone", {"value": "formal"})
        clock.advance(minutes=5)
        store.put((*ALICE, "preference"), "tone", {"value": "terse"})
        store.put((*ALICE, "fact"), "city", {"subject": "user", "predicate": "home_city",
                                             "content": "The user lives in Lyon."})
        store.put(("memories", "alice"), "note", {"text": "an untyped note"})
        store.put(("tenant:acme", "policy"), "refunds", {"value": {"max": 500},
                                                         "created_by": "ops"})
        prefixes = [("memories", "alice")]
        return {"tenant": _export(store, out / "t.lgtm", untyped_prefixes=prefixes),
                "alice": _export(store, out / "a.lgtm", user_id="alice",
                                 untyped_prefixes=prefixes)}


def row(payload: dict[str, Any], ns: str, key: str, status: str | None = None) -> Any:
    return next(m for m in payload["memories"] if (m["ns"], m["key"]) == (ns, key)
                and status in (None, m["status"]))


# ------------------------------------------------------------------ planted payloads


def untyped_at_a_typed_namespace(p: dict[str, Any]) -> None:
    note = row(p, NOTES, "note")
    p["memories"].append({**note, "id": "f" * 32, "ns": PREFS, "key": "planted",
                          "value": {"value": "served without its schema"}})
    p["scope"]["untyped_prefixes"].append(["tenant:acme"])


def dangling_superseded_by(p: dict[str, Any]) -> None:
    row(p, PREFS, "tone", "superseded")["superseded_by"] = "0" * 32


def a_5000_character_key(p: dict[str, Any]) -> None:
    row(p, PREFS, "tone", "active")["key"] = "k" * 5000


def two_current_versions(p: dict[str, Any]) -> None:
    row(p, PREFS, "tone", "superseded").update(status="active", superseded_by=None)


def nan_in_a_value(p: dict[str, Any]) -> None:
    row(p, NOTES, "note")["value"]["score"] = float("nan")


def scope_columns_disagree(p: dict[str, Any]) -> None:
    row(p, PREFS, "tone", "active")["user_id"] = "bob"


def value_breaks_its_schema(p: dict[str, Any]) -> None:
    del row(p, FACTS, "city")["value"]["content"]


def unknown_status(p: dict[str, Any]) -> None:
    row(p, FACTS, "city")["status"] = "zombie"


def dangling_contradicts(p: dict[str, Any]) -> None:
    row(p, FACTS, "city")["contradicts"] = ["1" * 32]


def superseded_without_successor(p: dict[str, Any]) -> None:
    row(p, PREFS, "tone", "superseded")["superseded_by"] = None


def infinite_timestamp(p: dict[str, Any]) -> None:
    row(p, FACTS, "city")["created_at"] = float("inf")


def counter_past_32_bits(p: dict[str, Any]) -> None:
    row(p, FACTS, "city")["access_count"] = 2**40


def nul_in_search_text(p: dict[str, Any]) -> None:
    row(p, FACTS, "city")["search_text"] = "Lyon\x00"


def audit_event_without_kind(p: dict[str, Any]) -> None:
    p["audit"][0]["kind"] = None


def an_id_of_5000_characters(p: dict[str, Any]) -> None:
    row(p, "tenant:acme.policy", "refunds")["id"] = "x" * 5000


def vector_twice(p: dict[str, Any]) -> None:
    p["vectors"].append(dict(p["vectors"][0]))


def reserved_untyped_namespace(p: dict[str, Any]) -> None:
    p["memories"].append({**row(p, NOTES, "note"), "id": "e" * 32, "ns": "langgraph.x"})
    p["scope"]["untyped_prefixes"].append(["langgraph"])


PLANTED: list[tuple[Callable[[dict[str, Any]], None], str, str]] = [
    # (change, what the error says, the record it names)
    (untyped_at_a_typed_namespace, "has no kind but its namespace is typed",
     "tenant:acme/user:alice/preference' 'planted'"),
    (dangling_superseded_by, "names no record of the export", "preference' 'tone'"),
    (a_5000_character_key, "the limit is 1024", "'kkkk"),
    (two_current_versions, "has two current versions", "preference' 'tone'"),
    (nan_in_a_value, "value.score is nan", "memories/alice' 'note'"),
    (scope_columns_disagree, "disagree with its namespace", "preference' 'tone'"),
    (value_breaks_its_schema, "does not match the fact schema", "fact' 'city'"),
    (unknown_status, "status 'zombie' is none the store writes", "fact' 'city'"),
    (dangling_contradicts, "contradicts '111", "fact' 'city'"),
    (superseded_without_successor, "superseded but its superseded_by is null", "'tone'"),
    (infinite_timestamp, "created_at is inf", "fact' 'city'"),
    (counter_past_32_bits, "access_count=1099511627776 is outside", "fact' 'city'"),
    (nul_in_search_text, "search_text contains a NUL byte", "fact' 'city'"),
    (audit_event_without_kind, "audit event #0 has no kind or tenant", ""),
    (an_id_of_5000_characters, "is 5000 characters; an id holds 1 to 256", "'refunds'"),
    (vector_twice, "appears twice", ""),
    (reserved_untyped_namespace, "'langgraph' is reserved", "langgraph/x' 'note'"),
]


def test_each_planted_payload_is_refused_naming_the_record_and_nothing_is_written(
        genuine, backend_store_factory, clock, tmp_path):
    target = backend_store_factory(hash_index(), clock=clock)
    target.put(("tenant:globex", "user:eve", "preference"), "tone", {"value": "warm"})
    before = sql(target, "SELECT id, ns, key, status FROM memories ORDER BY id")
    rows = total_rows(target)
    for plant, problem, record in PLANTED:
        payload = copy.deepcopy(genuine["tenant"])
        plant(payload)
        path = sealed(tmp_path / f"{plant.__name__}.lgtm", payload)
        with pytest.raises(ExportFormatError) as err:
            target.import_scope(path, PASS)
        assert problem in str(err.value), (plant.__name__, str(err.value))
        assert record in str(err.value), (plant.__name__, str(err.value))
        assert total_rows(target) == rows, plant.__name__
    assert sql(target, "SELECT id, ns, key, status FROM memories ORDER BY id") == before
    assert target.get(("tenant:acme", "user:alice", "preference"), "planted") is None
    # the same payload, untouched, imports: the refusals were the planted changes'
    report = target.import_scope(sealed(tmp_path / "genuine.lgtm", genuine["tenant"]), PASS)
    assert report.records == {"preference": 2, "fact": 1, "policy": 1, "untyped": 1}
    assert target.get(("tenant:acme", "user:alice", "preference"), "tone").value[
        "value"] == "terse"
    assert target.check_invariants().ok


def test_a_users_export_links_only_to_tenant_records_the_target_holds(
        genuine, backend_store_factory, clock, tmp_path):
    """A user's record may be replaced by a tenant-wide one, which the user's export leaves
    out: the import accepts the link only where the target holds that record."""
    target = backend_store_factory(hash_index(), clock=clock)
    target.put(("tenant:acme", "policy"), "other", {"value": {"max": 1}, "created_by": "ops"})
    (held,) = sql(target, "SELECT id FROM memories WHERE tenant_id = 'acme'")[0]
    payload = copy.deepcopy(genuine["alice"])
    superseded = row(payload, PREFS, "tone", "superseded")
    rows = total_rows(target)

    superseded["superseded_by"] = "0" * 32
    with pytest.raises(ExportFormatError, match="import the tenant's export first"):
        target.import_scope(sealed(tmp_path / "away.lgtm", payload), PASS)
    assert total_rows(target) == rows

    superseded["superseded_by"] = held
    report = target.import_scope(sealed(tmp_path / "held.lgtm", payload), PASS)
    assert report.records == {"preference": 2, "fact": 1, "untyped": 1}
    assert target.check_invariants().ok


# ------------------------------------------------------------------ the key derivation cost


FORGED_HEADERS: list[dict[str, Any]] = [
    {"n": 2**20, "p": 16},  # a gigabyte and minutes of CPU, before the tag is checked
    {"n": 2**20},
    {"n": 2**16},
    {"r": 32},
    {"p": 16},
    {"n": 2**40},
    {"n": 3 * 2**12},
    {"n": "32768"},
    {"r": True},
]


def test_a_forged_kdf_header_is_refused_before_any_key_derivation(
        genuine, backend_store_factory, clock, tmp_path, monkeypatch):
    target = backend_store_factory(hash_index(), clock=clock)
    blob = sealed(tmp_path / "g.lgtm", genuine["tenant"]).read_bytes()

    def derive(*args: Any) -> bytes:
        raise AssertionError("a key was derived from an unchecked header")

    monkeypatch.setattr(envelope, "_derive", derive)
    for changes in FORGED_HEADERS:
        path = tmp_path / "forged.lgtm"
        path.write_bytes(with_header(blob, **changes))
        with pytest.raises(ExportFormatError) as err:
            target.import_scope(path, PASS)
        assert total_rows(target) == 0, changes
        if changes in ({"n": 2**20}, {"n": 2**16}):
            assert f"max_scrypt_n={changes['n']}" in str(err.value), str(err.value)


def test_the_default_cost_is_accepted_and_a_higher_one_only_when_allowed():
    assert unseal(seal(b"default", PASS), PASS) == b"default"
    costly = seal(b"costly", PASS, scrypt_n=2**16)
    with pytest.raises(ExportFormatError, match=r"max_scrypt_n=65536 \(at most 1048576\)"):
        unseal(costly, PASS)
    assert unseal(costly, PASS, max_scrypt_n=2**16) == b"costly"
    for bad in (0, 2**9, 2**21, 2.0**16, "65536", True, None):
        with pytest.raises(ConfigurationError, match="max_scrypt_n"):
            unseal(costly, PASS, max_scrypt_n=bad)


def test_an_import_allows_a_costlier_file_when_asked(
        genuine, backend_store_factory, clock, tmp_path):
    target = backend_store_factory(hash_index(), clock=clock)
    path = tmp_path / "costly.lgtm"
    path.write_bytes(seal(json.dumps(genuine["tenant"]).encode(), PASS, scrypt_n=2**16))
    with pytest.raises(ExportFormatError, match="max_scrypt_n=65536"):
        target.import_scope(path, PASS)
    with pytest.raises(ConfigurationError):
        import_from_file(target.run_plan, target.records, path, PASS, max_scrypt_n=2**30)
    assert total_rows(target) == 0
    report = import_from_file(target.run_plan, target.records, path, PASS,
                              max_scrypt_n=2**16)
    assert report.records == {"preference": 2, "fact": 1, "policy": 1, "untyped": 1}


# ------------------------------------------------------------------ the invariant checker


def test_the_invariant_checker_flags_what_an_import_refuses(backend_store_factory, clock):
    store = backend_store_factory(hash_index(), clock=clock)
    store.put((*ALICE, "preference"), "tone", {"value": "terse"})
    planted = [("p1", PREFS, "planted", "active"), ("p2", NOTES, "k" * 2000, "active"),
               ("p3", NOTES, "z", "zombie")]
    for ident, ns, key, status in planted:
        sql(store, "INSERT INTO memories (id, ns, key, value, status, created_at, updated_at) "
                   "VALUES (?, ?, ?, ?, ?, 0, 0)", [ident, ns, key, "{}", status])
    report = store.check_invariants()
    assert report.violations == {
        "untyped records lie outside the typed namespaces (none under 'tenant:')":
            [("p1", PREFS)],
        "every status is one the store writes": [("p3", "zombie")],
        "keys are what a write accepts (at most the key limit)": [("p2", NOTES)],
    }
    sql(store, "DELETE FROM memories WHERE id IN ('p1', 'p2', 'p3')")
    assert store.check_invariants().ok
