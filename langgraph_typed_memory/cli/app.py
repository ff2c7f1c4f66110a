"""The `typed-memory` command line: argument parsing, dispatch and error handling.

Exit codes: 0 success, 1 a failure (store error, missing file, failed check, refused
confirmation), 2 a usage error (bad argument, namespace or scope, malformed conversation
file, an erasure with nobody to confirm it), 130 interrupted, 141 the reader of the output
went away (``typed-memory ... | head``), as for any Unix tool killed by SIGPIPE.

Parsing needs only this module and the kind and status names: the commands, the stores and
the embedder are imported once a command runs, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from langgraph_typed_memory.cli.choices import BENCHMARKS, MIN_EXPORT_PASSPHRASE, modes_legend
from langgraph_typed_memory.cli.database import DB_ENV, DEFAULT_DB, CliError
from langgraph_typed_memory.errors import TypedMemoryError
from langgraph_typed_memory.lifecycle import STATUSES
from langgraph_typed_memory.namespaces import KINDS

__all__ = ["main", "build_parser", "BENCHMARKS", "MIN_EXPORT_PASSPHRASE"]

PROG = "typed-memory"


EXIT_BROKEN_PIPE = 128 + 13
"""The exit status of a process killed by SIGPIPE (signal 13), what a shell reports for
`cat big | head`."""


class _Parser(argparse.ArgumentParser):
    """Argument errors become one line and exit code 2 (see `main`)."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see `{self.prog} --help`)", exit_code=2)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _globals(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The global options, accepted before or after the subcommand."""
    default: Any = None if top else argparse.SUPPRESS
    parser.add_argument(
        "--db", metavar="PATH_OR_URL", default=default,
        help=f"SQLite file or postgresql:// URL (default: ${DB_ENV}, else {DEFAULT_DB})")
    parser.add_argument(
        "--no-index", action="store_true", default=False if top else argparse.SUPPRESS,
        help="open the store without an embedder: lexical-only retrieval")
    parser.add_argument(
        "--json", action="store_true", default=False if top else argparse.SUPPRESS,
        help="print machine-readable JSON instead of text")


def _scope_options(parser: argparse.ArgumentParser, *, agent: bool = True,
                   required: bool = True, user: str = "narrow the scope to this user id"
                   ) -> None:
    parser.add_argument("--tenant", required=required, metavar="T",
                        help="tenant id (the scope's required part)" if required
                        else "only this tenant (default: every tenant)")
    parser.add_argument("--user", metavar="U", help=user)
    if agent:
        parser.add_argument("--agent", metavar="A", help="narrow the scope to this agent id")


def _untyped_option(parser: argparse.ArgumentParser, verb: str) -> None:
    parser.add_argument(
        "--untyped-prefix", action="append", default=[], metavar="NAMESPACE",
        help=f"also {verb} the untyped items under this namespace prefix, e.g. the user's "
             "LangMem memories: memories/alice (repeatable; typed namespaces are the scope's "
             "already)")


def _passphrase_option(parser: argparse.ArgumentParser, *, minimum: int | None = None) -> None:
    length = f" (at least {minimum} characters)" if minimum else ""
    parser.add_argument(
        "--passphrase-env", metavar="VAR",
        help=f"read the passphrase{length} from this environment variable instead of a "
             "prompt (never pass a passphrase as an argument)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `typed-memory` (every subcommand and option).

    Example:
        >>> args = build_parser().parse_args(["check", "--db", "m.db"])
        >>> args.command, args.db
        ('check', 'm.db')
    """
    parser = _Parser(
        prog=PROG,
        description="Inspect, search, govern and maintain a langgraph-typed-memory store.",
        epilog="Docs: docs/cli.md. Exit codes: 0 ok, 1 failure, 2 usage error.",
    )
    _globals(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, description: str,
                epilog: str | None = None) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=description, epilog=epilog)
        _globals(p, top=False)
        return p

    p = command("setup", "create or migrate the schema (idempotent)",
                "Create the database (and a SQLite file's directory) or apply pending "
                "migrations. Safe to run again; on Postgres it holds an advisory lock.")
    p.add_argument("--dims", type=_positive, metavar="N",
                   help="vector size of the embedder your application uses (default: 384 "
                        "when the bundled MiniLM is installed, none with --no-index)")

    p = command("inspect", "list the records stored in a scope",
                "A table of the typed records stored in a scope, most recently updated "
                "first. Without --user/--agent every user's and agent's records of the "
                "tenant are listed.")
    _scope_options(p)
    p.add_argument("--kind", choices=KINDS, help="only this memory kind")
    p.add_argument("--status", choices=("current", "all", *STATUSES), default="current",
                   help="only this status; 'current' (default) is every status but "
                        "superseded and revoked, 'all' is every status")
    p.add_argument("--limit", type=_positive, default=50, metavar="N",
                   help="show at most N records (default 50)")

    p = command("search", "ranked search of a scope, as the memory graph reads it",
                "Search what a reader in the scope sees (its own records and the wider "
                "shared ones), with scores, relevance tiers and the retrieval mode.",
                modes_legend())
    p.add_argument("query", metavar="QUERY", help="the search text")
    _scope_options(p)
    p.add_argument("--kind", choices=KINDS, action="append",
                   help="kind to search; repeat for several (default: fact, episode, "
                        "observation). Exact kinds list every active record, unranked")
    p.add_argument("--limit", type=_positive, default=10, metavar="N",
                   help="at most N results per kind (default 10)")

    p = command("explain", "a record's versions and audit trail",
                "Every version of a typed record (superseded and revoked included) and "
                "every lifecycle transition of its audit trail. Name the record by its "
                "namespace and key, or by the id of one of its versions (as a retrieval "
                "trace, search --json or another explain shows it).")
    p.add_argument("target", metavar="NAMESPACE|ID",
                   help="typed namespace, e.g. tenant:acme/user:alice/preference or "
                        "tenant:acme.user:alice.preference; or, with no KEY, a version's id "
                        "(whole, or its first 8 or more characters)")
    p.add_argument("key", nargs="?", metavar="KEY", help="the record's key, after a namespace")

    p = command("erase", "erase a user or a whole tenant",
                "Delete every memory of a user (or, without --user, of the tenant) in one "
                "transaction, with audit trail and index entries, record a deletion event, "
                "and delete the user's LangGraph checkpointer threads stored in the same "
                "database.")
    _scope_options(p, agent=False)
    p.add_argument("--yes", action="store_true",
                   help="do not ask to type the scope back to confirm (needed when stdin is "
                        "not a terminal, e.g. in scripts)")
    p.add_argument("--reason", default="erasure request via typed-memory",
                   help="why, stored in the deletion event (default: %(default)s)")
    p.add_argument("--keep-threads", action="store_true",
                   help="leave the checkpointer threads (conversation history) in place")
    _untyped_option(p, "erase")

    command("check", "run the invariant checker (exit code 1 when one fails)",
            "Verify every invariant of the database (one current version per key, "
            "supersession pointers, index entries, scope columns, audit log).")

    p = command("maintain", "run the maintenance jobs, with a progress bar",
                "Run the maintenance steps in order: compaction, consolidation, pattern "
                "detection and promotion, which --tenant restricts to one tenant, then the "
                "lifecycle sweeps (freshness expiry, garbage collection of forgotten records, "
                "retention classes, LangGraph's TTL), which always cover every tenant of the "
                "database.")
    p.add_argument("--tenant", metavar="T",
                   help="run compaction, consolidation, detection and promotion for this "
                        "tenant only (default: every tenant); the sweeps still cover every "
                        "tenant")
    p.add_argument("--model", metavar="MODEL",
                   help="chat model for the jobs that summarize, as an init_chat_model "
                        "string (default: the offline rules)")

    p = command("export", "export a scope to an encrypted file",
                "Write a user's (or a tenant's) memory to a passphrase-encrypted file. The "
                "passphrase is asked twice, or read from --passphrase-env; it needs at "
                f"least {MIN_EXPORT_PASSPHRASE} characters.")
    _scope_options(p, agent=False)
    p.add_argument("--out", required=True, metavar="FILE", help="the file to write")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.add_argument("--allow-empty", action="store_true",
                   help="write the file even when the database holds nothing of the scope "
                        "(default: that is an error, most often a mistyped id, and no file "
                        "is written)")
    _untyped_option(p, "export")
    _passphrase_option(p, minimum=MIN_EXPORT_PASSPHRASE)

    p = command("import", "import a file written by export",
                "Load an encrypted export into this database (passphrase from a prompt or "
                "--passphrase-env).")
    p.add_argument("file", metavar="FILE", help="the export file")
    _passphrase_option(p)

    p = command("import-conversation", "write an existing conversation into memory",
                "Write a conversation (a JSON file, or a LangGraph thread stored in this "
                "database) into memory as a live chat would have: each user turn goes through "
                "the pre-filter, extraction, the promotion gate and the turn log, at its own "
                "time. A file is checked whole first: a malformed one writes nothing.")
    p.add_argument("file", nargs="?", metavar="FILE",
                   help="JSON conversation: a list of {role, content, name, timestamp, id} "
                        "objects, or {\"messages\": [...]}; - reads stdin")
    p.add_argument("--thread", metavar="THREAD_ID",
                   help="import this thread of the LangGraph checkpointer in the same "
                        "database instead of a FILE")
    _scope_options(p, user="the user whose conversation it is (required: the memory is "
                           "written to tenant:T/user:U)")
    p.add_argument("--session", metavar="S",
                   help="session the turns are logged under (default: FILE's name without "
                        "its extension, or the thread id)")
    p.add_argument("--model", metavar="MODEL",
                   help="chat model for extraction, as an init_chat_model string (default: "
                        "$TYPED_MEMORY_MODEL, else the offline rules)")

    p = command("bench", "run a benchmark script of the repository",
                "Run benchmarks/<script> of a repository checkout with the remaining "
                "arguments: " + ", ".join(f"{k} ({v})" for k, v in BENCHMARKS.items())
                + ". `typed-memory bench NAME --help` shows the script's own options.")
    p.add_argument("name", choices=tuple(BENCHMARKS), metavar="NAME",
                   help="which benchmark: " + ", ".join(BENCHMARKS))
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="arguments passed to the script unchanged")
    return parser


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _driver_error(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.Error) or type(exc).__module__.startswith("psycopg")


