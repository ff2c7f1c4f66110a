"""Import existing conversations through the chat graph's own write path.

A user who brings history (another app's transcripts, a LangGraph thread) gets the memory a
live conversation would have left: every user turn goes through the extract node (pre-filter,
then the rules or a model) and the promote node (the gate, with the turn log), one
transaction per turn, each turn at its own time. `TurnWriter` writes turns one by one;
`import_conversation` a list of messages; `import_thread` a thread from a checkpointer;
`read_messages` parses the JSON form the CLI reads (`typed-memory import-conversation`).
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from langgraph_typed_memory.errors import InvalidRecord
from langgraph_typed_memory.nodes._common import check_gate_store
from langgraph_typed_memory.nodes.extract import create_extract_node
from langgraph_typed_memory.nodes.promote import create_promote_node
from langgraph_typed_memory.state import new_trace

__all__ = [
    "TurnWriter", "TurnResult", "ImportReport", "import_conversation", "import_thread",
    "read_messages", "messages_of_thread",
]

logger = logging.getLogger(__name__)

WINDOW = 6
"""Messages kept before each turn: its context, and what a bare correction corrects."""

Progress = Callable[[int, int], None]
"""Called as `(messages done, total)` while an import advances."""


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What writing one user turn did."""

    prefilter: str
    """The pre-filter's reason (`kept`, `chit_chat`, `question`...)."""
    promotions: list[dict[str, Any]]
    """The gate's outcomes, as in the trace envelope."""
    degraded: list[str]
    corrections: int = 0
    """How many of the turn's candidates correct an earlier statement."""


@dataclass(slots=True)
class ImportReport:
    """What an import wrote.

    Example:
        >>> ImportReport().turns
        0
    """

    run_id: str = ""
    """The import's run id: every record it wrote carries it as `source_run_id`."""
    turns: int = 0
    """User turns read."""
    prefilter: Counter[str] = field(default_factory=Counter)
    """User turns per pre-filter reason (`kept` turns are logged and extracted from)."""
    outcomes: Counter[str] = field(default_factory=Counter)
    """Gate outcomes per `kind:outcome` (`episode:written`, `fact:superseded`...)."""
    degraded: list[str] = field(default_factory=list)

    def dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"run_id": self.run_id, "turns": self.turns, "prefilter": dict(self.prefilter),
                "outcomes": dict(self.outcomes), "degraded": list(self.degraded)}


class TurnWriter:
    """Writes one conversation's user turns, one by one, through the extract and promote nodes.

    Each `write` runs the turn with the messages before it (a short window) and the assistant's
    reply after it, at its own time (`at`; default the store's clock), as turn `n` of run
    `run_id`: the provenance its records carry.

    Example:
        >>> from datetime import UTC, datetime
        >>> from langchain_core.messages import HumanMessage
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> writer = TurnWriter(store, tenant_id="acme", user_id="alice", session_id="chat-1")
        >>> result = writer.write(HumanMessage("I live in Lyon."),
        ...                       at=datetime(2025, 3, 1, tzinfo=UTC))
        >>> [(p["kind"], p["outcome"]) for p in result.promotions]  # Lyon is an entity
        [('fact', 'written'), ('entity', 'written'), ('episode', 'written')]
    """

    def __init__(
        self,
        store: BaseStore,
        *,
        tenant_id: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        model: BaseChatModel | str | None = None,
        run_id: str | None = None,
    ) -> None:
        self.store = check_gate_store(store, "promote")
        self.run_id = run_id or uuid.uuid4().hex
        scope = {"tenant_id": tenant_id, "user_id": user_id, "agent_id": agent_id}
        configurable = {k: v for k, v in scope.items() if v is not None}
        if session_id:
            configurable["thread_id"] = session_id
        configurable["run_id"] = self.run_id  # the provenance of every record it writes
        self.config: RunnableConfig = {"configurable": configurable}
        self._tenant, self._user, self._agent = tenant_id, user_id, agent_id
        self._at: datetime = datetime.now(UTC)
        self._extract = create_extract_node(
            model, extraction="model" if model is not None else "rules",
            clock=lambda: self._at.timestamp(), store=store)
        self._promote = create_promote_node(store, clock=lambda: self._at)
        self._window: list[BaseMessage] = []
        self._recent: list[tuple[str, float]] = []
        self._entities: dict[str, list[str]] = {}
        self.turn = 0

    def note(self, message: BaseMessage) -> None:
        """A message between user turns (the assistant's, a tool's): context for the next."""
        self._window = [*self._window, message][-WINDOW:]

    def write(self, message: HumanMessage, *, at: datetime | None = None,
              reply: BaseMessage | None = None) -> TurnResult:
        """Write one user turn (and keep it, with `reply`, as context for the next)."""
        clock = getattr(self.store, "clock", None)
        self._at = at if at is not None else (clock() if callable(clock) else datetime.now(UTC))
        if self._at.tzinfo is None:
            self._at = self._at.replace(tzinfo=UTC)
        self.turn += 1
        trace = new_trace(run_id=self.run_id, turn_index=self.turn, tenant_id=self._tenant,
                          user_id=self._user, agent_id=self._agent)
        messages = [*self._window, message, *([reply] if reply is not None else [])]
        state: dict[str, Any] = {"messages": messages, "memory_recent": self._recent,
                                 "memory_entities": self._entities, "memory_trace": trace}
        state.update(self._extract.invoke(state, self.config))
        corrections = sum(1 for c in state.get("memory_candidates") or []
                          if c.get("replaces") or c.get("correction"))
        state.update(self._promote.invoke(state, self.config))
        self._recent = state["memory_recent"]
        self._entities = state.get("memory_entities") or {}
        self._window = messages[-WINDOW:]
        out = state["memory_trace"]
        return TurnResult((out.get("extraction") or {}).get("prefilter") or "",
                          list(out.get("promotions") or []), list(out.get("degraded") or []),
                          corrections)


