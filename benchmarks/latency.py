"""Retrieval latency at scale: the retrieve node's full fan-out at 1k-100k memories.

One user scope (`("tenant:bench", "user:u", KIND)`) grows to each size in turn (default 1k,
10k, 100k memories: three facts for each episode, plus 5 preferences, 3 policies and 3
procedures for the known-scope lookups); then `--others` memories (default 100k) are spread over 100
other tenants and the largest scope is measured again. Texts are Zipf-distributed
pseudo-words (common words match many records, so the lexical retriever does real work);
vectors are random 384-d unit vectors served by a lookup embedder (`LookupEmbeddings`), so
embedding costs nothing and stays out of the main figures. Query texts are 4 words of the
same distribution with their own random vectors. `--vectors clustered` puts the rows in
topics of 40 instead, each query near a topic of the scope (as real embeddings cluster):
random vectors have no structure for an approximate index to find.

Rows, per size:

* `typed_memory` `fan-out`: the retrieve node (`create_retrieve_node(store)`, one store
  batch: policies, procedures, preferences exhaustively, facts top 16 and episodes top 40 by
  hybrid search), timed around `node.invoke`; p50/p95 ms excluding query embedding. The
  first fan-out after each stage's load, untimed in the row, is in the JSON
  (`first_fan_out_ms`): the caches catching up with the load, at the first stage a cold
  read of the scope. recall@10: the same store's vector results (a store object on the
  same database with `lexical_weight` 0 and no freshness or confidence priors, so its
  order is the vector order; one facts and one episodes search per query, limit 10)
  against an exact numpy scan of the scope's facts and episodes.
* `typed_memory` `fan-out after a one-record write`: the chat loop's read. Before each of
  50 fan-outs one new episode is written to the scope (the promote node writes one per
  turn), so the store brings its cached scope up to date first; the episodes are deleted
  afterwards (untimed).
* `typed_memory` `fan-out after a one-record delete`: a correction's read. Before each of 5
  fan-outs one new fact is written, read by a fan-out and deleted (all untimed): a change
  other than an addition, so a store that caches the scope reads its facts again.
* `typed_memory` `facts vector search`: that vector-only facts search alone (limit 10), to
  set beside LangGraph's single vector search.
* `typed_memory` `fan-out, a question naming an entity`: the scope also holds `ENTITIES`
  entity records, and every `TAGGED`-th record carries one of their ids (as the write path
  stamps `metadata.entities`); each query names one entity mid-sentence ("what did Babako
  say about ..."), so the retrieve node takes its entity path: the lookups and the entity
  records first, then the ranked searches and the two searches for records about the
  entity (`ENTITY_POOL` times the slots), fused.
* `typed_memory` `fan-out + MiniLM query`: the fan-out with the query embedded by the bundled
  offline MiniLM (`LocalEmbeddings`, one torch thread) for fewer queries; the embedding
  alone is in the JSON.
* every system but `langgraph_inmemory`, `fan-out, alternated rounds`: after every system's
  own pass at the last stage, the fan-out again, all systems taking turns: each round each
  system runs its slice of the queries (`--alternated-rounds`, default 10 rounds of 20), the
  order reversed every other round. The systems' own passes lie minutes apart (LangGraph's
  load alone takes ~7 at 100k), and this machine's speed drifts by a third between hours, so
  only this row compares them under the same conditions. The product's stores are opened
  anew on their databases for it (their first fan-outs, untimed, load the caches).
* `langgraph_postgres` (with Postgres) and `langgraph_inmemory` (up to 100k memories, a few
  queries: it scans in Python): LangGraph's `PostgresStore` (default HNSW index) and
  `InMemoryStore` with the same vectors, measured the same way: the same retrieve node
  (`create_retrieve_node(store)` runs on any `BaseStore`: the same five searches in one
  batch, their facts and episodes searches vector-only over the `text` field), the same
  single facts search, the same read after a write; recall@10 against the exact scan.
* `langgraph_postgres (HNSW, <settings>)` (with `--langgraph-settings`, repeatable): a
  second PostgresStore on LangGraph's database, its session set as an operator tunes
  pgvector for recall (`hnsw.ef_search=200,hnsw.iterative_scan=relaxed_order`), measured
  the same way after the first at each stage: the systems compared at equal recall.

* `typed_memory (postgres, ranked by the database)` (with `--database-twin-mib`): a second
  product store on the same database whose cache bound (that many MiB: 0.01 for any scope)
  the scope's sketches and postings do not fit, so Postgres ranks it (pgvector's HNSW index
  at `--ef-search`, and full text; docs/large-scopes.md), measured the same way after the
  first at each stage: both regimes on the same data in one run. `--cache-mib` sets the
  first store's bound instead.

Each system loads with one `store.batch([PutOp...])` per chunk of 2,000 and reports its
ingest rate for the stage. Postgres databases get `VACUUM ANALYZE` after each load, the
state autovacuum leaves a table in after a bulk insert (hint bits and visibility map set):
LangGraph's PostgresStore loads for minutes and autovacuum settles its tables meanwhile,
while the product's load takes under a minute. After an `ANALYZE` alone, the first 200
fan-outs had a p95 1.4-3.3 ms above the next 200 in three scratch runs (not so after the
vacuum). A `CHECKPOINT` follows: the product loads 100k memories in well
under a minute and left ~340 MB of dirty pages for the checkpointer to write during its own
measurements, where LangGraph's seven-minute load has had them written meanwhile. Also
reported: database size on disk (SQLite file + WAL,
`pg_database_size`), the harness process's RSS before and after each stage's fan-outs (in
the JSON), and its peak RSS after each system's pass (it includes
the dataset's vectors; Postgres' memory is the server's, not counted).

Usage:
    python benchmarks/latency.py                        # both backends, 1k/10k/100k + 100k others
    python benchmarks/latency.py --backend sqlite --quick --json out.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    SYNTHETIC_DIMS,
    Clock,
    LookupEmbeddings,
    ZipfText,
    anon_rss_mb,
    bulk_put,
    log,
    machine,
    peak_rss_mb,
    percentiles,
    postgres_analyze,
    postgres_backend,
    postgres_hnsw,
    postgres_size_mb,
    postgres_version,
    profiled,
    report,
    rss_mb,
    sqlite_backend,
    sqlite_size_mb,
    top_keys,
    torch_threads,
    unit_vectors,
    vocabulary,
)
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore, PutOp

from langgraph_typed_memory.entities import entity_id
from langgraph_typed_memory.nodes.retrieve import DEFAULT_EPISODES, DEFAULT_FACTS

TENANT, USER = "bench", "u"
SCOPE = (f"tenant:{TENANT}", f"user:{USER}")
OTHER_TENANTS = 100
K = 10
WARMUP = 3
WRITE_QUERIES = 50
ALTERNATED_ROUNDS = 10
DELETE_QUERIES = 5
CHUNK = 2000
INMEMORY_CAP = 100_000
CONFIG: RunnableConfig = {"configurable": {"tenant_id": TENANT, "user_id": USER}}
VECTOR_ONLY = {"lexical_weight": 0.0, "freshness_weight": 0.0, "confidence_weight": 0.0}
ENTITIES = 200
"""Entity records in the measured scope."""
TAGGED = 50
"""Every this-many-th record of the scope carries an entity id."""


# ------------------------------------------------------------------------------------ data


class Dataset:
    """Scope rows (facts and episodes in the measured scope), then rows of other tenants.

    Row i of the scope is an episode when i % 4 == 3, else a fact; the first N rows are the
    scope at size N. Every row has a text, an embedded text and a random unit vector.
    """

    def __init__(self, scope_rows: int, other_rows: int, queries: int, seed: int,
                 vectors: str = "random") -> None:
        rng = np.random.default_rng(seed)
        text = ZipfText(seed)
        self.n = scope_rows
        self.others = other_rows
        total = scope_rows + other_rows
        bodies = text.lines(total, 8, 16)
        titles = text.lines(total, 2, 4)
        self.kinds = np.where(np.arange(total) % 4 == 3, "episode", "fact")
        self.keys = [f"{'e' if k == 'episode' else 'f'}{i}" for i, k in enumerate(self.kinds)]
        self.values: list[dict[str, Any]] = []
        self.embed_texts: list[str] = []
        seen: set[str] = set()
        for i in range(total):
            body = bodies[i]
            if self.kinds[i] == "fact":
                while body in seen:  # unique embedded texts: one vector per text
                    body += " " + vocabulary(1)[0]
                seen.add(body)
                self.values.append({"subject": "user", "predicate": f"topic_{i % 40}",
                                    "content": body})
                self.embed_texts.append(body)
            else:
                embed = f"{titles[i]}\n{body}"
                while embed in seen:
                    body += " " + vocabulary(1)[0]
                    embed = f"{titles[i]}\n{body}"
                seen.add(embed)
                self.values.append({"title": titles[i], "summary": body})
                self.embed_texts.append(embed)
        self.query_texts = list(dict.fromkeys(text.lines(queries * 2, 4, 4)))[:queries]
        if vectors == "clustered":  # topics of ~CLUSTER_SIZE rows; queries in a scope's topic
            centres = unit_vectors(rng, max(1, total // CLUSTER_SIZE))
            topic = rng.integers(len(centres), size=total)
            self.vectors = _around(rng, centres[topic])
            picked = rng.integers(max(1, scope_rows), size=len(self.query_texts))
            self.query_vectors = _around(rng, centres[topic[picked]])
        else:
            self.vectors = unit_vectors(rng, total)
            self.query_vectors = unit_vectors(rng, len(self.query_texts))
        # Entities: capitalised pseudo-words the texts never use; records carry their ids as
        # the write path stamps them.
        used = len(text.vocab)
        self.entity_names = [w.capitalize() for w in vocabulary(used + ENTITIES)[used:]]
        scope_key = "/".join(SCOPE)
        self.entity_ids = [entity_id(scope_key, name) for name in self.entity_names]
        for i in range(0, scope_rows, TAGGED):
            self.values[i]["metadata"] = {
                "entities": [self.entity_ids[(i // TAGGED) % ENTITIES]]}
        self.entity_queries = [
            f"what did {self.entity_names[j % ENTITIES]} say about {t}"
            for j, t in enumerate(self.query_texts)]
        self.embedder = LookupEmbeddings()
        self.embedder.add(self.embed_texts, self.vectors)
        self.embedder.add(self.query_texts, self.query_vectors)
        self.embedder.add(self.entity_queries, unit_vectors(rng, len(self.entity_queries)))

    def namespace(self, i: int) -> tuple[str, ...]:
        if i < self.n:
            return (*SCOPE, str(self.kinds[i]))
        j = i - self.n
        return (f"tenant:o{j % OTHER_TENANTS}", f"user:u{j % 7}", str(self.kinds[i]))

    def typed_ops(self, rows: range) -> list[PutOp]:
        return [PutOp(self.namespace(i), self.keys[i], self.values[i]) for i in rows]

    def entity_ops(self) -> list[PutOp]:
        """The scope's entity records (people, as the write path would keep them)."""
        return [PutOp((*SCOPE, "entity"), ident, {"name": name, "type": "person"})
                for ident, name in zip(self.entity_ids, self.entity_names, strict=True)]

    def plain_ops(self, rows: range) -> list[PutOp]:
        """The same items for LangGraph's stores: the embedded text as the value's `text`."""
        return [PutOp(self.namespace(i), self.keys[i], {"text": self.embed_texts[i]})
                for i in rows]

    def exact_top(self, size: int, kind: str, query: int) -> list[str]:
        rows = np.flatnonzero(self.kinds[:size] == kind)
        return top_keys([self.keys[r] for r in rows], self.vectors[rows],
                        self.query_vectors[query], K)


