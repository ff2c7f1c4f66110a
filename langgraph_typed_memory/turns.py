"""The turn log: every user turn the pre-filter keeps becomes a tier-0 episode, through the gate.

Extraction finds the preferences and facts it has rules (or a model) for; the turn log keeps
the rest, so nothing a user said is lost when extraction misses it. `turn_proposals` builds,
for one turn, the proposals the gate writes in one transaction: the extracted candidates
(stamped with the turn's time) and the turn's own episode. The chat graph's promote node,
`import_conversation` and the benchmarks all build the turn log through it. Pure functions.

A logged turn's episode:

- `title` `"<speaker> (<day month year>)"`, `summary` `"<speaker>: <text>"`: the date and
  the speaker are searchable words, so "what did Caroline say in May?" finds the turn;
- `context`: the preceding messages (full-text search only, never embedded or shown);
- `occurred_at`: when it was said (the store's clock, or the time an import passes);
- `metadata.session_id` (the thread), `metadata.message_id`, `metadata.entities` (the ids
  of the entities the turn mentions, a named speaker first), and `metadata.correction` when
  the turn corrected something, with the old values in `metadata.replaces` (the prompt then
  shows what it corrected to, not a turn that repeats an old value); `artifacts.reply`: the
  assistant's reply, in short;
- `salience`: corrections, preferences and stated facts high, failures high, the rest low;
- `task_type` `"turn"`: kept without task completion, and superseded with the facts and
  preferences it stated when they are corrected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from langchain_core.messages import BaseMessage

from langgraph_typed_memory.extraction.text import sentences
from langgraph_typed_memory.gate import TURN

__all__ = ["Turn", "TURN", "message_text", "turn_salience", "turn_episode", "turn_episodes",
           "turn_proposals", "day_label", "CHUNK_WORDS"]

REPLY_CHARS = 200
"""Longest reply kept with a logged turn."""
CONTEXT_CHARS = 300
"""Longest preceding message kept in a logged turn's `context`."""
MAX_CONTEXT = 2
"""Preceding messages kept in a logged turn's `context`."""
CHUNK_WORDS = 60
"""A longer turn is logged as several episodes of whole sentences, each at most this long
(a sentence longer alone stays whole): each is found, and fits a prompt, on its own."""

_FAILURE = re.compile(
    r"\b(?:doesn'?t work|didn'?t work|not working|broke|broken|broke down|fail(?:s|ed|ing|ure)?|"
    r"error|crash(?:es|ed)?|bug|went wrong|went badly|went south|died|outage|down again|lost|"
    r"missed|cancell?ed|rejected|stuck)\b", re.I)


@dataclass(frozen=True, slots=True)
class Turn:
    """One user turn as the turn log keeps it.

    Example:
        >>> from datetime import UTC, datetime
        >>> Turn("I live in Lyon.", datetime(2026, 3, 2, tzinfo=UTC)).line
        'user: I live in Lyon.'
    """

    text: str
    """What the user said."""
    at: datetime
    """When it was said (timezone-aware)."""
    speaker: str = "user"
    """Who said it: a name when the conversation has one (imports), else "user"."""
    reply: str | None = None
    """The assistant's reply, if any (kept in short)."""
    session_id: str | None = None
    """The conversation it belongs to (the thread id)."""
    context: tuple[str, ...] = ()
    """The messages before it, oldest first, each `"<speaker>: <text>"`."""
    message_id: str | None = None

    @property
    def line(self) -> str:
        """`"<speaker>: <text>"` (the text alone when it already starts with the speaker)."""
        text = " ".join(self.text.split())
        return text if text.startswith(f"{self.speaker}:") else f"{self.speaker}: {text}"


def day_label(at: datetime) -> str:
    """A date as people write it: `8 May 2023`.

    Example:
        >>> from datetime import datetime
        >>> day_label(datetime(2023, 5, 8, 13, 56))
        '8 May 2023'
    """
    return f"{at.day} {at:%B %Y}"


