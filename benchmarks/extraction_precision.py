"""Precision of what the write path writes: every typed record, judged against labels.

Natural conversations are played through the chat graph's write path
(`langgraph_typed_memory.conversation_import.TurnWriter`: the extract node's pre-filter, rule
extractor and entity reading, then the promote node's gate and turn log, one transaction per
turn), each turn a user message `name=<speaker>`, one thread per session, offline (no model),
on a SQLite store without an index (lexical only: what the write path writes does not depend
on the embedder). Every typed record a turn wrote is listed: preferences, facts and entities,
superseded versions included (they were written); turn-log episodes are not typed records and
are left out. A fact whose value names an entity the same turn linked (`sister_name: Anna`,
`employer: Google`) is counted as a relation, any other fact as a fact.

Each record is judged by a committed labels file (`data/extraction_precision_labels.jsonl`),
one JSON line per (dataset, conversation, turn, kind, key, content) with `"true": true|false`
and a short `"why"` (`"true": null`: not judged yet). A record no label matches is unjudged:
it is listed, and left out of precision until someone labels it.

Datasets:

* `locomo`: the LoCoMo development conversations (two friends talking; nobody instructs an
  assistant), played as `locomo_loop.py` plays them;
* `persona`: the first conversations of Synthetic-Persona-Chat's validation split (two people
  getting to know each other; speakers named `User 1` and `User 2` as in the data), with
  recall against each speaker's gold persona;
* `chats`: `data/assistant_chats.json`, short conversations of a user with an assistant.

Reported per dataset and overall: records per kind, true / false / unjudged and precision per
kind, preferences written per LoCoMo conversation, the records that replaced another (or say
"(updated)"), the rules whose records were judged false, and persona recall. With
`--with-recall` (the default of a full run), the recall this write path keeps beside it:
the continuity scenarios (SQLite, no index) and LoCoMo evidence-in-prompt recall through the
loop (SQLite).

Usage:
    python benchmarks/extraction_precision.py --json out.json
    python benchmarks/extraction_precision.py --quick
    python benchmarks/extraction_precision.py --write-unjudged todo.jsonl --no-recall
    python benchmarks/extraction_precision.py --persona-conversations 1000 --no-recall
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import Clock, log, machine, sqlite_backend, torch_threads
from _locomo import EvidenceStats, conversation_files, conversation_from_raw
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import BaseStore

from langgraph_typed_memory.conversation_import import TurnWriter

logger = logging.getLogger("extraction_precision")

DATA = Path(__file__).resolve().with_name("data")
LABELS = DATA / "extraction_precision_labels.jsonl"
CHATS = DATA / "assistant_chats.json"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
LOCOMO_DEV = SHARED / "locomo" / "dev"
PERSONA_CHAT = SHARED / "persona-chat" / "valid.csv"

TENANT = "precision"
DATASETS = ("locomo", "persona", "chats")
CLASSES = ("fact", "relation", "preference", "entity")
"""How records are counted: a relation is a fact whose value names a linked entity."""
KINDS = frozenset({"fact", "preference", "entity"})
NEW_ROW = frozenset({"written", "superseded", "contradicted"})
"""Gate outcomes that insert a row (a deduplicated or rejected candidate writes none)."""
UNATTRIBUTED = "unattributed"
"""The rule shown for a record that names nothing as having proposed it."""

PERSONA_CONVERSATIONS = 50
"""Persona-Chat conversations in the committed figure (the first of the file)."""
QUICK_LOCOMO_TURNS = 60
QUICK_PERSONA = 10
QUICK_CHATS = 5
STATED_SHARE = 0.5
"""A persona sentence is stated when the speaker's turns hold this share of its words."""


# ------------------------------------------------------------------------------------ turns


@dataclass(frozen=True, slots=True)
class Said:
    """One user turn to play."""

    turn: str
    """Its id in the conversation: LoCoMo's dia_id, else its 1-based position."""
    speaker: str
    text: str
    session: str
    """The thread it belongs to."""
    at: datetime
    reply: str | None = None
    """The assistant's reply that followed it, if any."""


@dataclass(frozen=True, slots=True)
class Dialogue:
    """One conversation of a dataset, as the write path receives it."""

    dataset: str
    id: str
    turns: tuple[Said, ...]
    personas: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Each speaker's gold persona sentences (Persona-Chat only)."""


