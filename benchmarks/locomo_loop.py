"""LoCoMo through the loop: what the chat graph's own write path leaves for a question.

Each LoCoMo conversation is played turn by turn through the chat graph's write nodes
(`langgraph_typed_memory.conversation_import.TurnWriter`: the extract node's pre-filter and
rule extractor, then the promote node's gate and turn log, one transaction per turn), each
session a thread, each turn a user message `name=<speaker>` at the session's time (a second
apart, in order). Both speakers are users of one scope (`tenant:locomo`, `user:conv-<id>`).
Then every question of categories 1-4 goes, in a new thread, through the retrieve and
assemble nodes at their defaults (the default token budget), with the store's clock a day
after the last session.

Reported per category and overall:

* evidence-in-prompt recall: the share of a question's evidence turns that reach the
  assembled prompt through a record written from that turn (a logged turn, or a fact or
  preference extracted from it: the records the trace lists in `assembled`, their provenance
  and their evidence trail), averaged over questions;
* the share of questions whose answer string is in the prompt (case-insensitive);
* prompt tokens (p50, max; the trace's `tokens.total`) and prompts over the budget;
* records written per kind (gate outcomes), and the write path's time per turn (p50/p95,
  excluding and including the embedder's time);
* the turns the extractor read as correcting an earlier statement: LoCoMo's conversations
  correct almost nothing, so this counts corrections read into ordinary talk.

Beside the product, the same retrieve node without its time windows and without its entity
graph (what each retriever adds, per category), and with `--fan-out` or `--entity-weight`
the retrieve node asking for other counts or fusing the entity graph at another weight.
Side by side, at the same budget:
`recent_window`, the last turns that fit (LangChain's
`trim_messages`, strategy "last", what a LangGraph app without memory sends), and
`truncated`, the whole conversation from its start, cut at the budget.

Usage:
    python benchmarks/locomo_loop.py --data ../shared/datasets/locomo/dev
    python benchmarks/locomo_loop.py --data PATH --backend postgres --json out.json
    python benchmarks/locomo_loop.py --data PATH --quick
    python benchmarks/locomo_loop.py --data PATH --entity-weight 1 --entity-weight 0.5
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from _common import Clock, log, machine, postgres_backend, sqlite_backend, torch_threads
from _locomo import (
    CATEGORY_NAMES,
    Conversation,
    EvidenceStats,
    Question,
    conversation_files,
    conversation_from_raw,
)
from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage, HumanMessage, trim_messages

from langgraph_typed_memory.assembly import (
    MESSAGE_OVERHEAD_TOKENS,
    count_tokens,
    normalize_assembly,
)
from langgraph_typed_memory.conversation_import import TurnWriter
from langgraph_typed_memory.nodes import create_assemble_node, create_retrieve_node

TENANT = "locomo"
DIMS = 384
QUICK_SESSIONS = 3
QUICK_QUESTIONS = 20
PRODUCT = "typed_memory"
UNTIMED = "typed_memory without time windows"
"""The product without the span-of-time listing: what that retriever adds, per category."""
UNLINKED = "typed_memory without the entity graph"
"""The product without the entity graph retriever: what it adds, per category."""
BASELINES = ("recent_window", "truncated")


class TimedEmbeddings(Embeddings):
    """Counts the time spent embedding, so the write path can be timed without it."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.seconds = 0.0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        start = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - start

    def embed_query(self, text: str) -> list[float]:
        start = time.perf_counter()
        try:
            return self.inner.embed_query(text)
        finally:
            self.seconds += time.perf_counter() - start


# ------------------------------------------------------------------------------------ writing


@dataclass
class Written:
    """What writing one conversation left: where each turn's records came from, and timings."""

    turn_of: dict[tuple[str, int], str] = field(default_factory=dict)
    """(run id, turn index) -> dia_id."""
    outcomes: Counter[str] = field(default_factory=Counter)
    prefilter: Counter[str] = field(default_factory=Counter)
    corrections: list[str] = field(default_factory=list)
    """The turns (dia_id) the extractor read as correcting an earlier statement."""
    write_ms: list[float] = field(default_factory=list)
    embed_ms: list[float] = field(default_factory=list)


def _message(turn: Any) -> HumanMessage:
    image = f" [image: {turn.caption}]" if turn.caption else ""
    return HumanMessage(f"{turn.text}{image}", name=turn.speaker, id=turn.dia_id)


