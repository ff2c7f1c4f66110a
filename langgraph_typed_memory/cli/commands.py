"""What each `typed-memory` subcommand does; `app.py` parses the arguments.

The stores, their plans and the importer are imported inside the commands that use them.
"""

from __future__ import annotations

import argparse
import difflib
import getpass
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph_typed_memory.cli.choices import (
    BENCHMARKS,
    MIN_EXPORT_PASSPHRASE,
    RETRIEVAL_MODES,
)
from langgraph_typed_memory.cli.conversations import import_summary, read_conversation
from langgraph_typed_memory.cli.database import (
    CliError,
    OpenedStore,
    open_store,
    redact,
    resolve_database,
)
from langgraph_typed_memory.cli.progress import ProgressBar
from langgraph_typed_memory.cli.render import (
    jsonable,
    scope_label,
    short_value,
    table,
    to_json,
    when,
)
from langgraph_typed_memory.errors import (
    EmbeddingDimensionMismatch,
    InvalidNamespace,
    NothingToExport,
)
from langgraph_typed_memory.namespaces import (
    KINDS,
    RANKED_KINDS,
    Scope,
    is_typed,
    misspelt_kind,
    parse_namespace,
    parse_scope,
)

__all__ = [
    "BENCHMARKS",
    "parse_namespace_arg",
    "nearest_kind",
    "find_benchmark",
    "COMMANDS",
]

PACKAGE_ROOT: Path | None = Path(__file__).resolve().parents[2]
"""Where an editable install's repository is (searched after the current directory)."""


def _say(text: str = "") -> None:
    print(text)


def _note(text: str) -> None:
    print(f"typed-memory: note: {text}", file=sys.stderr)


def nearest_kind(word: str) -> str | None:
    """The memory kind `word` most likely meant, or None when none is close: the grammar's
    own reading of a misspelt kind (`misspelt_kind`), else, for a suggestion only, a looser
    match ("prefs", "obs").

    Example:
        >>> nearest_kind("facts"), nearest_kind("prefs"), nearest_kind("obs"), nearest_kind("x")
        ('fact', 'preference', 'observation', None)
    """
    if (kind := misspelt_kind(word)) is not None:
        return kind
    word = word.strip().lower()
    close = difflib.get_close_matches(word, KINDS, n=1, cutoff=0.5)
    if close:
        return close[0]
    starting = [k for k in KINDS if len(word) >= 3 and k.startswith(word)]
    return starting[0] if len(starting) == 1 else None


def _split_labels(text: str, separator: str) -> tuple[str, ...]:
    """The labels of a namespace written with `separator` between them: the last label is the
    kind (a kind never holds the separator or ``:``) and the scope labels start at ``user:``
    and ``agent:``, so an id may hold the separator."""
    scope = re.compile(rf"{re.escape(separator)}(?=user:|agent:)")
    head, sep, last = text.rpartition(separator)
    if sep and ":" not in last:
        return (*scope.split(head), last)
    return tuple(scope.split(text))  # no kind: parse_namespace says so


def parse_namespace_arg(text: str) -> tuple[str, ...]:
    """A typed namespace written ``tenant:acme/user:alice/preference`` or dotted.

    Only the last separator (before the kind) and a separator followed by ``user:`` or
    ``agent:`` separate labels, so an id may contain the separator (``/``, or ``.`` where
    the grammar allows it in ids).

    Example:
        >>> parse_namespace_arg("tenant:acme/user:alice/preference")
        ('tenant:acme', 'user:alice', 'preference')
        >>> parse_namespace_arg("tenant:acme.agent:support.procedure")
        ('tenant:acme', 'agent:support', 'procedure')

    Raises:
        CliError: (exit code 2) the text is not a typed namespace; the message says why, and
            for a misspelt kind which kind it probably meant.
    """
    text = text.strip()
    labels = _split_labels(text, "/" if "/" in text else ".")
    grammar = "Write it as tenant:ID[/user:ID][/agent:ID]/KIND."
    kind = labels[-1]
    if len(labels) > 1 and is_typed(labels) and ":" not in kind and kind not in KINDS:
        nearest = nearest_kind(kind)
        guess = f" (did you mean {nearest!r}?)" if nearest else ""
        raise CliError(
            f"bad namespace {text!r}: unknown kind {kind!r}{guess}; the kinds are "
            f"{', '.join(KINDS)}. {grammar}",
            exit_code=2,
        )
    try:
        parse_namespace(labels)
    except InvalidNamespace as exc:
        raise CliError(f"bad namespace {text!r}: {exc} {grammar}", exit_code=2) from None
    return labels


