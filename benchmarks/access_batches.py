"""Access tracking's cost to the many-users fan-out, by the size of its background batches.

Reads count the records they use; a background thread appends the counts to the access log
and folds the log into each record's uses (docs/lifecycle.md). This measures what that
costs the retrieve node's fan-out, on `benchmarks/many_users.py`'s data and traffic (users
picked uniformly at random; `--users` default 1,000, 50 memories each, 20,000 tenant-wide
facts), for each way of batching the writes:

- `256 / 1,024`: a flush after 256 pending records, log folded 1,024 entries a transaction;
- `2,048 / 8,192`: the defaults (`access_flush_every` and the background thread's chunks);
- `off`: nothing written during the round (the counts stay in memory).

One store answers every round; before each round the store writes and folds what is pending
and drops its search caches (untimed), so every round starts the same way. Rounds of the
configurations alternate (`--rounds`, default 3): the machine's drift falls on all of them.
A round is `--warmup` untimed fan-outs then `--requests` timed ones, the same requests for
every configuration. Reported per configuration: the medians over rounds of each round's
p50, p95, p99 and max ms, excluding query embedding as in many_users.py.

Usage:
    python benchmarks/access_batches.py --backend postgres
    python benchmarks/access_batches.py --backend sqlite --quick --json out.json
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from _common import Clock, log, postgres_backend, report, torch_threads
from many_users import (
    POSTGRES,
    SQLITE,
    Dataset,
    System,
    check_sizes,
    data_arguments,
    open_system,
    rounds_meta,
    traffic,
)

from langgraph_typed_memory.store.core import access

CONFIGS: dict[str, tuple[int, int, int] | None] = {
    "256 / 1,024": (256, 256, 1024),
    "2,048 / 1,024": (2048, 2048, 1024),
    "2,048 / 8,192 (defaults)": (2048, access.FLUSH_CHUNK, access.FOLD_CHUNK),
    "off": None,
}
"""Name -> (records pending that make a flush due, records a flush transaction, log
entries a fold transaction); None: no writes during the round."""


@contextmanager
def batching(system: System, config: tuple[int, int, int] | None) -> Iterator[None]:
    """The store's access buffer and background thread batching as `config` says, for the
    round; the defaults after it."""
    buffer = system.store.records.access  # type: ignore[attr-defined]
    saved = buffer.lifecycle, access.FLUSH_CHUNK, access.FOLD_CHUNK
    if config is None:
        buffer.lifecycle = dataclasses.replace(
            saved[0], access_flush_every=1_000_000, access_flush_seconds=86_400)
    else:
        every, access.FLUSH_CHUNK, access.FOLD_CHUNK = config
        buffer.lifecycle = dataclasses.replace(saved[0], access_flush_every=every)
    try:
        yield
    finally:
        buffer.lifecycle, access.FLUSH_CHUNK, access.FOLD_CHUNK = saved


def one_round(system: System, users: list[int], queries: list[int], warmup: int,
              config: tuple[int, int, int] | None) -> dict[str, float]:
    """A round from a clean start: pending counts written and folded, caches dropped."""
    store = system.store
    store.flush_access()  # type: ignore[attr-defined]
    store.records.dialect.cache.forget()  # type: ignore[attr-defined]
    with batching(system, config):
        system.requests(users[:warmup], queries[:warmup], "warm-up")
        times, _, _ = system.requests(users[warmup:], queries[warmup:], "timed")
        with store._flushing:  # type: ignore[attr-defined]  # the round's last flush is over
            pass
    return {"p50_ms": float(np.percentile(times, 50)), "p95_ms": float(np.percentile(times, 95)),
            "p99_ms": float(np.percentile(times, 99)), "max_ms": max(times)}


def run(args: argparse.Namespace, meta: dict[str, Any]) -> dict[str, dict[str, Any]]:
    queries = args.warmup + args.requests
    data = Dataset(args.users, args.memories_per_user, args.tenant_facts, queries, args.seed)
    plan = traffic("uniform", args.users, args.warmup, args.requests, queries, args.seed)
    users, picked = plan.users.tolist(), plan.queries.tolist()
    clock = Clock(datetime.now(UTC))
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in CONFIGS}
    with ExitStack() as own:
        own.enter_context(torch_threads(1))
        create = (own.enter_context(postgres_backend(clock))[1]
                  if args.backend == "postgres" else None)
        system = open_system(SQLITE if args.backend == "sqlite" else POSTGRES, own, data,
                             clock, create, meta)
        system.load()
        for r in range(args.rounds):
            for name, config in CONFIGS.items():
                row = one_round(system, users, picked, args.warmup, config)
                rounds[name].append(row)
                log(f"round {r + 1}/{args.rounds} {name}: p50 {row['p50_ms']:.2f} ms, "
                    f"p95 {row['p95_ms']:.2f} ms, max {row['max_ms']:.2f} ms")
    return {name: {**{k: round(float(np.median([row[k] for row in rows])), 3)
                      for k in rows[0]}, "rounds": rows}
            for name, rows in rounds.items()}


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| batches (flush / fold) | p50 ms | p95 ms | p99 ms | max ms |",
             "|---|---|---|---|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | {r['p99_ms']:.2f} "
                     f"| {r['max_ms']:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    data_arguments(parser, users=1000, requests=800, per="a round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each configuration")
    parser.add_argument("--quick", action="store_true",
                        help="100 users x 10 memories, 500 tenant facts, one round of 60 "
                             "fan-outs after 10 (seconds)")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    if args.quick:
        args.users, args.memories_per_user, args.tenant_facts = 100, 10, 500
        args.requests, args.warmup, args.rounds = 60, 10, 1
    check_sizes(parser, args, args.rounds)
    meta = rounds_meta("access_batches.py", arguments, args)
    log(f"machine: {meta['machine']}")
    results = run(args, meta)
    report(f"Access tracking's batches: {args.backend}, {args.users:,} users x "
           f"{args.memories_per_user} memories + {args.tenant_facts:,} tenant-wide facts, users "
           f"picked uniformly, {args.requests:,} timed fan-outs a round after {args.warmup:,}, "
           f"medians of {args.rounds} alternated rounds, excluding query embedding",
           meta, table(results), args.json, {"configs": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
