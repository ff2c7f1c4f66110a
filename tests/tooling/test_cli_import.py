"""`typed-memory import-conversation`: a JSON conversation (a file or stdin) or a LangGraph
thread of the checkpointer in the same database, written through the chat graph's write path;
a malformed file writes nothing. In-process through `main(argv)`, on a SQLite file (the thread
form on Postgres too)."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.cli import main
from tests.conftest import fresh_database

BACKENDS = ["sqlite"] if os.environ.get("TYPED_MEMORY_SKIP_POSTGRES") else ["sqlite", "postgres"]
FACTS = ("tenant:acme", "user:alice", "fact")
EPISODES = ("tenant:acme", "user:alice", "episode")
MAY_1 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
MAY_2 = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)

CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "I work at Initech.", "timestamp": "2024-05-01T10:00:00Z",
     "id": "m1"},
    {"role": "assistant", "content": "Noted: Initech.", "timestamp": "2024-05-01T10:00:05Z"},
    {"role": "user", "content": "Thanks a lot!", "timestamp": "2024-05-01T10:01:00Z"},
    {"role": "user", "content": "Our standup is at 9:30 every morning.",
     "timestamp": "2024-05-02T09:00:00Z"},
]

Run = tuple[int, str, str]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """`cli(*argv, stdin="")` runs `main` in-process: (exit code, stdout, stderr)."""
    monkeypatch.delenv("TYPED_MEMORY_MODEL", raising=False)  # the offline rules

    def run(*argv: str, stdin: str = "") -> Run:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return code, out, err

    return run


@pytest.fixture
def db(tmp_path: Path, cli: Any) -> str:
    """A set-up, empty SQLite file (lexical-only: no embedder)."""
    path = str(tmp_path / "memory.db")
    code, out, _ = cli("--db", path, "--no-index", "setup")
    assert code == 0, out
    return path


@pytest.fixture(params=BACKENDS)
def any_db(request: pytest.FixtureRequest, tmp_path: Path, cli: Any) -> str:
    """A set-up, empty database: a SQLite file or a fresh Postgres database."""
    if request.param == "sqlite":
        target = str(tmp_path / "memory.db")
    else:
        target = fresh_database(request.getfixturevalue("pg_server"))
    code, out, _ = cli("--db", target, "--no-index", "setup")
    assert code == 0, out
    return target


@contextmanager
def open_direct(db: str) -> Iterator[Any]:
    """The same database through the library, to look behind the CLI's back."""
    if db.startswith("postgresql://"):
        from langgraph_typed_memory.store.postgres.store import PostgresMemoryStore

        with PostgresMemoryStore.from_conn_string(db) as store:
            yield store
    else:
        with SqliteMemoryStore.from_conn_string(db) as store:
            yield store


@contextmanager
def saver_on(db: str) -> Iterator[Any]:
    """LangGraph's checkpointer on the same database, set up."""
    if db.startswith("postgresql://"):
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(db) as saver:
            saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(db) as saver:
            saver.setup()
            yield saver


def write_conversation(path: Path, messages: Any) -> str:
    path.write_text(json.dumps(messages))
    return str(path)


def stored(db: str) -> tuple[list[Any], list[Any]]:
    """The scope's facts and episodes."""
    with open_direct(db) as store:
        return store.search(FACTS, limit=20), store.search(EPISODES, limit=20)


def test_a_json_conversation_is_written_turn_by_turn_at_its_own_times(
    db: str, cli: Any, tmp_path: Path
) -> None:
    file = write_conversation(tmp_path / "support-chat.json", CONVERSATION)
    code, out, err = cli("--db", db, "--no-index", "import-conversation", file,
                         "--tenant", "acme", "--user", "alice")
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith(f"imported 3 user turn(s) of {file} into tenant:acme/user:alice, "
                            "session support-chat (run ")
    assert "  pre-filter: chit_chat 1, kept 2" in out
    # the employer, and the standup as an organisation fact: this user's own (no tenant
    # sharing by default)
    assert "  written: entity:written 1, episode:written 2, fact:written 2" in out
    assert "  degraded: none" in out
    assert "importing messages" not in err  # stderr is not a terminal here: no bar

    facts, episodes = stored(db)
    assert sorted((f.value["predicate"], f.value["value"]) for f in facts) == [
        ("employer", "Initech"), ("standup", "at 9:30 every morning")]
    turns = sorted((e.value for e in episodes), key=lambda v: v["occurred_at"])
    assert [v["task_type"] for v in turns] == ["turn", "turn"]  # the chit-chat is not logged
    assert [datetime.fromisoformat(v["occurred_at"]) for v in turns] == [MAY_1, MAY_2]
    assert [v["summary"] for v in turns] == [
        "user: I work at Initech.", "user: Our standup is at 9:30 every morning."]
    assert {v["metadata"]["session_id"] for v in turns} == {"support-chat"}
    assert turns[0]["metadata"]["message_id"] == "m1"
    assert turns[0]["artifacts"]["reply"] == "Noted: Initech."
    with open_direct(db) as store:
        assert store.check_invariants().ok