def _scope(args: argparse.Namespace) -> Scope:
    scope = Scope(args.tenant, getattr(args, "user", None), getattr(args, "agent", None))
    try:
        parse_scope(scope.labels())
    except InvalidNamespace as exc:
        raise CliError(f"bad scope: {exc}", exit_code=2) from None
    return scope


@contextmanager
def _opened(args: argparse.Namespace, **kwargs: Any) -> Iterator[OpenedStore]:
    with open_store(resolve_database(args.db), use_index=not args.no_index, **kwargs) as opened:
        for note in opened.notes:
            _note(note)
        yield opened


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    _say(to_json(data) if args.json else text)


# ------------------------------------------------------------------------------ commands


def cmd_setup(args: argparse.Namespace) -> int:
    """Create or migrate the schema."""
    from langgraph_typed_memory.cli.inspection import schema_plan

    with _opened(args, create=True, dims=args.dims) as opened:
        before = opened.schema.applied or frozenset()
        opened.store.setup()
        after = opened.store._run(schema_plan())
    applied = sorted((after.applied or frozenset()) - before)
    data = {"database": redact(opened.target), "backend": opened.backend,
            "migrations": sorted(after.applied or ()), "applied_now": applied,
            "dims": after.dims}
    vectors = f"{after.dims}-d vectors" if after.dims else "lexical-only (no vectors)"
    _emit(args, data, (
        f"schema ready at {redact(opened.target)} ({opened.backend}, {vectors}); "
        + (f"applied now: {', '.join(applied)}" if applied else "already up to date")
    ))
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    """List the typed records stored in a scope."""
    from langgraph_typed_memory.cli.inspection import ScopeFilter, near_plan, records_plan

    scope = _scope(args)
    flt = ScopeFilter(scope.tenant_id, scope.user_id, scope.agent_id, args.kind, args.status)
    with _opened(args) as opened:
        load = opened.store.records.dialect.load_json
        total, rows = opened.store._run(records_plan(flt, args.limit, load))
        tenants, users = ([], []) if rows or args.json else opened.store.run_plan(
            near_plan(flt))
    if args.json:
        _say(to_json({"total": total, "records": rows}))
        return 0
    if not rows:
        status = "" if args.status == "all" else f"{args.status} "
        _say(f"no {status}records in {'/'.join(scope.labels())}"
             + (f" of kind {args.kind}" if args.kind else "")
             + (" (any status)" if args.status == "all" else ""))
        for what, near in (("tenant", tenants), ("user", users)):
            if near:
                _say(f"  did you mean {what} {' or '.join(near)}? (ids are matched exactly)")
        return 0
    _say(table(
        ["key", "kind", "status", "scope", "updated", "value"],
        [[r.key, r.kind, r.status, scope_label(r.scope), when(r.updated_at),
          short_value(r.value)] for r in rows],
    ))
    _say(f"{len(rows)} of {total} record(s)" + ("; raise --limit to see more"
                                                if total > len(rows) else ""))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """Search a scope the way the memory graph does."""
    scope = _scope(args)
    kinds = args.kind or sorted(RANKED_KINDS)
    out: dict[str, Any] = {}
    with _opened(args) as opened:
        for kind in kinds:
            namespace = (*scope.labels(), kind)
            out[kind] = opened.store.search(namespace, query=args.query, limit=args.limit)
    if args.json:
        _say(to_json({kind: {"retrieval_mode": getattr(res, "retrieval_mode", None),
                             "degraded": getattr(res, "degraded", []), "results": list(res)}
                      for kind, res in out.items()}))
        return 0
    shown: list[str] = []
    for kind, results in out.items():
        mode = getattr(results, "retrieval_mode", "?")
        what = ("exact lookup: every active record in scope, unranked"
                if mode == "exact" else f"retrieval mode {mode}")
        if mode != "exact" and mode not in shown:
            shown.append(mode)
        _say(f"{kind}: {len(results)} result(s) ({what})")
        for reason in getattr(results, "degraded", []):
            _say(f"  degraded: {reason}")
        if results:
            _say(table(
                ["#", "relevance", "tier", "key", "scope", "value"],
                [[i, f"{r.memory['relevance']:.3f}"
                  if isinstance(r.memory.get("relevance"), float) else "-",
                  r.memory.get("tier") or "-", r.key, scope_label(r.memory["scope"]),
                  short_value(r.value)] for i, r in enumerate(results, 1)],
            ))
        _say()
    for mode in shown:  # the legend of the modes above (`search --help` lists them all)
        if mode in RETRIEVAL_MODES:
            _say(f"retrieval mode {mode}: {RETRIEVAL_MODES[mode]}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """Every version of a record and its audit trail; the record named by its namespace and
    key, or by a version's id."""
    from langgraph_typed_memory.cli.inspection import keys_plan, located_plan

    memory_id = None
    if args.key is not None:
        namespace, key = parse_namespace_arg(args.target), args.key
    elif _looks_like_namespace(args.target):
        raise CliError(f"{args.target!r} is a namespace: give the record's key after it, or "
                       "a version's id alone", exit_code=2)
    with _opened(args) as opened:
        if args.key is None:
            memory_id, namespace, key = _located(
                opened.store.run_plan(located_plan(args.target.strip().rstrip(".…"))),
                args.target)
        versions = opened.store.history(namespace, key)
        events = opened.store.audit(namespace, key)
        keys = [] if versions or events else opened.store.run_plan(keys_plan(namespace))
    label = "/".join(namespace)
    if not versions and not events:
        held = (f"; its keys include {', '.join(map(repr, keys))}" if keys
                else "; it holds no record")
        raise CliError(f"no record {key!r} in {label} (never written, or erased){held}")
    if args.json:
        _say(to_json({"namespace": list(namespace), "key": key, "versions": versions,
                      "audit": events, **({"id": memory_id} if memory_id else {})}))
        return 0
    _say(f"{label} {key}: {len(versions)} version(s), newest first")
    for i, v in enumerate(versions, 1):
        m = v.memory
        prov = m.get("provenance") or {}
        mark = "  <- the id asked for" if m["id"] == memory_id else ""
        _say(f"  [{i}] {m['status']}  id {m['id']}  created {when(v.created_at)}  "
             f"updated {when(v.updated_at)}  confidence {m.get('confidence')}{mark}")
        if m.get("superseded_by"):
            _say(f"      superseded by {m['superseded_by']}")
        _say(f"      source run {prov.get('source_run_id') or '-'}, turn "
             f"{prov.get('source_turn') if prov.get('source_turn') is not None else '-'}, "
             f"policy version {prov.get('policy_version') or '-'}")
        words = [str(e.get("grounding")) for e in m.get("evidence") or ()
                 if isinstance(e, dict) and e.get("grounding")]
        _say(f"      proposed by {prov.get('proposed_by') or 'application code'}"
             + (f", from the words {json.dumps(words[0][:200], ensure_ascii=False)}"
                if words else ""))
        if m.get("contradicts"):
            _say(f"      contradicts {', '.join(map(str, m['contradicts']))}")
        _say("      value " + json.dumps(v.value, ensure_ascii=False, default=str))
    _say("audit trail, oldest first:")
    _say(table(
        ["at", "version", "actor", "transition", "reason", "run"],
        [[when(e["at"]), e["memory_id"], e["actor"],
          f"{e['from_status'] or '(new)'} -> {e['to_status']}", e["reason"],
          e.get("run_id") or "-"] for e in events],
    ) if events else "  (no events)")
    return 0


def _looks_like_namespace(text: str) -> bool:
    """Whether `explain`'s one argument is a namespace (it starts with a tenant label), not
    an id."""
    return text.strip().startswith("tenant:")


def _located(found: list[tuple[str, tuple[str, ...], str]], asked: str
             ) -> tuple[str, tuple[str, ...], str]:
    """The one (id, namespace, key) `located_plan` found for the id `asked`.

    Raises:
        CliError: no typed record has that id (exit code 1), or several ids start with it.
    """
    from langgraph_typed_memory.cli.inspection import ID_PREFIX

    if len(found) == 1:
        return found[0]
    if found:
        raise CliError(f"several records have an id starting with {asked!r}: give more of it "
                       f"({', '.join(f[0] for f in found)}, ...)")
    short = (f"; an id is found from its first {ID_PREFIX} characters or more"
             if len(asked) < ID_PREFIX else "")
    raise CliError(f"no typed record has the id {asked!r} (never written, or erased){short}; "
                   "or name the record by its namespace and key")


def _untyped_prefixes(args: argparse.Namespace) -> list[tuple[str, ...]]:
    """The `--untyped-prefix` namespaces, written with `/` or `.` between labels.

    Example:
        >>> _untyped_prefixes(argparse.Namespace(untyped_prefix=["memories/alice", "notes"]))
        [('memories', 'alice'), ('notes',)]

    Raises:
        CliError: (exit code 2) an empty label, or a typed namespace (the scope's already).
    """
    out = []
    for text in args.untyped_prefix:
        labels = tuple(text.strip().split("/" if "/" in text else "."))
        if not all(labels):
            raise CliError(f"--untyped-prefix {text!r}: a namespace of labels separated by / "
                           "(e.g. memories/alice), none empty", exit_code=2)
        if is_typed(labels):
            raise CliError(f"--untyped-prefix {text!r} is a typed namespace: the scope's "
                           "typed records are included already", exit_code=2)
        out.append(labels)
    return out


def _no_confirmation(label: str, why: str) -> CliError:
    return CliError(f"erasing {label} needs a confirmation, but {why}: nothing was erased; "
                    "pass --yes to erase without asking (scripts, cron)", exit_code=2)


def _confirm(label: str) -> bool:
    """Ask to type `label` back on stdin: True when it was.

    Raises:
        CliError: (exit code 2) stdin is closed or ends without a line: nobody can confirm.
    """
    stdin = sys.stdin
    if stdin is None or stdin.closed:
        raise _no_confirmation(label, "stdin is closed")
    print(
        f"This permanently erases every memory of {label}: all kinds and statuses, their "
        "audit trail and, unless --keep-threads, its checkpointer threads in this database.\n"
        f"Type {label} to confirm: ",
        end="", file=sys.stderr, flush=True,
    )
    answer = stdin.readline()
    if not answer:  # end of input: /dev/null, an empty pipe, Ctrl-D
        print(file=sys.stderr)
        raise _no_confirmation(label, "stdin gave no input (it is not a terminal, or ended)")
    return answer.strip() == label


def _checkpointer(opened: OpenedStore, *, otherwise: str = "") -> Any:
    """LangGraph's checkpointer on the same database, when its tables are there.

    `otherwise` ends the message when the Postgres checkpointer is not installed: what the
    user can do without it.
    """
    from langgraph_typed_memory.cli.inspection import table_plan

    if not opened.store._run(table_plan(opened.backend, "checkpoints")):
        return None
    if opened.backend == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        return SqliteSaver(sqlite3.connect(opened.target, check_same_thread=False))
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
        from psycopg.rows import dict_row
    except ImportError:
        raise CliError(
            "the database holds checkpointer threads but langgraph-checkpoint-postgres is not "
            f"installed: install it{otherwise}"
        ) from None
    conn = Connection.connect(opened.target, autocommit=True, prepare_threshold=0,
                              row_factory=dict_row)  # type: ignore[arg-type]
    return PostgresSaver(conn)  # type: ignore[arg-type]


def cmd_erase(args: argparse.Namespace) -> int:
    """Erase a user or a whole tenant."""
    scope = _scope(args)
    prefixes = _untyped_prefixes(args)
    label = "/".join(scope.labels())
    if not args.yes and (sys.stdin is None or sys.stdin.closed):
        raise _no_confirmation(label, "stdin is closed")
    with _opened(args) as opened:
        if not args.yes and not _confirm(label):
            raise CliError(f"erasure cancelled: the confirmation did not match {label}; "
                           "nothing was erased")
        saver = None if args.keep_threads else _checkpointer(
            opened, otherwise=", or pass --keep-threads to erase the memory only")
        try:
            report = opened.store.erase(scope.tenant_id, scope.user_id, checkpointer=saver,
                                        untyped_prefixes=prefixes,
                                        actor="typed-memory erase", reason=args.reason)
        finally:
            if saver is not None:
                saver.conn.close()
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(report.records.items())) or "none"
    _emit(args, report, (
        f"erased {label}: records {kinds}; audit events {report.audit_events}; wider records "
        f"scrubbed {report.evidence_scrubbed}, deleted {report.derived_deleted}; threads "
        f"{len(report.threads)}" + (f" (kept {len(report.threads_kept)})" if report.threads_kept
                                    else "") + f"; deletion event {report.event_id}"
    ))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Run the invariant checker; exit code 1 when one fails."""
    with _opened(args) as opened:
        report = opened.store.check_invariants()
    if args.json:
        _say(to_json({"ok": report.ok, "checked": report.checked,
                      "violations": report.violations}))
    else:
        for name in report.checked:
            rows = report.violations.get(name)
            _say(f"{'FAIL' if rows else 'ok  '}  {name}"
                 + (f": {len(rows)} violation(s), e.g. {rows[:3]!r}" if rows else ""))
        _say(str(report))
    return 0 if report.ok else 1


def _method(opened: OpenedStore, name: str, command: str) -> Any:
    method = getattr(opened.store, name, None)
    if method is None:
        raise CliError(f"`{command}` is not available in this version of "
                       f"langgraph-typed-memory (the store has no {name}())", exit_code=2)
    return method


def _report(args: argparse.Namespace, title: str, report: Any) -> None:
    data = jsonable(report)
    if args.json:
        _say(to_json(data))
    elif isinstance(data, dict):
        _say(title)
        for key, value in data.items():
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            _say(f"  {key}: {shown}")
    else:
        _say(f"{title} {data}")


def cmd_maintain(args: argparse.Namespace) -> int:
    """Run the maintenance jobs."""
    if args.tenant is not None:
        _scope(args)
    from langgraph_typed_memory.nodes._common import resolve_model

    model = resolve_model(args.model, None)
    with _opened(args) as opened:
        maintain = _method(opened, "maintain", "maintain")
        bar = ProgressBar()
        try:
            report = maintain(tenant_id=args.tenant, model=model, progress=bar)
        finally:
            bar.close()
    data = jsonable(report)
    if args.json or not isinstance(data, dict) or "steps" not in data:
        _report(args, "maintenance done:", data)
        return 0
    _say(table(
        ["step", "changes", "notes", "seconds"],
        [[s["name"], ", ".join(f"{k} {v}" for k, v in s["counts"].items()) or "-",
          "; ".join(s["notes"]) or "-", f"{s['seconds']:.2f}"] for s in data["steps"]],
    ))
    scope = f"tenant {args.tenant}" if args.tenant else "every tenant"
    _say(f"maintenance of {scope} done: {getattr(report, 'changed', '?')} record(s) changed")
    return 0


def _check_export_passphrase(passphrase: str, source: str) -> None:
    if len(passphrase) < MIN_EXPORT_PASSPHRASE:
        raise CliError(
            f"{source} is {len(passphrase)} character(s) long: an export passphrase needs at "
            f"least {MIN_EXPORT_PASSPHRASE} characters (it is the only secret protecting the "
            "file; a few words are easy to remember); nothing was exported", exit_code=2)


def _passphrase(args: argparse.Namespace, *, export: bool) -> str:
    """The passphrase from --passphrase-env or a prompt (asked twice for an export, which
    also needs `MIN_EXPORT_PASSPHRASE` characters)."""
    if args.passphrase_env:
        value = os.environ.get(args.passphrase_env)
        if not value:
            raise CliError(f"--passphrase-env {args.passphrase_env}: that environment variable "
                           "is not set or empty", exit_code=2)
        if export:
            _check_export_passphrase(value, f"the passphrase in ${args.passphrase_env}")
        return value
    first = _asked("Passphrase: ")
    if not first:
        raise CliError("an empty passphrase is not allowed", exit_code=2)
    if export:
        _check_export_passphrase(first, "the passphrase")
        if _asked("Passphrase again: ") != first:
            raise CliError("the two passphrases differ; nothing was exported", exit_code=2)
    return first


def _asked(prompt: str) -> str:
    """A passphrase typed at the terminal (or read from stdin without one).

    Raises:
        CliError: (exit code 2) there is nobody to ask: stdin is closed or ends at once (a
            script, cron, `< /dev/null`).
    """
    try:
        return getpass.getpass(prompt)
    except EOFError:
        raise CliError("no passphrase could be read: stdin ended; pass --passphrase-env VAR "
                       "with the passphrase in that environment variable", exit_code=2
                       ) from None


def cmd_export(args: argparse.Namespace) -> int:
    """Export a scope to an encrypted file."""
    scope = _scope(args)
    prefixes = _untyped_prefixes(args)
    out = Path(args.out)
    if out.exists() and not args.force:
        raise CliError(f"{out} already exists: choose another --out or pass --force")
    if not out.parent.exists():
        raise CliError(f"cannot write {out}: the directory {out.parent} does not exist")
    label = "/".join(scope.labels())
    with _opened(args) as opened:
        export = _method(opened, "export_scope", "export")
        passphrase = _passphrase(args, export=True)
        bar = ProgressBar()
        try:
            report = export(str(out), passphrase, tenant_id=scope.tenant_id,
                            user_id=scope.user_id, untyped_prefixes=prefixes, progress=bar,
                            allow_empty=args.allow_empty)
        except NothingToExport:
            raise _nothing_to_export(opened, scope, label, prefixes) from None
        finally:
            bar.close()
    _report(args, f"exported {label} to {out}:", report)
    return 0


def _nothing_to_export(opened: OpenedStore, scope: Scope, label: str,
                       prefixes: list[tuple[str, ...]]) -> CliError:
    """The error of an export of a scope the database holds nothing of, naming the ids it
    holds that look like the ones given."""
    from langgraph_typed_memory.cli.inspection import ScopeFilter, near_plan

    tenants, users = opened.store.run_plan(near_plan(ScopeFilter(scope.tenant_id,
                                                                 scope.user_id)))
    near = "".join(f"; did you mean {what} {' or '.join(ids)}?"
                   for what, ids in (("tenant", tenants), ("user", users)) if ids)
    untyped = "".join(f", nor anything under {'/'.join(p)}" for p in prefixes)
    return CliError(
        f"nothing to export: the database holds no record, audit event or deletion event of "
        f"{label}{untyped} (ids are matched exactly{near}); no file was written. Pass "
        "--allow-empty to write an empty export anyway")


def cmd_import(args: argparse.Namespace) -> int:
    """Import a file written by `export`."""
    source = Path(args.file)
    if not source.is_file():
        raise CliError(f"no export file at {source}")
    with _opened(args) as opened:
        import_scope = _method(opened, "import_scope", "import")
        passphrase = _passphrase(args, export=False)
        bar = ProgressBar()
        try:
            report = import_scope(str(source), passphrase, progress=bar)
        except EmbeddingDimensionMismatch as exc:
            raise CliError(f"{exc} From the CLI: the export's vectors need a database set up "
                           "for them (`typed-memory --db NEW setup`, then import there), "
                           "opened without --no-index.") from None
        finally:
            bar.close()
    _report(args, f"imported {source}:", report)
    return 0


def _thread_messages(opened: OpenedStore, thread_id: str) -> list[Any]:
    """The messages of a checkpointer thread in the store's database, each with its time."""
    from langgraph_typed_memory.conversation_import import messages_of_thread

    saver = _checkpointer(opened)
    if saver is None:
        raise CliError(f"{redact(opened.target)} has no LangGraph checkpointer tables, so no "
                       f"thread {thread_id!r} to import: --thread reads the threads a graph "
                       "compiled with SqliteSaver or PostgresSaver stored in this database")
    try:
        messages = messages_of_thread(saver, thread_id)
    finally:
        saver.conn.close()
    if not messages:
        raise CliError(f"no messages in thread {thread_id!r} of {redact(opened.target)}: "
                       "check the thread id (the graph's configurable thread_id)")
    return messages


