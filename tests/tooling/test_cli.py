"""The `typed-memory` CLI on SQLite and Postgres: every subcommand in-process through
`main(argv)`, the installed console script once, `--help` completeness, and the error paths
(one line on stderr, exit code 2 for usage and 1 for failures, never a traceback)."""

from __future__ import annotations

import io
import json
import logging
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.cli import build_parser, main
from langgraph_typed_memory.cli import commands as cli_commands
from langgraph_typed_memory.cli.app import _Parser
from langgraph_typed_memory.cli.choices import RETRIEVAL_MODES
from langgraph_typed_memory.cli.commands import find_benchmark, parse_namespace_arg
from langgraph_typed_memory.cli.database import CliError, redact, resolve_database
from langgraph_typed_memory.cli.progress import ProgressBar
from tests.conftest import FakeClock, fresh_database

BACKENDS = ["sqlite"] if os.environ.get("TYPED_MEMORY_SKIP_POSTGRES") else ["sqlite", "postgres"]
ALICE_PREFS = ("tenant:acme", "user:alice", "preference")
ALICE_FACTS = ("tenant:acme", "user:alice", "fact")
BOB_FACTS = ("tenant:acme", "user:bob", "fact")
OTHER_FACTS = ("tenant:globex", "user:alice", "fact")


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database target for the CLI: a SQLite file path or a fresh Postgres database URL."""
    if request.param == "sqlite":
        return str(tmp_path / "data" / "memory.db")
    return fresh_database(request.getfixturevalue("pg_server"))


@contextmanager
def open_direct(db: str) -> Iterator[Any]:
    """The same database through the library, to seed and to look behind the CLI's back."""
    clock = FakeClock()
    if db.startswith("postgresql://"):
        from langgraph_typed_memory import PostgresMemoryStore

        with PostgresMemoryStore.from_conn_string(db, clock=clock) as store:
            yield store
    else:
        with SqliteMemoryStore.from_conn_string(db, clock=clock) as store:
            yield store


def run_sql(db: str, sql: str) -> None:
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(sql)
    else:
        conn = sqlite3.connect(db)
        with conn:
            conn.execute(sql)
        conn.close()


Run = tuple[int, str, str]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """`cli(*argv, stdin="")` runs `main` in-process: (exit code, stdout, stderr)."""

    def run(*argv: str, stdin: str = "") -> Run:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return code, out, err

    return run


@pytest.fixture
def seeded(db: str, cli: Any) -> str:
    """A set-up database with records in several scopes (lexical-only: no embedder)."""
    code, out, _ = cli("--db", db, "--no-index", "setup")
    assert code == 0, out
    with open_direct(db) as store:
        store.put(ALICE_PREFS, "tone", {"value": "formal"})
        store.put(ALICE_PREFS, "tone", {"value": "terse"})
        store.put(ALICE_FACTS, "city", {"subject": "alice", "predicate": "home_city",
                                        "content": "Alice lives in Lyon."})
        store.put(BOB_FACTS, "city", {"subject": "bob", "predicate": "home_city",
                                      "content": "Bob lives in Lyon too."})
        store.put(OTHER_FACTS, "city", {"subject": "alice", "predicate": "home_city",
                                        "content": "Globex's Alice lives in Lyon."})
    return db


# ---------------------------------------------------------------------------- setup


def test_setup_creates_the_schema_once_and_is_idempotent(db: str, cli: Any) -> None:
    code, out, _ = cli("--db", db, "--no-index", "--json", "setup")
    first = json.loads(out)
    assert code == 0 and first["applied_now"] == first["migrations"]
    assert "0001_memories" in first["migrations"] and first["dims"] is None
    code, out, _ = cli("setup", "--db", db, "--no-index")  # global options after the command
    assert code == 0 and "already up to date" in out
    with open_direct(db) as store:
        assert store.check_invariants().ok
        if not db.startswith("postgresql://"):  # a new SQLite database is private to its owner
            assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
            assert stat.S_IMODE(os.stat(db + "-wal").st_mode) == 0o600
            assert stat.S_IMODE(os.stat(Path(db).parent).st_mode) == 0o700