def test_a_chat_export_with_a_system_prompt_and_content_parts(
    db: str, cli: Any, tmp_path: Path
) -> None:
    """What chat APIs export: a system message first (read, not imported: nothing the user
    said) and content as a list of parts."""
    messages = [{"role": "system", "content": "You are a helpful assistant. Be terse."},
                {"role": "user", "content": [{"type": "text", "text": "I work at Initech."}],
                 "timestamp": "2024-05-01T10:00:00Z"},
                {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]}]
    file = write_conversation(tmp_path / "export.json", messages)
    code, out, err = cli("--db", db, "--no-index", "--json", "import-conversation", file,
                         "--tenant", "acme", "--user", "alice")
    assert code == 0, err
    assert json.loads(out)["turns"] == 1
    facts, episodes = stored(db)
    assert [(f.value["predicate"], f.value["value"]) for f in facts] == [("employer", "Initech")]
    assert [e.value["summary"] for e in episodes] == ["user: I work at Initech."]
    assert not any("helpful assistant" in json.dumps(e.value) for e in episodes)


def test_json_output_from_stdin_parses(db: str, cli: Any) -> None:
    code, out, _ = cli("--db", db, "--no-index", "--json", "import-conversation", "-",
                       "--tenant", "acme", "--user", "alice", "--session", "zendesk-4411",
                       stdin=json.dumps({"messages": CONVERSATION}))
    assert code == 0
    report = json.loads(out)
    assert report["source"] == "stdin" and report["scope"] == "tenant:acme/user:alice"
    assert report["session_id"] == "zendesk-4411" and report["messages"] == 4
    assert report["turns"] == 3 and report["prefilter"] == {"kept": 2, "chit_chat": 1}
    assert report["outcomes"] == {"fact:written": 2, "episode:written": 2, "entity:written": 1}
    assert report["degraded"] == []
    facts, episodes = stored(db)
    assert {r.value["source_run_id"] for r in [*facts, *episodes]} == {report["run_id"]}
    assert {e.value["metadata"]["session_id"] for e in episodes} == {"zendesk-4411"}

    # Again: the gate deduplicates every record (each counts one more repetition).
    code, out, _ = cli("--db", db, "--no-index", "--json", "import-conversation", "-",
                       "--tenant", "acme", "--user", "alice", "--session", "zendesk-4411",
                       stdin=json.dumps(CONVERSATION))
    assert code == 0 and json.loads(out)["outcomes"].get("fact:written") is None
    facts, episodes = stored(db)
    assert len(facts) == 2 and len(episodes) == 2


@pytest.mark.parametrize(("bad", "expected"), [
    ({"index": 3, "field": "timestamp", "value": "yesterday"},
     "message 3: timestamp 'yesterday' is not ISO 8601"),
    ({"index": 2, "field": "role", "value": "robot"}, "message 2: role 'robot'"),
    ({"index": 3, "field": "content", "value": {"text": "parts"}},
     "message 3: content must be a string or a list of parts"),
    ({"index": 3, "field": "content", "value": [3]},
     "message 3: content must be a string or a list of parts"),
])
def test_a_bad_message_writes_nothing_and_is_named(
    db: str, cli: Any, tmp_path: Path, bad: dict[str, Any], expected: str
) -> None:
    messages = [dict(m) for m in CONVERSATION]
    messages[bad["index"]][bad["field"]] = bad["value"]  # the turns before it are valid
    file = write_conversation(tmp_path / "bad.json", messages)
    code, out, err = cli("--db", db, "--no-index", "import-conversation", file,
                         "--tenant", "acme", "--user", "alice")
    assert code == 2 and out == ""
    assert err.startswith(f"typed-memory: error: {file}: {expected}")
    assert "Nothing was imported" in err and len(err.strip().splitlines()) == 1
    assert stored(db) == ([], [])


def test_files_that_are_not_conversations(db: str, cli: Any, tmp_path: Path) -> None:
    cases = [
        ("[{\"role\": \"user\",", 2, "is not JSON (Expecting"),
        ('{"turns": []}', 2, "must hold the conversation under \"messages\""),
        ('"hello"', 2, "a conversation is a JSON list of messages"),
        ("[1]", 2, "message 0 must be an object"),
    ]
    for text, exit_code, expected in cases:
        file = tmp_path / "conversation.json"
        file.write_text(text)
        code, _, err = cli("--db", db, "import-conversation", str(file), "--tenant", "acme",
                           "--user", "alice")
        assert code == exit_code, text
        assert expected in err, (text, err)
        assert err.startswith("typed-memory: error:") and len(err.strip().splitlines()) == 1
    code, _, err = cli("--db", db, "import-conversation", str(tmp_path / "missing.json"),
                       "--tenant", "acme", "--user", "alice")
    assert code == 1 and "no conversation file at" in err and "does not exist" in err
    assert stored(db) == ([], [])


