"""Write throughput: bulk ingest with precomputed embeddings, and the promotion gate.

Bulk ingest: `--items` memories (the latency benchmark's synthetic facts and episodes, half
in one user scope, half spread over 100 other tenants; random 384-d vectors served by a
lookup embedder, so embedding costs nothing) written to a fresh database with one
`store.batch([PutOp...])` per `--chunk` items; the same items one `store.put` at a time
(the first `--single` of them, into another fresh database); and LangGraph's `PostgresStore`
(default HNSW index) loading the same items the same two ways, when Postgres runs.

Promotion gate: a single writer offers `--candidates` candidate memories with
`store.promote(...)`, as the chat graph's promote node does: 50 users of one tenant take turns,
each turn proposing 2 or 3 candidates (a stateful fact such as the home city, which often
supersedes or deduplicates; an accumulating fact; a preference; now and then a completed
episode), one `promote` call per turn; then the same stream in calls of 100 candidates. The
gate embeds what it writes (lookup embedder, precomputed). Outcome counts are in the JSON.

On Postgres each bulk load's row also says what it wrote to the WAL per memory (KiB, and
page images: after each checkpoint the first change of a page writes it whole). A long load
checkpoints every `max_wal_size` of WAL (1GB by default); `--max-wal-size 64MB` puts a short
load in that regime.

`--profile` adds, per backend, a cProfile of one bulk chunk and of 200 per-turn promotions
(the top functions by own time go to stderr and the JSON).

Usage:
    python benchmarks/ingest.py                     # both backends
    python benchmarks/ingest.py --backend sqlite --quick --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
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
    postgres_backend,
    postgres_version,
    profiled,
    sqlite_backend,
    unit_vectors,
)
from langgraph.store.base import BaseStore, PutOp
from latency import Dataset

TENANT = "bench"
USERS = 50
CITIES = ("Lyon", "Paris", "Berlin", "Madrid", "Rome", "Oslo", "Vienna", "Prague")
PREFERENCES = {"tone": ("concise", "detailed", "formal"), "language": ("English", "French"),
               "output_format": ("markdown", "json", "plain text")}
BULK_TARGET = 2000.0
GATE_TARGET = 300.0


@dataclass
class Row:
    system: str
    measure: str
    items: int
    seconds: float
    per_s: float
    target: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def row(system: str, measure: str, items: int, seconds: float, target: float | None = None,
        **extra: Any) -> Row:
    return Row(system, measure, items, round(seconds, 3), round(items / seconds, 1), target,
               extra)


# ------------------------------------------------------------------------------------ gate stream


class CandidateStream:
    """Turns of (user, candidates) from 50 users of one tenant, deterministic for a seed."""

    def __init__(self, count: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        text = ZipfText(seed + 1)
        self.turns: list[tuple[str, list[dict[str, Any]]]] = []
        embed_texts: list[str] = []
        made, turn = 0, 0
        while made < count:
            user = f"u{turn % USERS}"
            city = CITIES[int(rng.integers(len(CITIES)))]
            candidates: list[dict[str, Any]] = [
                {"kind": "fact", "subject": "user", "predicate": "home_city", "value": city,
                 "content": f"The user lives in {city}.", "confidence": 0.9,
                 "grounding": f"I live in {city}."},
                {"kind": "fact", "subject": "user", "predicate": "interest",
                 "content": f"The user is interested in {text.words(3)}.", "confidence": 0.9,
                 "grounding": "I am interested in it."},
            ]
            if turn % 2 == 0:
                key = list(PREFERENCES)[turn % len(PREFERENCES)]
                options = PREFERENCES[key]
                candidates.append({"kind": "preference", "key": key, "confidence": 0.9,
                                   "value": options[int(rng.integers(len(options)))],
                                   "grounding": "please"})
            elif turn % 5 == 1:
                title = f"Finished {text.words(2)}"
                candidates.append({"kind": "episode", "title": title, "task_complete": True,
                                   "content": f"The user finished {text.words(8)}.",
                                   "outcome": "done", "confidence": 0.9})
            candidates = candidates[: count - made]
            for c in candidates:
                if c["kind"] == "fact":
                    embed_texts.append(c["content"])
                elif c["kind"] == "episode":
                    embed_texts.append(f"{c['title']}\n{c['content']}")
            self.turns.append((user, candidates))
            made += len(candidates)
            turn += 1
        self.count = made
        unique = list(dict.fromkeys(embed_texts))
        self.embedder = LookupEmbeddings()
        self.embedder.add(unique, unit_vectors(rng, len(unique)))

    def batches(self, size: int) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        """The same candidates, `size` per call; a call keeps to one user's turns."""
        by_user: dict[str, list[dict[str, Any]]] = {}
        for user, candidates in self.turns:
            by_user.setdefault(user, []).extend(candidates)
        for user, candidates in by_user.items():
            for first in range(0, len(candidates), size):
                yield user, candidates[first : first + size]


