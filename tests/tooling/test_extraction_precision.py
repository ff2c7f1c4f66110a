"""The precision benchmark (`benchmarks/extraction_precision.py`): a quick run, checked.

The report's shape and arithmetic are checked, never today's precision (the extractor moves):
every field is present, counts add up, unjudged records are listed and left out of
precision, and a made-up label set gives exactly the precision it implies.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.benchmark_scripts import load_benchmark

precision = load_benchmark("extraction_precision")

KIND_FIELDS = {"records", "true", "false", "unjudged", "precision"}
RECORD_FIELDS = {"dataset", "conversation", "turn", "speaker", "said", "kind", "counted_as",
                 "key", "content", "outcome", "status", "rule", "replaced", "verdict", "why",
                 "persona"}
LABEL_KEY = ("dataset", "conversation", "turn", "kind", "key", "content")


def _run(tmp_path: Path, labels: Path, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A quick run with these labels: its JSON report and its unjudged label lines."""
    out, todo = tmp_path / f"{name}.json", tmp_path / f"{name}-todo.jsonl"
    assert precision.main(["--quick", "--labels", str(labels), "--json", str(out),
                           "--write-unjudged", str(todo)]) == 0
    lines = [json.loads(line) for line in todo.read_text(encoding="utf-8").splitlines()]
    return json.loads(out.read_text(encoding="utf-8")), lines