CLUSTER_SIZE = 40
"""Rows per topic with `--vectors clustered`: about 30 facts and 10 episodes, so a query's
ten nearest episodes are in its topic too (with 20, half of them were the nearest of the
unrelated rest, where no index finds the exact ten)."""


def _around(rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
    """One unit vector near each centre: the centre plus noise of about its norm (cosine
    ~0.7), as `benchmarks/vector_scan.py --data clustered` makes them."""
    noise = rng.standard_normal(centres.shape, dtype=np.float32) / np.sqrt(centres.shape[1])
    rows = centres + noise
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def d1_ops() -> list[PutOp]:
    """The handful of exact-lookup records the fan-out always loads."""
    ops = [PutOp((*SCOPE, "preference"), key, {"value": value}) for key, value in (
        ("language", "English"), ("output_format", "markdown"), ("tone", "concise"),
        ("timezone", "Europe/Paris"), ("units", "metric"))]
    ops += [PutOp((*SCOPE, "policy"), f"policy{i}",
                  {"value": {"rule": f"limit {i}", "max_usd": 100 * i}, "created_by": "ops"})
            for i in range(3)]
    ops += [PutOp((*SCOPE, "procedure"), f"procedure{i}",
                  {"rule": f"Step {i}: confirm the order number before refunding."})
            for i in range(3)]
    return ops


@dataclass(frozen=True)
class Stage:
    name: str
    scope: int
    total: int


def stages(sizes: Sequence[int], others: int) -> list[Stage]:
    out = [Stage(f"{n:,}", n, n) for n in sizes]
    if others:
        n = max(sizes)
        out.append(Stage(f"{n:,} + {others:,} other tenants", n, n + others))
    return out


# ------------------------------------------------------------------------------------ results


@dataclass
class Row:
    system: str
    stage: str
    scope_memories: int
    total_memories: int
    measure: str
    queries: int
    p50_ms: float
    p95_ms: float
    recall_at_10: float | None = None
    ingest_items_per_s: float | None = None
    db_mb: float | None = None
    peak_rss_mb: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def timed(call: Callable[[int], Any], queries: Sequence[int]) -> tuple[list[float], list[Any]]:
    """Run `call(j)` for each query (after a warm-up), returning ms per call and the results."""
    for j in queries[:WARMUP]:
        call(j)
    times, results = [], []
    for j in queries:
        start = time.perf_counter()
        results.append(call(j))
        times.append((time.perf_counter() - start) * 1000)
    return times, results


def recall(found: Sequence[Sequence[str]], expected: Sequence[Sequence[str]]) -> float:
    hits = sum(len(set(f[:K]) & set(e)) for f, e in zip(found, expected, strict=True))
    return round(hits / sum(len(e) for e in expected), 4)


# ------------------------------------------------------------------------------------ systems


class System:
    """A store that grows stage by stage; `measure` returns the stage's rows.

    Every system is measured through the same retrieve node (`create_retrieve_node(store)`):
    its one batch of five searches runs on any `BaseStore`, so LangGraph's stores answer
    exactly the fan-out the product answers.
    """

    name = ""
    hybrid = False
    """Whether the fan-out's facts and episodes searches must report hybrid retrieval."""
    mode = "hybrid"
    """The retrieval mode they must report then (`hybrid+database`: ranked by Postgres)."""

    def __init__(self, data: Dataset, store: BaseStore, size_mb: Callable[[], float | None],
                 queries: int, after_load: Callable[[], None] | None = None) -> None:
        self.data = data
        self.use(store)
        self.size_mb = size_mb
        self.queries = queries
        self._after_load = after_load
        self.loaded = 0
        self.reopen: Callable[[], None] | None = None
        """Opens the system's store anew (fresh caches) after its pass dropped it."""

    def ops(self, rows: range) -> list[PutOp]:
        ops = self.item_ops(rows)
        return d1_ops() + ops if rows.start == 0 else ops

    def item_ops(self, rows: range) -> list[PutOp]:
        return self.data.plain_ops(rows)

    def episode_value(self, text: str) -> dict[str, Any]:
        return {"text": f"{text}\n{text}"}

    def fact_value(self, text: str, predicate: str) -> dict[str, Any]:
        return {"text": text}

    def release(self) -> None:
        """Drop the system's measured store objects (their caches go), each store first
        writing the access counts its searches left pending: its connection closes later,
        with the run."""
        for name in ("store", "vector_only", "lexical_only"):
            store = getattr(self, name, None)
            flush = getattr(store, "flush_access", None)
            if flush is not None:
                flush()
        self.store = self.node = None  # type: ignore[assignment]
        if hasattr(self, "vector_only"):
            self.vector_only = None

    def use(self, store: BaseStore) -> None:
        """Measure `store` (and the retrieve node on it) from now on."""
        from langgraph_typed_memory.nodes import create_retrieve_node

        self.store = store
        self.node = create_retrieve_node(store)

    def after_load(self) -> None:
        """Hook after each stage's load (VACUUM ANALYZE on Postgres)."""
        if self._after_load:
            self._after_load()

    def grow(self, stage: Stage) -> float:
        """Load the stage's new rows; returns the ingest rate (items/s)."""
        if stage.total == self.loaded:
            return 0.0
        rows = range(self.loaded, stage.total)
        items, seconds = bulk_put(self.store, self.ops(rows), f"{self.name} {stage.name}", CHUNK)
        self.loaded = stage.total
        self.after_load()
        return round(items / seconds, 1)

    def row(self, stage: Stage, measure: str, times: Sequence[float], **kw: Any) -> Row:
        spread = percentiles(times)
        return Row(self.name, stage.name, stage.scope, stage.total, measure, len(times),
                   spread["p50_ms"], spread["p95_ms"], **kw)

    def picked(self) -> list[int]:
        return list(range(min(self.queries, len(self.data.query_texts))))

    def fan_out(self, j: int) -> dict[str, Any]:
        state = {"messages": [HumanMessage(self.data.query_texts[j])]}
        out = self.node.invoke(state, CONFIG)
        return out  # type: ignore[no-any-return]

    def check(self, out: dict[str, Any]) -> bool:
        """Stop the run if a fan-out degraded or missed an exact-lookup record; False if a
        ranked slot came back short (LangGraph's HNSW probe filters after the index and can
        return fewer than asked; the product's exact ranking may not)."""
        trace = out["memory_trace"]
        modes = trace["retrieval"]["modes"]
        ranked = {_regime_free(modes["facts"], self.mode),
                  _regime_free(modes["episodes"], self.mode)}
        if trace["degraded"] or (self.hybrid and ranked != {self.mode}):
            raise SystemExit(f"{self.name}: the fan-out degraded: {trace['retrieval']} "
                             f"{trace['degraded']}")
        counts = {slot: len(items) for slot, items in out["memory_context"].items()}
        full = counts["facts"] == DEFAULT_FACTS and counts["episodes"] == DEFAULT_EPISODES
        if ((counts["policies"], counts["procedures"], counts["preferences"]) != (3, 3, 5)
                or counts["facts"] > DEFAULT_FACTS or counts["episodes"] > DEFAULT_EPISODES
                or (self.hybrid and not full)):
            raise SystemExit(f"{self.name}: the fan-out returned {counts}")
        return full

    def vector_search(self, kind: str) -> Callable[[int], list[str]]:
        """One vector search of the scope's `kind` records (limit 10), keys best first."""
        ns, texts = (*SCOPE, kind), self.data.query_texts

        def search(j: int) -> list[str]:
            return [item.key for item in self.store.search(ns, query=texts[j], limit=K)]

        return search

    def measure(self, stage: Stage, rate: float) -> list[Row]:
        data, picked = self.data, self.picked()
        rss_before, anon_before = rss_mb(), anon_rss_mb()
        start = time.perf_counter()
        self.fan_out(picked[0])  # the caches catch up with the load (a cold read at first)
        first_ms = round((time.perf_counter() - start) * 1000, 1)
        log(f"  first fan-out after the load: {first_ms:,.0f} ms")
        times, outs = timed(self.fan_out, picked)
        rss_searching, anon_searching = rss_mb(), anon_rss_mb()
        short = sum(not self.check(out) for out in outs)
        fact_times, fact_found = timed(self.vector_search("fact"), picked)
        _, episode_found = timed(self.vector_search("episode"), picked)
        expected = [data.exact_top(stage.scope, "fact", j) for j in picked]
        expected += [data.exact_top(stage.scope, "episode", j) for j in picked]
        return [
            self.row(stage, "retrieve node fan-out (lookups + searches)", times,
                     recall_at_10=recall(fact_found + episode_found, expected),
                     ingest_items_per_s=rate, db_mb=self.size_mb(),
                     extra={"slots": {slot: len(items) for slot, items in
                                      outs[0]["memory_context"].items()},
                            "fan_outs_short": short, "rss_mb_before": rss_before,
                            "first_fan_out_ms": first_ms,
                            "retrieval_mode": outs[0]["memory_trace"]["retrieval"]["modes"][
                                "facts"],
                            "rss_mb_after_fan_outs": rss_searching,
                            "anon_rss_mb_before": anon_before,
                            "anon_rss_mb_after_fan_outs": anon_searching}),
            self.row(stage, "facts vector search (limit 10)", fact_times,
                     recall_at_10=recall(fact_found, expected[: len(picked)])),
            self.after_writes(stage, picked[:WRITE_QUERIES]),
            self.after_deletes(stage, picked[:DELETE_QUERIES]),
        ]

    def after_writes(self, stage: Stage, picked: list[int]) -> Row:
        """The chat loop's read: each fan-out follows the write of one new episode in the
        scope (as the promote node writes one per turn), so a store that caches the scope
        must bring it up to date first. The episodes are deleted afterwards (untimed)."""
        ns = (*SCOPE, "episode")
        texts = [f"turn {stage.scope} {j}" for j in picked]
        embedded = [f"{text}\n{text}" for text in texts]  # an episode embeds title + summary
        self.data.embedder.add(embedded, unit_vectors(np.random.default_rng(stage.scope),
                                                      len(texts)))
        times = []
        for j, text in zip(picked, texts, strict=True):
            self.store.put(ns, f"w{stage.total}-{j}", self.episode_value(text))
            start = time.perf_counter()
            self.check(self.fan_out(j))
            times.append((time.perf_counter() - start) * 1000)
        self.store.batch([PutOp(ns, f"w{stage.total}-{j}", None) for j in picked])
        return self.row(stage, "fan-out after a one-record write", times)

    def after_deletes(self, stage: Stage, picked: list[int]) -> Row:
        """A correction's read: each fan-out follows the delete of a fact written (and read
        by a fan-out) just before, untimed; a delete is not an addition, so a store that
        caches the scope reads its facts again."""
        ns = (*SCOPE, "fact")
        texts = [f"deleted {stage.scope} {j}" for j in picked]
        self.data.embedder.add(texts, unit_vectors(np.random.default_rng(stage.scope + 1),
                                                   len(texts)))
        times = []
        for j, text in zip(picked, texts, strict=True):
            key = f"d{stage.total}-{j}"
            self.store.put(ns, key, self.fact_value(text, f"deleted_{j}"))
            self.fan_out(j)
            self.store.delete(ns, key)
            start = time.perf_counter()
            self.check(self.fan_out(j))
            times.append((time.perf_counter() - start) * 1000)
        return self.row(stage, "fan-out after a one-record delete", times)


class LangGraphSystem(System):
    """LangGraph's InMemoryStore or PostgresStore: the same fan-out, its searches vector-only
    over the `text` field."""

    def __init__(self, name: str, data: Dataset, store: BaseStore,
                 size_mb: Callable[[], float | None], queries: int,
                 after_load: Callable[[], None] | None = None) -> None:
        super().__init__(data, store, size_mb, queries, after_load)
        self.name = name


class TypedSystem(System):
    """The product: hybrid searches in the fan-out, a vector-only store object for recall."""

    hybrid = True

    def __init__(self, name: str, data: Dataset, make: Callable[..., BaseStore],
                 size_mb: Callable[[], float | None], queries: int, model_queries: int,
                 model: Any, after_load: Callable[[], None] | None = None,
                 make_vector_only: Callable[..., BaseStore] | None = None) -> None:
        index = {"dims": SYNTHETIC_DIMS, "embed": data.embedder, "fields": ["text"]}
        store = make(index=index)
        store.setup()  # type: ignore[attr-defined]
        super().__init__(data, store, size_mb, queries, after_load)
        self.name = name
        self.reopen = lambda: self.use(make(index=index))
        # Its own connection on SQLite: a store object caches a scope's vectors and sees
        # commits of other connections (PRAGMA data_version), not of another store object
        # on its own connection.
        self.vector_only = (make_vector_only or make)(index=index, retrieval=VECTOR_ONLY)
        self.lexical_only = make()  # no index: the lexical retriever alone
        self.profile = False
        self.model_queries = model_queries
        self.model = model

    def item_ops(self, rows: range) -> list[PutOp]:
        ops = self.data.typed_ops(rows)
        return self.data.entity_ops() + ops if rows.start == 0 else ops

    def episode_value(self, text: str) -> dict[str, Any]:
        return {"title": text, "summary": text}

    def entity_fan_out(self, j: int) -> dict[str, Any]:
        state = {"messages": [HumanMessage(self.data.entity_queries[j])]}
        out = self.node.invoke(state, CONFIG)
        retrieval = out["memory_trace"]["retrieval"]
        if (retrieval["entities"]["named"] != [self.data.entity_names[j % ENTITIES]]
                or {_regime_free(retrieval["modes"]["facts"], self.mode),
                    _regime_free(retrieval["modes"]["episodes"], self.mode)}
                != {f"{self.mode}+entities"} or out["memory_trace"]["degraded"]):
            raise SystemExit(f"{self.name}: the entity path did not run: {retrieval}")
        return out  # type: ignore[no-any-return]

    def fact_value(self, text: str, predicate: str) -> dict[str, Any]:
        return {"subject": "user", "predicate": predicate, "content": text}

    def vector_search(self, kind: str) -> Callable[[int], list[str]]:
        ns, texts = (*SCOPE, kind), self.data.query_texts

        def search(j: int) -> list[str]:
            return [item.key for item in self.vector_only.search(ns, query=texts[j], limit=K)]

        return search

    def measure(self, stage: Stage, rate: float) -> list[Row]:
        data, picked = self.data, self.picked()
        rows = super().measure(stage, rate)
        cache = self.store.records.dialect.cache  # type: ignore[attr-defined]
        rows[0].extra["search_caches_mib"] = round(cache.nbytes / 2**20, 1)
        entity_times, _ = timed(self.entity_fan_out, picked)
        rows.append(self.row(stage, "fan-out, a question naming an entity", entity_times))
        if self.profile:
            rows.extend(self.profile_rows(stage, picked))
        if self.model is not None and self.model_queries:
            with_model = picked[: self.model_queries]
            data.embedder.query_model = self.model
            try:
                model_times, outs = timed(self.fan_out, with_model)
            finally:
                data.embedder.query_model = None
            for out in outs:
                self.check(out)
            alone, _ = timed(lambda j: self.model.embed_query(data.query_texts[j]), with_model)
            rows.append(self.row(stage, "fan-out + MiniLM query embedding", model_times,
                                 extra={"query_embedding_alone": percentiles(alone)}))
        return rows

    def profile_rows(self, stage: Stage, picked: list[int]) -> list[Row]:
        """Where the fan-out's time goes: lexical alone, and a cProfile of 20 fan-outs."""
        ns, texts = (*SCOPE, "fact"), self.data.query_texts

        def lexical(j: int) -> Any:
            return self.lexical_only.search(ns, query=texts[j], limit=K)

        lexical_times, _ = timed(lexical, picked)
        sink: dict[str, Any] = {}
        with profiled(sink, f"{self.name} {stage.name}: 20 fan-outs", True):
            for j in picked[:20]:
                self.fan_out(j)
        return [
            self.row(stage, "facts lexical-only search (store without index)", lexical_times),
            self.row(stage, "cProfile of 20 fan-outs (JSON: top functions)", [0.0],
                     extra=sink),
        ]


# ------------------------------------------------------------------------------------ run


TINY_MIB = 0.01
"""A cache bound (MiB) below which every scope of the benchmark is ranked by the database
on Postgres: its sketches and postings are larger (a 1,000-memory scope's ~220 KiB)."""


def _regime_free(mode: str | None, expected: str | None) -> str | None:
    """`mode` without the large-scope regime it names (`+sketch`, `+database`), unless the
    `expected` mode names one: a system measured at sizes on both sides of the cache bound
    answers in either (the regime of each stage is in the JSON). LangGraph's own stores
    name no mode (None)."""
    if mode is None or expected is None or "+sketch" in expected or "+database" in expected:
        return mode
    return mode.replace("+sketch", "").replace("+database", "")


def run_system(system: System, plan: Sequence[Stage], cap: int | None = None,
               twins: Sequence[System] = ()) -> list[Row]:
    """Grow `system` stage by stage and measure it at each; `twins` are other store objects
    on the same database (another cache bound), measured after it at each stage."""
    rows: list[Row] = []
    for stage in plan:
        if cap is not None and stage.total > cap:
            log(f"{system.name}: skipping {stage.name} (over {cap:,} memories)")
            continue
        rate = system.grow(stage)
        for measured in (system, *twins):
            measured.loaded = stage.total
            log(f"{measured.name} {stage.name}: measuring (RSS {rss_mb():,.0f} MiB)")
            new = measured.measure(stage, rate)  # type: ignore[attr-defined]
            for r in new:
                log(f"  {r.measure}: p50 {r.p50_ms:.2f} ms, p95 {r.p95_ms:.2f} ms, "
                    f"recall@10 {r.recall_at_10}")
            rows.extend(new)
    if rows:
        rows[-1].peak_rss_mb = peak_rss_mb()
    return rows


def alternated(systems: Sequence[System], stage: Stage, rounds: int) -> list[Row]:
    """Every system's fan-out again, the systems taking turns: in each round each runs its
    slice of the queries (`picked[r::rounds]`), the order reversed every other round, so that
    the machine's drift between the systems' own passes weighs on all alike."""
    picked = systems[0].picked()
    log(f"alternated rounds: {', '.join(s.name for s in systems)}")
    for system in systems:
        for j in picked[:WARMUP]:  # a store opened anew loads its caches here
            system.fan_out(j)
    times: dict[str, list[float]] = {system.name: [] for system in systems}
    for r in range(rounds):
        for system in systems if r % 2 == 0 else systems[::-1]:
            for j in picked[r::rounds]:
                start = time.perf_counter()
                out = system.fan_out(j)
                times[system.name].append((time.perf_counter() - start) * 1000)
                system.check(out)
    rows = [system.row(stage, "fan-out, alternated rounds", times[system.name])
            for system in systems]
    for row in rows:
        log(f"  {row.system}: p50 {row.p50_ms:.2f} ms, p95 {row.p95_ms:.2f} ms")
    return rows


def run(args: argparse.Namespace, meta: dict[str, Any]) -> list[Row]:
    sizes = sorted(args.sizes)
    plan = stages(sizes, args.others)
    log(f"generating {max(sizes):,} + {args.others:,} memories and {args.queries} queries")
    data = Dataset(max(sizes), args.others, args.queries, args.seed, args.vectors)
    meta["peak_rss_mb_after_dataset"] = peak_rss_mb()
    meta["anon_rss_mb_after_dataset"] = anon_rss_mb()
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    model = None
    if args.model_queries:
        from langgraph_typed_memory import LocalEmbeddings

        model = LocalEmbeddings()
        model.embed_query("warm up")
    clock = Clock(datetime.now(UTC))
    rows: list[Row] = []
    measured: list[System] = []  # for the alternated rounds
    twins: list[System] = []  # the product on Postgres with a small cache bound
    with ExitStack() as stack:
        stack.enter_context(torch_threads(1))
        create: Callable[[str], str] | None = None
        if "postgres" in backends:
            _, create = stack.enter_context(postgres_backend(clock))
        for backend in backends:
            if backend == "sqlite":
                make = stack.enter_context(sqlite_backend(clock))("latency")

                def sqlite_size(store_ref: list[Any]) -> Callable[[], float]:
                    return lambda: sqlite_size_mb(store_ref[0].store.conn)

                ref: list[Any] = []
                system: System = TypedSystem("typed_memory (sqlite)", data, make,
                                             sqlite_size(ref), args.queries,
                                             args.model_queries, model,
                                             make_vector_only=_second_sqlite(stack, make, clock))
                ref.append(system)
            else:
                assert create is not None
                url = create("latency_typed")
                meta["postgres"] = postgres_version(url)
                # The vector-only store object on a connection of its own, as on SQLite: a
                # store's background flush of access counts holds its own connection.
                bound = {} if args.cache_mib is None else {
                    "cache_bytes": int(args.cache_mib * 2**20)}
                knob = {} if args.ef_search is None else {"ef_search": args.ef_search}
                tuned = {**bound, **knob}
                system = TypedSystem(
                    "typed_memory (postgres)", data, _pg_factory(stack, url, clock, **tuned),
                    partial(postgres_size_mb, url), args.queries, args.model_queries,
                    model, after_load=partial(_after_pg_load, url, args.hnsw, meta),
                    make_vector_only=_pg_factory(stack, url, clock, **tuned))
                if args.cache_mib is not None and args.cache_mib < TINY_MIB:
                    system.mode = "hybrid+database"
                for ef in ([None, *args.ef_sweep] if args.database_twin_mib is not None
                           else []):
                    small = {"cache_bytes": int(args.database_twin_mib * 2**20),
                             **(knob if ef is None else {"ef_search": ef})}
                    twin = TypedSystem(
                        "typed_memory (postgres, ranked by the database"
                        + ("" if ef is None else f", ef_search {ef}") + ")", data,
                        _pg_factory(stack, url, clock, **small),
                        partial(postgres_size_mb, url), args.queries, 0, None,
                        make_vector_only=_pg_factory(stack, url, clock, **small))
                    twin.mode = "hybrid+database"
                    twin.profile = args.profile
                    twins.append(twin)
            system.profile = args.profile  # type: ignore[attr-defined]
            rows.extend(run_system(system, plan, twins=twins if backend == "postgres" else ()))
            # Its caches go (the next system's peak RSS is its own); reopened to alternate.
            system.release()
            measured.append(system)
        if create is not None and args.langgraph_postgres:
            from langgraph.store.postgres import PostgresStore

            url = create("latency_langgraph")
            index = {"dims": SYNTHETIC_DIMS, "embed": data.embedder, "fields": ["text"]}
            pg = stack.enter_context(
                PostgresStore.from_conn_string(url, index=index)  # type: ignore[arg-type]
            )
            pg.setup()
            after: Callable[[], None] = partial(postgres_analyze, url, vacuum=True)
            if args.langgraph_index_after_load:
                after = partial(_index_after_load(url), meta)
            langgraph = LangGraphSystem(
                "langgraph_postgres (HNSW)", data, pg, partial(postgres_size_mb, url),
                args.queries, after_load=after)
            tuned_twins = [
                LangGraphSystem(f"langgraph_postgres (HNSW, {text})", data,
                                _langgraph_tuned(stack, url, index, settings),
                                partial(postgres_size_mb, url), args.queries)
                for text, settings in args.langgraph_settings]
            rows.extend(run_system(langgraph, plan, twins=tuned_twins))
            measured.append(langgraph)
        if args.alternated_rounds and len(measured) > 1:
            for system in measured:
                if system.reopen is not None:
                    system.reopen()
            rows.extend(alternated(measured, plan[-1], args.alternated_rounds))
            for system in measured:
                if system.reopen is not None:
                    system.release()
        if args.inmemory_queries:
            from langgraph.store.memory import InMemoryStore

            index = {"dims": SYNTHETIC_DIMS, "embed": data.embedder, "fields": ["text"]}
            memory = InMemoryStore(index=index)  # type: ignore[arg-type]
            rows.extend(run_system(LangGraphSystem(
                "langgraph_inmemory", data, memory, lambda: None, args.inmemory_queries), plan,
                cap=INMEMORY_CAP))
    return rows


def _langgraph_tuned(stack: ExitStack, url: str, index: dict[str, Any],
                     settings: dict[str, str]) -> BaseStore:
    """A PostgresStore on LangGraph's database whose session has `settings` (pgvector's
    `hnsw.ef_search`, `hnsw.iterative_scan`, ...): what an operator sets for recall."""
    from langgraph.store.postgres import PostgresStore

    store = stack.enter_context(
        PostgresStore.from_conn_string(url, index=index)  # type: ignore[arg-type]
    )
    # pgvector loaded first: it then rejects a misspelt `hnsw.` setting instead of leaving
    # it a placeholder nobody reads.
    store.conn.execute("SELECT NULL::vector")
    for name, value in settings.items():
        store.conn.execute("SELECT set_config(%s, %s, false)", (name, value))
    return store


def parse_settings(text: str) -> tuple[str, dict[str, str]]:
    """`name=value,name=value` Postgres settings, with the text they were given as.

    Example:
        >>> parse_settings("hnsw.ef_search=200,hnsw.iterative_scan=relaxed_order")[1]
        {'hnsw.ef_search': '200', 'hnsw.iterative_scan': 'relaxed_order'}
    """
    settings = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise argparse.ArgumentTypeError(
                f"{part!r} is not a setting: give name=value pairs separated by commas")
        settings[name.strip()] = value.strip()
    return text, settings


def _index_after_load(url: str) -> Callable[[dict[str, Any]], None]:
    """Drop LangGraph's HNSW index now; the hook that builds it again after the load (its
    build time in the JSON's `langgraph_hnsw_build_s`), then VACUUM ANALYZE. The store then
    searches the same tables and index as one loaded with the index in place, a load that
    would take over an hour at a million rows here."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT indexdef FROM pg_indexes "
                           "WHERE indexname = 'store_vectors_embedding_idx'").fetchone()
        assert row is not None, "LangGraph's vector index is not where it was"
        conn.execute("DROP INDEX store_vectors_embedding_idx")
    definition = str(row[0])

    def rebuild(meta: dict[str, Any]) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_indexes "
                                "WHERE indexname = 'store_vectors_embedding_idx'").fetchone():
                conn.execute("SET maintenance_work_mem = '4GB'")
                started = time.perf_counter()
                conn.execute(definition)
                meta["langgraph_hnsw_build_s"] = round(time.perf_counter() - started, 1)
                log(f"LangGraph's HNSW index built in {meta['langgraph_hnsw_build_s']:,.0f} s")
        postgres_analyze(url, vacuum=True)

    return rebuild


def _after_pg_load(url: str, hnsw: bool, meta: dict[str, Any]) -> None:
    """After a stage's load of the product's Postgres database: with `hnsw`, the operator's
    HNSW index (its build time in the JSON's `hnsw_build_s`, once), then VACUUM ANALYZE."""
    if hnsw:
        seconds = postgres_hnsw(url)
        if seconds:
            meta["hnsw_build_s"] = seconds
            log(f"HNSW index built in {seconds:,.0f} s")
    postgres_analyze(url, vacuum=True)


def _second_sqlite(
    stack: ExitStack, make: Callable[..., BaseStore], clock: Clock
) -> Callable[..., BaseStore]:
    """A factory of stores on a second connection to the database `make` opens."""
    from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite

    first = make()
    listed = first.conn.execute("PRAGMA database_list")  # type: ignore[attr-defined]
    path = next(r[2] for r in listed if r[1] == "main")
    conn = connect_sqlite(path)
    stack.callback(conn.close)

    def second(**kwargs: Any) -> BaseStore:
        return SqliteMemoryStore(conn, clock=clock, **kwargs)

    return second


def _pg_factory(stack: ExitStack, url: str, clock: Clock, **tuned: Any
                ) -> Callable[..., BaseStore]:
    """A factory of the product's stores on one connection to `url`; `tuned`: the cache
    bound and `ef_search` of every store it makes."""
    import psycopg

    from langgraph_typed_memory.store.postgres.store import PostgresMemoryStore

    conn = stack.enter_context(psycopg.connect(url, autocommit=True))

    def make(**kwargs: Any) -> BaseStore:
        return PostgresMemoryStore(conn, clock=clock, **tuned, **kwargs)

    return make


HEAD = ("| system | memories in scope / total | measure | queries | p50 ms | p95 ms | recall@10 "
        "| ingest items/s | db MiB | peak RSS MiB |")


def table(rows: Sequence[Row]) -> str:
    def num(value: float | None, fmt: str) -> str:
        return "" if value is None else format(value, fmt)

    lines = [HEAD, "|---" * (HEAD.count("|") - 1) + "|"]
    for r in rows:
        lines.append(
            f"| {r.system} | {r.scope_memories:,} / {r.total_memories:,} | {r.measure} "
            f"| {r.queries} | {r.p50_ms:.2f} | {r.p95_ms:.2f} | {num(r.recall_at_10, '.3f')} "
            f"| {num(r.ingest_items_per_s, ',.0f')} | {num(r.db_mb, ',.1f')} "
            f"| {num(r.peak_rss_mb, ',.0f')} |")
    return "\n".join(lines)


def parse_sizes(text: str) -> list[int]:
    return [int(s.replace("_", "")) for s in text.split(",") if s.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--sizes", type=parse_sizes, default=[1000, 10_000, 100_000],
                        help="memories in the scope, comma-separated (default 1000,10000,100000)")
    parser.add_argument("--others", type=int, default=100_000,
                        help="memories in other tenants, added after the largest size")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per stage")
    parser.add_argument("--model-queries", type=int, default=30,
                        help="queries timed with live MiniLM query embedding (0: skip)")
    parser.add_argument("--inmemory-queries", type=int, default=5,
                        help="queries for LangGraph's InMemoryStore (0: skip it)")
    parser.add_argument("--alternated-rounds", type=int, default=ALTERNATED_ROUNDS,
                        help="rounds of the systems' fan-outs taking turns after their own "
                             "passes (0: skip)")
    parser.add_argument("--no-langgraph-postgres", dest="langgraph_postgres",
                        action="store_false", help="skip LangGraph's PostgresStore")
    parser.add_argument("--cache-mib", type=float, default=None,
                        help="the product's cache bound on Postgres, MiB (default: the "
                             "store's); below 0.01 every scope is ranked by the database")
    parser.add_argument("--database-twin-mib", type=float, default=None,
                        help="also measure, at each stage, a second product store on the same "
                             "Postgres database with this cache bound in MiB (0.01: the scope "
                             "is ranked by the database: both regimes side by side)")
    parser.add_argument("--hnsw", action="store_true",
                        help="create the HNSW index on the product's Postgres database after "
                             "the first load (what an operator does once scopes outgrow the "
                             "cache: docs/large-scopes.md); its build time goes in the JSON")
    parser.add_argument("--langgraph-index-after-load", action="store_true",
                        help="load LangGraph's PostgresStore without its HNSW index and build "
                             "the index after the load (the same tables and index to search; "
                             "its ingest rate is then not the one it has with the index)")
    parser.add_argument("--langgraph-settings", type=parse_settings, action="append",
                        default=[], metavar="NAME=VALUE,...",
                        help="also measure LangGraph's PostgresStore with its session set so "
                             "(e.g. hnsw.ef_search=200,hnsw.iterative_scan=relaxed_order); "
                             "repeat for several")
    parser.add_argument("--ef-search", type=int, default=None,
                        help="the product's recall knob on Postgres (pgvector hnsw.ef_search) "
                             "for scopes ranked by the database (default: the store's)")
    parser.add_argument("--vectors", choices=("random", "clustered"), default="random",
                        help="random unit vectors (no structure: the hard case for an "
                             "approximate index), or topics of 40 rows with each query in a "
                             "topic of the scope (as real embeddings cluster)")
    parser.add_argument("--ef-sweep", type=parse_sizes, default=[],
                        help="with --database-twin-mib, also measure twins at these "
                             "ef_search values, comma-separated")
    parser.add_argument("--profile", action="store_true",
                        help="add the lexical retriever alone and a cProfile of the fan-out")
    parser.add_argument("--seed", type=int, default=20260601)
    parser.add_argument("--quick", action="store_true",
                        help="sizes 300,1000, 1000 others, 20 queries (seconds)")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    if args.quick:
        args.sizes, args.others, args.queries = [300, 1000], 1000, 20
        args.model_queries = min(args.model_queries, 3)
    meta: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/latency.py", *arguments]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "backend": args.backend,
        "sizes": args.sizes,
        "others": args.others,
        "vectors": args.vectors,
        "queries": args.queries,
        "dims": SYNTHETIC_DIMS,
        "load1": os.getloadavg()[0],
    }
    log(f"machine: {meta['machine']}")
    rows = run(args, meta)
    meta["load1_end"] = os.getloadavg()[0]
    lines = [table(rows)]
    lines += [f"{r.system} {r.stage}: {r.extra['fan_outs_short']} of {r.queries} fan-outs "
              f"returned fewer than {DEFAULT_FACTS} facts or {DEFAULT_EPISODES} episodes"
              for r in rows if r.extra.get("fan_outs_short")]
    report(f"Retrieval latency, backend {args.backend}, {args.queries} queries per stage, "
           f"{SYNTHETIC_DIMS}-d vectors, {meta.get('postgres', '')}", meta, "\n".join(lines),
           args.json, {"rows": [asdict(r) for r in rows]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
