"""Entity resolution: merge precision and recall, per category of case.

Each case of `entity_resolution_cases.py` is a thread of user turns read in order by
`read_turn` (one scope per case, no model fallback, offline). Its checks say which mentions
name one entity and which must not. A check with `same=True` is a merge the resolver should
make: made, it is a true positive, missed (names resolved apart, a pronoun left unresolved,
a mention not found), a false negative. A check with `same=False`, or a lone check (a
mention that names nothing met before), is a merge the resolver must not make: made, it is a
false positive. Precision = TP / (TP + FP), recall = TP / (TP + FN), per category and
overall; targets: precision >= 0.95, recall >= 0.85. Also reported: mentions the checks name
that the turn reader did not find, and which stage of the cascade made each merge.

The cases are split for honesty: within each category every third case (the 3rd, 6th, ...)
is held out, never looked at while the rules were tuned; the figures are given for the
held-out cases, the others, and all.

Usage:
    python benchmarks/entity_resolution.py                 # all cases
    python benchmarks/entity_resolution.py --quick --json out.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import log, machine

from langgraph_typed_memory.entities import KnownEntities, Resolution, read_turn

HERE = Path(__file__).resolve().parent
CASES_FILE = HERE / "entity_resolution_cases.py"
QUICK_CASES = 3
PRECISION_TARGET, RECALL_TARGET = 0.95, 0.85


def load_cases(path: Path = CASES_FILE) -> list[dict[str, Any]]:
    spec = importlib.util.spec_from_file_location("entity_resolution_cases", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [dict(c) for c in module.CASES]


def _find(text: str, written: str) -> int:
    """Where the n-th ("name#2") occurrence of `written` starts in `text`, or -1."""
    target, _, nth = written.partition("#")
    at = -1
    for _ in range(int(nth or 1)):
        at = text.find(target, at + 1)
        if at < 0:
            return -1
    return at


def _resolution(turn: str, resolutions: Sequence[Resolution], written: str
                ) -> Resolution | None:
    at = _find(turn, written)
    end = at + len(written.partition("#")[0])
    return next((r for r in resolutions if r.mention.start < end and at < r.mention.end),
                None) if at >= 0 else None


@dataclass
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    missing: int = 0
    stages: Counter[str] = field(default_factory=Counter)

    def add(self, other: Tally) -> None:
        self.tp, self.fp = self.tp + other.tp, self.fp + other.fp
        self.fn, self.tn = self.fn + other.fn, self.tn + other.tn
        self.missing += other.missing
        self.stages.update(other.stages)

    def figures(self) -> dict[str, Any]:
        merges = self.tp + self.fp
        return {
            "checks": self.tp + self.fp + self.fn + self.tn,
            "should_merge": self.tp + self.fn,
            "precision": round(self.tp / merges, 3) if merges else 1.0,
            "recall": round(self.tp / (self.tp + self.fn), 3) if self.tp + self.fn else 1.0,
            "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
            "mentions_not_found": self.missing,
            "merges_by_stage": dict(sorted(self.stages.items())),
        }


def run_case(case: dict[str, Any]) -> tuple[Tally, list[dict[str, Any]]]:
    """Read the case's turns, then score its checks; also the checks it got wrong."""
    known = KnownEntities()
    turns: list[str] = list(case["turns"])
    per_turn: list[tuple[Resolution, ...]] = []
    for turn in turns:
        read = read_turn(turn, known, scope=f"tenant:bench/user:{case['name']}")
        per_turn.append(read.resolutions)
        known = read.known
    tally, wrong = Tally(), []
    for check in case["checks"]:
        if len(check) == 2:
            j, b = check
            rb = _resolution(turns[j], per_turn[j], b)
            earlier = {r.entity.id for rs in per_turn[:j] for r in rs if r.entity}
            merged = rb is not None and rb.entity is not None and rb.entity.id in earlier
            same, ra = False, None
            tally.missing += rb is None
        else:
            i, a, j, b, same = check
            ra = _resolution(turns[i], per_turn[i], a)
            rb = _resolution(turns[j], per_turn[j], b)
            tally.missing += (ra is None) + (rb is None)
            merged = bool(ra and rb and ra.entity and rb.entity
                          and ra.entity.id == rb.entity.id)
        if merged:
            assert rb is not None
            tally.stages[rb.stage] += 1
        if same:
            tally.tp += merged
            tally.fn += not merged
        else:
            tally.fp += merged
            tally.tn += not merged
        if merged != same:
            wrong.append({"case": case["name"], "check": list(check),
                          "got": "merged" if merged else "apart",
                          "stage": rb.stage if rb else "not found"})
    return tally, wrong


def evaluate(cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    by_category: dict[str, Tally] = {}
    splits = {"held_out": Tally(), "development": Tally()}
    overall = Tally()
    wrong: list[dict[str, Any]] = []
    seen: Counter[str] = Counter()
    for case in cases:
        category = str(case["category"])
        seen[category] += 1
        tally, missed = run_case(case)
        by_category.setdefault(category, Tally()).add(tally)
        splits["held_out" if seen[category] % 3 == 0 else "development"].add(tally)
        overall.add(tally)
        wrong.extend(missed)
    for category in by_category:
        log(f"  {category}: {seen[category]} cases, {by_category[category].figures()}")
    return {
        "cases": len(cases),
        "overall": overall.figures(),
        "by_category": {c: t.figures() for c, t in by_category.items()},
        "by_split": {s: t.figures() for s, t in splits.items()},
        "wrong": wrong,
    }


def table(result: dict[str, Any]) -> str:
    lines = [f"{'category':<16}{'checks':>7}{'merges due':>11}{'precision':>10}{'recall':>8}"
             f"{'not found':>10}"]
    rows = [*result["by_category"].items(), *(("split " + k, v) for k, v in
                                              result["by_split"].items()),
            ("overall", result["overall"])]
    for name, f in rows:
        lines.append(f"{name:<16}{f['checks']:>7}{f['should_merge']:>11}{f['precision']:>10.3f}"
                     f"{f['recall']:>8.3f}{f['mentions_not_found']:>10}")
    return "\n".join(lines)


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"the first {QUICK_CASES} cases of each category")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    parser.add_argument("--cases", metavar="FILE", type=Path, default=CASES_FILE,
                        help="read this file's CASES instead of the project's")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    cases = load_cases(args.cases)
    if args.quick:
        cases = [c for category in dict.fromkeys(c["category"] for c in cases)
                 for c in [c for c in cases if c["category"] == category][:QUICK_CASES]]
    meta = {
        "command": " ".join(["python", "benchmarks/entity_resolution.py", *arguments]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": machine(),
        "targets": {"precision": PRECISION_TARGET, "recall": RECALL_TARGET},
    }
    log(f"machine: {meta['machine']}")
    log(f"{len(cases)} cases")
    began = time.perf_counter()
    result = evaluate(cases)
    meta["seconds"] = round(time.perf_counter() - began, 3)
    overall = result["overall"]
    result["targets_met"] = (overall["precision"] >= PRECISION_TARGET
                             and overall["recall"] >= RECALL_TARGET)
    print(f"Entity resolution, {len(cases)} cases ({meta['seconds']} s)")
    print(table(result))
    print(f"targets (precision >= {PRECISION_TARGET}, recall >= {RECALL_TARGET}) met: "
          f"{result['targets_met']}")
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, **result}, indent=2) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
