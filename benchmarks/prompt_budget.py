"""Bounded prompt: assembled prompt tokens over a 1,000-turn conversation.

A synthetic user talks to the memory chat graph (`create_memory_chat_graph`, offline
defaults: rule extractor, extractive responder and summary, no language model; an
`InMemorySaver` checkpointer, or with `--checkpointer sqlite` the `SqliteSaver` on a file
that the demo uses; one thread) for `--turns` turns. The user's messages cycle
through statements the rule extractor turns into memories (facts that accumulate: "My
favorite <thing> is <value>.", "I have <n> <things>."; stateful facts that supersede: "I live
in <city>."; preferences), questions about what was said, chit-chat, and now and then a long
paragraph, so durable memory, the running summary and the verbatim window all grow.

At the reported turns (10, 50, 100, 250, 500, 1000) it prints the assembled prompt's tokens
(the `memory_prompt` messages counted with the assembler's tiktoken encoding, 3 framing tokens
per message: the same arithmetic as the trace's `tokens.total`, which is checked against it),
its split by slot, the budget, and the full transcript's tokens (every message so far,
verbatim, same arithmetic). The JSON has every turn's total, and the maximum over all turns.

Each turn's wall time (the `graph.invoke` call) is recorded too. The table's `ms/turn p50` is
the median over the 10 turns ending at the reported turn (one full cycle of the synthetic
user's ten kinds of message, so every window has the same mix); the summary line gives it at
turns 10, 100, 500 and 1000 (and the last turn) and the ratio of the last to turn 10, which
stays near 1 when a turn's cost does not grow with the thread. Then, for `TIME_WINDOW`
rounds, three turns alternate: the long thread's next turn, the same user's turn on a fresh
thread, and a new user's turn (its first ten, the messages of turns 1-10). The fresh
thread's p50 against the long thread's tells the thread's length (the checkpointed state)
from the user's memory (the store, which both threads share) as a cause of any growth; the
long thread's p50 against the new user's is the growth from turn 10 to turn 1,000 measured
in the same seconds, so a machine that speeds up or slows down during the run (the time
between turn 10 and turn 1,000) does not enter the ratio. `--keep-messages` builds the
graph with `trim_absorbed=False` (every message stays in the checkpointed state) to measure
what trimming the messages the running summary absorbed saves.

The process's CPU time per turn (`time.process_time`: every thread of the benchmark's process,
not the Postgres server's) is reported beside the wall time, the same way: on a machine shared
with other work, wall time also counts the waits for a core, CPU time does not.

Usage:
    python benchmarks/prompt_budget.py                    # both backends, 1,000 turns
    python benchmarks/prompt_budget.py --backend sqlite --quick --json out.json
    python benchmarks/prompt_budget.py --backend sqlite --keep-messages
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import Clock, ZipfText, log, machine, percentiles, postgres_backend, sqlite_backend
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

REPORT_AT = (10, 50, 100, 250, 500, 1000)
TIME_AT = (10, 100, 500, 1000)
"""Turns around which the turn time is reported (and the last turn, whatever `--turns`)."""
TIME_WINDOW = 10
"""Turns per timing window: the synthetic user's cycle, so each window has the same mix."""
QUICK_TURNS = 60
THINGS = ("color", "book", "movie", "song", "food", "drink", "city", "sport", "game", "band",
          "season", "flower", "tree", "bird", "car", "painter", "poet", "dish", "snack", "fruit")
CITIES = ("Lyon", "Paris", "Berlin", "Madrid", "Rome", "Oslo")
PETS = ("cats", "dogs", "parrots", "fish", "rabbits", "turtles")