def locomo_dialogues(path: Path, *, quick: bool) -> list[Dialogue]:
    """LoCoMo conversations, each turn at its session's time a second apart (as
    `locomo_loop.py` plays them); with `quick`, the first turns of the first conversation."""
    from locomo_loop import _message

    out = []
    for file in conversation_files(path)[: 1 if quick else None]:
        conversation = conversation_from_raw(
            file.stem, json.loads(file.read_text(encoding="utf-8")), EvidenceStats())
        turns = conversation.turns[:QUICK_LOCOMO_TURNS] if quick else conversation.turns
        position: Counter[int] = Counter()
        said = []
        for turn in turns:
            said.append(Said(turn.dia_id, turn.speaker, str(_message(turn).content),
                             f"session-{turn.session}",
                             turn.occurred_at + timedelta(seconds=position[turn.session])))
            position[turn.session] += 1
        out.append(Dialogue("locomo", conversation.id, tuple(said)))
    return out


_PERSONA_TURN = re.compile(r"^(User [12]): ?(.*)$")
PERSONA_DAY = datetime(2024, 3, 1, 18, 0, tzinfo=UTC)


def persona_dialogue(index: int, row: Mapping[str, str]) -> Dialogue:
    """One Persona-Chat row: a turn per `User N:` line (a line without the prefix continues
    the turn before it), a minute apart."""
    lines: list[list[str]] = []
    for line in row["Best Generated Conversation"].splitlines():
        if not line.strip():
            continue
        match = _PERSONA_TURN.match(line.strip())
        if match:
            lines.append([match.group(1), match.group(2)])
        elif lines:
            lines[-1][1] += "\n" + line.strip()
    turns = tuple(Said(str(i), speaker, text, "chat", PERSONA_DAY + timedelta(minutes=i))
                  for i, (speaker, text) in enumerate(lines, start=1))
    personas = {f"User {n}": tuple(s.strip() for s in row[f"user {n} personas"].splitlines()
                                   if s.strip()) for n in (1, 2)}
    return Dialogue("persona", str(index), turns, personas)


def persona_dialogues(path: Path, count: int) -> list[Dialogue]:
    """The first `count` conversations of the Persona-Chat CSV (ids are row numbers)."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:count]
    return [persona_dialogue(i, row) for i, row in enumerate(rows)]


CHAT_DAY = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)


def chat_dialogues(path: Path, count: int | None = None) -> list[Dialogue]:
    """The assistant chats: each session a thread a day after the one before, turns a minute
    apart; a turn without `name` is the user's."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for chat in data["conversations"][:count]:
        turns, n = [], 0
        for s, session in enumerate(chat["sessions"], start=1):
            for i, turn in enumerate(session):
                n += 1
                turns.append(Said(str(n), turn.get("name") or "user", turn["user"],
                                  f"session-{s}", CHAT_DAY + timedelta(days=s - 1, minutes=i),
                                  turn.get("assistant")))
        out.append(Dialogue("chats", str(chat["id"]), tuple(turns)))
    return out


# ------------------------------------------------------------------------------------ playing


@dataclass(frozen=True, slots=True)
class Written:
    """A gate outcome that inserted a typed row, with the turn that wrote it."""

    said: Said
    kind: str
    key: str
    id: str
    outcome: str
    replaces: str | None
    proposed_by: str | None


@dataclass(slots=True)
class Played:
    """What playing one conversation left."""

    written: list[Written] = field(default_factory=list)
    prefilter: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)


def scope(dialogue: Dialogue) -> tuple[str, str]:
    """The namespace prefix of a conversation's records (one user scope per conversation)."""
    return f"tenant:{TENANT}", f"user:{dialogue.dataset}-{dialogue.id}"


def play(store: BaseStore, clock: Clock, dialogue: Dialogue) -> Played:
    """Write a conversation's turns, one thread per session, and keep the typed rows written."""
    out = Played()
    writers: dict[str, TurnWriter] = {}
    for said in dialogue.turns:
        writer = writers.get(said.session)
        if writer is None:
            writer = writers[said.session] = TurnWriter(
                store, tenant_id=TENANT, user_id=f"{dialogue.dataset}-{dialogue.id}",
                session_id=f"{dialogue.dataset}-{dialogue.id}-{said.session}",
                run_id=f"{dialogue.dataset}-{dialogue.id}-{said.session}")
        clock.now = said.at
        reply = AIMessage(said.reply) if said.reply else None
        result = writer.write(HumanMessage(said.text, name=said.speaker), at=said.at,
                              reply=reply)
        out.prefilter[result.prefilter] += 1
        for p in result.promotions:
            out.outcomes[f"{p['kind']}:{p['outcome']}"] += 1
            if p["kind"] in KINDS and p["outcome"] in NEW_ROW and p.get("id"):
                out.written.append(Written(said, p["kind"], str(p["key"]), str(p["id"]),
                                           p["outcome"], p.get("old_id"), p.get("proposed_by")))
    return out


