"""What the parser offers and the commands check: the benchmarks `typed-memory bench` runs,
the shortest passphrase `export` accepts and the retrieval modes `search` names (kept apart
from both, so `--help` loads no command code)."""

from __future__ import annotations

__all__ = ["BENCHMARKS", "MIN_EXPORT_PASSPHRASE", "RETRIEVAL_MODES", "modes_legend"]

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

RETRIEVAL_MODES: dict[str, str] = {
    "hybrid": "ranked by words (full text) and meaning (vectors) together",
    "vector": "ranked by meaning only (the query has no searchable words, or full text "
              "failed)",
    "lexical": "ranked by words only (the database has no vectors for the CLI's embedder, "
               "--no-index, or the embedder failed)",
    "like": "the fallback when there are no vectors and full text matched nothing: records "
            "holding the query's words as plain substrings, ranked by how many they hold",
    "exact": "every active record of the kind in scope, unranked (policies, preferences, "
             "procedures)",
}
"""What each retrieval mode `search` reports means (`SearchResults.retrieval_mode`)."""


def modes_legend() -> str:
    """The retrieval modes and their meanings in one paragraph, for `search --help`.

    Example:
        >>> modes_legend().split("; ")[3].startswith("like = the fallback when")
        True
    """
    return "Retrieval modes: " + "; ".join(
        f"{mode} = {meaning}" for mode, meaning in RETRIEVAL_MODES.items()) + "."
