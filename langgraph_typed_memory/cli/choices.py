"""What the parser offers and the commands check: the benchmarks `typed-memory bench` runs
and the shortest passphrase `export` accepts (kept apart from both, so `--help` loads no
command code)."""

from __future__ import annotations

__all__ = ["BENCHMARKS", "MIN_EXPORT_PASSPHRASE"]

BENCHMARKS: dict[str, str] = {
    "locomo": "locomo_retrieval.py",
    "latency": "latency.py",
    "ingest": "ingest.py",
    "prompt": "prompt_budget.py",
    "continuity": "continuity.py",
    "vectors": "vector_scan.py",
    "gin": "gin_pending.py",
    "matvec": "matvec.py",
}
"""`typed-memory bench NAME` runs `benchmarks/<script>` of the repository."""

MIN_EXPORT_PASSPHRASE = 8
"""The shortest passphrase `export` accepts: it is the only secret protecting the file.
`import` takes any passphrase, since files may come from `store.export_scope`."""