# ------------------------------------------------------------------------------------ records


@dataclass(frozen=True, slots=True)
class LabelKey:
    """What a label names: one record of one turn."""

    dataset: str
    conversation: str
    turn: str
    kind: str
    key: str
    content: str


@dataclass(slots=True)
class Record:
    """One typed row the write path wrote, and its verdict."""

    dataset: str
    conversation: str
    turn: str
    speaker: str
    said: str
    kind: str
    """The stored kind: fact, preference or entity."""
    counted_as: str
    """fact, relation, preference or entity."""
    key: str
    content: str
    """A preference's value, a fact's content, an entity's name, type, roles and links."""
    outcome: str
    """The gate's outcome: written, superseded (it replaced a row), contradicted."""
    status: str
    """Its status at the end of the run (active, superseded, provisional...)."""
    rule: str
    """What proposed it (`proposed_by`: `rule:<id>`, `rule`, `model`)."""
    replaced: bool
    """It superseded or contradicted another row, or says it updates one."""
    verdict: bool | None = None
    why: str = ""
    persona: dict[str, list[int]] = field(default_factory=dict)
    """The persona sentences (speaker -> 0-based lines) a true record states."""

    @property
    def label_key(self) -> LabelKey:
        return LabelKey(self.dataset, self.conversation, self.turn, self.kind, self.key,
                        self.content)

    def label_line(self) -> dict[str, Any]:
        """The record as a label line to fill in (`true` as judged so far)."""
        return {"dataset": self.dataset, "conversation": self.conversation, "turn": self.turn,
                "kind": self.kind, "key": self.key, "content": self.content,
                "true": self.verdict, "why": self.why}


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                            sort_keys=True)


def _named(whom: str, names: Mapping[str, str]) -> str:
    return "user" if whom == "user" else names.get(whom, whom[:8])


def entity_content(value: Mapping[str, Any], names: Mapping[str, str]) -> str:
    """`Anna [person, she]; roles: sister of user; links: works_at Google`.

    Example:
        >>> entity_content({"name": "Anna", "type": "person", "pronoun": "she",
        ...                 "roles": [["sister", "user"]], "links": [["works_at", "e1"]]},
        ...                {"e1": "Google"})
        'Anna [person, she]; roles: sister of user; links: works_at Google'
    """
    typed = ", ".join(t for t in (value.get("type") or "untyped", value.get("pronoun")) if t)
    parts = [f"{value.get('name')} [{typed}]"]
    if value.get("aliases"):
        parts.append("aliases: " + ", ".join(value["aliases"]))
    if value.get("roles"):
        parts.append("roles: " + ", ".join(f"{role} of {_named(whose, names)}"
                                           for role, whose in value["roles"]))
    if value.get("affiliations"):
        parts.append("affiliations: " + ", ".join(value["affiliations"]))
    if value.get("links"):
        parts.append("links: " + ", ".join(f"{relation} {_named(target, names)}"
                                           for relation, target in value["links"]))
    return "; ".join(parts)


def content_of(kind: str, value: Mapping[str, Any], names: Mapping[str, str]) -> str:
    """What a record says, as it is judged and labelled."""
    if kind == "preference":
        return _as_text(value.get("value"))
    if kind == "fact":
        return str(value.get("content") or "")
    return entity_content(value, names)


def counted_as(kind: str, value: Mapping[str, Any], aliases: Mapping[str, set[str]]) -> str:
    """`relation` for a fact whose value is the name of an entity it is linked to.

    Example:
        >>> counted_as("fact", {"value": "Anna", "metadata": {"entities": ["e1"]}},
        ...            {"e1": {"anna"}}), counted_as("fact", {"value": "nurse"}, {})
        ('relation', 'fact')
    """
    if kind != "fact" or not isinstance(value.get("value"), str):
        return kind
    linked = (value.get("metadata") or {}).get("entities") or []
    said = value["value"].strip().lower()
    return "relation" if any(said in aliases.get(e, ()) for e in linked) else "fact"