def test_setup_dims_creates_vectors_and_later_commands_fall_back_to_lexical(
    db: str, cli: Any
) -> None:
    code, out, _ = cli("--db", db, "--json", "setup", "--dims", "8")
    assert code == 0 and json.loads(out)["dims"] == 8
    code, out, err = cli("--db", db, "search", "lyon", "--tenant", "acme", "--kind", "fact")
    assert code == 0
    if "no embedder installed" not in err:  # with the local extra: 384-d, not the db's 8-d
        assert "stores 8-d vectors" in err and "lexical-only" in err


# ---------------------------------------------------------------------------- inspect


def test_inspect_lists_the_scope_and_only_the_scope(seeded: str, cli: Any) -> None:
    code, out, _ = cli("--db", seeded, "--no-index", "inspect", "--tenant", "acme",
                       "--user", "alice")
    assert code == 0
    assert "Alice lives in Lyon." in out and "terse" in out
    assert "formal" not in out  # superseded: not current
    assert "Bob" not in out and "Globex" not in out
    assert "2 of 2 record(s)" in out
    assert out.splitlines()[0].split() == ["key", "kind", "status", "scope", "updated", "value"]

    code, out, _ = cli("--db", seeded, "--no-index", "inspect", "--tenant", "acme",
                       "--status", "all", "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] == 4
    assert {(r["key"], r["status"], r["scope"]["user_id"]) for r in data["records"]} == {
        ("tone", "active", "alice"), ("tone", "superseded", "alice"),
        ("city", "active", "alice"), ("city", "active", "bob")}

    code, out, _ = cli("--db", seeded, "inspect", "--tenant", "acme", "--status", "superseded")
    assert code == 0 and "formal" in out and "terse" not in out

    code, out, _ = cli("--db", seeded, "inspect", "--tenant", "acme", "--kind", "fact",
                       "--limit", "1")
    assert code == 0 and "1 of 2 record(s); raise --limit" in out

    code, out, _ = cli("--db", seeded, "inspect", "--tenant", "nobody")
    assert code == 0 and "no current records in tenant:nobody" in out


# ---------------------------------------------------------------------------- search


def test_search_ranks_within_the_readers_scope(seeded: str, cli: Any) -> None:
    code, out, _ = cli("--db", seeded, "--no-index", "search", "where does alice live",
                       "--tenant", "acme", "--user", "alice", "--kind", "fact")
    assert code == 0
    assert "fact: 1 result(s) (retrieval mode lexical)" in out
    assert "Alice lives in Lyon." in out and "Bob" not in out and "Globex" not in out
    assert "high" in out or "standard" in out or "low" in out  # the tier column

    code, out, _ = cli("--db", seeded, "--no-index", "--json", "search", "lyon",
                       "--tenant", "acme", "--user", "alice", "--kind", "fact",
                       "--kind", "preference")
    data = json.loads(out)
    assert data["fact"]["retrieval_mode"] == "lexical"
    assert [r["key"] for r in data["fact"]["results"]] == ["city"]
    assert data["fact"]["results"][0]["memory"]["tier"] in {"high", "standard", "low"}
    assert data["preference"]["retrieval_mode"] == "exact"
    assert [r["value"]["value"] for r in data["preference"]["results"]] == ["terse"]


def test_search_explains_the_retrieval_modes_it_reports(seeded: str, cli: Any) -> None:
    """"retrieval mode like" was printed unexplained: the text output ends with what each
    mode it reported means, and `search --help` lists them all."""
    code, out, _ = cli("--db", seeded, "--no-index", "search", "lyo", "--tenant", "acme",
                       "--user", "alice", "--kind", "fact", "--kind", "preference")
    assert code == 0 and "fact: 1 result(s) (retrieval mode like)" in out
    legend = [line for line in out.splitlines() if line.startswith("retrieval mode ")]
    assert legend == ["retrieval mode like: the fallback when there are no vectors and full "
                      "text matched nothing: records holding the query's words as plain "
                      "substrings, ranked by how many they hold"]
    code, out, _ = cli("search", "--help")
    assert code == 0
    text = " ".join(out.split())
    for mode in ("hybrid", "vector", "lexical", "like", "exact"):
        assert f"{mode} = " in text, mode
    docs = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    for mode, meaning in RETRIEVAL_MODES.items():  # the docs' table says the same
        assert f"| `{mode}` | {meaning} |" in docs, mode


def test_search_defaults_to_the_ranked_kinds(seeded: str, cli: Any) -> None:
    code, out, _ = cli("--db", seeded, "--no-index", "search", "lyon", "--tenant", "acme",
                       "--user", "bob")
    assert code == 0
    assert [line.split(":")[0] for line in out.splitlines() if "result(s)" in line] == [
        "episode", "fact", "observation"]
    assert "Bob lives in Lyon too." in out and "Alice" not in out


# ---------------------------------------------------------------------------- explain


def test_explain_shows_every_version_and_the_audit_trail(seeded: str, cli: Any) -> None:
    code, out, _ = cli("--db", seeded, "explain", "tenant:acme/user:alice/preference", "tone")
    assert code == 0
    assert "2 version(s), newest first" in out
    assert out.index('"terse"') < out.index('"formal"')
    assert "superseded by" in out
    assert "(new) -> active" in out and "active -> superseded" in out

    code, out, _ = cli("--db", seeded, "--json", "explain", "tenant:acme.user:alice.preference",
                       "tone")
    data = json.loads(out)
    assert [v["memory"]["status"] for v in data["versions"]] == ["active", "superseded"]
    assert [(e["from_status"], e["to_status"]) for e in data["audit"]] == [
        (None, "active"), ("active", "superseded"), (None, "active")]


def test_explain_names_the_rule_and_the_words_that_wrote_a_record(seeded: str,
                                                                   cli: Any) -> None:
    from langchain_core.messages import HumanMessage

    from langgraph_typed_memory.conversation_import import TurnWriter

    with open_direct(seeded) as store:
        TurnWriter(store, tenant_id="acme", user_id="carol").write(
            HumanMessage("I work as a paramedic."))
    code, out, _ = cli("--db", seeded, "explain", "tenant:acme/user:carol/fact",
                       "fact:user:occupation")
    assert code == 0, out
    assert 'proposed by rule:fact.occupation, from the words "I work as a paramedic."' in out
    code, out, _ = cli("--db", seeded, "explain", "tenant:acme/user:alice/preference", "tone")
    assert "proposed by application code" in out  # store.put


def test_explain_errors(seeded: str, cli: Any) -> None:
    code, _, err = cli("--db", seeded, "explain", "tenant:acme/user:alice/prefs", "tone")
    assert code == 2 and err.startswith("typed-memory: error: bad namespace")
    assert "prefs" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli("--db", seeded, "explain", "acme/user:alice/fact", "city")
    assert code == 2 and "not typed" in err
    code, _, err = cli("--db", seeded, "explain", "tenant:acme/user:alice/fact", "nope")
    assert code == 1 and "no record 'nope'" in err


def test_a_mistyped_id_or_key_is_answered_with_the_near_ones(seeded: str, cli: Any) -> None:
    code, out, _ = cli("--db", seeded, "inspect", "--tenant", "Acme")
    assert code == 0 and "did you mean tenant acme?" in out
    code, out, _ = cli("--db", seeded, "inspect", "--tenant", "acme", "--user", "alise")
    assert code == 0 and "did you mean user alice?" in out
    code, out, _ = cli("--db", seeded, "inspect", "--tenant", "acme", "--user", "carol")
    assert code == 0 and "did you mean" not in out  # nothing near: no guess
    code, _, err = cli("--db", seeded, "explain", "tenant:acme/user:alice/fact", "town")
    assert code == 1 and "its keys include 'city'" in err


def test_explain_finds_a_record_by_a_version_id(seeded: str, cli: Any) -> None:
    with open_direct(seeded) as store:
        old = store.history(ALICE_PREFS, "tone")[-1].memory["id"]  # the superseded version
    for asked in (old, old[:8], old[:8] + "…", old[:12]):  # whole, or as tables shorten it
        code, out, _ = cli("--db", seeded, "explain", asked)
        assert code == 0, asked
        assert out.startswith("tenant:acme/user:alice/preference tone: 2 version(s)")
        [marked] = [line for line in out.splitlines() if "<- the id asked for" in line]
        assert "[2] superseded" in marked and old in marked
    code, out, _ = cli("--db", seeded, "--json", "explain", old[:10])
    data = json.loads(out)
    assert (data["id"], data["namespace"], data["key"]) == (old, list(ALICE_PREFS), "tone")


def test_explain_by_id_errors(seeded: str, cli: Any) -> None:
    code, _, err = cli("--db", seeded, "explain", "0" * 32)
    assert code == 1 and "no typed record has the id" in err
    code, _, err = cli("--db", seeded, "explain", "abc")
    assert code == 1 and "first 8 characters" in err
    code, _, err = cli("--db", seeded, "explain", "tenant:acme/user:alice/preference")
    assert code == 2 and "give the record's key" in err
    with open_direct(seeded) as store:
        ids = [v.memory["id"] for v in store.history(ALICE_PREFS, "tone")]
    run_sql(seeded, f"UPDATE memories SET id = '{ids[0][:8]}x' || id WHERE id = '{ids[0]}'")
    run_sql(seeded, f"UPDATE memories SET id = '{ids[0][:8]}y' || id WHERE id = '{ids[1]}'")
    code, _, err = cli("--db", seeded, "explain", ids[0][:8])
    assert code == 1 and "several records have an id starting with" in err


def test_parse_namespace_arg_allows_slashes_in_ids() -> None:
    assert parse_namespace_arg("tenant:a/b/user:c/d/fact") == ("tenant:a/b", "user:c/d", "fact")
    assert parse_namespace_arg("tenant:acme.policy") == ("tenant:acme", "policy")
    with pytest.raises(CliError) as info:
        parse_namespace_arg("tenant:acme/user:alice")
    assert info.value.exit_code == 2


# ---------------------------------------------------------------------------- erase


def test_erase_asks_to_type_the_scope_back(seeded: str, cli: Any) -> None:
    code, _, err = cli("--db", seeded, "erase", "--tenant", "acme", "--user", "alice",
                       stdin="yes\n")
    assert code == 1 and "erasure cancelled" in err and "nothing was erased" in err
    assert "Type tenant:acme/user:alice to confirm" in err
    with open_direct(seeded) as store:
        assert store.get(ALICE_FACTS, "city") is not None

    code, out, _ = cli("--db", seeded, "erase", "--tenant", "acme", "--user", "alice",
                       stdin="tenant:acme/user:alice\n")
    assert code == 0 and "erased tenant:acme/user:alice" in out
    assert "fact 1" in out and "preference 2" in out
    with open_direct(seeded) as store:
        assert store.get(ALICE_FACTS, "city") is None
        assert store.get(BOB_FACTS, "city") is not None
        assert store.get(OTHER_FACTS, "city") is not None
        assert store.check_invariants().ok


def test_erase_yes_and_json(seeded: str, cli: Any) -> None:
    code, out, err = cli("--db", seeded, "--json", "erase", "--tenant", "acme", "--yes",
                         "--reason", "tenant offboarding")
    assert code == 0 and "confirm" not in err
    report = json.loads(out)
    assert report["tenant_id"] == "acme" and report["user_id"] is None
    assert report["records"] == {"fact": 2, "preference": 2}
    with open_direct(seeded) as store:
        assert store.get(OTHER_FACTS, "city") is not None


def _saver(db: str) -> Any:
    if db.startswith("postgresql://"):
        from langgraph.checkpoint.postgres import PostgresSaver

        return PostgresSaver.from_conn_string(db)
    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver.from_conn_string(db)


def _threads(db: str) -> set[str]:
    with _saver(db) as saver:
        return {c.config["configurable"]["thread_id"] for c in saver.list(None)}


def test_erase_deletes_the_users_checkpointer_threads_in_the_same_database(
    seeded: str, cli: Any
) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    with _saver(seeded) as saver:
        saver.setup()
        for thread, user in (("t-alice", "alice"), ("t-bob", "bob")):
            config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            saver.put(config, empty_checkpoint(),  # type: ignore[arg-type]
                      {"tenant_id": "acme", "user_id": user}, {})  # type: ignore[typeddict-unknown-key]
    code, out, _ = cli("--db", seeded, "erase", "--tenant", "acme", "--user", "bob", "--yes",
                       "--keep-threads")
    assert code == 0 and "threads 0" in out
    assert _threads(seeded) == {"t-alice", "t-bob"}
    code, out, _ = cli("--db", seeded, "erase", "--tenant", "acme", "--user", "alice", "--yes")
    assert code == 0 and "threads 1" in out
    assert _threads(seeded) == {"t-bob"}


def test_erase_and_export_take_the_users_untyped_namespaces(
    seeded: str, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangMem's memories live in untyped namespaces such as ("memories", "alice"): named
    with --untyped-prefix, an export holds them and an erasure deletes them."""
    with open_direct(seeded) as store:
        store.put(("memories", "alice"), "n1", {"content": "alice secret zebra"})
        store.put(("memories", "bob"), "n1", {"content": "bob's note"})
    monkeypatch.setenv("TM_TEST_PASS", "a long enough passphrase")
    code, out, _ = cli("--db", seeded, "--json", "export", "--tenant", "acme", "--user",
                       "alice", "--out", str(tmp_path / "a.lgtm"), "--untyped-prefix",
                       "memories/alice", "--passphrase-env", "TM_TEST_PASS")
    assert code == 0 and json.loads(out)["records"]["untyped"] == 1
    code, out, _ = cli("--db", seeded, "--json", "erase", "--tenant", "acme", "--user",
                       "alice", "--yes", "--untyped-prefix", "memories.alice")
    assert code == 0 and json.loads(out)["records"]["untyped"] == 1
    with open_direct(seeded) as store:
        assert store.get(("memories", "alice"), "n1") is None
        assert store.get(("memories", "bob"), "n1") is not None
    code, _, err = cli("--db", seeded, "erase", "--tenant", "acme", "--user", "bob", "--yes",
                       "--untyped-prefix", "tenant:acme/user:bob/fact")
    assert code == 2 and "typed namespace" in err


# ---------------------------------------------------------------------------- check


def test_check_passes_then_fails_on_a_corrupted_database(seeded: str, cli: Any) -> None:
    code, out, _ = cli("--db", seeded, "check")
    assert code == 0 and "FAIL" not in out and out.strip().endswith("invariants hold")
    # A dangling supersession pointer, and a status changed behind the audit log's back.
    run_sql(seeded, "UPDATE memories SET superseded_by = 'gone' WHERE status = 'superseded'")
    run_sql(seeded, "UPDATE memories SET status = 'provisional' "
                    "WHERE ns = 'tenant:acme.user:bob.fact'")
    code, out, _ = cli("--db", seeded, "check")
    assert code == 1
    assert "FAIL  superseded rows point at an existing row" in out
    assert "FAIL  every typed record's status is the last one its audit log records" in out
    assert "ok    one current version per key" in out
    code, out, _ = cli("--db", seeded, "--json", "check")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False
    assert set(data["violations"]) == {
        "superseded rows point at an existing row",
        "every typed record's status is the last one its audit log records"}


# ---------------------------------------------------------------------------- maintain


def test_maintain_runs_every_step_with_progress(
    seeded: str, cli: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="langgraph_typed_memory.cli.progress")
    code, out, err = cli("--db", seeded, "--no-index", "maintain", "--tenant", "acme")
    assert code == 0
    assert out.splitlines()[0].split()[:2] == ["step", "changes"]
    assert "sweeps" in out and "maintenance of tenant acme done" in out
    # stderr is not a terminal here: no bar on it, the progress is logged instead
    assert "sweeps" not in err and "[" not in err
    assert any(r.getMessage().startswith("sweeps") for r in caplog.records)
    code, out, _ = cli("--db", seeded, "--no-index", "--json", "maintain")
    assert code == 0 and json.loads(out)["tenant_id"] is None
    code, _, err = cli("--db", seeded, "maintain", "--tenant", "a:b")
    assert code == 2 and "bad scope" in err


# ---------------------------------------------------------------------------- export/import


def test_export_import_round_trip_with_prompted_passphrases(
    seeded: str, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = iter(["correct horse", "correct horse"])
    monkeypatch.setattr(cli_commands.getpass, "getpass", lambda prompt="": next(answers))
    out_file = tmp_path / "alice.lgtm"
    code, out, _ = cli("--db", seeded, "--no-index", "export", "--tenant", "acme",
                       "--user", "alice", "--out", str(out_file))
    assert code == 0 and out_file.is_file() and "exported tenant:acme/user:alice" in out
    assert b"Lyon" not in out_file.read_bytes()  # encrypted
    assert cli("--db", seeded, "erase", "--tenant", "acme", "--user", "alice", "--yes")[0] == 0

    monkeypatch.setenv("TM_TEST_PASS", "wrong horse")
    code, _, err = cli("--db", seeded, "--no-index", "import", str(out_file),
                       "--passphrase-env", "TM_TEST_PASS")
    assert code == 1 and "could not be decrypted" in err
    assert len([line for line in err.splitlines() if "error" in line]) == 1

    monkeypatch.setenv("TM_TEST_PASS", "correct horse")
    code, out, _ = cli("--db", seeded, "--no-index", "--json", "import", str(out_file),
                       "--passphrase-env", "TM_TEST_PASS")
    assert code == 0 and json.loads(out)["records"] == {"fact": 1, "preference": 2}
    with open_direct(seeded) as store:
        assert store.get(ALICE_PREFS, "tone").value["value"] == "terse"  # type: ignore[union-attr]
        assert store.check_invariants().ok


def test_an_export_with_vectors_into_a_database_without_them_says_what_to_do_from_the_cli(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import hash_index

    source, export = str(tmp_path / "with-vectors.db"), tmp_path / "alice.lgtm"
    with SqliteMemoryStore.from_conn_string(source, index=hash_index()) as store:
        store.setup()
        store.put(ALICE_FACTS, "city", {"subject": "alice", "predicate": "home_city",
                                        "content": "Alice lives in Lyon."})
        store.export_scope(export, "a long enough passphrase", tenant_id="acme",
                           user_id="alice")
    target = str(tmp_path / "lexical.db")
    assert cli("--db", target, "--no-index", "setup")[0] == 0
    monkeypatch.setenv("TM_TEST_PASS", "a long enough passphrase")
    code, _, err = cli("--db", target, "--no-index", "import", str(export),
                       "--passphrase-env", "TM_TEST_PASS")
    assert code == 1 and "nothing was imported" in err and "typed-memory --db NEW setup" in err
    assert len([line for line in err.splitlines() if "error" in line]) == 1


def test_a_passphrase_nobody_can_type_is_one_error_line(
    seeded: str, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def closed(prompt: str = "") -> str:
        raise EOFError  # what getpass raises when stdin ends at once (< /dev/null, cron)

    monkeypatch.setattr(cli_commands.getpass, "getpass", closed)
    target = tmp_path / "x.lgtm"
    code, _, err = cli("--db", seeded, "export", "--tenant", "acme", "--out", str(target))
    assert code == 2 and "--passphrase-env" in err and not target.exists()
    assert len(err.strip().splitlines()) == 1
    monkeypatch.setenv("TM_TEST_PASS", "a long enough passphrase")
    code, _, _ = cli("--db", seeded, "export", "--tenant", "acme", "--out", str(target),
                     "--passphrase-env", "TM_TEST_PASS")
    assert code == 0
    code, _, err = cli("--db", seeded, "import", str(target))
    assert code == 2 and "--passphrase-env" in err


def test_export_refuses_bad_passphrases_and_existing_files(
    seeded: str, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = iter(["first passphrase", "second passphrase"])
    monkeypatch.setattr(cli_commands.getpass, "getpass", lambda prompt="": next(answers))
    target = tmp_path / "x.lgtm"
    code, _, err = cli("--db", seeded, "export", "--tenant", "acme", "--out", str(target))
    assert code == 2 and "passphrases differ" in err and not target.exists()
    code, _, err = cli("--db", seeded, "export", "--tenant", "acme", "--out", str(target),
                       "--passphrase-env", "TM_UNSET_VARIABLE_FOR_TEST")
    assert code == 2 and "TM_UNSET_VARIABLE_FOR_TEST" in err
    target.write_text("keep me")
    code, _, err = cli("--db", seeded, "export", "--tenant", "acme", "--out", str(target))
    assert code == 1 and "already exists" in err and target.read_text() == "keep me"
    code, _, err = cli("--db", seeded, "import", str(tmp_path / "missing.lgtm"))
    assert code == 1 and "no export file" in err
    parser = build_parser()
    assert not any(a.dest == "passphrase" for a in parser._actions)  # never an argument


# ---------------------------------------------------------------------------- errors


def test_missing_database_and_directory(tmp_path: Path, cli: Any) -> None:
    missing = tmp_path / "no" / "such" / "memory.db"
    code, _, err = cli("--db", str(missing), "inspect", "--tenant", "acme")
    assert code == 1 and f"the directory {missing.parent} does not exist" in err
    assert not missing.parent.exists()  # nothing created by a read command
    code, _, err = cli("--db", str(tmp_path / "absent.db"), "check")
    assert code == 1 and "the file does not exist" in err
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    code, _, err = cli("--db", str(empty), "check")
    assert code == 1 and "has no memory schema" in err and "typed-memory" in err


def test_a_schema_behind_this_version_is_refused(seeded: str, cli: Any) -> None:
    run_sql(seeded, "DELETE FROM memory_migrations WHERE name = '0004_audit'")
    code, _, err = cli("--db", seeded, "inspect", "--tenant", "acme")
    assert code == 1 and "pending migrations: 0004_audit" in err
    assert "run `typed-memory setup`" in err


def test_usage_errors_are_one_line_with_exit_code_2(seeded: str, cli: Any) -> None:
    cases = [
        (["inspect", "--tenant", "acme", "--kind", "facts"], "invalid choice: 'facts'"),
        (["inspect", "--tenant", "a:b"], "bad scope"),
        (["inspect", "--tenant", "acme", "--limit", "0"], "must be at least 1"),
        (["inspect"], "--tenant"),
        (["search", "--tenant", "acme"], "QUERY"),
        (["frobnicate"], "invalid choice"),
        ([], "COMMAND"),
        (["bench", "nope"], "invalid choice"),
    ]
    for argv, expected in cases:
        code, out, err = cli("--db", seeded, *argv)
        assert code == 2, argv
        assert expected in err, (argv, err)
        assert err.startswith("typed-memory: error:") and len(err.strip().splitlines()) == 1
        assert out == ""


def test_unreachable_postgres_is_one_line(cli: Any) -> None:
    code, _, err = cli("--db", "postgresql://app:s3cret@127.0.0.1:1/memory?connect_timeout=2",
                       "check")
    assert code == 1 and "cannot connect to postgresql://app:***@127.0.0.1:1/memory" in err
    assert "s3cret" not in err and len(err.strip().splitlines()) == 1
    # the driver's cause, not only its closing hint: the address tried and why it failed
    assert '"127.0.0.1", port 1 failed: Connection refused' in err


def test_database_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TYPED_MEMORY_DB", raising=False)
    assert resolve_database() == ".typed-memory/memory.db"
    monkeypatch.setenv("TYPED_MEMORY_DB", "postgresql://h/db")
    assert resolve_database() == "postgresql://h/db"
    assert resolve_database("x.db") == "x.db"
    assert redact("postgresql://u@h/db") == "postgresql://u@h/db"


def test_env_database_is_used(seeded: str, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPED_MEMORY_DB", seeded)
    code, out, _ = cli("inspect", "--tenant", "acme", "--user", "bob")
    assert code == 0 and "Bob lives in Lyon too." in out


# ---------------------------------------------------------------------------- help


def _subparsers() -> dict[str, _Parser]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return dict(action.choices)  # type: ignore[arg-type]


def test_every_subcommand_help_describes_every_option(cli: Any) -> None:
    subs = _subparsers()
    assert set(subs) == {"setup", "inspect", "search", "explain", "erase", "check",
                         "maintain", "export", "import", "import-conversation", "bench"}
    for name, sub in subs.items():
        code, out, _ = cli(name, "--help")
        assert code == 0, name
        assert sub.description and sub.description.split()[0] in out
        for action in sub._actions:
            if action.dest == "help":
                continue
            assert action.help, f"{name} {action.dest} has no help"
            for flag in action.option_strings:
                assert flag in out, f"{name} --help does not show {flag}"
            if not action.option_strings:
                assert (action.metavar or action.dest) in out
            first_words = " ".join(action.help.split()[:3]).replace("%(default)s", "")
            assert first_words.split()[0] in out


def test_installed_console_script_help() -> None:
    script = Path(sys.executable).parent / "typed-memory"
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    for name in ("setup", "inspect", "search", "explain", "erase", "check", "maintain",
                 "export", "import", "bench", "--db", "--no-index", "--json"):
        assert name in result.stdout


# ---------------------------------------------------------------------------- bench


def test_bench_runs_the_repository_script(capfd: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "vectors", "--help"])
    out, err = capfd.readouterr()
    assert code == 0 and "--sizes" in out, err


def test_bench_without_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Any
) -> None:
    monkeypatch.setattr(cli_commands, "PACKAGE_ROOT", None)
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("bench", "vectors")
    assert code == 1 and "not in the installed package" in err
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "vector_scan.py").write_text("")
    with pytest.raises(CliError, match="has no latency.py .this checkout has: vector_scan.py"):
        find_benchmark("latency.py", tmp_path)
    assert find_benchmark("vector_scan.py", tmp_path) == tmp_path / "benchmarks" / "vector_scan.py"


# ---------------------------------------------------------------------------- progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_redraws_in_place_on_a_terminal() -> None:
    stream = _Terminal()
    bar = ProgressBar(stream, width=4)
    bar("compaction", 1, 4)
    bar("compaction", 4, 4)
    bar("sweeps", 0, None)
    bar.close()
    assert stream.getvalue() == (
        "\rcompaction [#---] 1/4\rcompaction [####] 4/4\n\rsweeps 0\n")


def test_progress_off_a_terminal_is_logged_at_an_interval_not_drawn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="langgraph_typed_memory.cli.progress")
    stream, now = io.StringIO(), [0.0]
    bar = ProgressBar(stream, interval=10.0, clock=lambda: now[0])
    for done in range(101):  # a second per item: a line at the start, every 10 s, the end
        bar("memories", done, 100)
        now[0] += 1.0
    bar("write", 1, 1)
    bar.close()
    assert stream.getvalue() == ""
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["memories: 0/100", *(f"memories: {n}/100" for n in range(10, 101, 10)),
                     "write: 1/1"]