def promote_all(
    store: Any, calls: Sequence[tuple[str, list[dict[str, Any]]]], label: str
) -> tuple[int, float, dict[str, int]]:
    outcomes: dict[str, int] = {}
    count = 0
    start = last = time.perf_counter()
    for turn, (user, candidates) in enumerate(calls):
        for outcome in store.promote(candidates, tenant_id=TENANT, user_id=user,
                                     run_id=f"run-{turn}", turn=turn, source=user):
            outcomes[outcome.outcome] = outcomes.get(outcome.outcome, 0) + 1
        count += len(candidates)
        if time.perf_counter() - last > 10:
            last = time.perf_counter()
            log(f"  {label}: {count} candidates ({count / (last - start):.0f}/s)")
    return count, time.perf_counter() - start, outcomes


# ------------------------------------------------------------------------------------ run


def wal_written(store: Any) -> tuple[int, int] | None:
    """The page images and bytes Postgres has written to its WAL (the whole server; a load
    runs alone); None on SQLite."""
    conn = getattr(store, "conn", None)
    info = getattr(conn, "info", None)
    if info is None or not hasattr(info, "dsn"):
        return None
    import psycopg

    with psycopg.connect(info.dsn, autocommit=True) as own:
        row = own.execute("SELECT wal_fpi, wal_bytes FROM pg_stat_wal").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def wal_per_item(before: tuple[int, int] | None, after: tuple[int, int] | None,
                 items: int) -> dict[str, float]:
    """What a load wrote to the WAL per item (nothing on SQLite)."""
    if before is None or after is None or not items:
        return {}
    return {"page_images_per_item": round((after[0] - before[0]) / items, 2),
            "wal_kib_per_item": round((after[1] - before[1]) / items / 1024, 1)}


def bulk_rows(
    name: str, make_store: Callable[[str], BaseStore], ops: Sequence[PutOp], chunk: int,
    single: int, profiles: dict[str, Any], profile: bool,
) -> list[Row]:
    store = make_store("bulk")
    before = wal_written(store)
    items, seconds = bulk_put(store, ops, f"{name} bulk", chunk)
    wal = wal_per_item(before, wal_written(store), items)
    rows = [row(name, f"bulk: store.batch, {chunk} PutOps per call", items, seconds,
                BULK_TARGET if name.startswith("typed") else None, **wal)]
    if wal:
        log(f"  {name}: WAL {wal['wal_kib_per_item']} KiB and "
            f"{wal['page_images_per_item']} page images per memory")
    if profile:
        extra = make_store("profile")
        with profiled(profiles, f"{name}: one bulk chunk of {chunk}", True):
            extra.batch(ops[:chunk])
    store = make_store("single")
    start = time.perf_counter()
    for op in ops[:single]:
        store.put(op.namespace, op.key, op.value)  # type: ignore[arg-type]
    rows.append(row(name, "one store.put per item", min(single, len(ops)),
                    time.perf_counter() - start))
    log(f"  {rows[-2].system}: bulk {rows[-2].per_s:.0f}/s, single {rows[-1].per_s:.0f}/s")
    return rows