def _versions(store: BaseStore, dialogue: Dialogue, played: Played
              ) -> dict[str, tuple[dict[str, Any], str]]:
    """Row id -> (value, status at the end) of every row the conversation wrote."""
    found: dict[str, tuple[dict[str, Any], str]] = {}
    for kind, key in dict.fromkeys((w.kind, w.key) for w in played.written):
        for item in store.history((*scope(dialogue), kind), key):  # type: ignore[attr-defined]
            found[str(item.memory.get("id"))] = (item.value, str(item.status or ""))
    return found


def records_of(store: BaseStore, dialogue: Dialogue, played: Played) -> list[Record]:
    """The typed rows a conversation wrote, read back from the store, in writing order."""
    versions = _versions(store, dialogue, played)
    names: dict[str, str] = {}
    aliases: dict[str, set[str]] = {}
    for w in played.written:
        if w.kind == "entity" and w.id in versions:
            value = versions[w.id][0]
            names[w.key] = str(value.get("name"))
            aliases.setdefault(w.key, set()).update(
                n.lower() for n in [value.get("name"), *(value.get("aliases") or [])] if n)
    out = []
    for w in played.written:
        if w.id not in versions:
            logger.warning("%s %s: %s row %s is not in the store's history", dialogue.dataset,
                           dialogue.id, w.kind, w.id)
            continue
        value, status = versions[w.id]
        content = content_of(w.kind, value, names)
        out.append(Record(
            dialogue.dataset, dialogue.id, w.said.turn, w.said.speaker, w.said.text, w.kind,
            counted_as(w.kind, value, aliases), w.key, content, w.outcome, status,
            w.proposed_by or value.get("proposed_by") or UNATTRIBUTED,
            w.kind != "entity" and (w.replaces is not None or "(updated)" in content)))
    return out


# ------------------------------------------------------------------------------------ labels


@dataclass(frozen=True, slots=True)
class Label:
    verdict: bool | None
    why: str
    persona: dict[str, list[int]]


def read_labels(path: Path) -> dict[LabelKey, Label]:
    """The labels file: one JSON object a line (blank lines and `#` lines skipped).

    Raises:
        SystemExit: naming the line that is not a label.
    """
    labels: dict[LabelKey, Label] = {}
    if not path.exists():
        logger.warning("labels file %s does not exist: every record is unjudged", path)
        return labels
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            item = json.loads(line)
            key = LabelKey(*(str(item[f]) for f in ("dataset", "conversation", "turn", "kind",
                                                     "key", "content")))
            verdict = item["true"]
        except (ValueError, KeyError, TypeError) as error:
            raise SystemExit(f"{path}:{n}: not a label line ({error}); a label has dataset, "
                             "conversation, turn, kind, key, content and true") from None
        if verdict not in (True, False, None):
            raise SystemExit(f"{path}:{n}: \"true\" must be true, false or null, got {verdict!r}")
        persona = {str(k): [int(i) for i in v] for k, v in (item.get("persona") or {}).items()}
        label = Label(verdict, str(item.get("why") or ""), persona)
        if key in labels and labels[key].verdict != verdict:
            logger.warning("%s:%d: labels the same record as an earlier line, differently; "
                           "the later line counts", path, n)
        labels[key] = label
    return labels


def judge(records: Iterable[Record], labels: Mapping[LabelKey, Label]) -> set[LabelKey]:
    """Give each record its label's verdict; returns the label keys used."""
    used: set[LabelKey] = set()
    for record in records:
        label = labels.get(record.label_key)
        if label is None:
            continue
        used.add(record.label_key)
        record.verdict, record.why, record.persona = label.verdict, label.why, label.persona
    return used


# ------------------------------------------------------------------------------------ scoring


@dataclass(slots=True)
class KindCounts:
    """Records of one kind, by verdict."""

    records: int = 0
    true: int = 0
    false: int = 0

    @property
    def unjudged(self) -> int:
        return self.records - self.true - self.false

    def precision(self) -> float | None:
        judged = self.true + self.false
        return round(self.true / judged, 4) if judged else None

    def add(self, record: Record) -> None:
        self.records += 1
        self.true += record.verdict is True
        self.false += record.verdict is False

    def dict(self) -> dict[str, Any]:
        return {"records": self.records, "true": self.true, "false": self.false,
                "unjudged": self.unjudged, "precision": self.precision()}