def cmd_import_conversation(args: argparse.Namespace) -> int:
    """Import a conversation (a JSON file or a checkpointer thread) through the write path."""
    if args.file is not None and args.thread is not None:
        raise CliError("give FILE or --thread THREAD_ID, not both", exit_code=2)
    if args.file is None and args.thread is None:
        raise CliError("nothing to import: give FILE (a JSON conversation, - for stdin) or "
                       "--thread THREAD_ID", exit_code=2)
    scope = _scope(args)
    if scope.user_id is None:
        raise CliError(
            f"import-conversation needs --user U: a conversation's turns are one user's "
            f"memory, written to tenant:{scope.tenant_id}/user:U (the facts it states are "
            "about that user, and must not become the whole tenant's); pass the id your "
            "application sends as configurable user_id; nothing was imported", exit_code=2)
    conversation = None if args.file is None else read_conversation(args.file, sys.stdin)
    from langgraph_typed_memory.conversation_import import import_conversation
    from langgraph_typed_memory.nodes._common import resolve_model

    model = resolve_model(args.model, None)
    with _opened(args) as opened:
        if conversation is None:
            messages = _thread_messages(opened, args.thread)
            source, session = f"thread {args.thread}", args.session or args.thread
        else:
            messages, source = conversation.messages, conversation.source
            session = args.session or conversation.session_id
        bar = ProgressBar()
        try:
            report = import_conversation(
                opened.store, messages, tenant_id=scope.tenant_id, user_id=scope.user_id,
                agent_id=scope.agent_id, session_id=session, model=model,
                progress=lambda done, total: bar("importing messages", done, total))
        finally:
            bar.close()
    data = report.dict()
    label = "/".join(scope.labels())
    _emit(args, {"source": source, "scope": label, "session_id": session,
                 "messages": len(messages), **data},
          import_summary(data, source=source, scope=label, session_id=session))
    return 0