def test_exactly_one_of_file_and_thread(db: str, cli: Any, tmp_path: Path) -> None:
    file = write_conversation(tmp_path / "c.json", CONVERSATION)
    code, out, err = cli("--db", db, "import-conversation", "--tenant", "acme")
    assert code == 2 and out == "" and "nothing to import: give FILE" in err
    code, out, err = cli("--db", db, "import-conversation", file, "--thread", "t-1",
                         "--tenant", "acme")
    assert code == 2 and out == "" and "not both" in err
    code, _, err = cli("--db", db, "import-conversation", file)
    assert code == 2 and "--tenant" in err
    code, _, err = cli("--db", db, "import-conversation", file, "--tenant", "a:b")
    assert code == 2 and "bad scope" in err
    assert stored(db) == ([], [])


def test_without_a_user_nothing_is_imported_and_the_error_asks_for_one(
    db: str, cli: Any, tmp_path: Path
) -> None:
    """Without --user the import wrote to an anonymous thread's scope while saying it
    imported into the tenant: it now writes nowhere and asks for the user."""
    file = write_conversation(tmp_path / "chat.json", CONVERSATION)
    for extra in ((), ("--agent", "support")):
        code, out, err = cli("--db", db, "--no-index", "import-conversation", file,
                             "--tenant", "acme", *extra)
        assert code == 2 and out == "", err
        assert err.startswith("typed-memory: error: import-conversation needs --user U")
        assert "tenant:acme/user:U" in err and "nothing was imported" in err
    with open_direct(db) as store:
        assert store.check_invariants().ok
        assert store.run_plan(_count_rows) == 0


def _count_rows():  # type: ignore[no-untyped-def]
    from langgraph_typed_memory.store.core.protocol import Sql

    rows = yield Sql("SELECT count(*) FROM memories")
    return rows[0][0]


def _chat_thread(db: str, thread_id: str) -> None:
    """A trivial graph with the checkpointer on `db`: it answers each user message."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph

    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda state: {"messages": [AIMessage("Noted.")]})
    builder.add_edge(START, "reply")
    with saver_on(db) as saver:
        app = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": thread_id}}
        app.invoke({"messages": [HumanMessage("I work at Initech.")]}, config)
        app.invoke({"messages": [HumanMessage("Thanks a lot!")]}, config)


def test_a_checkpointer_thread_in_the_same_database(any_db: str, cli: Any) -> None:
    code, _, err = cli("--db", any_db, "import-conversation", "--thread", "t-1",
                       "--tenant", "acme", "--user", "alice")
    assert code == 1 and "no LangGraph checkpointer tables" in err
    _chat_thread(any_db, "t-1")
    code, _, err = cli("--db", any_db, "import-conversation", "--thread", "t-404",
                       "--tenant", "acme", "--user", "alice")
    assert code == 1 and "no messages in thread 't-404'" in err
    assert stored(any_db) == ([], [])

    before = datetime.now(UTC)
    code, out, err = cli("--db", any_db, "--no-index", "import-conversation", "--thread",
                         "t-1", "--tenant", "acme", "--user", "alice")
    assert code == 0, err
    assert out.startswith("imported 2 user turn(s) of thread t-1 into tenant:acme/user:alice, "
                          "session t-1")
    assert "pre-filter: chit_chat 1, kept 1" in out
    assert "written: entity:written 1, episode:written 1, fact:written 1" in out
    facts, episodes = stored(any_db)
    assert [f.value["value"] for f in facts] == ["Initech"]
    [turn] = [e.value for e in episodes]
    assert turn["task_type"] == "turn" and turn["summary"] == "user: I work at Initech."
    assert turn["metadata"]["session_id"] == "t-1"
    assert turn["artifacts"]["reply"] == "Noted."
    assert datetime.fromisoformat(turn["occurred_at"]) <= before  # its checkpoint's time


def test_help(cli: Any) -> None:
    code, out, _ = cli("import-conversation", "--help")
    words = " ".join(out.split())  # wrapped to the terminal's width
    assert code == 0
    for text in ("FILE", "--thread", "--tenant", "--user", "--agent", "--session", "--model",
                 "the promotion gate", "- reads stdin"):
        assert text in words, text