def user_turn(i: int, text: ZipfText) -> str:
    """The synthetic user's i-th message (deterministic for a given `text` seed)."""
    slot = i % 10
    if slot == 0:
        return f"My favorite {THINGS[i % len(THINGS)]} is {text.words(2).title()}."
    if slot == 1:
        return f"What do you remember about my favorite {THINGS[(i // 3) % len(THINGS)]}?"
    if slot == 2:
        return f"I have {2 + i % 7} {PETS[i % len(PETS)]}."
    if slot == 3:
        return "Thanks, that's great!"
    if slot == 4:
        return f"I live in {CITIES[(i // 10) % len(CITIES)]}."
    if slot == 5:
        return ("Here is some context for the project: " + text.words(120) + ". "
                "Can you keep it in mind?")
    if slot == 6:
        return ("Please answer in French." if (i // 10) % 2 else "Please answer in English.")
    if slot == 7:
        return f"Can you tell me more about {text.words(3)}?"
    if slot == 8:
        return f"My {THINGS[(i + 7) % len(THINGS)]} teacher is {text.words(1).title()}."
    return f"I think {text.words(6)}."


@dataclass
class TurnReport:
    turn: int
    assembled_tokens: int
    trace_total: int
    budget: int
    over_budget: bool
    transcript_tokens: int
    messages: int
    slots: dict[str, int]
    memories: int
    turn_ms_p50: float
    """Median wall time of the `TIME_WINDOW` turns ending at this one."""


def prompt_tokens(messages: Sequence[BaseMessage]) -> int:
    """Tokens of a list of chat messages: content plus the assembler's per-message framing."""
    from langgraph_typed_memory.assembly import MESSAGE_OVERHEAD_TOKENS, count_tokens
    from langgraph_typed_memory.turns import message_text

    return sum(count_tokens(message_text(m)) + MESSAGE_OVERHEAD_TOKENS for m in messages)


def window_p50(times: Sequence[float], turn: int, window: int = TIME_WINDOW) -> float:
    """Median time (ms) of the `window` turns ending at `turn` (1-based)."""
    chosen = sorted(times[max(0, turn - window):turn])
    middle = len(chosen) // 2
    median = chosen[middle] if len(chosen) % 2 else (chosen[middle - 1] + chosen[middle]) / 2
    return round(median, 1)


@dataclass
class Alternated:
    """Times (ms) of the turns played in alternation after the long thread."""

    long: list[float]
    fresh: list[float]
    newcomer: list[float]


def turn_time(times: Sequence[float], after: Alternated) -> dict[str, Any]:
    """Turn time p50 around `TIME_AT` (and the last turn), the last one over the first, the
    fresh thread's p50 (and the long thread's last over it), and the alternated rounds: the
    long thread's p50 over the new user's."""
    at = sorted({t for t in TIME_AT if t <= len(times)} | {len(times)})
    p50 = {str(t): window_p50(times, t) for t in at}
    first, last = p50[str(at[0])], p50[str(at[-1])]
    fresh_p50 = window_p50(after.fresh, len(after.fresh))
    long_p50 = window_p50(after.long, len(after.long))
    newcomer_p50 = window_p50(after.newcomer, len(after.newcomer))
    return {"turn_ms_p50_at": p50, "window_turns": TIME_WINDOW,
            "last_over_first": round(last / first, 2) if first else None,
            "fresh_thread_ms_p50": fresh_p50,
            "last_over_fresh_thread": round(last / fresh_p50, 2) if fresh_p50 else None,
            "alternated": {"long_thread_ms_p50": long_p50, "new_user_ms_p50": newcomer_p50,
                           "long_over_new_user": round(long_p50 / newcomer_p50, 2)
                           if newcomer_p50 else None}}


def count_memories(store: Any) -> int:
    from langgraph.store.base import SearchOp

    ops = [SearchOp(("tenant:bench", "user:u", kind), None, 10_000, 0, None)
           for kind in ("fact", "preference", "episode")]
    return sum(len(found) for found in store.batch(ops))


def checkpointer(kind: str, stack: ExitStack) -> Any:
    """The graph's checkpointer: LangGraph's `InMemorySaver`, or the `SqliteSaver` on a file
    that the demo uses (`--checkpointer sqlite`)."""
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return InMemorySaver()
    import sqlite3
    import tempfile

    from langgraph.checkpoint.sqlite import SqliteSaver

    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-checkpoints-"))
    conn = sqlite3.connect(os.path.join(folder, "checkpoints.db"), check_same_thread=False)
    stack.callback(conn.close)
    return SqliteSaver(conn)


def checkpoints_mib(saver: Any) -> float:
    """What the checkpointer holds after the run, MiB: the SqliteSaver's file (pages in
    use), or the bytes InMemorySaver keeps serialized (checkpoints, channel values, writes)."""
    conn = getattr(saver, "conn", None)
    if conn is not None:
        saver.conn.commit()
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = (pages - free) * conn.execute("PRAGMA page_size").fetchone()[0]
        return round(size / 2**20, 1)

    def held(value: Any) -> int:
        if isinstance(value, bytes | bytearray):
            return len(value)
        if isinstance(value, dict):
            return sum(held(v) for v in value.values())
        if isinstance(value, tuple | list):
            return sum(held(v) for v in value)
        return 0

    return round((held(saver.storage) + held(saver.blobs) + held(saver.writes)) / 2**20, 1)


def play(store: Any, turns: int, budget: int, seed: int, clock: Clock,
         report_at: Sequence[int], *, saver: Any, trim_absorbed: bool = True,
         ) -> tuple[list[TurnReport], list[int], list[float], list[float], Alternated,
                    Alternated]:
    """Play the thread; return the reports, every turn's prompt tokens, wall and CPU time (ms),
    and the wall and CPU times of the `TIME_WINDOW` rounds played after it, each the long
    thread's next turn, the same user's turn on a fresh thread and a new user's turn."""
    from langgraph_typed_memory.graph import create_memory_chat_graph

    graph = create_memory_chat_graph(store=store, checkpointer=saver,
                                     assembly={"budget_tokens": budget},
                                     trim_absorbed=trim_absorbed)
    config: RunnableConfig = {
        "configurable": {"thread_id": "long", "tenant_id": "bench", "user_id": "u"}}
    text = ZipfText(seed)
    totals: list[int] = []
    times: list[float] = []
    cpu: list[float] = []
    reports: list[TurnReport] = []
    transcript = 0
    for i in range(1, turns + 1):
        clock.now += timedelta(minutes=2)  # the store's clock: freshness moves on
        start, started = time.perf_counter(), time.process_time()
        out = graph.invoke({"messages": [HumanMessage(user_turn(i, text))]}, config)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - started) * 1000)
        tokens = out["memory_trace"]["tokens"]
        assembled = prompt_tokens(out["memory_prompt"])
        if assembled != tokens["total"]:
            raise SystemExit(f"turn {i}: counted {assembled} tokens, the trace says "
                             f"{tokens['total']}")
        totals.append(assembled)
        transcript += prompt_tokens(out["messages"][-2:])  # this turn's user message and reply
        if i in report_at or i == turns:
            slots = {k: tokens[k] for k in ("policies", "procedures", "preferences", "facts",
                                            "episodes", "summary", "recent", "overhead")}
            reports.append(TurnReport(
                i, assembled, tokens["total"], tokens["budget"], tokens["over_budget"],
                transcript, len(out["messages"]), slots, count_memories(store),
                window_p50(times, i)))
            log(f"  turn {i}: prompt {assembled} tokens (budget {budget}), transcript "
                f"{transcript}, {reports[-1].memories} memories, {reports[-1].messages} "
                f"messages in the state, {reports[-1].turn_ms_p50} ms/turn (p50)")
    wall, used = Alternated([], [], []), Alternated([], [], [])
    fresh_config: RunnableConfig = {
        "configurable": {**config["configurable"], "thread_id": "fresh"}}
    new_config: RunnableConfig = {
        "configurable": {"thread_id": "new", "tenant_id": "bench", "user_id": "new"}}
    for k in range(TIME_WINDOW):
        i = turns + 1 + k
        for into, message, at in (("long", user_turn(i, text), config),
                                  ("fresh", user_turn(i, text), fresh_config),
                                  ("newcomer", user_turn(k + 1, text), new_config)):
            clock.now += timedelta(minutes=2)
            start, started = time.perf_counter(), time.process_time()
            graph.invoke({"messages": [HumanMessage(message)]}, at)
            getattr(wall, into).append((time.perf_counter() - start) * 1000)
            getattr(used, into).append((time.process_time() - started) * 1000)
    return reports, totals, times, cpu, wall, used