def import_conversation(
    store: BaseStore,
    messages: Sequence[BaseMessage | tuple[BaseMessage, datetime | None]],
    *,
    tenant_id: str,
    user_id: str | None = None,
    agent_id: str | None = None,
    session_id: str | None = None,
    model: BaseChatModel | str | None = None,
    run_id: str | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Write a conversation's user turns into memory as the chat graph would have.

    `messages` are LangChain messages, or `(message, time)` pairs (a time of None: the store's
    clock). Each user message is a turn; the assistant message right after it is its reply;
    other messages are context for the next turn. A user message's `name` is its speaker
    (conversations between people: "Caroline", "Melanie"), else "user".

    Raises:
        ConfigurationError: the store has no promotion gate.

    Example:
        >>> from datetime import UTC, datetime
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> day = datetime(2025, 3, 1, tzinfo=UTC)
        >>> report = import_conversation(store, [
        ...     (HumanMessage("Thanks a lot!"), day), (HumanMessage("I work at Initech."), day),
        ...     (AIMessage("Noted."), day), (HumanMessage("Our standup is at 9:30."), day)],
        ...     tenant_id="acme", user_id="alice", session_id="old-chat")
        >>> report.turns, dict(report.prefilter), report.outcomes["episode:written"]
        (3, {'chit_chat': 1, 'kept': 2}, 2)
    """
    timed = [m if isinstance(m, tuple) else (m, None) for m in messages]
    writer = TurnWriter(store, tenant_id=tenant_id, user_id=user_id, agent_id=agent_id,
                        session_id=session_id, model=model, run_id=run_id)
    report = ImportReport(run_id=writer.run_id)
    for i, (message, at) in enumerate(timed):
        if progress is not None:
            progress(i, len(timed))
        if isinstance(message, SystemMessage):
            continue  # the app's instructions: nothing the user said, nor context for it
        if not isinstance(message, HumanMessage):
            if not (isinstance(message, AIMessage) and i > 0
                    and isinstance(timed[i - 1][0], HumanMessage)):
                writer.note(message)  # a reply went in with its turn
            continue
        following = timed[i + 1][0] if i + 1 < len(timed) else None
        reply = following if isinstance(following, AIMessage) else None
        result = writer.write(message, at=at, reply=reply)
        report.turns += 1
        report.prefilter[result.prefilter] += 1
        report.outcomes.update(f"{p['kind']}:{p['outcome']}" for p in result.promotions)
        report.degraded.extend(result.degraded)
    if progress is not None:
        progress(len(timed), len(timed))
    if report.degraded:
        logger.warning("import %s: %d degraded step(s), first: %s", report.run_id,
                       len(report.degraded), report.degraded[0])
    return report


_ROLES: dict[str, type[BaseMessage]] = {
    "user": HumanMessage, "human": HumanMessage, "assistant": AIMessage, "ai": AIMessage,
    "tool": ToolMessage, "system": SystemMessage, "developer": SystemMessage,
}


def read_messages(data: Any) -> list[tuple[BaseMessage, datetime | None]]:
    """Messages from their JSON form: a list of objects with `role` ("user"/"human",
    "assistant"/"ai", "tool", "system"/"developer": read, and skipped by the import),
    `content` (a string, or a list of parts: strings or objects such as
    `{"type": "text", "text": ...}`), optional `name` (or `speaker`), `timestamp` (ISO
    8601; without a zone, UTC) and `id`; or `{"messages": [...]}`.

    Raises:
        InvalidRecord: naming the message and the field that is wrong.

    Example:
        >>> [(type(m).__name__, m.name, at.year) for m, at in read_messages([
        ...     {"role": "user", "speaker": "Ana", "content": "Hi",
        ...      "timestamp": "2024-05-01T10:00"}])]
        [('HumanMessage', 'Ana', 2024)]
    """
    items = data.get("messages") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise InvalidRecord("a conversation is a JSON list of messages (or {\"messages\": "
                            f"[...]}}), got {type(items).__name__}.")
    out: list[tuple[BaseMessage, datetime | None]] = []
    for i, item in enumerate(items):
        where = f"message {i}"
        if not isinstance(item, Mapping):
            raise InvalidRecord(f"{where} must be an object, got {type(item).__name__}.")
        role = str(item.get("role") or item.get("type") or "")
        if role not in _ROLES:
            raise InvalidRecord(f"{where}: role {role!r}; use one of {sorted(_ROLES)}.")
        content = item.get("content")
        if not isinstance(content, str) and not (
                isinstance(content, list)
                and all(isinstance(part, (str, Mapping)) for part in content)):
            raise InvalidRecord(f"{where}: content must be a string or a list of parts "
                                f"(strings or objects), got {content!r:.60}.")
        name = item.get("name") or item.get("speaker")
        extra: dict[str, Any] = {"name": str(name)} if name else {}
        if item.get("id"):
            extra["id"] = str(item["id"])
        if role == "tool":
            extra["tool_call_id"] = str(item.get("tool_call_id") or "")
        message = _ROLES[role](content=content, **extra)
        out.append((message, _time(item.get("timestamp") or item.get("time"), where)))
    return out


def _time(value: Any, where: str) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        at = datetime.fromisoformat(str(value))
    except ValueError:
        raise InvalidRecord(
            f"{where}: timestamp {value!r} is not ISO 8601 (e.g. 2024-05-01T10:00:00Z)."
        ) from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def messages_of_thread(checkpointer: BaseCheckpointSaver[Any], thread_id: str,
                       *, messages_key: str = "messages"
                       ) -> list[tuple[BaseMessage, datetime | None]]:
    """A thread's messages, each with the time of the first checkpoint that holds it.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> messages_of_thread(InMemorySaver(), "no-such-thread")
        []
    """
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    seen: dict[str, datetime | None] = {}
    latest: list[BaseMessage] = []
    for snapshot in reversed(list(checkpointer.list(config))):  # oldest first
        values = snapshot.checkpoint.get("channel_values") or {}
        found = values.get(messages_key)
        if not isinstance(found, list):
            continue
        stamp = _time(snapshot.checkpoint.get("ts"), f"checkpoint of {thread_id}")
        for message in found:
            if isinstance(message, BaseMessage):
                seen.setdefault(str(message.id or id(message)), stamp)
        latest = [m for m in found if isinstance(m, BaseMessage)]
    return [(m, seen.get(str(m.id or id(m)))) for m in latest]


def import_thread(
    store: BaseStore,
    checkpointer: BaseCheckpointSaver[Any],
    thread_id: str,
    *,
    tenant_id: str,
    user_id: str | None = None,
    agent_id: str | None = None,
    model: BaseChatModel | str | None = None,
    messages_key: str = "messages",
    progress: Progress | None = None,
) -> ImportReport:
    """Import a LangGraph thread (its newest checkpoint's messages, each at the time it first
    appeared) as `import_conversation` does, with the thread id as the session.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> from langgraph.graph import START, MessagesState, StateGraph
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> builder = StateGraph(MessagesState)
        >>> _ = builder.add_node("noop", lambda state: {})
        >>> _ = builder.add_edge(START, "noop")
        >>> saver = InMemorySaver()
        >>> app = builder.compile(checkpointer=saver)
        >>> _ = app.invoke({"messages": [HumanMessage("I work at Initech.")]},
        ...                {"configurable": {"thread_id": "old"}})
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> report = import_thread(store, saver, "old", tenant_id="acme", user_id="bo")
        >>> report.outcomes["fact:written"], report.outcomes["episode:written"]
        (1, 1)
    """
    return import_conversation(
        store, messages_of_thread(checkpointer, thread_id, messages_key=messages_key),
        tenant_id=tenant_id, user_id=user_id, agent_id=agent_id, session_id=thread_id,
        model=model, progress=progress)

