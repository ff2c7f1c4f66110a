"""LoCoMo conversations as a memory system may see them, and their questions for scoring.

Shared by `locomo_retrieval.py` (the store's retrieval alone) and `locomo_loop.py` (through the
chat graph). What a memory system reads: only `speaker_a`, `speaker_b`, `session_N` and
`session_N_date_time` (`memory_view`). The answer key (`session_N_observation`, `session_N_summary`,
`events_session_N`, `qa`) is never passed to what builds memory; `qa` (question, category,
evidence, answer) is read for scoring only.

Evidence ids are normalized: whitespace dropped, `D:11:26` read as `D11:26`, `D8:6; D9:17`
split in two, ranges `D1:3-5` expanded; ids that name no turn of the conversation (`D`,
`D10:19` where session 10 has 16 turns) are dropped, and a question left with no evidence is
not scored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

TENANT = "tenant:locomo"
CATEGORIES = frozenset({1, 2, 3, 4})
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


_SESSION = re.compile(r"session_(\d+)")
_SESSION_TIME = re.compile(r"session_(\d+)_date_time")
_SESSION_TIME_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


def is_memory_field(key: str) -> bool:
    """Whether a memory system may read this top-level field of a LoCoMo conversation."""
    return key in ("speaker_a", "speaker_b") or bool(
        _SESSION.fullmatch(key) or _SESSION_TIME.fullmatch(key)
    )


def memory_view(conversation: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a memory system may read: speakers, sessions and their dates.

    Only the keys are listed; the value of a field outside `is_memory_field` is never read.
    """
    return {key: conversation[key] for key in list(conversation) if is_memory_field(key)}


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a conversation, as the memory system sees it."""

    dia_id: str
    session: int
    speaker: str
    text: str
    caption: str | None
    occurred_at: datetime
    """When the session took place (the dataset has no per-turn time)."""

    @property
    def line(self) -> str:
        """`speaker: text [image: caption]`."""
        image = f" [image: {self.caption}]" if self.caption else ""
        return f"{self.speaker}: {self.text}{image}"

    @property
    def day(self) -> str:
        """The session's date, e.g. `8 May 2023`."""
        return f"{self.occurred_at.day} {self.occurred_at:%B %Y}"


def parse_session_time(text: str) -> datetime:
    """LoCoMo's `"1:56 pm on 8 May, 2023"` as a UTC datetime."""
    return datetime.strptime(text.strip(), _SESSION_TIME_FORMAT).replace(tzinfo=UTC)


def read_turns(view: Mapping[str, Any]) -> list[Turn]:
    """Every turn of a `memory_view`, in session order."""
    sessions = sorted(int(m.group(1)) for k in view if (m := _SESSION.fullmatch(k)))
    turns: list[Turn] = []
    for n in sessions:
        when = parse_session_time(view[f"session_{n}_date_time"])
        for turn in view[f"session_{n}"]:
            turns.append(Turn(
                dia_id=str(turn["dia_id"]).strip(),
                session=n,
                speaker=str(turn["speaker"]),
                text=str(turn.get("text") or ""),
                caption=turn.get("blip_caption") or None,
                occurred_at=when,
            ))
    return turns


_EVIDENCE = re.compile(
    r"D\s*:?\s*(\d+)\s*:\s*(\d+)(?:\s*-\s*(?:D\s*:?\s*(\d+)\s*:\s*)?(\d+))?"
)


def normalize_evidence(entry: str) -> list[str]:
    """Canonical dia_ids in one evidence entry (see the module docstring).

    Example:
        >>> normalize_evidence("D8:6; D9:17"), normalize_evidence("D:11:26 ")
        (['D8:6', 'D9:17'], ['D11:26'])
        >>> normalize_evidence("D")
        []
        >>> normalize_evidence("D1:3-5")
        ['D1:3', 'D1:4', 'D1:5']
    """
    ids: list[str] = []
    for session, start, end_session, end in _EVIDENCE.findall(entry):
        if end and end_session in ("", session) and int(end) >= int(start):
            ids.extend(f"D{int(session)}:{i}" for i in range(int(start), int(end) + 1))
        else:
            ids.append(f"D{int(session)}:{int(start)}")
            if end:
                ids.append(f"D{int(end_session)}:{int(end)}")
    return ids


@dataclass
class EvidenceStats:
    """How much evidence needed normalizing (reported in the JSON)."""

    entries: int = 0
    repaired: int = 0
    """Entries read after normalizing (whitespace, `D:11:26`, lists, ranges)."""
    unparseable: int = 0
    """Entries naming no id at all (e.g. `D`), ignored."""
    unknown_dropped: int = 0
    """Ids naming no turn of the conversation (malformed or out of range), dropped."""
    questions_without_evidence: int = 0
    """Questions of categories 1-4 left with no evidence, not scored."""


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]
    answer: str = ""
    """For scoring only: whether the answer string reaches a prompt."""


def read_questions(
    qa: Sequence[Mapping[str, Any]], known_ids: set[str], stats: EvidenceStats
) -> list[Question]:
    """Questions of categories 1-4 with their normalized evidence and answer (for scoring)."""
    questions: list[Question] = []
    for item in qa:
        if item["category"] not in CATEGORIES:
            continue
        evidence: set[str] = set()
        for entry in item["evidence"]:
            stats.entries += 1
            ids = normalize_evidence(str(entry))
            if not ids:
                stats.unparseable += 1
            elif ids != [str(entry)]:
                stats.repaired += 1
            stats.unknown_dropped += sum(1 for i in ids if i not in known_ids)
            evidence.update(i for i in ids if i in known_ids)
        if not evidence:
            stats.questions_without_evidence += 1
            continue
        questions.append(Question(str(item["question"]), int(item["category"]),
                                  frozenset(evidence), str(item.get("answer", ""))))
    return questions


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    turns: list[Turn]
    """Built from `memory_view` alone: what every system stores."""
    questions: list[Question]
    """Read from `qa`, for querying and scoring only."""

    @property
    def scope(self) -> tuple[str, ...]:
        return (TENANT, f"user:conv-{self.id}", "episode")

    @property
    def now(self) -> datetime:
        """The store's clock for this conversation: a day after its last session."""
        return max(t.occurred_at for t in self.turns) + timedelta(days=1)


def conversation_from_raw(
    conversation_id: str, raw: Mapping[str, Any], stats: EvidenceStats
) -> Conversation:
    turns = read_turns(memory_view(raw))
    questions = read_questions(raw["qa"], {t.dia_id for t in turns}, stats)
    return Conversation(conversation_id, turns, questions)


def conversation_files(path: Path) -> list[Path]:
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise SystemExit(f"no LoCoMo conversation (*.json) under {path}")
    return files