def run(args: argparse.Namespace, meta: dict[str, Any]) -> tuple[list[Row], dict[str, Any]]:
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    log(f"generating {args.items:,} memories and {args.candidates:,} candidates")
    data = Dataset(args.items // 2, args.items - args.items // 2, 1, args.seed)
    typed_ops = data.typed_ops(range(args.items))
    plain_ops = data.plain_ops(range(args.items))
    stream = CandidateStream(args.candidates, args.seed)
    index = {"dims": SYNTHETIC_DIMS, "embed": data.embedder, "fields": ["text"]}
    gate_index = {"dims": SYNTHETIC_DIMS, "embed": stream.embedder, "fields": ["text"]}
    clock = Clock(datetime.now(UTC))
    rows: list[Row] = []
    profiles: dict[str, Any] = {}
    with ExitStack() as stack:
        create: Callable[[str], str] | None = None
        for backend in backends:
            name = f"typed_memory ({backend})"
            if backend == "sqlite":
                database = stack.enter_context(sqlite_backend(clock))
            else:
                database, create = stack.enter_context(postgres_backend(clock))
                meta["postgres"] = postgres_version(create("versions"))
                if args.max_wal_size:
                    meta["max_wal_size"] = set_max_wal_size(create("settings"),
                                                            args.max_wal_size)

            def make_store(label: str, gate: bool = False, database: Any = database) -> BaseStore:
                store = database(f"ingest_{label}")(index=gate_index if gate else index)
                store.setup()  # type: ignore[attr-defined]
                return store  # type: ignore[no-any-return]

            log(f"{name}: bulk ingest of {len(typed_ops):,} memories")
            rows.extend(bulk_rows(name, make_store, typed_ops, args.chunk, args.single,
                                  profiles, args.profile))
            log(f"{name}: promotion gate, {stream.count:,} candidates")
            turns = make_store("gate_turns", gate=True)
            count, seconds, outcomes = promote_all(turns, stream.turns, f"{name} per turn")
            rows.append(row(name, "gate: store.promote per turn (2-3 candidates)", count,
                            seconds, GATE_TARGET, outcomes=outcomes, calls=len(stream.turns)))
            batched = make_store("gate_batched", gate=True)
            calls = list(stream.batches(100))
            count, seconds, outcomes = promote_all(batched, calls, f"{name} batched")
            rows.append(row(name, "gate: store.promote, 100 candidates per call", count,
                            seconds, GATE_TARGET, outcomes=outcomes, calls=len(calls)))
            if args.profile:
                store = make_store("gate_profile", gate=True)
                with profiled(profiles, f"{name}: 200 per-turn promote calls", True):
                    promote_all(store, stream.turns[:200], "profile")
            log(f"  {name}: gate {rows[-2].per_s:.0f}/s per turn, {rows[-1].per_s:.0f}/s batched")
        if create is not None and args.langgraph_postgres:
            from langgraph.store.postgres import PostgresStore

            def make_langgraph(label: str) -> BaseStore:
                url = create(f"ingest_langgraph_{label}")  # type: ignore[misc]
                store = stack.enter_context(
                    PostgresStore.from_conn_string(url, index=index)  # type: ignore[arg-type]
                )
                store.setup()
                return store

            log(f"langgraph_postgres: bulk ingest of {len(plain_ops):,} memories")
            rows.extend(bulk_rows("langgraph_postgres (HNSW)", make_langgraph, plain_ops,
                                  args.chunk, args.single, profiles, args.profile))
    return rows, profiles


def set_max_wal_size(url: str, size: str) -> str:
    """Have the server checkpoint every `size` of WAL (default 1GB): a short load then runs
    in the regime of a long one, where each checkpoint makes the next change of every page
    write an image of it."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET max_wal_size = '{size}'")
        conn.execute("SELECT pg_reload_conf()")
        time.sleep(0.5)
        row = conn.execute("SHOW max_wal_size").fetchone()
    assert row is not None
    return str(row[0])


HEAD = "| system | measure | items | seconds | items/s | target | met |"


def table(rows: Sequence[Row]) -> str:
    lines = [HEAD, "|---" * (HEAD.count("|") - 1) + "|"]
    for r in rows:
        target = "" if r.target is None else f"{r.target:,.0f}/s"
        met = "" if r.target is None else ("yes" if r.per_s >= r.target else "**no**")
        lines.append(f"| {r.system} | {r.measure} | {r.items:,} | {r.seconds:.2f} "
                     f"| {r.per_s:,.0f} | {target} | {met} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--items", type=int, default=20_000, help="memories to bulk load")
    parser.add_argument("--chunk", type=int, default=2000, help="PutOps per store.batch call")
    parser.add_argument("--single", type=int, default=1000,
                        help="items written one store.put at a time")
    parser.add_argument("--candidates", type=int, default=5000,
                        help="candidates offered to the promotion gate")
    parser.add_argument("--no-langgraph-postgres", dest="langgraph_postgres",
                        action="store_false", help="skip LangGraph's PostgresStore")
    parser.add_argument("--max-wal-size", metavar="SIZE",
                        help="Postgres checkpoints every SIZE of WAL (e.g. 64MB; the server's "
                             "default is 1GB): a short load in a long one's regime")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile one bulk chunk and 200 promote calls per backend")
    parser.add_argument("--seed", type=int, default=20260602)
    parser.add_argument("--quick", action="store_true",
                        help="1,000 items, 100 single puts, 200 candidates (seconds)")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    if args.quick:
        args.items, args.single, args.candidates = 1000, 100, 200
        args.chunk = min(args.chunk, 500)
    meta: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/ingest.py", *arguments]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "backend": args.backend,
        "items": args.items,
        "chunk": args.chunk,
        "candidates": args.candidates,
        "load1": os.getloadavg()[0],
    }
    log(f"machine: {meta['machine']}")
    rows, profiles = run(args, meta)
    meta["load1_end"] = os.getloadavg()[0]
    print(f"Writes, backend {args.backend}, {args.items:,} memories, chunks of "
          f"{args.chunk:,}, {args.candidates:,} gate candidates {meta.get('postgres', '')}")
    print(table(rows))
    if args.json:
        report = {"meta": meta, "rows": [asdict(r) for r in rows], "profiles": profiles}
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
