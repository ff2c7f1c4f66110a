"""The main job: a two-session conversation through the real memory chat graph, offline.

Session 1 states preferences and facts (and corrects one); session 2, a new thread, asks about
them; a second user asks the same and must see nothing of the first. The store and the
checkpointer share one local SQLite file. Each turn prints what was retrieved (ids and mode),
the token report, and what the promotion gate wrote or rejected and why.

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

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.embeddings import local_index_config
from langgraph_typed_memory.graph import create_memory_chat_graph

SESSIONS: list[tuple[str, str, list[str]]] = [
    ("alice", "session-1", [
        "Hi there!",
        "Please always answer in bullet points.",
        "I live in Lyon and I work at Acme Robotics.",
        "My dog's name is Rex.",
        "Actually, I moved to Paris last month.",
    ]),
    ("alice", "session-2", [
        "Where do I live, and what is my dog called?",
    ]),
    ("bob", "session-3", [
        "Where do I live, and what is my dog called?",
    ]),
]


def show_turn(user: str, text: str, state: dict[str, Any]) -> None:
    trace = state["memory_trace"]
    retrieval, tokens = trace["retrieval"], trace["tokens"]
    print(f"\n[{user} turn {trace['turn_index']}] {text}")
    context = state.get("memory_context") or {}
    for slot in ("preferences", "facts", "episodes", "policies", "procedures"):
        for item in context.get(slot, []):
            memory = item.get("memory", {})
            value = item["value"]
            shown = value.get("content") or value.get("summary") or value.get("value")
            tier = memory.get("tier") or "exact"
            print(f"  retrieved {slot[:-1]:<10} {memory.get('id', '')[:8]} ({tier}): {shown}")
    print(f"  retrieval mode: {retrieval['retrieval_mode']} "
          f"(per slot: {', '.join(f'{k}={v}' for k, v in retrieval['modes'].items())})")
    slots = ", ".join(f"{k}={tokens.get(k, 0)}" for k in
                      ("policies", "procedures", "preferences", "facts", "episodes", "summary",
                       "recent"))
    print(f"  tokens: {slots}; total {tokens.get('total')} / budget {tokens.get('budget')}")
    extraction = trace.get("extraction") or {}
    print(f"  extraction: {extraction.get('method')} (pre-filter: {extraction.get('prefilter')})")
    for promo in trace["promotions"]:
        ident = (promo.get("id") or "")[:8]
        print(f"  promotion: {promo['kind']} {promo.get('key')} -> {promo['outcome']} {ident} "
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
                show_turn(user, text, state)
        prompt = state_prompt(graph, "session-2")
        print("\n=== the system prompt session 2 was given ===")
        print(prompt)
        history = graph.get_state_history({"configurable": {"thread_id": "session-1"}})
        print(f"\nsession-1 trace: {sum(1 for _ in history)} checkpoints, replayable with "
              "get_state_history")
        checkpoints.close()
    print(f"done in {time.perf_counter() - started:.1f}s; database at {args.db}")
    return 0


def state_prompt(graph: Any, thread: str) -> str:
    state = graph.get_state({"configurable": {"thread_id": thread}}).values
    return str(state["memory_prompt"][0].content)


if __name__ == "__main__":
    sys.exit(main())