def kind_counts(records: Iterable[Record]) -> dict[str, dict[str, Any]]:
    counts = {name: KindCounts() for name in (*CLASSES, "all")}
    for record in records:
        counts[record.counted_as].add(record)
        counts["all"].add(record)
    return {name: c.dict() for name, c in counts.items()}


def false_by_rule(records: Iterable[Record]) -> dict[str, dict[str, int]]:
    """Per rule (and kind counted): records judged false, most first."""
    found: Counter[tuple[str, str]] = Counter(
        (r.rule, r.counted_as) for r in records if r.verdict is False)
    out: dict[str, dict[str, int]] = {}
    for (rule, kind), n in found.most_common():
        out.setdefault(rule, {})[kind] = n
    return out


def preferences_per_conversation(records: Sequence[Record], dialogues: Sequence[Dialogue]
                                 ) -> dict[str, dict[str, int]]:
    """Per conversation: preferences written, and how many were judged false."""
    out = {d.id: {"written": 0, "false": 0} for d in dialogues}
    for r in records:
        if r.kind == "preference":
            out[r.conversation]["written"] += 1
            out[r.conversation]["false"] += r.verdict is False
    return out


_WORD = re.compile(r"[a-z]+")
_STOP = frozenset("""
a about after again all also am an and any are as at be been being but by can could did do
does doing for from get gets got had has have having he her here him his how i if in into is it
its just lot lots me more most much my myself no not of on one or our out over really she so
some than that the their them then there these they this those to too up us very was we were
what when where which who why will with would you your like likes liked love loves loved
enjoy enjoys go going went make made im ive dont work works worked year years time day
days thing things people good great new next want same every favorite favourite
""".split())


def _stem(word: str) -> str:
    """A light suffix stripping, so `knitting`/`knit` and `cookies`/`cookie` meet.

    Example:
        >>> [_stem(w) for w in ("knitting", "knit", "cookies", "cookie", "baking", "bake")]
        ['knit', 'knit', 'cooki', 'cooki', 'bak', 'bak']
    """
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """Stemmed words of three letters or more, stop words left out."""
    return {_stem(w) for w in _WORD.findall(text.lower().replace("'", ""))
            if len(w) >= 3 and w not in _STOP}


def stated(sentence: str, spoken: set[str]) -> bool:
    """Whether the speaker's words (`content_words` of their turns) hold at least
    `STATED_SHARE` of a persona sentence's content words.

    Example:
        >>> stated("I love to bake cookies.", content_words("I bake cookies and knit."))
        True
        >>> stated("I am a boy.", content_words("I like to play video games."))
        False
    """
    words = content_words(sentence)
    return bool(words) and len(words & spoken) / len(words) >= STATED_SHARE


@dataclass(slots=True)
class PersonaRecall:
    """Persona sentences: how many, stated in the conversation, and covered by a true record."""

    sentences: int = 0
    stated: int = 0
    stated_covered: int = 0
    covered: int = 0

    def dict(self) -> dict[str, Any]:
        return {"sentences": self.sentences, "stated": self.stated,
                "covered": self.covered, "stated_covered": self.stated_covered,
                "recall": round(self.stated_covered / self.stated, 4) if self.stated else None}


def persona_recall(dialogues: Sequence[Dialogue], records: Sequence[Record]) -> dict[str, Any]:
    """Share of the persona sentences a conversation states that a true record covers (a
    true record's label names the sentences it states, in its `persona` field)."""
    covered = {(r.conversation, speaker, i) for r in records if r.verdict is True
               for speaker, lines in r.persona.items() for i in lines}
    tally = PersonaRecall()
    for d in dialogues:
        for speaker, sentences in d.personas.items():
            spoken = content_words(" ".join(t.text for t in d.turns if t.speaker == speaker))
            for i, sentence in enumerate(sentences):
                said, got = stated(sentence, spoken), (d.id, speaker, i) in covered
                tally.sentences += 1
                tally.stated += said
                tally.covered += got
                tally.stated_covered += said and got
    return tally.dict()


# ------------------------------------------------------------------------------------ the run


