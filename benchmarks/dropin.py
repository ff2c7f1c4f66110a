"""The drop-in path: LangGraph store code on untyped namespaces, timed beside LangGraph's stores.

One run loads the same items, embedded by the same deterministic 64-d embedder, into this
package's SQLite and Postgres stores and into LangGraph's `SqliteStore` (vectors only if
sqlite-vec loads), `PostgresStore` (its default HNSW index) and `InMemoryStore`: a shared
namespace `("kb", "docs")` of `--kb` items (a `topic` field among 20) and `--users` users x
`--per-user` items under `("memories", user)` (LangMem's namespaces). It then times, p50 /
p95 in ms, each system in turn:

- `put` (a new key in the shared namespace, embedded), `get`, `delete` (of the keys put);
- `search(("kb", "docs"), filter={"topic": T}, limit=10)`;
- `search(("kb", "docs"), query=Q, limit=10)`;
- `search(("memories", u), query=Q, limit=5)` for random users (LangMem's recall);
- `list_namespaces(prefix=("memories",), limit=100)`.

Then, for this package's stores only, the per-user search with `--scale` rows in the table
(default 10,000 then 1,000,000: the users' rows, then other users' rows added by the batch
put path): its cost should grow with the user's namespace, not with the table.

Acceptance: every operation's p95 no slower than LangGraph's store of the same backend;
vector queries on SQLite p95 <= 5 ms (50-item namespace) and <= 20 ms (the shared one);
per-user p95 at the largest table within 1.2x of the smallest.

    python benchmarks/dropin.py                      # both backends, full size (an hour)
    python benchmarks/dropin.py --backend sqlite --quick
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from _common import Clock, log, machine, percentiles, postgres_backend, report, vocabulary
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp

DIMS = 64
TOPICS = 20
KB = ("kb", "docs")
OPERATIONS = ("put", "get", "delete", "search_filter", "search_query", "user_search",
              "list_namespaces")
LABELS = {
    "put": "`put` (new key, embedded)",
    "get": "`get`",
    "delete": "`delete`",
    "search_filter": '`search(("kb","docs"), filter={"topic": T}, limit=10)`',
    "search_query": '`search(("kb","docs"), query=Q, limit=10)`',
    "user_search": '`search(("memories", u), query=Q, limit=5)`',
    "list_namespaces": '`list_namespaces(prefix=("memories",), limit=100)`',
}
VECTOR_OPERATIONS = ("search_query", "user_search")
SQLITE, SQLITE_LG = "typed_memory (sqlite)", "langgraph SqliteStore"
POSTGRES, POSTGRES_LG = "typed_memory (postgres)", "langgraph PostgresStore"
INMEMORY = "langgraph InMemoryStore"
RIVAL = {SQLITE: SQLITE_LG, POSTGRES: POSTGRES_LG}
LOAD_BATCH = 2000


class HashEmbedder(Embeddings):
    """A deterministic 64-d embedder: each word adds +-1 at a hashed position (no model, the
    same vectors for every system)."""

    def __init__(self, dims: int = DIMS) -> None:
        self.dims = dims

    def _one(self, text: str) -> list[float]:
        vector = np.zeros(self.dims, dtype=np.float32)
        for word in text.lower().split():
            h = zlib.crc32(word.encode())
            vector[h % self.dims] += 1.0 if (h >> 20) & 1 else -1.0
        norm = float(np.linalg.norm(vector))
        return (vector / norm if norm else vector).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


class Data:
    """The items and the requests every system gets (seeded)."""

    def __init__(self, kb: int, users: int, per_user: int, requests: int) -> None:
        rng = random.Random(39)
        self.words = vocabulary(2000)
        self.requests = requests
        self.users = [f"u{i}" for i in range(users)]
        self.per_user = per_user
        self.kb = [(f"d{i}", {"text": self.text(rng), "topic": f"t{i % TOPICS}", "n": i})
                   for i in range(kb)]
        self.memories = [(("memories", u), f"m{j}", {"text": self.text(rng), "kind": "note"})
                         for u in self.users for j in range(per_user)]
        self.queries = [" ".join(rng.sample(self.words[:300], 3)) for _ in range(requests)]
        self.topics = [f"t{rng.randrange(TOPICS)}" for _ in range(requests)]
        self.keys = [rng.choice(self.kb)[0] for _ in range(requests)]
        self.asked = [rng.choice(self.users) for _ in range(requests)]

    def text(self, rng: random.Random) -> str:
        return " ".join(rng.choices(self.words[:600], k=8))


def load(store: BaseStore, items: Sequence[tuple[tuple[str, ...], str, dict[str, Any]]],
         what: str) -> float:
    """Put items by the batch path, in chunks; returns items per second."""
    began = time.perf_counter()
    for start in range(0, len(items), LOAD_BATCH):
        store.batch([PutOp(ns, key, value) for ns, key, value in
                     items[start : start + LOAD_BATCH]])
        done = start + LOAD_BATCH
        if done % (LOAD_BATCH * 25) == 0 or done >= len(items):
            rate = min(done, len(items)) / (time.perf_counter() - began)
            log(f"  {what}: {min(done, len(items))}/{len(items)} ({rate:.0f} items/s)")
    return len(items) / max(time.perf_counter() - began, 1e-9)


def timed(call: Callable[[int], Any], n: int, warmup: int = 5) -> dict[str, float]:
    for i in range(min(warmup, n)):
        call(i)
    times = []
    for i in range(n):
        began = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - began) * 1000)
    return percentiles(times)


INMEMORY_REQUESTS = 20
"""`InMemoryStore` scores every item of a namespace in Python (about a second a query at
100,000 items): it gets this many timed calls."""


def measure(store: BaseStore, data: Data, vectors: bool, n: int
            ) -> dict[str, dict[str, float]]:
    """Each operation, `n` times."""
    out: dict[str, dict[str, float]] = {}
    out["put"] = timed(lambda i: store.put(KB, f"new{i}", {"text": data.queries[i],
                                                          "topic": "t0"}), n, warmup=0)
    out["get"] = timed(lambda i: store.get(KB, data.keys[i]), n)
    out["delete"] = timed(lambda i: store.delete(KB, f"new{i}"), n, warmup=0)
    out["search_filter"] = timed(
        lambda i: store.search(KB, filter={"topic": data.topics[i]}, limit=10), n)
    if vectors:
        out["search_query"] = timed(lambda i: store.search(KB, query=data.queries[i],
                                                           limit=10), n)
        out["user_search"] = timed(lambda i: store.search(
            ("memories", data.asked[i]), query=data.queries[i], limit=5), n)
    out["list_namespaces"] = timed(
        lambda i: store.list_namespaces(prefix=("memories",), limit=100), n)
    return out


def index_config(embedder: Embeddings) -> dict[str, Any]:
    return {"dims": DIMS, "embed": embedder, "fields": ["text"]}


def everything(data: Data) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    return [*((KB, key, value) for key, value in data.kb), *data.memories]


@contextmanager
def sqlite_systems(data: Data, embedder: Embeddings, workdir: str
                   ) -> Iterator[list[tuple[str, BaseStore, bool]]]:
    from langgraph.store.sqlite import SqliteStore

    from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite

    with ExitStack() as stack:
        conn = connect_sqlite(os.path.join(workdir, "typed.db"))
        stack.callback(conn.close)
        ours = SqliteMemoryStore(conn, index=index_config(embedder))  # type: ignore[arg-type]
        ours.setup()
        systems: list[tuple[str, BaseStore, bool]] = [(SQLITE, ours, True)]
        path = os.path.join(workdir, "langgraph.db")
        try:
            theirs = stack.enter_context(SqliteStore.from_conn_string(
                path, index=index_config(embedder)))  # type: ignore[arg-type]
            theirs.setup()
            vectors = True
        except (sqlite3.OperationalError, AttributeError, ImportError) as exc:
            log(f"LangGraph's SqliteStore without vectors: {exc!r}")
            theirs = stack.enter_context(SqliteStore.from_conn_string(path + "-plain"))
            theirs.setup()
            vectors = False
        systems.append((SQLITE_LG, theirs, vectors))
        yield systems


@contextmanager
def postgres_systems(data: Data, embedder: Embeddings, create: Callable[[str], str]
                     ) -> Iterator[list[tuple[str, BaseStore, bool]]]:
    import psycopg
    from langgraph.store.postgres import PostgresStore

    from langgraph_typed_memory.store.postgres.store import PostgresMemoryStore

    with ExitStack() as stack:
        conn = stack.enter_context(psycopg.connect(create("dropin_typed"), autocommit=True))
        ours = PostgresMemoryStore(conn, index=index_config(embedder))  # type: ignore[arg-type]
        ours.setup()
        theirs = stack.enter_context(PostgresStore.from_conn_string(
            create("dropin_langgraph"), index=index_config(embedder)))  # type: ignore[arg-type]
        theirs.setup()
        yield [(POSTGRES, ours, True), (POSTGRES_LG, theirs, True)]


def analyze(name: str, store: BaseStore) -> None:
    """Fresh planner statistics after a load, as an operator's autovacuum would leave them."""
    conn: Any = getattr(store, "conn", None)
    if conn is None:
        return
    if name in (SQLITE, SQLITE_LG):
        conn.execute("ANALYZE")
    elif hasattr(conn, "execute"):
        conn.execute("ANALYZE")