HEAD = ("| backend | turn | assembled prompt tokens | budget | full transcript tokens | "
        "facts | preferences | summary | recent | memories | state messages | ms/turn p50 |")


def table(results: dict[str, list[TurnReport]]) -> str:
    lines = [HEAD, "|---" * (HEAD.count("|") - 1) + "|"]
    for backend, reports in results.items():
        for r in reports:
            lines.append(
                f"| {backend} | {r.turn} | {r.assembled_tokens} | {r.budget} "
                f"| {r.transcript_tokens:,} | {r.slots['facts']} | {r.slots['preferences']} "
                f"| {r.slots['summary']} | {r.slots['recent']} | {r.memories} "
                f"| {r.messages} | {r.turn_ms_p50} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--budget", type=int, default=1500, help="AssemblyConfig budget_tokens")
    parser.add_argument("--seed", type=int, default=20260603)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_TURNS} turns (seconds)")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    parser.add_argument("--checkpointer", choices=("memory", "sqlite"), default="memory",
                        help="LangGraph's InMemorySaver, or the SqliteSaver the demo uses")
    parser.add_argument("--keep-messages", action="store_true",
                        help="keep every message in the state (trim_absorbed=False)")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    if args.quick:
        args.turns = QUICK_TURNS
    report_at = [t for t in REPORT_AT if t <= args.turns] if not args.quick else [10, 50]
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    meta: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/prompt_budget.py", *arguments]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "turns": args.turns,
        "budget": args.budget,
        "trim_absorbed": not args.keep_messages,
        "checkpointer": args.checkpointer,
        "load1": os.getloadavg()[0],
    }
    log(f"machine: {meta['machine']}")
    results: dict[str, list[TurnReport]] = {}
    per_turn: dict[str, Any] = {}
    for backend in backends:
        clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))
        with ExitStack() as stack:
            if backend == "sqlite":
                make = stack.enter_context(sqlite_backend(clock))("prompt_budget")
            else:
                database, _ = stack.enter_context(postgres_backend(clock))
                make = database("prompt_budget")
            store = make()
            store.setup()  # type: ignore[attr-defined]
            log(f"{backend}: {args.turns} turns through the chat graph")
            saver = checkpointer(args.checkpointer, stack)
            reports, totals, times, cpu, after, after_cpu = play(
                store, args.turns, args.budget, args.seed, clock, report_at,
                trim_absorbed=not args.keep_messages, saver=saver)
            held = checkpoints_mib(saver)
        results[backend] = reports
        per_turn[backend] = {
            "assembled_tokens": totals,
            "max_assembled_tokens": max(totals),
            "max_from_turn_10": max(totals[9:], default=max(totals)),
            "turn_ms": percentiles(times),
            "turn_time": turn_time(times, after),
            "turn_cpu_time": turn_time(cpu, after_cpu),
            "checkpoints_mib": held,
        }
    kept = "every message kept in the state" if args.keep_messages else "absorbed messages trimmed"
    print(f"Bounded prompt, {args.turns} turns, budget {args.budget} tokens, {kept}")
    print(table(results))
    for backend, info in per_turn.items():
        print(f"{backend}: max assembled over all turns {info['max_assembled_tokens']} "
              f"(budget {args.budget}); turn p50 {info['turn_ms']['p50_ms']:.1f} ms, "
              f"p95 {info['turn_ms']['p95_ms']:.1f} ms; the checkpointer holds "
              f"{info['checkpoints_mib']} MiB")
        timing = info["turn_time"]
        around = ", ".join(f"turn {t} {ms:.1f}" for t, ms in timing["turn_ms_p50_at"].items())
        turns = list(timing["turn_ms_p50_at"])
        first, last = turns[0], turns[-1]
        print(f"{backend}: turn time p50 over the {timing['window_turns']} turns ending at "
              f"{around} ms; turn {last} / turn {first} = {timing['last_over_first']}")
        print(f"{backend}: the same user on a fresh thread, {timing['window_turns']} turns: "
              f"p50 {timing['fresh_thread_ms_p50']:.1f} ms; turn {last} of the long thread / "
              f"fresh thread = {timing['last_over_fresh_thread']}")
        used = info["turn_cpu_time"]
        around = ", ".join(f"turn {t} {ms:.1f}" for t, ms in used["turn_ms_p50_at"].items())
        print(f"{backend}: CPU time per turn, p50 over the same windows: {around} ms; turn "
              f"{last} / turn {first} = {used['last_over_first']}; fresh thread "
              f"{used['fresh_thread_ms_p50']:.1f} ms")
        for name, measured in (("turn time", timing), ("CPU time", used)):
            both = measured["alternated"]
            print(f"{backend}: {name}, alternated rounds: the long thread's next "
                  f"{timing['window_turns']} turns p50 {both['long_thread_ms_p50']:.1f} ms, a "
                  f"new user's first {timing['window_turns']} p50 "
                  f"{both['new_user_ms_p50']:.1f} ms; long / new = "
                  f"{both['long_over_new_user']}")
    if args.json:
        report = {"meta": meta, "backends": {b: {"turns": [asdict(r) for r in results[b]],
                                                 **per_turn[b]} for b in results}}
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