@dataclass(slots=True)
class DatasetRun:
    """One dataset played: its conversations, what they wrote, and the gate's outcomes."""

    name: str
    dialogues: list[Dialogue]
    records: list[Record] = field(default_factory=list)
    prefilter: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


def run_dataset(name: str, dialogues: list[Dialogue]) -> DatasetRun:
    """Play every conversation of a dataset on a fresh SQLite store (no index)."""
    out = DatasetRun(name, dialogues)
    clock = Clock()
    began = time.perf_counter()
    with sqlite_backend(clock) as database:
        store = database(f"precision_{name}")()
        store.setup()  # type: ignore[attr-defined]
        for n, dialogue in enumerate(dialogues, start=1):
            played = play(store, clock, dialogue)
            out.records += records_of(store, dialogue, played)
            out.prefilter.update(played.prefilter)
            out.outcomes.update(played.outcomes)
            if n % 10 == 0 or n == len(dialogues) or name == "locomo":
                log(f"  {name}: {n}/{len(dialogues)} conversations, {len(out.records)} typed "
                    f"records ({time.perf_counter() - began:.0f} s)")
    out.seconds = time.perf_counter() - began
    return out


def dataset_summary(run: DatasetRun) -> dict[str, Any]:
    out: dict[str, Any] = {
        "conversations": len(run.dialogues),
        "turns": sum(len(d.turns) for d in run.dialogues),
        "prefilter": dict(sorted(run.prefilter.items())),
        "gate_outcomes": dict(sorted(run.outcomes.items())),
        "kinds": kind_counts(run.records),
        "replacing": sum(r.replaced for r in run.records),
        "false_by_rule": false_by_rule(run.records),
        "preferences_per_conversation": preferences_per_conversation(run.records,
                                                                     run.dialogues),
        "seconds": round(run.seconds, 1),
    }
    prefs = out["preferences_per_conversation"].values()
    out["preferences_max"] = max((p["written"] for p in prefs), default=0)
    out["junk_preferences_max"] = max((p["false"] for p in prefs), default=0)
    if any(d.personas for d in run.dialogues):
        out["persona_recall"] = persona_recall(run.dialogues, run.records)
    return out


def build_report(runs: Sequence[DatasetRun], labels: Mapping[LabelKey, Label],
                 used: set[LabelKey]) -> dict[str, Any]:
    records = [r for run in runs for r in run.records]
    played = {run.name for run in runs}
    return {
        "datasets": {run.name: dataset_summary(run) for run in runs},
        "overall": {"kinds": kind_counts(records), "false_by_rule": false_by_rule(records),
                    "replacing": sum(r.replaced for r in records)},
        "labels": {"lines": len(labels), "used": len(used),
                   "unused_in_datasets_played": sum(1 for k in labels if k not in used
                                                    and k.dataset in played)},
        "unjudged_records": [asdict(r) for r in records if r.verdict is None],
        "replacing_records": [asdict(r) for r in records if r.replaced],
        "records": [asdict(r) for r in records],
    }


# ------------------------------------------------------------------------------------ recall


def held_recall(locomo: Path, *, quick: bool) -> dict[str, Any]:
    """The recall this write path keeps: continuity scenarios (SQLite, no index) and LoCoMo
    evidence-in-prompt recall through the loop (SQLite); with `quick`, the loop's quick view
    of the first conversation."""
    import continuity
    import locomo_loop

    scenarios = [*continuity.load_cases(continuity.CASES_FILE), *continuity.SCENARIOS]
    continuity.check_scenarios(scenarios)
    clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))
    log(f"recall: continuity, {len(scenarios)} scenarios (SQLite, no index)")
    with sqlite_backend(clock) as database:
        store = database("continuity")(index=None)
        store.setup()  # type: ignore[attr-defined]
        kept = continuity.summary(continuity.play(store, scenarios, clock))
    stats = EvidenceStats()
    conversations = [conversation_from_raw(f.stem, json.loads(f.read_text(encoding="utf-8")),
                                           stats)
                     for f in conversation_files(locomo)[: 1 if quick else None]]
    if quick:
        conversations = [locomo_loop.quick_view(c) for c in conversations]
    log(f"recall: LoCoMo through the loop, {len(conversations)} conversations (SQLite)")
    with torch_threads(1):
        loop = locomo_loop.run(conversations, "sqlite", quick)
    product = loop["systems"][locomo_loop.PRODUCT]
    return {
        "continuity": {key: kept[key] for key in ("statements", "statements_present",
                                                  "corrections", "corrections_applied",
                                                  "leaks")},
        "locomo_loop": {"questions": product["questions"]["all"],
                        "evidence_recall": product["evidence_recall"]},
    }