def scale(make: Callable[[], BaseStore], data: Data, sizes: Sequence[int], name: str
          ) -> dict[str, dict[str, float]]:
    """The per-user search with growing tables: the users' rows first, then other users'
    rows (50 each) until the table holds each size. Each size asks users no earlier size
    asked (each once), so no size reads another's cached namespaces."""
    store = make()
    rows = list(data.memories)
    load(store, rows, f"{name} scale: the users")
    held, filler, out = len(rows), 0, {}
    rng = random.Random(7)
    for size in sorted(sizes):
        extra = []
        while held + len(extra) < size:
            user = f"other{filler // 50}"
            extra.append((("memories", user), f"m{filler % 50}",
                          {"text": data.text(rng), "kind": "note"}))
            filler += 1
        if extra:
            load(store, extra, f"{name} scale: other users up to {size}")
            held += len(extra)
        analyze(name, store)
        first = len(out) * data.requests
        asked = [data.users[(first + i) % len(data.users)] for i in range(data.requests)]
        out[str(size)] = timed(lambda i, asked=asked: store.search(
            ("memories", asked[i]), query=data.queries[i % len(data.queries)], limit=5),
            data.requests, warmup=0)
        log(f"  {name} per-user search at {size} rows: {out[str(size)]}")
    return out


