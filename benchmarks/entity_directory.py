"""Where entity records live: the cost of reading a scope's entity directory.

The extract node reads the caller's entity directory on every kept turn (the retrieve node
on every question naming something). This times that read with the records in a kind of
their own (`entity`, one indexed lookup) against the same records kept as facts
(`predicate` "entity", a filtered listing of the scope's facts), as the scope's facts grow;
then the nodes' read (`entities.directories`: the `$newest` listing parsed into the
directory) when the scope's entities changed since the last read (listed and parsed whole),
when one entity was added since (the store lists it alone, `$additions`, and it joins the
directory held), and when they did not change (the store answers `unchanged` to
`$if_changed` and the directory held is used). SQLite, no embedder.

Usage:
    python benchmarks/entity_directory.py
    python benchmarks/entity_directory.py --entities 500 --sizes 1000,10000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _common import log, machine
from langgraph.store.base import PutOp

from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.entities.directories import Directories

SCOPE = ("tenant:bench", "user:u")


def _median_ms(read: Callable[[], Any], runs: int) -> tuple[int, float]:
    times, found = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        found = len(read())
        times.append((time.perf_counter() - start) * 1000)
    return found, statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--entities", type=int, default=200)
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="facts in the scope, comma-separated")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    log(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as folder:
        conn = connect_sqlite(str(Path(folder) / "directory.db"))
        store = SqliteMemoryStore(conn)
        store.setup()
        names = [f"Name{i}" for i in range(args.entities)]
        store.batch([PutOp((*SCOPE, "fact"), f"entity-{i}", {
            "subject": f"e{i}", "predicate": "entity", "content": name,
            "value": {"name": name, "aliases": []}}, None) for i, name in enumerate(names)])
        store.batch([PutOp((*SCOPE, "entity"), f"e{i}", {"name": name}, None)
                     for i, name in enumerate(names)])
        print("| facts in the scope | fact kind, filter predicate=entity | entity kind lookup "
              "| nodes' read, changed | nodes' read, one added | nodes' read, unchanged |")
        print("|---:|---:|---:|---:|---:|---:|")

        def node_read(directories: Directories) -> Any:
            read = directories.read(store, SCOPE)
            return directories.known(store, SCOPE, read, store.batch([read.op])[0]).entities

        held = Directories()
        node_read(held)

        def one_added(runs: int, size: int) -> tuple[int, float]:
            """The read after each of `runs` entities is added (the write is not timed); the
            entities added are deleted after."""
            times, found = [], 0
            for run in range(runs):
                store.put((*SCOPE, "entity"), f"added-{size}-{run}", {"name": f"Added{run}"})
                start = time.perf_counter()
                found = len(node_read(held))
                times.append((time.perf_counter() - start) * 1000)
            for run in range(runs):
                store.delete((*SCOPE, "entity"), f"added-{size}-{run}")
            node_read(held)
            return found - runs, statistics.median(times)

        written = 0
        for size in (int(s) for s in args.sizes.split(",")):
            ops = [PutOp((*SCOPE, "fact"), f"f{i}", {
                "subject": "user", "predicate": "note", "content": f"note {i} about things"},
                None) for i in range(written, size)]
            for at in range(0, len(ops), 2000):
                store.batch(ops[at:at + 2000])
            written = max(written, size)
            as_facts = _median_ms(lambda: store.search(
                (*SCOPE, "fact"), filter={"predicate": "entity"}, limit=10 * args.entities),
                max(3, args.runs // 4))
            as_kind = _median_ms(lambda: store.search((*SCOPE, "entity")), args.runs)
            changed = _median_ms(lambda: node_read(Directories()), args.runs)
            added = one_added(args.runs, size)
            unchanged = _median_ms(lambda: node_read(held), args.runs)
            assert (as_facts[0] == as_kind[0] == changed[0] == added[0] == unchanged[0]
                    == args.entities)
            print(f"| {size:,} | {as_facts[1]:.1f} ms | {as_kind[1]:.1f} ms "
                  f"| {changed[1]:.2f} ms | {added[1]:.2f} ms | {unchanged[1]:.2f} ms |",
                  flush=True)
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
