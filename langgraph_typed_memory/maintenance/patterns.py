"""The observation engine's decisions: find repeated patterns, score them, decide
promotion. Pure functions; the store reads the evidence and writes the observations.

A *pattern* is something that recurred in at least `min_occurrences` distinct sessions:
the same statement (a preference or fact the gate saw again and again, the same sentence in
episodes) or the same phrase of at least three words across episodes. The deterministic
detector runs offline; `model_detector` asks a chat model instead, behind the same
interface, and checks what it claims against the evidence.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from langgraph_typed_memory.maintenance.compaction import SESSION_SUMMARY, session_key
from langgraph_typed_memory.maintenance.records import MemoryRow
from langgraph_typed_memory.schemas import content_hash

__all__ = [
    "Evidence",
    "Pattern",
    "Detector",
    "evidence_from_rows",
    "detect_patterns",
    "model_detector",
    "select_new",
    "confidence_for",
    "level_of",
    "promotion_due",
    "procedure_rule",
]

Level = Literal["low", "medium", "high"]
Detector = Callable[[Sequence["Evidence"], int], list["Pattern"]]
"""`(evidence, min_occurrences) -> patterns`: the deterministic detector or a model's."""

_WORD = re.compile(r"[^\W_]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
STOPWORDS = frozenset(
    "a an the and or but of to in on at for with by from as is are was were be been am i me "
    "my we our you your he she it its they them their this that these those there here it's "
    "user assistant then so not no do did does has have had will would can could should "
    "about into over after before than also just very".split()
)
MIN_PHRASE, MAX_PHRASE = 3, 6


@dataclass(frozen=True, slots=True)
class Evidence:
    """One remembered statement the detector reads."""

    id: str
    """The memory record it comes from."""
    text: str
    session: str
    """The session it was seen in (a run id); a pattern counts distinct sessions."""
    kind: str = "episode"


@dataclass(frozen=True, slots=True)
class Pattern:
    """A detected pattern, before it is stored as an observation."""

    category: str
    phrase: str
    """What identifies the pattern across runs (normalized)."""
    quote: str
    """A representative sentence of the evidence."""
    evidence: tuple[str, ...]
    """Memory ids it was seen in."""
    sessions: tuple[str, ...]
    rule: str | None = None
    """A procedure text, when the detector wrote one (a model)."""

    @property
    def occurrences(self) -> int:
        return len(self.sessions)

    @property
    def key(self) -> str:
        """The observation's store key: stable while the pattern keeps recurring."""
        return "observation:" + content_hash(self.category, self.phrase)[:24]


def _statement_text(row: MemoryRow) -> str:
    v = row.value
    if row.kind == "preference":
        value = v.get("value")
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        return f"Preference {row.key.replace('_', ' ')}: {shown}."
    return str(v.get("content") or "")


def evidence_from_rows(rows: Sequence[MemoryRow]) -> list[Evidence]:
    """What the detector reads from a scope's records.

    Raw episodes (not session or period summaries, which repeat their sources) give their
    title and summary once, in their session. Facts and preferences give their statement once
    per distinct run in their evidence trail (the gate records each repetition there).

    Example:
        >>> pref = MemoryRow(1, "p1", "ns", "tone", "preference", "t", "u", None, "active",
        ...                  {"value": "terse"}, 0.9, 0.0, 0.0, "r1", 3,
        ...                  [{"run_id": "r1"}, {"run_id": "r2"}, {"run_id": "r3"}])
        >>> [(e.session, e.text) for e in evidence_from_rows([pref])][:2]
        [('r1', 'Preference tone: terse.'), ('r2', 'Preference tone: terse.')]
    """
    out: list[Evidence] = []
    for row in rows:
        if row.kind == "episode":
            if row.tier != 0 or row.value.get("task_type") == SESSION_SUMMARY:
                continue
            text = f"{row.value.get('title', '')}.\n{row.value.get('summary', '')}"
            out.append(Evidence(row.id, text, session_key(row) or row.id, "episode"))
            continue
        runs = [e.get("run_id") for e in row.evidence if isinstance(e, dict)]
        sessions = dict.fromkeys(r for r in [row.source_run_id, *runs] if r) or {row.id: None}
        text = _statement_text(row)
        out.extend(Evidence(row.id, text, s, row.kind) for s in sessions)
    return out


def _tokens(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold().replace("'", ""))


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if len(_tokens(s)) >= MIN_PHRASE]