def run(args: argparse.Namespace, meta: dict[str, Any]) -> dict[str, Any]:
    import tempfile

    from langgraph.store.memory import InMemoryStore

    data = Data(args.kb, args.users, args.per_user, args.requests)
    embedder = HashEmbedder()
    items = everything(data)
    results: dict[str, Any] = {}
    loads: dict[str, float] = {}
    scaling: dict[str, Any] = {}

    def run_systems(systems: list[tuple[str, BaseStore, bool]]) -> None:
        for name, store, vectors in systems:
            loads[name] = round(load(store, items, name), 1)
            analyze(name, store)
            n = min(data.requests, INMEMORY_REQUESTS) if name == INMEMORY else data.requests
            results[name] = measure(store, data, vectors, n)
            log(f"{name}: {results[name]}")

    with tempfile.TemporaryDirectory(prefix="bench-dropin-") as workdir, ExitStack() as stack:
        clock = Clock(datetime.now(UTC))
        if args.backend in ("sqlite", "both"):
            with sqlite_systems(data, embedder, workdir) as systems:
                run_systems(systems)
            if args.scale:
                from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite

                conn = connect_sqlite(os.path.join(workdir, "scale.db"))
                stack.callback(conn.close)
                scaling[SQLITE] = scale(lambda: _setup(SqliteMemoryStore(
                    conn, index=index_config(embedder))), data, args.scale, SQLITE)  # type: ignore[arg-type]
        if args.backend in ("postgres", "both"):
            database, create = stack.enter_context(postgres_backend(clock))
            with postgres_systems(data, embedder, create) as systems:
                run_systems(systems)
            if args.scale:
                import psycopg

                from langgraph_typed_memory.store.postgres.store import PostgresMemoryStore

                conn = stack.enter_context(psycopg.connect(create("dropin_scale"),
                                                           autocommit=True))
                scaling[POSTGRES] = scale(lambda: _setup(PostgresMemoryStore(
                    conn, index=index_config(embedder))), data, args.scale, POSTGRES)  # type: ignore[arg-type]
        if args.inmemory:
            memory = InMemoryStore(index=index_config(embedder))  # type: ignore[arg-type]
            run_systems([(INMEMORY, memory, True)])
    meta["load_items_per_s"] = loads
    return {"systems": results, "scale": scaling}