def write(store: Any, conversation: Conversation, clock: Clock,
          embedder: TimedEmbeddings) -> Written:
    """Play a conversation through the write path, one thread per session."""
    out = Written()
    writers: dict[int, TurnWriter] = {}
    for turn in conversation.turns:
        writer = writers.get(turn.session)
        if writer is None:
            session = f"conv-{conversation.id}-session-{turn.session}"
            writer = writers[turn.session] = TurnWriter(
                store, tenant_id=TENANT, user_id=f"conv-{conversation.id}", session_id=session,
                run_id=f"locomo-{conversation.id}-{turn.session}")
        at = turn.occurred_at + timedelta(seconds=writer.turn)
        clock.now = at
        embedded = embedder.seconds
        start = time.perf_counter()
        result = writer.write(_message(turn), at=at)
        out.write_ms.append((time.perf_counter() - start) * 1000)
        out.embed_ms.append((embedder.seconds - embedded) * 1000)
        out.turn_of[(writer.run_id, writer.turn)] = turn.dia_id
        out.prefilter[result.prefilter] += 1
        if result.corrections:
            out.corrections.append(turn.dia_id)
        out.outcomes.update(f"{p['kind']}:{p['outcome']}" for p in result.promotions)
    return out


# ------------------------------------------------------------------------------------ reading


def _prompt_text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages)


def _sources(item: Mapping[str, Any]) -> set[tuple[str, int]]:
    """The (run, turn) pairs a record was written or restated from."""
    memory = item.get("memory") or {}
    found: set[tuple[str, int]] = set()
    provenance = memory.get("provenance") or {}
    if provenance.get("source_run_id") is not None and provenance.get("source_turn") is not None:
        found.add((str(provenance["source_run_id"]), int(provenance["source_turn"])))
    for entry in memory.get("evidence") or []:
        if isinstance(entry, Mapping) and entry.get("run_id") and entry.get("turn") is not None:
            found.add((str(entry["run_id"]), int(entry["turn"])))
    return found


@dataclass
class Answer:
    """One question's prompt, scored."""

    reached: set[str]
    tokens: int
    text: str


def ask(retrieve: Any, assemble: Any, conversation: Conversation, question: Question,
        index: int, written: Written) -> Answer:
    config = {"configurable": {"tenant_id": TENANT, "user_id": f"conv-{conversation.id}",
                               "thread_id": f"question-{conversation.id}-{index}"}}
    state: dict[str, Any] = {"messages": [HumanMessage(question.text)]}
    state.update(retrieve.invoke(state, config))
    state.update(assemble.invoke(state, config))
    trace = state["memory_trace"]
    by_id = {(item.get("memory") or {}).get("id"): item
             for items in state["memory_context"].values() for item in items}
    reached = {written.turn_of[source]
               for ids in trace["assembled"].values() for ident in ids
               for source in _sources(by_id.get(ident) or {}) if source in written.turn_of}
    return Answer(reached, int(trace["tokens"]["total"]), _prompt_text(state["memory_prompt"]))


def _counter(budget: int, encoding: str) -> Any:
    def count(messages: Sequence[BaseMessage]) -> int:
        return sum(count_tokens(str(m.content), encoding) + MESSAGE_OVERHEAD_TOKENS
                   for m in messages)
    return count


def baselines(conversation: Conversation, question: Question, budget: int, encoding: str
              ) -> dict[str, Answer]:
    """The recent window and the truncated conversation at the same budget."""
    lines = [HumanMessage(f"{t.speaker}: {t.text}", id=t.dia_id) for t in conversation.turns]
    asked = HumanMessage(question.text)
    count = _counter(budget, encoding)
    window = trim_messages([*lines, asked], max_tokens=budget, token_counter=count,
                           strategy="last")
    out = {"recent_window": Answer({str(m.id) for m in window if m.id}, count(window),
                                   _prompt_text(window))}
    left = budget - count([asked]) - MESSAGE_OVERHEAD_TOKENS
    kept: list[HumanMessage] = []
    used = 0
    for line in lines:  # whole turns from the start while they fit in one message
        cost = count_tokens(f"{line.content}\n", encoding)
        if used + cost > left:
            break
        kept.append(line)
        used += cost
    text = "\n".join(str(m.content) for m in kept)
    out["truncated"] = Answer({str(m.id) for m in kept},
                              count([HumanMessage(text), asked]) if kept else count([asked]),
                              f"{text}\n{question.text}")
    return out