def _silence_output() -> None:
    """Point stdout and stderr at /dev/null: the reader is gone, and the interpreter's own
    flush at exit must not fail again (that would print "Exception ignored ...")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (AttributeError, OSError, ValueError):
                pass  # not a real file (tests capture output in memory)
    finally:
        os.close(devnull)


def _run(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help
        return done.code if isinstance(done.code, int) else 0
    from langgraph_typed_memory.cli.commands import COMMANDS

    return int(COMMANDS[args.command](args) or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `typed-memory` with `argv` (default: the process arguments); returns the exit code.

    Example:
        >>> main(["check", "--db", "/nonexistent/dir/memory.db"])
        1
    """
    try:
        code = _run(argv)
        sys.stdout.flush()  # a reader that went away fails here, not at interpreter exit
        return code
    except SystemExit as done:  # a benchmark's own exit
        return done.code if isinstance(done.code, int) else 0
    except BrokenPipeError:  # `typed-memory ... | head`: stop quietly, as Unix tools do
        _silence_output()
        return EXIT_BROKEN_PIPE
    except CliError as exc:
        _error(str(exc))
        return exc.exit_code
    except TypedMemoryError as exc:
        _error(f"{type(exc).__name__}: {exc}")
        return 1
    except OSError as exc:
        _error(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
        return 1
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except Exception as exc:
        if not _driver_error(exc):
            raise
        detail = " ".join(str(exc).split()) or type(exc).__name__
        _error(f"database error ({type(exc).__name__}): {detail}")
        return 1
