"""The sketch regime's recall knob on SQLite: recall@10 and the retrieve node's fan-out for
several `rescored` values on one large scope.

One user's scope gets `--items` memories (`latency.py`'s data: three facts per episode,
clustered vectors, the same seed), past the default cache bound at a million, so its
searches are ranked by sign-bit sketches and the `rescored` nearest ranked exactly
(docs/large-scopes.md). Two store objects are opened on the database: one for the fan-out
(`create_retrieve_node`), one vector-only for recall (one facts and one episodes search per
query, limit 10, against `latency.py`'s exact scan). Every value is measured on the same
store objects and caches, the values taking turns per query (the order reversed every other
query), so the machine's drift weighs on all alike.

Usage:
    python benchmarks/rescored.py --items 1000000 --values 1000,500,250
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import SYNTHETIC_DIMS, Clock, bulk_put, log, machine, percentiles, report
from langchain_core.messages import HumanMessage
from latency import CONFIG, SCOPE, VECTOR_ONLY, Dataset, K, d1_ops, parse_sizes, recall


def main(argv: list[str] | None = None) -> int:
    from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
    from langgraph_typed_memory.nodes import create_retrieve_node

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1_000_000, help="memories in the scope")
    parser.add_argument("--values", type=parse_sizes, default=[1000, 500, 250],
                        help="rescored values, comma-separated")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--cache-mib", type=float, default=None,
                        help="the stores' cache bound in MiB (default: the store's), to put a "
                             "small scope in the sketch regime")
    parser.add_argument("--seed", type=int, default=20260601)
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    meta: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/rescored.py", *arguments]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine(),
        "items": args.items, "values": args.values}
    data = Dataset(args.items, 0, args.queries, args.seed, "clustered")
    path = str(Path(tempfile.mkdtemp(prefix="rescored-")) / "scope.db")
    index = {"dims": SYNTHETIC_DIMS, "embed": data.embedder, "fields": ["text"]}
    clock = Clock(datetime.now(UTC))
    bound = {} if args.cache_mib is None else {"cache_bytes": int(args.cache_mib * 2**20)}
    store = SqliteMemoryStore(connect_sqlite(path), clock=clock, index=index,  # type: ignore[arg-type]
                              **bound)
    store.setup()
    ops = d1_ops() + data.entity_ops() + data.typed_ops(range(args.items))
    bulk_put(store, ops, "rescored: load", 2000)
    vector_only = SqliteMemoryStore(connect_sqlite(path), clock=clock, index=index,  # type: ignore[arg-type]
                                    retrieval=VECTOR_ONLY, **bound)
    node = create_retrieve_node(store)

    def fan_out(j: int) -> dict[str, Any]:
        return node.invoke({"messages": [HumanMessage(data.query_texts[j])]}, CONFIG)  # type: ignore[no-any-return]

    started = time.perf_counter()
    mode = fan_out(0)["memory_trace"]["retrieval"]["modes"]["facts"]
    meta["first_fan_out_s"] = round(time.perf_counter() - started, 1)
    meta["retrieval_mode"] = mode
    log(f"first fan-out {meta['first_fan_out_s']} s, facts ranked {mode}")
    for kind in ("fact", "episode"):  # the vector-only store's caches
        vector_only.search((*SCOPE, kind), query=data.query_texts[0], limit=K)
    times: dict[int, list[float]] = {v: [] for v in args.values}
    found: dict[int, list[list[str]]] = {v: [] for v in args.values}
    picked = range(min(args.queries, len(data.query_texts)))
    for j in picked:
        for value in args.values if j % 2 == 0 else args.values[::-1]:
            for each in (store, vector_only):
                each.records.dialect.sketches.rescored = value  # type: ignore[attr-defined]
            started = time.perf_counter()
            fan_out(j)
            times[value].append((time.perf_counter() - started) * 1000)
            for kind in ("fact", "episode"):
                found[value].append([item.key for item in vector_only.search(
                    (*SCOPE, kind), query=data.query_texts[j], limit=K)])
    expected = [data.exact_top(args.items, kind, j) for j in picked
                for kind in ("fact", "episode")]
    rows = [{"rescored": v, **percentiles(times[v]), "recall_at_10": recall(found[v], expected)}
            for v in args.values]
    lines = ["| rescored | fan-out p50 ms | p95 ms | recall@10 (facts + episodes) |",
             "|---|---|---|---|"]
    lines += [f"| {r['rescored']} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | "
              f"{r['recall_at_10']:.4f} |" for r in rows]
    report(f"The sketch regime's rescored knob, SQLite, {args.items:,} memories in one scope, "
           f"{len(picked)} queries", meta, "\n".join(lines), args.json, {"rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