# ------------------------------------------------------------------------------------ report


@dataclass
class Tally:
    recall: dict[str, list[float]] = field(default_factory=dict)
    """Per category name (and "all"): one evidence recall per question."""
    answer: dict[str, list[float]] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list)
    over_budget: int = 0

    def add(self, question: Question, got: Answer, budget: int) -> None:
        share = len(question.evidence & got.reached) / len(question.evidence)
        hit = float(bool(question.answer) and question.answer.lower() in got.text.lower())
        for name in (CATEGORY_NAMES[question.category], "all"):
            self.recall.setdefault(name, []).append(share)
            self.answer.setdefault(name, []).append(hit)
        self.tokens.append(got.tokens)
        self.over_budget += got.tokens > budget

    def row(self) -> dict[str, Any]:
        return {
            "evidence_recall": {k: round(float(np.mean(v)), 4) for k, v in self.recall.items()},
            "answer_in_prompt": {k: round(float(np.mean(v)), 4) for k, v in self.answer.items()},
            "questions": {k: len(v) for k, v in self.recall.items()},
            "prompt_tokens_p50": float(np.percentile(self.tokens, 50)),
            "prompt_tokens_max": int(max(self.tokens)),
            "over_budget": self.over_budget,
        }


def _ms(values: Sequence[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(values, 50)), 3),
            "p95_ms": round(float(np.percentile(values, 95)), 3)}


@contextmanager
def _store(stack: ExitStack, backend: str, clock: Clock, index: Mapping[str, Any]
           ) -> Iterator[Any]:
    if backend == "postgres":
        database = stack.enter_context(postgres_backend(clock))[0]
    else:
        database = stack.enter_context(sqlite_backend(clock))
    store = database("locomo_loop")(index=dict(index))
    store.setup()
    yield store


def run(conversations: Sequence[Conversation], backend: str, quick: bool,
        fan_outs: Sequence[tuple[int, int]] = (), weights: Sequence[float] = ()
        ) -> dict[str, Any]:
    from langgraph_typed_memory import LocalEmbeddings

    settings = normalize_assembly(None)
    embedder = TimedEmbeddings(LocalEmbeddings())
    embedder.inner.embed_query("warm-up")  # loading the model is not writing
    embedder.seconds = 0.0
    index = {"dims": DIMS, "embed": embedder, "fields": ["text"]}
    clock = Clock()
    variants = {f"{PRODUCT} facts={f} episodes={e}": {"facts": f, "episodes": e}
                for f, e in fan_outs}
    variants.update({f"{PRODUCT} entity weight {w:g}": {"entity_weight": w} for w in weights})
    tallies = {name: Tally() for name in (PRODUCT, UNTIMED, UNLINKED, *variants, *BASELINES)}
    write_ms: list[float] = []
    embed_ms: list[float] = []
    outcomes: Counter[str] = Counter()
    prefilter: Counter[str] = Counter()
    corrections = 0
    with ExitStack() as stack:
        store = stack.enter_context(_store(stack, backend, clock, index))
        retrieve, assemble = create_retrieve_node(store), create_assemble_node()
        others = {name: create_retrieve_node(store, **options)
                  for name, options in variants.items()}
        others[UNTIMED] = create_retrieve_node(store, time_windows=False)
        others[UNLINKED] = create_retrieve_node(store, entity_graph=False)
        for conversation in conversations:
            log(f"conversation {conversation.id}: {len(conversation.turns)} turns, "
                f"{len(conversation.questions)} questions")
            began = time.perf_counter()
            written = write(store, conversation, clock, embedder)
            log(f"  written in {time.perf_counter() - began:.1f} s: "
                f"{dict(written.outcomes)}")
            write_ms += written.write_ms
            embed_ms += written.embed_ms
            outcomes.update(written.outcomes)
            prefilter.update(written.prefilter)
            corrections += len(written.corrections)
            clock.now = conversation.now
            for i, question in enumerate(conversation.questions):
                tallies[PRODUCT].add(question, ask(retrieve, assemble, conversation, question,
                                                   i, written), settings.budget_tokens)
                for name, node in others.items():
                    tallies[name].add(question, ask(node, assemble, conversation, question, i,
                                                    written), settings.budget_tokens)
                for name, got in baselines(conversation, question, settings.budget_tokens,
                                           settings.encoding).items():
                    tallies[name].add(question, got, settings.budget_tokens)
            recall = tallies[PRODUCT].recall["all"]
            log(f"  {PRODUCT} evidence recall so far {np.mean(recall):.3f}")
    without = [w - e for w, e in zip(write_ms, embed_ms, strict=True)]
    return {
        "systems": {name: tally.row() for name, tally in tallies.items()},
        "budget_tokens": settings.budget_tokens,
        "write_path": {"turns": len(write_ms), "excluding_embedding": _ms(without),
                       "including_embedding": _ms(write_ms)},
        "records": dict(sorted(outcomes.items())),
        "prefilter": dict(sorted(prefilter.items())),
        "turns_read_as_corrections": corrections,
    }