def find_benchmark(script: str, start: Path | None = None) -> Path:
    """The repository's `benchmarks/<script>`, searched from `start` (the current directory)
    upwards, then beside the package (an editable install).

    Example:
        >>> find_benchmark("vector_scan.py").name
        'vector_scan.py'

    Raises:
        CliError: no checkout with that script was found.
    """
    here = (start or Path.cwd()).resolve()
    candidates = [here, *here.parents, *([PACKAGE_ROOT] if PACKAGE_ROOT else [])]
    folders = [c / "benchmarks" for c in candidates if (c / "benchmarks").is_dir()]
    for folder in folders:
        if (folder / script).is_file():
            return folder / script
    if folders:
        have = ", ".join(sorted(p.name for p in folders[0].glob("*.py")
                                if not p.name.startswith("_")))
        raise CliError(f"{folders[0]} has no {script} (this checkout has: {have or 'none'})")
    raise CliError(
        f"no benchmarks/ folder found from {here} or beside the package: the benchmarks live "
        "in the repository, not in the installed package; run this from a checkout of "
        "langgraph-typed-memory"
    )


def cmd_bench(args: argparse.Namespace) -> int:
    """Run one of the repository's benchmark scripts with the remaining arguments."""
    script = find_benchmark(BENCHMARKS[args.name])
    return subprocess.call([sys.executable, str(script), *args.args])


COMMANDS = {
    "setup": cmd_setup, "inspect": cmd_inspect, "search": cmd_search, "explain": cmd_explain,
    "erase": cmd_erase, "check": cmd_check, "maintain": cmd_maintain, "export": cmd_export,
    "import": cmd_import, "import-conversation": cmd_import_conversation, "bench": cmd_bench,
}
