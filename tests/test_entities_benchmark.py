"""The entity resolution benchmark: its cases are well formed and its quick run reports."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _load(name: str) -> Any:
    """Import a script as `python benchmarks/<name>.py` runs it (`_common` beside it)."""
    folder = str(REPO / "benchmarks")
    if folder not in sys.path:
        sys.path.append(folder)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


harness = _load("entity_resolution")
CATEGORIES = {"exact", "alias", "variant", "pronoun", "same-name", "company-person",
              "org-place", "negative"}


def test_cases_are_well_formed() -> None:
    cases = harness.load_cases()
    assert len(cases) >= 100
    assert {c["category"] for c in cases} == CATEGORIES
    assert len({c["name"] for c in cases}) == len(cases)
    for case in cases:
        turns = case["turns"]
        for check in case["checks"]:
            assert len(check) in (2, 5), case["name"]
            spots = [check[:2]] if len(check) == 2 else [check[:2], check[2:4]]
            for turn, written in spots:
                assert harness._find(turns[turn], written) >= 0, (case["name"], written)


def test_quick_run(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    assert harness.main(["--quick", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["meta"]["date"] and report["meta"]["machine"] and report["meta"]["commit"]
    assert set(report["by_category"]) == CATEGORIES
    assert report["cases"] == 3 * len(CATEGORIES)
    overall = report["overall"]
    assert overall["checks"] == sum(c["checks"] for c in report["by_category"].values())
    assert overall["tp"] + overall["fn"] == overall["should_merge"]
    assert 0 <= overall["precision"] <= 1 and 0 <= overall["recall"] <= 1
    # the traps the first cases of each category hold: no company merged with a person, no
    # two same-named people merged
    assert report["by_category"]["company-person"]["fp"] == 0
    assert report["by_category"]["same-name"]["fp"] == 0