def _contains(tokens: list[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(tuple(tokens[i:i + n]) == phrase for i in range(len(tokens) - n + 1))


def _statements(evidence: Sequence[Evidence], min_occurrences: int) -> list[Pattern]:
    """The same sentence (normalized) in enough distinct sessions."""
    seen: dict[str, dict[str, Any]] = {}
    for ev in evidence:
        for sentence in _sentences(ev.text):
            norm = " ".join(_tokens(sentence))
            entry = seen.setdefault(norm, {"quote": sentence, "ids": {}, "sessions": {},
                                           "kind": ev.kind})
            entry["ids"][ev.id] = None
            entry["sessions"][ev.session] = None
    return [
        Pattern(f"repeated_{e['kind']}", norm, e["quote"], tuple(e["ids"]), tuple(e["sessions"]))
        for norm, e in seen.items() if len(e["sessions"]) >= min_occurrences
    ]


def _phrases(evidence: Sequence[Evidence], min_occurrences: int) -> list[Pattern]:
    """Maximal phrases of 3-6 words (not starting or ending on a stopword) that recur."""
    sessions: dict[tuple[str, ...], dict[str, None]] = defaultdict(dict)
    ids: dict[tuple[str, ...], dict[str, None]] = defaultdict(dict)
    for ev in evidence:
        for sentence in _sentences(ev.text):  # a phrase never spans two sentences
            tokens = _tokens(sentence)
            for n in range(MIN_PHRASE, MAX_PHRASE + 1):
                for i in range(len(tokens) - n + 1):
                    gram = tuple(tokens[i:i + n])
                    if gram[0] in STOPWORDS or gram[-1] in STOPWORDS:
                        continue
                    if sum(t not in STOPWORDS for t in gram) < 2:
                        continue
                    sessions[gram][ev.session] = None
                    ids[gram][ev.id] = None
    frequent = sorted((g for g, s in sessions.items() if len(s) >= min_occurrences),
                      key=lambda g: (-len(g), g))
    kept: list[tuple[str, ...]] = []
    for gram in frequent:
        if any(len(k) > len(gram) and _contains(list(k), gram)
               and set(sessions[k]) >= set(sessions[gram]) for k in kept):
            continue
        kept.append(gram)
    out = []
    for gram in kept:
        quote = next((s for ev in evidence if ev.id in ids[gram] for s in _sentences(ev.text)
                      if _contains(_tokens(s), gram)), " ".join(gram))
        out.append(Pattern("recurring_phrase", " ".join(gram), quote, tuple(ids[gram]),
                           tuple(sessions[gram])))
    return out


def detect_patterns(evidence: Sequence[Evidence], min_occurrences: int = 3) -> list[Pattern]:
    """The deterministic detector: repeated statements first, then recurring phrases not
    already covered by one; strongest first (more sessions, then longer).

    Example:
        >>> ev = [Evidence(f"e{i}", f"Ticket {i}. Deployed the billing service to staging.",
        ...                f"run-{i}") for i in range(3)]
        >>> [(p.category, p.quote, p.occurrences) for p in detect_patterns(ev)]
        [('repeated_episode', 'Deployed the billing service to staging.', 3)]
    """
    statements = _statements(evidence, min_occurrences)
    covered = [tuple(p.phrase.split()) for p in statements]
    phrases = [p for p in _phrases(evidence, min_occurrences)
               if not any(_contains(list(c), tuple(p.phrase.split())) for c in covered)]
    return sorted([*statements, *phrases],
                  key=lambda p: (-p.occurrences, -len(p.phrase.split()), p.phrase))


class _ModelPattern(BaseModel):
    category: str = Field(min_length=1, max_length=64)
    """A short snake_case label, e.g. output_format, workflow, tone."""
    quote: str = Field(min_length=1, max_length=2000)
    """One sentence stating the pattern."""
    rule: str = Field(min_length=1, max_length=2000)
    """The instruction an assistant should follow from now on, in plain language."""
    evidence_ids: list[str] = Field(default_factory=list)
    """The ids of the evidence lines that show the pattern."""


class ModelPatterns(BaseModel):
    """Structured output of the model detector."""

    patterns: list[_ModelPattern] = Field(default_factory=list)


DETECTION_PROMPT = (
    "You find recurring behavioural patterns of one user across sessions. Each evidence line "
    "is `id | session | text`. Report only patterns seen in at least {n} different sessions, "
    "citing the ids. For each: a category, a one-sentence quote, and the rule an assistant "
    "should follow. No patterns: an empty list."
)


def model_detector(chat: Any, fallback: Detector = detect_patterns) -> Detector:
    """A detector backed by a chat model's structured output (`ModelPatterns`).

    A claimed pattern is kept only if its cited ids exist and span at least
    `min_occurrences` distinct sessions; a failing model falls back to `fallback`.

    Example:
        >>> detector = model_detector(None)  # no usable model: the deterministic detector
        >>> ev = [Evidence(f"e{i}", "Asked for the CSV export again.", f"r{i}") for i in range(3)]
        >>> [p.occurrences for p in detector(ev, 3)]
        [3]
    """

    def detect(evidence: Sequence[Evidence], min_occurrences: int) -> list[Pattern]:
        if chat is None or not evidence:
            return fallback(evidence, min_occurrences)
        from langchain_core.messages import HumanMessage, SystemMessage

        lines = "\n".join(f"{e.id} | {e.session} | {' '.join(e.text.split())[:400]}"
                          for e in evidence)
        try:
            answer = chat.with_structured_output(ModelPatterns).invoke([
                SystemMessage(DETECTION_PROMPT.format(n=min_occurrences)), HumanMessage(lines)])
            found = answer if isinstance(answer, ModelPatterns) else \
                ModelPatterns.model_validate(answer)
        except Exception:  # model failed: the deterministic detector still runs
            return fallback(evidence, min_occurrences)
        by_id = {e.id: e for e in evidence}
        out = []
        for p in found.patterns:
            cited = [by_id[i] for i in dict.fromkeys(p.evidence_ids) if i in by_id]
            sessions = tuple(dict.fromkeys(e.session for e in cited))
            if len(sessions) >= min_occurrences:
                out.append(Pattern(p.category, " ".join(_tokens(p.quote)), p.quote,
                                   tuple(e.id for e in cited), sessions, rule=p.rule))
        return out

    return detect


def select_new(
    patterns: Sequence[Pattern], existing: Mapping[str, str], max_new: int
) -> tuple[list[Pattern], list[Pattern]]:
    """Split patterns into (new ones, at most `max_new`; re-detections of active ones).

    `existing` maps observation keys of the scope to their status. A key whose observation
    was rejected (the "wrong" counter-signal) or merged is never detected again.

    Example:
        >>> p = Pattern("c", "x y z", "X y z.", ("e1",), ("r1", "r2", "r3"))
        >>> select_new([p], {}, 3)[0] == [p], select_new([p], {p.key: "rejected"}, 3)
        (True, ([], []))
    """
    new: list[Pattern] = []
    again: list[Pattern] = []
    for p in patterns:
        status = existing.get(p.key)
        if status is None:
            if len(new) < max_new:
                new.append(p)
        elif status == "active":
            again.append(p)
    return new, again


def confidence_for(occurrences: int) -> float:
    """Confidence of a pattern seen in `occurrences` sessions: 0.6 at 3, +0.1 each, <= 0.95.

    Example:
        >>> confidence_for(3), confidence_for(5), confidence_for(50)
        (0.6, 0.8, 0.95)
    """
    return round(min(0.95, 0.3 + 0.1 * occurrences), 4)


def level_of(confidence: float, high: float = 0.8) -> Level:
    """The observation's `confidence_level`.

    Example:
        >>> level_of(0.8), level_of(0.6), level_of(0.3)
        ('high', 'medium', 'low')
    """
    if confidence >= high:
        return "high"
    return "medium" if confidence >= 0.6 else "low"


def promotion_due(value: Mapping[str, Any], status: str, detected_at: float, now: float,
                  *, delay_hours: float = 48.0) -> bool:
    """Whether an observation becomes a procedure now.

    It must be active, a promotion candidate (high confidence) and without "wrong" or
    "dismissed" feedback; then either confirmed ("correct") or detected `delay_hours` ago,
    leaving that long to reject or dismiss it.

    Example:
        >>> v = {"promotion_candidate": True, "feedback": None}
        >>> promotion_due(v, "active", 0, 47 * 3600), promotion_due(v, "active", 0, 48 * 3600)
        (False, True)
    """
    if status != "active" or not value.get("promotion_candidate"):
        return False
    feedback = value.get("feedback")
    if feedback in ("wrong", "dismissed"):
        return False
    return feedback == "correct" or now - detected_at >= delay_hours * 3600.0


def procedure_rule(value: Mapping[str, Any]) -> str:
    """The procedure text of an observation: the model's rule, else the quote and its count.

    Example:
        >>> procedure_rule({"quote": "Runs the linter before committing.", "occurrences": 4,
        ...                 "metadata": {}})
        'Recurring pattern (seen in 4 sessions): Runs the linter before committing.'
    """
    rule = (value.get("metadata") or {}).get("rule")
    if isinstance(rule, str) and rule.strip():
        return rule.strip()
    return f"Recurring pattern (seen in {value.get('occurrences', 1)} sessions): {value['quote']}"