# ------------------------------------------------------------------------------------ printing


def _share(counts: Mapping[str, Any]) -> str:
    p = counts["precision"]
    judged = counts["true"] + counts["false"]
    text = f"{p:.3f} ({counts['true']}/{judged})" if p is not None else "-"
    return text + (f", {counts['unjudged']} unjudged" if counts["unjudged"] else "")


def precision_table(report: Mapping[str, Any]) -> str:
    head = "| dataset | kind | records | true | false | unjudged | precision |"
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    blocks = {**report["datasets"], "overall": report["overall"]}
    for name, block in blocks.items():
        for kind in (*CLASSES, "all"):
            c = block["kinds"][kind]
            shown = "-" if c["precision"] is None else f"{c['precision']:.3f}"
            lines.append(f"| {name} | {kind} | {c['records']} | {c['true']} | {c['false']} | "
                         f"{c['unjudged']} | {shown} |")
    return "\n".join(lines)


def _record_line(r: Mapping[str, Any]) -> str:
    said = r["said"].replace("\n", " ")
    return (f"  {r['dataset']} {r['conversation']} turn {r['turn']} [{r['speaker']}] "
            f"{r['counted_as']} {r['key']} = {r['content']!r} ({r['outcome']}, {r['status']}, "
            f"{r['rule']})\n      said: {said[:200]!r}")


def print_report(report: Mapping[str, Any]) -> None:
    meta = report["meta"]
    unjudged = report["unjudged_records"]
    print("Precision of what the write path writes")
    print(f"machine: {meta['machine']}")
    print(f"command: {meta['command']}")
    print(f"labels: {report['labels']['used']} of {report['labels']['lines']} lines matched "
          f"a record")
    if unjudged:
        print(f"\n*** {len(unjudged)} RECORDS NOT YET JUDGED: left out of precision; label "
              "them (--write-unjudged FILE) ***")
        for r in unjudged:
            print(_record_line(r))
    print()
    print(precision_table(report))
    print()
    for name, block in {**report["datasets"], "overall": report["overall"]}.items():
        k = block["kinds"]
        print(f"{name}: facts {_share(k['fact'])}; relations {_share(k['relation'])}; "
              f"preferences {_share(k['preference'])}; entities {_share(k['entity'])}")
    locomo = report["datasets"].get("locomo")
    if locomo:
        per = locomo["preferences_per_conversation"]
        print("LoCoMo preferences per conversation (written / judged false): "
              + ", ".join(f"{c} {p['written']}/{p['false']}" for c, p in per.items())
              + f"; max {locomo['preferences_max']}")
    persona = report["datasets"].get("persona", {}).get("persona_recall")
    if persona:
        recall = "-" if persona["recall"] is None else f"{persona['recall']:.3f}"
        print(f"persona recall: {recall} ({persona['stated_covered']} of {persona['stated']} "
              f"stated persona sentences covered by a true record; {persona['sentences']} "
              f"sentences, {persona['covered']} covered)")
    print("false records by rule: " + (", ".join(
        f"{rule} {sum(kinds.values())} ({', '.join(f'{k} {n}' for k, n in kinds.items())})"
        for rule, kinds in report["overall"]["false_by_rule"].items()) or "none"))
    replacing = report["replacing_records"]
    print(f"records that replaced another or say \"(updated)\": {len(replacing)}")
    for r in replacing:
        print(_record_line(r) + f"\n      judged: {r['verdict']}")
    held = report.get("recall")
    if held:
        c, loop = held["continuity"], held["locomo_loop"]
        print(f"recall held: continuity statements {c['statements_present']}/{c['statements']},"
              f" corrections {c['corrections_applied']}/{c['corrections']}, leaks {c['leaks']};"
              f" LoCoMo loop evidence recall {loop['evidence_recall']['all']:.3f} "
              f"({loop['questions']} questions)")


# ------------------------------------------------------------------------------------ main


@contextmanager
def _timed(label: str) -> Iterator[None]:
    began = time.perf_counter()
    yield
    log(f"{label}: {time.perf_counter() - began:.1f} s")


