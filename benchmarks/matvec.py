"""The scope matrix product behind exact vector ranking: BLAS `matrix @ q` against `einsum`.

`store/index/vectors.py` ranks a scope cell with `matrix @ q` (numpy's BLAS, OpenBLAS in its
wheels, on as many threads as it is allowed) in the searching thread. This times it,
interleaved query by query on the same random unit vectors, against `np.einsum("ij,j->i")`
(numpy's own single-threaded loop), for each matrix size, twice: with the matrix in the CPU's
caches (products back to back), and read from memory (a buffer larger than the caches read
before each product, as other work does between two searches of a service), and checks that
both give the same scores (to float32 rounding).

Usage:
    python benchmarks/matvec.py                        # 20k, 75k and 100k rows of 384 dims
    python benchmarks/matvec.py --quick --json out.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from _common import SYNTHETIC_DIMS, log, machine, percentiles, report, unit_vectors

METHODS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "BLAS matrix @ q": lambda matrix, q: matrix @ q,
    "einsum (one thread)": lambda matrix, q: np.einsum("ij,j->i", matrix, q),
}


EVICT_BYTES = 256 * 2**20
"""Read before each product "from memory": more than this machine's caches hold."""


def measure(rows: int, queries: int, seed: int, evict: np.ndarray) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    matrix = unit_vectors(rng, rows)
    probes = unit_vectors(rng, queries)
    out = []
    for cached in (True, False):
        times: dict[str, list[float]] = {name: [] for name in METHODS}
        for j, q in enumerate(probes):
            order = list(METHODS.items()) if j % 2 else list(METHODS.items())[::-1]
            for name, product in order:
                if not cached:
                    evict.sum()
                start = time.perf_counter()
                product(matrix, q)
                times[name].append((time.perf_counter() - start) * 1000)
        out += [{"rows": rows, "dims": matrix.shape[1], "method": name, "queries": queries,
                 "matrix": "in cache" if cached else "from memory", **percentiles(ms)}
                for name, ms in times.items()]
    gap = float(np.abs(METHODS["BLAS matrix @ q"](matrix, probes[0])
                       - METHODS["einsum (one thread)"](matrix, probes[0])).max())
    for row in out:
        row["max_score_difference"] = gap
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", default="20000,75000,100000",
                        help="matrix sizes, comma-separated")
    parser.add_argument("--queries", type=int, default=300, help="timed products per method")
    parser.add_argument("--seed", type=int, default=20260601)
    parser.add_argument("--quick", action="store_true", help="2,000 rows, 20 products")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    sizes = [2000] if args.quick else [int(x) for x in args.rows.split(",")]
    queries = 20 if args.quick else args.queries
    meta = {"command": " ".join(["python", "benchmarks/matvec.py", *arguments]),
            "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine(),
            "numpy": np.__version__, "load1": os.getloadavg()[0]}
    log(f"machine: {meta['machine']}, numpy {np.__version__}")
    evict = np.ones((2**20 if args.quick else EVICT_BYTES) // 8)
    rows = [r for n in sizes for r in measure(n, queries, args.seed, evict)]
    lines = ["| rows | matrix | method | p50 ms | p95 ms |", "|---|---|---|---|---|"]
    lines += [f"| {r['rows']:,} | {r['matrix']} | {r['method']} | {r['p50_ms']:.2f} "
              f"| {r['p95_ms']:.2f} |" for r in rows]
    report(f"Scope matrix product, {SYNTHETIC_DIMS}-d float32 unit rows, {queries} queries, "
           f"numpy {np.__version__}", meta, "\n".join(lines), args.json, {"rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