def turn_salience(text: str, candidates: Iterable[Mapping[str, Any]] = ()) -> float:
    """How much a turn matters: 0.9 a correction, 0.85 a preference, 0.8 a stated fact or a
    failure, 0.4 anything else (chit-chat never reaches the log).

    Example:
        >>> turn_salience("The build failed again.")
        0.8
        >>> turn_salience("I live in Lyon.", [{"kind": "fact", "correction": True}])
        0.9
    """
    found = list(candidates)
    if any(c.get("correction") or c.get("replaces") for c in found):
        return 0.9
    if any(c.get("kind") == "preference" for c in found):
        return 0.85
    if any(c.get("kind") == "fact" for c in found) or _FAILURE.search(text):
        return 0.8
    return 0.4


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def turn_episode(turn: Turn, *, salience: float = 0.4, correction: bool = False,
                 replaces: Sequence[str] = (), entities: Sequence[str] = ()
                 ) -> dict[str, Any]:
    """The proposal (for `store.promote`) that logs one turn as a tier-0 episode.

    Example:
        >>> from datetime import UTC, datetime
        >>> ep = turn_episode(Turn("I live in Lyon.", datetime(2026, 3, 2, tzinfo=UTC),
        ...                        session_id="thread-1"))
        >>> ep["title"], ep["content"], ep["task_type"], ep["session_id"]
        ('user (2 March 2026)', 'user: I live in Lyon.', 'turn', 'thread-1')
    """
    proposal: dict[str, Any] = {
        "kind": "episode",
        "task_type": TURN,
        "title": f"{turn.speaker} ({day_label(turn.at)})",
        "content": turn.line,
        "context": [_short(c, CONTEXT_CHARS) for c in turn.context[-MAX_CONTEXT:] if c.strip()],
        "occurred_at": turn.at.isoformat(),
        "salience": salience,
        "confidence": 1.0,
        "grounding": _short(turn.text, 500),
    }
    if turn.session_id:
        proposal["session_id"] = turn.session_id
    metadata: dict[str, Any] = {"message_id": turn.message_id} if turn.message_id else {}
    if entities:
        metadata["entities"] = list(dict.fromkeys(entities))
    if correction:
        metadata["correction"] = True
        metadata["replaces"] = [str(old)[:200] for old in replaces]
    if metadata:
        proposal["metadata"] = metadata
    if turn.reply and turn.reply.strip():
        proposal["artifacts"] = {"reply": _short(turn.reply, REPLY_CHARS)}
    return proposal


def _chunks(text: str) -> list[str]:
    """Whole sentences of `text`, grouped into runs of at most `CHUNK_WORDS` words."""
    if len(text.split()) <= CHUNK_WORDS:
        return [text]
    out: list[list[str]] = [[]]
    for sentence in sentences(text):
        if out[-1] and len(" ".join([*out[-1], sentence]).split()) > CHUNK_WORDS:
            out.append([])
        out[-1].append(sentence)
    return [" ".join(chunk) for chunk in out if chunk]


def turn_episodes(turn: Turn, *, salience: float = 0.4, correction: bool = False,
                  replaces: Sequence[str] = (), entities: Sequence[str] = ()
                  ) -> list[dict[str, Any]]:
    """The episodes that log one turn: one, or one per run of sentences of a long turn
    (`CHUNK_WORDS`), each marked `metadata.part` ("2/3"). Each carries all the `entities`
    the turn mentions.

    Example:
        >>> from datetime import UTC, datetime
        >>> long = " ".join(f"Sentence {i} has a few words in it." for i in range(12))
        >>> [e["metadata"]["part"] for e in turn_episodes(
        ...     Turn(long, datetime(2026, 3, 2, tzinfo=UTC)))]
        ['1/2', '2/2']
    """
    parts = _chunks(" ".join(turn.text.split()))
    if len(parts) == 1:
        return [turn_episode(turn, salience=salience, correction=correction, replaces=replaces,
                             entities=entities)]
    out = []
    for i, part in enumerate(parts, 1):
        episode = turn_episode(replace(turn, text=part), salience=salience,
                               correction=correction, replaces=replaces, entities=entities)
        episode["metadata"] = {**episode.get("metadata", {}), "part": f"{i}/{len(parts)}"}
        out.append(episode)
    return out


def turn_proposals(turn: Turn, candidates: Sequence[Mapping[str, Any]] = (), *,
                   entities: Sequence[str] = ()) -> list[dict[str, Any]]:
    """What the gate writes for one kept turn, in one transaction: the extracted candidates,
    stamped with the turn's time, then the turn's episodes (last, so a correction in the
    same turn settles before the turn is logged; see `turn_episodes`), which carry the ids
    of the `entities` the turn mentions.

    Example:
        >>> from datetime import UTC, datetime
        >>> fact = {"kind": "fact", "subject": "user", "predicate": "home_city",
        ...         "content": "The user lives in Lyon.", "value": "Lyon", "confidence": 0.9}
        >>> out = turn_proposals(Turn("I live in Lyon.", datetime(2026, 3, 2, tzinfo=UTC)),
        ...                      [fact])
        >>> [(p["kind"], p["occurred_at"][:10]) for p in out], out[1]["salience"]
        ([('fact', '2026-03-02'), ('episode', '2026-03-02')], 0.8)
    """
    at = turn.at.isoformat()
    stamped = [{**c, "occurred_at": c.get("occurred_at") or at} for c in candidates]
    correction = any(c.get("correction") or c.get("replaces") for c in candidates)
    return [*stamped, *turn_episodes(turn, salience=turn_salience(turn.text, candidates),
                                     correction=correction,
                                     replaces=[c["replaces"] for c in candidates
                                               if c.get("replaces")], entities=entities)]


def message_text(message: BaseMessage | None) -> str:
    """A message's text content (text parts joined).

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> message_text(AIMessage(content=[{"type": "text", "text": "Lyon"}, "in May"]))
        'Lyon in May'
    """
    if message is None:
        return ""
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(
        part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content
    )