def _setup(store: Any) -> BaseStore:
    store.setup()
    return store


def acceptance(figures: dict[str, Any]) -> dict[str, Any]:
    """Each store's operations against LangGraph's store of the same backend, and the
    targets of the vector queries and of the per-user search's growth."""
    systems, out = figures["systems"], {}
    for ours, rival in RIVAL.items():
        if ours not in systems:
            continue
        verdict: dict[str, Any] = {}
        if rival in systems:
            verdict["slower_than_langgraph"] = [
                op for op, r in systems[ours].items()
                if op in systems[rival] and r["p95_ms"] > systems[rival][op]["p95_ms"]]
        if ours == SQLITE:
            verdict["user_search_p95_ms"] = systems[ours]["user_search"]["p95_ms"]
            verdict["kb_query_p95_ms"] = systems[ours]["search_query"]["p95_ms"]
            verdict["vector_targets_met"] = (verdict["user_search_p95_ms"] <= 5.0
                                             and verdict["kb_query_p95_ms"] <= 20.0)
        growth = figures["scale"].get(ours)
        if growth and len(growth) > 1:
            sizes = sorted(growth, key=int)
            ratio = growth[sizes[-1]]["p95_ms"] / max(growth[sizes[0]]["p95_ms"], 1e-9)
            verdict["scale_p95_ratio"] = round(ratio, 2)
            verdict["scale_within_1.2x"] = ratio <= 1.2
        out[ours] = verdict
    return out


def table(figures: dict[str, Any]) -> str:
    systems = figures["systems"]
    names = [n for n in (SQLITE, SQLITE_LG, POSTGRES, POSTGRES_LG, INMEMORY) if n in systems]
    lines = ["| operation | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for op in OPERATIONS:
        cells = []
        for name in names:
            r = systems[name].get(op)
            cells.append(f"{r['p50_ms']:.2f} / {r['p95_ms']:.2f}" if r else "-")
        lines.append(f"| {LABELS[op]} | " + " | ".join(cells) + " |")
    for name, growth in figures["scale"].items():
        cells = ", ".join(f"{int(size):,} rows: {r['p50_ms']:.2f} / {r['p95_ms']:.2f}"
                          for size, r in sorted(growth.items(), key=lambda x: int(x[0])))
        lines.append("")
        lines.append(f"{name}, per-user search (p50 / p95 ms) by rows in the table: {cells}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--kb", type=int, default=100_000, help="items in ('kb', 'docs')")
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--per-user", type=int, default=50)
    parser.add_argument("--requests", type=int, default=200, help="timed calls per operation")
    parser.add_argument("--scale", default="10000,1000000",
                        help="table sizes for the per-user search ('' to skip)")
    parser.add_argument("--no-inmemory", dest="inmemory", action="store_false",
                        help="skip LangGraph's InMemoryStore")
    parser.add_argument("--quick", action="store_true",
                        help="2,000 kb items, 40 users x 10, 30 requests, scale 400 and 2,000")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    if args.quick:
        args.kb, args.users, args.per_user, args.requests = 2000, 40, 10, 30
        args.scale = "400,2000"
    args.scale = [int(s) for s in args.scale.split(",") if s.strip()]
    meta: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/dropin.py", *arguments]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "kb": args.kb, "users": args.users, "per_user": args.per_user,
        "requests": args.requests, "dims": DIMS, "scale": args.scale,
    }
    log(f"machine: {meta['machine']}")
    figures = run(args, meta)
    figures["acceptance"] = acceptance(figures)
    report("Drop-in path: untyped namespaces beside LangGraph's stores (p50 / p95 ms)", meta,
           table(figures), args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