@pytest.fixture(scope="module")
def unlabelled(tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("precision")
    empty = folder / "labels.jsonl"
    empty.write_text("", encoding="utf-8")
    return _run(folder, empty, "unlabelled")


def _key(item: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(item[f]) for f in LABEL_KEY)


def _check_counts(block: dict[str, Any]) -> None:
    kinds = block["kinds"]
    assert set(kinds) == {*precision.CLASSES, "all"}
    for counts in kinds.values():
        assert set(counts) == KIND_FIELDS
        assert counts["records"] == counts["true"] + counts["false"] + counts["unjudged"]
        judged = counts["true"] + counts["false"]
        expected = round(counts["true"] / judged, 4) if judged else None
        assert counts["precision"] == expected
    for field in ("records", "true", "false", "unjudged"):
        assert kinds["all"][field] == sum(kinds[k][field] for k in precision.CLASSES)


def test_quick_report_structure(unlabelled: tuple[dict[str, Any], list[dict[str, Any]]]
                                ) -> None:
    report, todo = unlabelled
    assert report["meta"]["date"] and report["meta"]["machine"] and report["meta"]["command"]
    assert "chats" in report["datasets"]  # the project's own data is always there
    assert "recall" not in report  # --quick leaves the recall runs out
    for name, block in report["datasets"].items():
        assert name in precision.DATASETS
        _check_counts(block)
        assert block["conversations"] > 0 and block["turns"] > 0
        assert sum(block["prefilter"].values()) == block["turns"]
        per = block["preferences_per_conversation"]
        assert sum(p["written"] for p in per.values()) == block["kinds"]["preference"]["records"]
        assert block["preferences_max"] == max(p["written"] for p in per.values())
    _check_counts(report["overall"])
    records = report["records"]
    assert records, "the quick run writes typed records"
    assert all(set(r) == RECORD_FIELDS for r in records)
    assert all(r["kind"] in ("fact", "preference", "entity") for r in records)
    assert all(r["counted_as"] in precision.CLASSES for r in records)
    assert all(r["rule"] for r in records)
    overall = report["overall"]["kinds"]["all"]
    assert overall["records"] == len(records) == overall["unjudged"]
    assert sum(b["kinds"]["all"]["records"] for b in report["datasets"].values()) == len(records)
    # nothing is labelled: everything is listed as unjudged, and written out to be labelled
    assert len(report["unjudged_records"]) == len(records)
    assert all(c["precision"] is None for c in overall.values() if isinstance(c, dict))
    assert [_key(line) for line in todo] == [_key(r) for r in records]
    assert all(line["true"] is None and line["said"] for line in todo)
    assert report["replacing_records"] == [r for r in records if r["replaced"]]
    persona = report["datasets"].get("persona")
    if persona:
        recall = persona["persona_recall"]
        assert recall["covered"] == 0 and recall["recall"] in (0.0, None)
        assert recall["stated"] <= recall["sentences"]


def test_made_up_labels_give_the_precision_they_imply(
        tmp_path: Path, unlabelled: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    _, todo = unlabelled
    verdicts: dict[tuple[str, ...], bool | None] = {}
    lines = []
    for i, line in enumerate(todo):  # true, false, unjudged in turn
        verdict = (True, False, None)[i % 3]
        verdicts[_key(line)] = verdict
        lines.append({**{f: line[f] for f in LABEL_KEY}, "true": verdict, "why": "made up"})
    absent = {"dataset": "chats", "conversation": "no-such-chat", "turn": "1", "kind": "fact",
              "key": "fact:user:nothing", "content": "Nobody said this.", "true": False,
              "why": "a label whose record is absent"}
    labels = tmp_path / "labels.jsonl"
    labels.write_text("# made-up labels\n\n" + "\n".join(
        json.dumps(x) for x in [*lines, absent]) + "\n", encoding="utf-8")

    report, still_todo = _run(tmp_path, labels, "labelled")

    expected: dict[str, Counter[str]] = {}
    for r in report["records"]:
        verdict = verdicts[_key(r)]
        assert r["verdict"] == verdict
        tally = expected.setdefault(r["dataset"], Counter())
        tally[f"{r['counted_as']}:{verdict}"] += 1
        tally[f"all:{verdict}"] += 1
    for name, block in report["datasets"].items():
        _check_counts(block)
        for kind, counts in block["kinds"].items():
            got = expected[name]
            assert counts["true"] == got[f"{kind}:True"]
            assert counts["false"] == got[f"{kind}:False"]
            assert counts["unjudged"] == got[f"{kind}:None"]
            judged = got[f"{kind}:True"] + got[f"{kind}:False"]
            assert counts["precision"] == (round(got[f"{kind}:True"] / judged, 4)
                                           if judged else None)
    _check_counts(report["overall"])
    unjudged = [k for k, v in verdicts.items() if v is None]
    assert sorted(_key(r) for r in report["unjudged_records"]) == sorted(unjudged)
    assert sorted(_key(line) for line in still_todo) == sorted(unjudged)
    false_total = sum(n for kinds in report["overall"]["false_by_rule"].values()
                      for n in kinds.values())
    assert false_total == report["overall"]["kinds"]["all"]["false"]
    assert report["labels"] == {"lines": len(lines) + 1, "used": len(verdicts),
                                "unused_in_datasets_played": 1}


def test_committed_labels_are_judged_and_explained() -> None:
    labels = precision.read_labels(precision.LABELS)
    assert labels
    for key, label in labels.items():
        assert key.dataset in precision.DATASETS
        assert key.kind in ("fact", "preference", "entity")
        assert label.verdict in (True, False), key
        assert label.why.strip(), key
        if label.persona:
            assert key.dataset == "persona" and label.verdict is True, key
    raw = precision.LABELS.read_text(encoding="utf-8")
    assert '"said"' not in raw and '"gold"' not in raw  # the datasets are not copied in


def test_a_malformed_label_line_names_its_line(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"dataset": "chats"}\n', encoding="utf-8")
    with pytest.raises(SystemExit, match="labels.jsonl:1"):
        precision.read_labels(labels)
    labels.write_text(json.dumps({f: "x" for f in LABEL_KEY} | {"true": "yes"}) + "\n",
                      encoding="utf-8")
    with pytest.raises(SystemExit, match="true, false or null"):
        precision.read_labels(labels)


def test_persona_recall_counts_stated_sentences_covered_by_true_records() -> None:
    said = precision.Said
    day = precision.PERSONA_DAY
    dialogue = precision.Dialogue(
        "persona", "7",
        (said("1", "User 1", "I bake cookies every weekend.", "chat", day),
         said("2", "User 2", "I am a nurse at the county hospital.", "chat", day)),
        {"User 1": ("I love to bake cookies.", "I have three cats."),
         "User 2": ("I work as a nurse.",)})

    def record(speaker: str, verdict: bool | None, lines: list[int]) -> Any:
        return precision.Record(
            "persona", "7", "1", speaker, "", "fact", "fact", "k", "c", "written", "active",
            "rule", False, verdict, "", {speaker: lines})

    got = precision.persona_recall([dialogue], [
        record("User 1", True, [0]), record("User 1", True, [1]),
        record("User 2", False, [0])])
    # stated: cookies (User 1) and nurse (User 2); cats is not said. Covered by a true
    # record: cookies, and cats (not stated, so outside the recall).
    assert got == {"sentences": 3, "stated": 2, "covered": 2, "stated_covered": 1,
                   "recall": 0.5}


def test_a_fact_naming_a_linked_entity_counts_as_a_relation() -> None:
    aliases = {"e1": {"anna", "annie"}}
    linked = {"metadata": {"entities": ["e1"]}}
    assert precision.counted_as("fact", {"value": "Annie", **linked}, aliases) == "relation"
    assert precision.counted_as("fact", {"value": "nurse", **linked}, aliases) == "fact"
    assert precision.counted_as("fact", {"value": "Anna"}, aliases) == "fact"  # not linked
    assert precision.counted_as("preference", {"value": "Anna", **linked}, aliases) == (
        "preference")