def load_dialogues(args: argparse.Namespace) -> dict[str, list[Dialogue]]:
    """Each dataset's conversations; a dataset whose file is absent is skipped (logged)."""
    out: dict[str, list[Dialogue]] = {}
    persona_count = QUICK_PERSONA if args.quick else args.persona_conversations
    sources = {"locomo": (args.locomo, lambda: locomo_dialogues(args.locomo, quick=args.quick)),
               "persona": (args.persona, lambda: persona_dialogues(args.persona, persona_count)),
               "chats": (args.chats, lambda: chat_dialogues(
                   args.chats, QUICK_CHATS if args.quick else None))}
    for name, (path, read) in sources.items():
        if not path.exists():
            logger.warning("%s: %s does not exist; the dataset is skipped", name, path)
            continue
        out[name] = read()
    return out


def write_unjudged(path: Path, records: Sequence[Record],
                   dialogues: Mapping[str, list[Dialogue]]) -> None:
    """The unjudged records as label lines (`"true": null`), with the turn and, for persona
    data, the speaker's numbered persona to judge by (drop `said` and `gold` when committing:
    the datasets are not copied into the project)."""
    personas = {(d.dataset, d.id): d.personas for ds in dialogues.values() for d in ds}
    with path.open("w", encoding="utf-8") as out:
        for r in records:
            if r.verdict is not None:
                continue
            line = {**r.label_line(), "said": f"{r.speaker}: {r.said}", "rule": r.rule,
                    "outcome": r.outcome, "counted_as": r.counted_as}
            gold = personas.get((r.dataset, r.conversation), {}).get(r.speaker)
            if gold:
                line["gold"] = [f"{i}: {s}" for i, s in enumerate(gold)]
            out.write(json.dumps(line, ensure_ascii=False) + "\n")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=LOCOMO_DEV,
                        help="a LoCoMo conversation file or a folder of them")
    parser.add_argument("--persona", type=Path, default=PERSONA_CHAT,
                        help="Synthetic-Persona-Chat's valid.csv")
    parser.add_argument("--chats", type=Path, default=CHATS, help="the assistant chats (JSON)")
    parser.add_argument("--labels", type=Path, default=LABELS, help="the labels file (JSONL)")
    parser.add_argument("--persona-conversations", type=int, default=PERSONA_CONVERSATIONS,
                        metavar="N", help="the first N Persona-Chat conversations (default "
                                          f"{PERSONA_CONVERSATIONS}; 1000: all)")
    parser.add_argument("--quick", action="store_true",
                        help=f"the first {QUICK_LOCOMO_TURNS} turns of one LoCoMo conversation, "
                             f"{QUICK_PERSONA} persona conversations, {QUICK_CHATS} chats")
    recall = parser.add_mutually_exclusive_group()
    recall.add_argument("--with-recall", dest="with_recall", action="store_const", const=True,
                        help="also run the continuity scenarios and the LoCoMo loop's recall "
                             "(the default, except with --quick)")
    recall.add_argument("--no-recall", dest="with_recall", action="store_const", const=False,
                        help="precision only")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the report here")
    parser.add_argument("--write-unjudged", metavar="FILE", type=Path,
                        help="write the unjudged records as label lines to fill in")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(arguments)
    with_recall = (not args.quick) if args.with_recall is None else args.with_recall
    log(f"machine: {machine()}")
    dialogues = load_dialogues(args)
    labels = read_labels(args.labels)
    runs = []
    for name, found in dialogues.items():
        log(f"{name}: {len(found)} conversations, {sum(len(d.turns) for d in found)} turns")
        runs.append(run_dataset(name, found))
    used = judge((r for run in runs for r in run.records), labels)
    report = {"meta": {
        "command": " ".join(["python", "benchmarks/extraction_precision.py", *arguments]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "store": "SQLite, no index (lexical only)",
        "labels_file": str(args.labels),
        "persona_conversations": len(dialogues.get("persona", [])),
    }, **build_report(runs, labels, used)}
    if with_recall:
        with _timed("recall held"):
            report["recall"] = held_recall(args.locomo, quick=args.quick)
    print_report(report)
    if args.write_unjudged:
        write_unjudged(args.write_unjudged, [r for run in runs for r in run.records], dialogues)
        log(f"{len(report['unjudged_records'])} unjudged records written to "
            f"{args.write_unjudged}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
