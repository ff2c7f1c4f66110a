"""The entity resolution benchmark: its cases are well formed and its quick run reports."""

from __future__ import annotations

import json
from pathlib import Path

from tests.benchmark_scripts import load_benchmark

harness = load_benchmark("entity_resolution")
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


def test_the_directory_benchmark_runs_small(capsys) -> None:
    directory = load_benchmark("entity_directory")
    assert directory.main(["--entities", "20", "--sizes", "100", "--runs", "2"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 100 ")]
    assert len(rows) == 1 and rows[0].count("ms") == 5
