"""Reading a conversation for `typed-memory import-conversation`, and summing up the import.

A conversation file is read and parsed whole before the store is opened, so a malformed one
writes nothing. The importer itself (`langgraph_typed_memory.conversation_import`, which
builds the chat graph's nodes) is imported only when a command needs it, so `--help` and the
other commands do not pay for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from langgraph_typed_memory.cli.database import CliError
from langgraph_typed_memory.errors import InvalidRecord

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = ["Conversation", "read_conversation", "import_summary"]

STDIN = "-"
"""The FILE argument that reads the conversation from standard input."""

SHOWN_DEGRADATIONS = 5
"""Degradations listed one per line in the human summary; the rest are counted."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation read and validated, ready to import."""

    messages: list[tuple[BaseMessage, datetime | None]]
    """The messages in order, each with its time (None: the store's clock)."""
    source: str
    """Where it came from, as the messages name it: the file's path or ``stdin``."""
    session_id: str | None
    """The session its turns default to: the file's stem (None for stdin)."""


def read_conversation(path: str, stdin: TextIO) -> Conversation:
    """Read, parse and validate the JSON conversation at `path` (``-``: `stdin`).

    Example:
        >>> import io
        >>> conv = read_conversation("-", io.StringIO(
        ...     '[{"role": "user", "content": "I work at Initech.", '
        ...     '"timestamp": "2024-05-01T10:00:00Z"}]'))
        >>> conv.source, conv.session_id, conv.messages[0][1].isoformat()
        ('stdin', None, '2024-05-01T10:00:00+00:00')

    Raises:
        CliError: the file is missing (exit code 1); it is not UTF-8 JSON, or a message is
            malformed (exit code 2, naming the message and the field).
    """
    if path == STDIN:
        text, source, session = stdin.read(), "stdin", None
    else:
        file = Path(path)
        if not file.is_file():
            why = "it is a directory" if file.is_dir() else "the file does not exist"
            raise CliError(f"no conversation file at {file} ({why}); pass a JSON file, or - "
                           "to read stdin")
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise CliError(f"{file} is not UTF-8 text: a conversation is a JSON file; nothing "
                           "was imported", exit_code=2) from None
        source, session = str(file), file.stem
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{source} is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}): a "
            "conversation is a JSON list of messages (see docs/cli.md); nothing was imported",
            exit_code=2,
        ) from None
    if isinstance(data, Mapping) and "messages" not in data:
        raise CliError(
            f"{source}: a JSON object must hold the conversation under \"messages\", found "
            f"keys {sorted(map(str, data))[:5]}; nothing was imported", exit_code=2)
    from langgraph_typed_memory.conversation_import import read_messages

    try:
        messages = read_messages(data)
    except InvalidRecord as exc:
        raise CliError(f"{source}: {exc} Nothing was imported.", exit_code=2) from None
    return Conversation(messages, source, session)


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{key} {n}" for key, n in sorted(counts.items())) or "none"


def import_summary(report: Mapping[str, Any], *, source: str, scope: str,
                   session_id: str | None) -> str:
    """The human summary of an import, from the report's JSON form (`ImportReport.dict()`).

    Example:
        >>> print(import_summary(
        ...     {"run_id": "9f2c", "turns": 3, "prefilter": {"kept": 2, "chit_chat": 1},
        ...      "outcomes": {"fact:written": 1, "episode:written": 2}, "degraded": []},
        ...     source="chat.json", scope="tenant:acme/user:alice", session_id="chat"))
        imported 3 user turn(s) of chat.json into tenant:acme/user:alice, session chat (run 9f2c)
          pre-filter: chit_chat 1, kept 2
          written: episode:written 2, fact:written 1
          degraded: none
    """
    session = f"session {session_id}" if session_id else "no session"
    lines = [
        f"imported {report['turns']} user turn(s) of {source} into {scope}, {session} "
        f"(run {report['run_id']})",
        f"  pre-filter: {_counts(report['prefilter'])}",
        f"  written: {_counts(report['outcomes'])}",
    ]
    degraded = list(report["degraded"])
    if not degraded:
        lines.append("  degraded: none")
    lines.extend(f"  degraded: {reason}" for reason in degraded[:SHOWN_DEGRADATIONS])
    if len(degraded) > SHOWN_DEGRADATIONS:
        lines.append(f"  ... and {len(degraded) - SHOWN_DEGRADATIONS} more degraded step(s) "
                     "(--json lists them all)")
    return "\n".join(lines)
