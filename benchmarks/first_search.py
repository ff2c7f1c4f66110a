"""A user's first search: what reading the user's cells costs the fan-out, and what the way
they are read saves.

The search caches hold each scope cell (kind, tenant, user, agent) a search has read; a
user's first search reads that user's fact and episode cells (vectors and postings) in the
round trip of its counters and builds their entries, where a later search finds them held
(docs/backends.md). On `benchmarks/many_users.py`'s data (`--users` default 1,500, 50
memories each, `--tenant-facts` default 5,000, loaded through the write path), this times
the retrieve node's fan-out (excluding query embedding, as many_users.py) for users' first
requests and, beside each, a request of a user answered before, under two ways of reading a
cell, alternated round by round in one process so the machine's drift falls on both:

- SQLite: `kept tokens` (the store's way: a record keeps its text's tokens, made when it was
  written, and a load splits them) against `tokenized when read` (the load reads no kept
  tokens and tokenizes every text, as records written before the tokens were kept are);
- Postgres: `binary` (the store's way: cell loads fetch their rows in Postgres' binary
  format) against `text` (the text format, psycopg's default).

`--warmup` users (default 100, untimed) are answered first; they are the later requests'
users. Each of `--rounds` rounds (default 6) runs every way in turn (the first in one round
is the last in the next), each `--requests` (default 100) pairs of a new user's first
fan-out and a warm user's. Reported per way: the
medians over rounds of the rounds' p50 and p95 ms, first and later requests apart, and the
difference of their p50s (what the first request adds).

Usage:
    python benchmarks/first_search.py --backend sqlite
    python benchmarks/first_search.py --backend postgres
    python benchmarks/first_search.py --backend sqlite --quick --json out.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest.mock import patch

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
)

from langgraph_typed_memory.store.core.protocol import Sql
from langgraph_typed_memory.store.index import cells, fts5


def _text_loads() -> AbstractContextManager[None]:
    """Cell loads in the text format."""
    return patch.object(cells, "_ordered",
                        lambda sql: Sql(f"{sql.text} ORDER BY m.seq", sql.params))


def _no_kept_tokens() -> AbstractContextManager[None]:
    """Cell loads that read no kept tokens: every text is tokenized."""
    return patch.object(fts5.ScopeFts5Cache, "SELECT",
                        fts5.ScopeFts5Cache.SELECT.replace("m.search_tokens", "NULL"))


@contextmanager
def _as_is() -> Iterator[None]:
    yield


Way = Callable[[], AbstractContextManager[None]]
WAYS: dict[str, dict[str, Way]] = {
    "sqlite": {"kept tokens": _as_is, "tokenized when read": _no_kept_tokens},
    "postgres": {"binary": _as_is, "text": _text_loads},
}
"""Per backend: the store's way of reading a cell, then the one it is compared with."""


def one_round(system: System, ways: dict[str, Way], fresh: Iterator[int],
              warm: list[int], requests: int, queries: Iterator[int]
              ) -> dict[str, dict[str, float]]:
    """Each way in turn: `requests` pairs of a new user's first fan-out and a warm user's."""
    out = {}
    for name, way in ways.items():
        firsts: list[float] = []
        laters: list[float] = []
        with way():
            for i in range(requests):
                for user, times in ((next(fresh), firsts), (warm[i % len(warm)], laters)):
                    took, _, _ = system.requests([user], [next(queries)], name)
                    times += took
        out[name] = {"first_p50_ms": float(np.percentile(firsts, 50)),
                     "first_p95_ms": float(np.percentile(firsts, 95)),
                     "later_p50_ms": float(np.percentile(laters, 50)),
                     "later_p95_ms": float(np.percentile(laters, 95))}
    return out


def run(args: argparse.Namespace, meta: dict[str, Any]) -> dict[str, dict[str, Any]]:
    ways = WAYS[args.backend]
    firsts = args.rounds * len(ways) * args.requests
    queries = args.warmup + 2 * firsts
    data = Dataset(args.users, args.memories_per_user, args.tenant_facts, queries, args.seed)
    order = np.random.default_rng(args.seed).permutation(args.users).tolist()
    warm, fresh = order[: args.warmup], iter(order[args.warmup :])
    asked = iter(range(queries))
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
    clock = Clock(datetime.now(UTC))
    with ExitStack() as own:
        own.enter_context(torch_threads(1))
        create = (own.enter_context(postgres_backend(clock))[1]
                  if args.backend == "postgres" else None)
        system = open_system(SQLITE if args.backend == "sqlite" else POSTGRES, own, data,
                             clock, create, meta)
        system.load()
        system.requests(warm, [next(asked) for _ in warm], "warm-up")
        for r in range(args.rounds):
            turn = dict(list(ways.items())[:: -1 if r % 2 else 1])  # who goes first alternates
            for name, row in one_round(system, turn, fresh, warm, args.requests,
                                       asked).items():
                rounds[name].append(row)
                log(f"round {r + 1}/{args.rounds} {name}: first p50 {row['first_p50_ms']:.2f}"
                    f" ms, later p50 {row['later_p50_ms']:.2f} ms")
    results: dict[str, dict[str, Any]] = {}
    for name, rows in rounds.items():
        row = {k: round(float(np.median([r[k] for r in rows])), 3) for k in rows[0]}
        row["first_adds_ms"] = round(row["first_p50_ms"] - row["later_p50_ms"], 3)
        results[name] = {**row, "rounds": rows}
    return results


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| cell loads | first p50 ms | first p95 ms | later p50 ms | later p95 ms "
             "| first adds (p50) ms |", "|---|---|---|---|---|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['first_p50_ms']:.2f} | {r['first_p95_ms']:.2f} "
                     f"| {r['later_p50_ms']:.2f} | {r['later_p95_ms']:.2f} "
                     f"| {r['first_adds_ms']:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    data_arguments(parser, users=1500, requests=100, per="per way and round",
                   warmup="users answered first, untimed: the later requests' users")
    parser.set_defaults(tenant_facts=5000, warmup=100)
    parser.add_argument("--rounds", type=int, default=6, help="rounds of each way")
    parser.add_argument("--quick", action="store_true",
                        help="100 users x 10 memories, 500 tenant facts, one round of 10 "
                             "pairs after 10 users (seconds)")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    if args.quick:
        args.users, args.memories_per_user, args.tenant_facts = 100, 10, 500
        args.requests, args.warmup, args.rounds = 10, 10, 1
    check_sizes(parser, args, args.rounds, args.warmup)
    needed = args.warmup + args.rounds * len(WAYS[args.backend]) * args.requests
    if needed > args.users:
        parser.error(f"{needed:,} users are needed (warm-up, then a new user per first "
                     f"request), not {args.users:,}: raise --users")
    meta = rounds_meta("first_search.py", arguments, args)
    log(f"machine: {meta['machine']}")
    results = run(args, meta)
    report(f"A user's first search: {args.backend}, {args.users:,} users x "
           f"{args.memories_per_user} memories + {args.tenant_facts:,} tenant-wide facts, "
           f"{args.requests} first and {args.requests} later fan-outs a way and round, "
           f"medians of {args.rounds} alternated rounds, excluding query embedding",
           meta, table(results), args.json, {"ways": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
