"""Postgres full-text pending lists: what `gin_pending_list_limit` costs reads and writes.

A GIN index with `fastupdate` (Postgres' default) keeps new entries in a pending list that every
search scans until a vacuum or an insert that overflows the list's limit merges it into the
index. Migration `0012_fts_per_kind` creates the full-text indexes with a 256 kB limit
(Postgres' default: 4 MB). For each limit given, this loads a fresh database with
`benchmarks/latency.py`'s scope (same data and loading: one batch per 2,000 PutOps, then
ANALYZE), sets the limit on the `memories_fts_*` indexes before loading (and turns autovacuum
off for the table, so that the lists stay as the load left them), and reports: the bulk
ingest rate, the pending pages left, the retrieve node's fan-out p50/p95 as loaded, and again
after `gin_clean_pending_list` (what a vacuum would do).

Usage:
    python benchmarks/gin_pending.py                       # 100k memories, limits 4096 and 256 kB
    python benchmarks/gin_pending.py --quick --json out.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import latency
from _common import (
    Clock,
    log,
    machine,
    percentiles,
    postgres_analyze,
    postgres_backend,
    postgres_version,
    report,
)


def _fts_indexes(conn: Any) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = 'memories'::regclass "
        "AND indexrelid::regclass::text LIKE 'memories_fts%' ORDER BY 1")]


def _fan_out(system: latency.TypedSystem, queries: int) -> dict[str, float]:
    for j in range(latency.WARMUP):
        system.fan_out(j)
    times = []
    for j in range(queries):
        start = time.perf_counter()
        system.check(system.fan_out(j))
        times.append((time.perf_counter() - start) * 1000)
    return percentiles(times)


def measure(create: Any, data: latency.Dataset, limit_kb: int, queries: int) -> dict[str, Any]:
    """One fresh database with the full-text indexes' pending lists capped at `limit_kb`."""
    import psycopg

    url = create(f"gin{limit_kb}")
    clock = Clock(datetime.now(UTC))
    with ExitStack() as stack, psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")  # pgstatginindex
        system = latency.TypedSystem(
            "typed_memory (postgres)", data, latency._pg_factory(stack, url, clock),
            lambda: None, queries, 0, None, after_load=partial(postgres_analyze, url))
        for index in _fts_indexes(conn):  # after the store's setup, before any row
            conn.execute(f"ALTER INDEX {index} SET (gin_pending_list_limit = {limit_kb})")
        # Measured as loaded: an autovacuum run would clean the lists at a random moment.
        conn.execute("ALTER TABLE memories SET (autovacuum_enabled = false)")
        [stage] = latency.stages([data.n], 0)
        rate = system.grow(stage)
        pending = {index: conn.execute(
            "SELECT pending_pages FROM pgstatginindex(%s)", [index]).fetchall()[0][0]
            for index in _fts_indexes(conn)}
        loaded = _fan_out(system, queries)
        for index in _fts_indexes(conn):
            conn.execute("SELECT gin_clean_pending_list(%s::regclass)", [index])
        cleaned = _fan_out(system, queries)
        system.store.flush_access()  # type: ignore[attr-defined]
    log(f"limit {limit_kb} kB: {rate} items/s, pending pages {pending}, "
        f"fan-out as loaded {loaded}, cleaned {cleaned}")
    return {"limit_kb": limit_kb, "memories": data.n, "ingest_items_per_s": rate,
            "pending_pages": pending, "fan_out_as_loaded": loaded, "fan_out_cleaned": cleaned}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="memories in the scope")
    parser.add_argument("--limits", default="4096,256",
                        help="gin_pending_list_limit values in kB, comma-separated")
    parser.add_argument("--queries", type=int, default=200, help="timed fan-outs per state")
    parser.add_argument("--seed", type=int, default=20260601)
    parser.add_argument("--quick", action="store_true", help="2,000 memories, 20 fan-outs")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    if args.quick:
        args.size, args.queries = 2000, 20
    limits = [int(x) for x in args.limits.split(",")]
    meta = {"command": " ".join(["python", "benchmarks/gin_pending.py", *arguments]),
            "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine(),
            "load1": os.getloadavg()[0]}
    log(f"machine: {meta['machine']}; generating {args.size:,} memories")
    data = latency.Dataset(args.size, 0, args.queries, args.seed)
    with postgres_backend(Clock(datetime.now(UTC))) as (_, create):
        rows = [measure(create, data, limit, args.queries) for limit in limits]
        meta["postgres"] = postgres_version(create("version"))
    meta["load1_end"] = os.getloadavg()[0]
    lines = ["| gin_pending_list_limit | ingest items/s | pending pages after load | fan-out as "
             "loaded p50 / p95 ms | after gin_clean_pending_list p50 / p95 ms |",
             "|---|---|---|---|---|"]
    for r in rows:
        loaded, cleaned = r["fan_out_as_loaded"], r["fan_out_cleaned"]
        lines.append(f"| {r['limit_kb']} kB | {r['ingest_items_per_s']:,.0f} | "
                     f"{sum(r['pending_pages'].values())} | {loaded['p50_ms']:.2f} / "
                     f"{loaded['p95_ms']:.2f} | {cleaned['p50_ms']:.2f} / "
                     f"{cleaned['p95_ms']:.2f} |")
    report(f"GIN pending lists, {args.size:,} memories, {args.queries} fan-outs per state, "
           f"{meta['postgres']}", meta, "\n".join(lines), args.json, {"rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