def table(report: Mapping[str, Any]) -> str:
    names = [*CATEGORY_NAMES.values(), "all"]
    head = ["system", *(f"recall {n}" for n in names), "answer in prompt", "tokens p50 / max"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in report["systems"].items():
        cells = [f"{row['evidence_recall'].get(n, float('nan')):.3f}" for n in names]
        cells += [f"{row['answer_in_prompt']['all']:.3f}",
                  f"{row['prompt_tokens_p50']:.0f} / {row['prompt_tokens_max']}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def quick_view(conversation: Conversation) -> Conversation:
    """The first sessions of a conversation and the first questions answerable from them."""
    turns = [t for t in conversation.turns if t.session <= QUICK_SESSIONS]
    known = {t.dia_id for t in turns}
    questions = [q for q in conversation.questions if q.evidence <= known][:QUICK_QUESTIONS]
    return Conversation(conversation.id, turns, questions)


def _fan_out(text: str) -> tuple[int, int]:
    try:
        facts, episodes = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected FACTS,EPISODES (two whole numbers), got {text!r}") from None
    if facts < 1 or episodes < 1:
        raise argparse.ArgumentTypeError(f"both counts must be at least 1, got {text!r}")
    return facts, episodes


def _weight(text: str) -> float:
    try:
        weight = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0 <= weight <= 1:
        raise argparse.ArgumentTypeError(f"the weight must be in [0, 1], got {text!r}")
    return weight


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", required=True, type=Path,
                        help="a LoCoMo conversation file or a folder of them")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    parser.add_argument("--quick", action="store_true",
                        help=f"one conversation, its first {QUICK_SESSIONS} sessions and up to "
                             f"{QUICK_QUESTIONS} questions answerable from them")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for the embedder (default 1: the machine is shared)")
    parser.add_argument("--fan-out", dest="fan_outs", metavar="FACTS,EPISODES", default=[],
                        action="append", type=_fan_out,
                        help="also answer with the retrieve node asking for this many facts and "
                             "episodes (a row per value; repeatable)")
    parser.add_argument("--entity-weight", dest="weights", metavar="W", default=[],
                        action="append", type=_weight,
                        help="also answer with the retrieve node's entity_weight at W, in "
                             "[0, 1] (a row per value; repeatable)")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    stats = EvidenceStats()
    files = conversation_files(args.data)[: 1 if args.quick else None]
    conversations = [conversation_from_raw(f.stem, json.loads(f.read_text(encoding="utf-8")),
                                           stats) for f in files]
    if args.quick:
        conversations = [quick_view(c) for c in conversations]
    log(f"machine: {machine()}")
    with torch_threads(args.threads):
        report = run(conversations, args.backend, args.quick, args.fan_outs, args.weights)
    report.update({
        "questions": sum(len(c.questions) for c in conversations),
        "conversations": [c.id for c in conversations],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "backend": args.backend,
        "command": " ".join(["python", "benchmarks/locomo_loop.py", *arguments]),
        "evidence": vars(stats),
    })
    print(f"LoCoMo through the loop, {report['questions']} questions, conversations "
          f"{', '.join(report['conversations'])}, backend {args.backend}, budget "
          f"{report['budget_tokens']} tokens")
    print(table(report))
    wp = report["write_path"]
    print(f"write path per turn ({wp['turns']} turns): excluding embedding p50 "
          f"{wp['excluding_embedding']['p50_ms']:.1f} / p95 "
          f"{wp['excluding_embedding']['p95_ms']:.1f} ms; including p50 "
          f"{wp['including_embedding']['p50_ms']:.1f} / p95 "
          f"{wp['including_embedding']['p95_ms']:.1f} ms")
    print(f"records: {report['records']}")
    print(f"turns read as corrections: {report['turns_read_as_corrections']} of "
          f"{report['write_path']['turns']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
