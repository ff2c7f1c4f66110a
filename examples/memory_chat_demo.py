"""The main job: a two-session conversation through the real memory chat graph, offline.

Session 1 states preferences and facts (and corrects one), and tells of something no rule
extracts (the client demo); session 2, a new thread, asks about them: the answer about the
demo comes from the turn log alone. A second user asks the same and must see nothing of the
first. The store and the checkpointer share one local SQLite file. Each turn prints what the
prompt shows (ids, relevance) and how it was retrieved, the token report, and what the
promotion gate wrote (the turn log included), replaced or rejected and why.

    python examples/memory_chat_demo.py --db .typed-memory/demo.db
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import BaseStore

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.embeddings import local_index_config
from langgraph_typed_memory.graph import create_memory_chat_graph

SESSIONS: list[tuple[str, str, list[str]]] = [
    ("alice", "session-1", [
        "Hi there!",
        "Please always answer in bullet points.",
        "I live in Lyon and I work at Acme Robotics.",
        "My dog's name is Rex.",
        "The client demo went badly because the projector died halfway through.",
        "Actually, I moved to Paris last month.",
    ]),
    ("alice", "session-2", [
        "Where do I live, and what is my dog called?",
        "What went wrong at the client demo last time?",
    ]),
    ("bob", "session-3", [
        "Where do I live, and what is my dog called?",
    ]),
]


MODES = {
    "exact": "every record in scope, no ranking",
    "hybrid": "full text and vectors fused",
    "vector": "vectors only (the question had no searchable word)",
    "lexical": "full text only (no embedder)",
    "like": "substring match, the last resort when full text found nothing and there are "
            "no vectors",
    "newest": "the newest records, added when word search came back short",
}
"""What each retrieval mode the trace names means."""


def _shown(item: dict[str, Any]) -> str:
    value = item["value"]
    text = value.get("content") or value.get("summary") or value.get("value")
    return f"{text} [turn log]" if value.get("task_type") == "turn" else str(text)


def show_turn(store: BaseStore, user: str, text: str, state: dict[str, Any]) -> None:
    trace = state["memory_trace"]
    retrieval, tokens = trace["retrieval"], trace["tokens"]
    print(f"\n[{user} turn {trace['turn_index']}] {text}")
    context = state.get("memory_context") or {}
    assembled = trace.get("assembled") or {}
    for slot in ("preferences", "facts", "episodes", "policies", "procedures"):
        found = {item.get("memory", {}).get("id"): item for item in context.get(slot, [])}
        for ident in assembled.get(slot, []):
            item = found.get(ident)
            if item is not None:
                relevance = item.get("memory", {}).get("tier")
                label = f"relevance {relevance}" if relevance else "always shown"
                print(f"  in the prompt: {slot[:-1]:<10} {ident[:8]} ({label}): {_shown(item)}")
        left = len(found) - len(assembled.get(slot, []))
        if left > 0:
            print(f"  retrieved but not shown: {left} {slot} (budget, or said by a record shown)")
    modes = retrieval["modes"]
    used = {part for mode in modes.values() if mode for part in mode.split("+")}
    print(f"  retrieval mode: {retrieval['retrieval_mode']} "
          f"(per slot: {', '.join(f'{k}={v}' for k, v in modes.items())}; "
          + "; ".join(f"{mode} = {MODES[mode]}" for mode in MODES if mode in used) + ")")
    slots = ", ".join(f"{k}={tokens.get(k, 0)}" for k in
                      ("policies", "procedures", "preferences", "facts", "episodes", "summary",
                       "recent"))
    print(f"  tokens: {slots}; total {tokens.get('total')} / budget {tokens.get('budget')}")
    extraction = trace.get("extraction") or {}
    print(f"  extraction: {extraction.get('method')} (pre-filter: {extraction.get('prefilter')})")
    for promo in trace["promotions"]:
        ident = (promo.get("id") or "")[:8]
        kind = "turn log" if promo["kind"] == "episode" else promo["kind"]
        key = promo.get("key")
        if kind == "entity":  # its key is an id: show the entity's name
            entity = store.get(("tenant:acme", f"user:{user}", "entity"), key)
            key = entity.value.get("name", key) if entity else key
        replaced = f", replacing {promo['old_id'][:8]}" if promo.get("old_id") else ""
        print(f"  promotion: {kind} {key} -> {promo['outcome']} {ident}{replaced} "
              f"({promo['reason']})")
    for note in trace.get("degraded", []):
        print(f"  degraded: {note}")
    print("  reply: " + state["messages"][-1].content.replace("\n", "\n         "))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=".typed-memory/demo.db", help="SQLite file (recreated)")
    args = parser.parse_args()
    Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(args.db + suffix):
            os.remove(args.db + suffix)
    started = time.perf_counter()
    index = local_index_config()
    if index is None:
        print("(the `local` extra is not installed: lexical-only retrieval)")
    else:
        print("loading the offline embedder (all-MiniLM-L6-v2)...")
        index["embed"].load()  # once, before the first turn: loading is not answering
    with SqliteMemoryStore.from_conn_string(args.db, index=index) as store:
        store.setup()
        checkpoints = sqlite3.connect(args.db, check_same_thread=False)
        saver = SqliteSaver(checkpoints)
        graph = create_memory_chat_graph(store=store, checkpointer=saver)
        for user, thread, turns in SESSIONS:
            print(f"\n=== {user}, {thread} (a new thread) ===")
            config = {"configurable": {"thread_id": thread, "tenant_id": "acme",
                                       "user_id": user}}
            for text in turns:
                state = graph.invoke({"messages": [HumanMessage(text)]}, config)
                show_turn(store, user, text, state)
        prompt = state_prompt(graph, "session-2")
        print("\n=== the system prompt session 2 was given ===")
        print(prompt)
        history = graph.get_state_history({"configurable": {"thread_id": "session-1"}})
        print(f"\nsession-1 trace: {sum(1 for _ in history)} checkpoints, replayable with "
              "get_state_history")
        checkpoints.close()
    print(f"done in {time.perf_counter() - started:.1f}s; database at {args.db}; look inside "
          f"with: typed-memory --db {args.db} inspect --tenant acme")
    return 0


def state_prompt(graph: Any, thread: str) -> str:
    state = graph.get_state({"configurable": {"thread_id": thread}}).values
    return str(state["memory_prompt"][0].content)


if __name__ == "__main__":
    sys.exit(main())
