"""Degradation: a failing, hanging or wrong embedder or chat model never fails a turn.

Through the memory chat graph (`create_memory_chat_graph`), on every backend:

- an embedder that hangs past the index config's `embed_timeout`: retrieval degrades to
  lexical, the promotion writes without vectors, both recorded (`memory_trace["degraded"]`,
  the outcome's reason), and a plain `put` fails with a typed error, writing nothing;
- an embedder that returns wrong shapes (wrong dimension, wrong count, NaN, strings, None):
  the same degradations;
- a chat model whose structured output is malformed (extraction, and the combined reply):
  the turn completes on the fallbacks, recorded.

Every test ends with the invariant checker (the fixture), so nothing half-written remains.
Already covered elsewhere: an embedder that raises (test_store_contract, test_bad_input), a
chat model that raises (test_graph, test_nodes).
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_typed_memory import SqliteMemoryStore
from langgraph_typed_memory.config import DEFAULT_EMBED_TIMEOUT, normalize_index
from langgraph_typed_memory.errors import (
    ConfigurationError,
    EmbeddingDimensionMismatch,
    EmbeddingFailed,
)
from langgraph_typed_memory.graph import create_memory_chat_graph
from langgraph_typed_memory.store.sqlite.store import connect_sqlite
from tests.fake_embeddings import HashEmbeddings
from tests.fake_models import ScriptedChatModel, tool_reply

DIMS = 16
TIMEOUT = 0.3
"""Seconds: the embed_timeout of these tests (a hang lasts until the test ends)."""
FACTS = ("tenant:acme", "user:alice", "fact")
PREFS = ("tenant:acme", "user:alice", "preference")


class TroubledEmbeddings(HashEmbeddings):
    """Works until `mode` is set: then hangs (until released) or returns a wrong shape."""

    def __init__(self) -> None:
        super().__init__(DIMS)
        self.mode: str | None = None
        self.release = threading.Event()

    def _answer(self, good: list[list[float]]) -> Any:
        if self.mode is None:
            return good
        if self.mode == "hang":
            self.release.wait()
            return good
        return {
            "wrong_dims": [v[:-1] for v in good],
            "wrong_count": good[:-1] if len(good) > 1 else [],
            "nan": [[math.nan] * DIMS for _ in good],
            "strings": [["x"] * DIMS for _ in good],
            "none": None,
        }[self.mode]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._answer(super().embed_documents(texts))  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        answer = self._answer([super().embed_query(text)])
        return answer[0] if isinstance(answer, list) and answer else answer  # type: ignore[no-any-return]


@pytest.fixture
def embedder() -> Iterator[TroubledEmbeddings]:
    embeddings = TroubledEmbeddings()
    yield embeddings
    embeddings.release.set()  # let a hung call finish, so no thread outlives the test


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, "tenant_id": "acme", "user_id": "alice"}}


def turn(graph: Any, text: str, thread: str, *, use_async: bool = False) -> dict[str, Any]:
    inputs = {"messages": [HumanMessage(text)]}
    if use_async:
        return asyncio.run(graph.ainvoke(inputs, config(thread)))  # type: ignore[no-any-return]
    return graph.invoke(inputs, config(thread))  # type: ignore[no-any-return]


def degraded_turn(store: Any, embedder: TroubledEmbeddings, mode: str, why: str,
                  *, use_async: bool) -> None:
    """A turn with the embedder in `mode`: completes, degraded, recorded, nothing partial.

    `why`: a pattern the recorded reasons must match."""
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    embedder.mode = None
    turn(graph, "I live in Lyon.", f"{mode}-seed", use_async=use_async)
    embedder.mode = mode
    state = turn(graph, "Actually, I live in Paris now, not Lyon.", f"{mode}-t",
                 use_async=use_async)
    trace = state["memory_trace"]
    assert state["messages"][-1].content  # the turn completed with a reply
    # lexical (its names also bring in the entity graph: "lexical+entities")
    assert trace["retrieval"]["modes"]["facts"].split("+")[0] == "lexical", trace["retrieval"]
    assert any("embedder failed" in d and re.search(why, d) for d in trace["degraded"]), trace
    [promotion] = [p for p in trace["promotions"] if p["kind"] == "fact"]
    assert promotion["outcome"] == "superseded" and "not embedded" in promotion["reason"]
    assert re.search(why, promotion["reason"]), promotion["reason"]
    # The new version is whole: current, found lexically; the old one superseded.
    embedder.mode = None
    history = store.history(FACTS, promotion["key"])  # type: ignore[attr-defined]
    assert [v.status for v in history] == ["active", "superseded"]
    assert "Paris" in history[0].value["content"]
    found = store.search(FACTS, query="Paris")
    assert found and found[0].key == promotion["key"]


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_hanging_embedder_degrades_the_turn(backend_store_factory, embedder, use_async):
    store = backend_store_factory(
        {"dims": DIMS, "embed": embedder, "fields": ["text"], "embed_timeout": TIMEOUT})
    degraded_turn(store, embedder, "hang", "did not answer within 0.3 s", use_async=use_async)

    embedder.mode = "hang"  # a plain put cannot degrade: a typed error, nothing written
    with pytest.raises(EmbeddingFailed, match="embed_timeout"):
        store.put(FACTS, "f", {"subject": "user", "predicate": "pet", "content": "A cat."})
    with pytest.raises(EmbeddingFailed, match="Nothing was written"):
        store.put(("notes",), "n", {"text": "hello"})
    embedder.mode = None
    assert store.get(FACTS, "f") is None and store.get(("notes",), "n") is None


SHAPES = {
    "wrong_dims": "dims=16",
    "wrong_count": "EmbeddingDimensionMismatch|vectors for",
    "nan": "NaN",
    "strings": "non-number",
    "none": "NoneType",
}


def test_wrong_shapes_degrade_the_turn(backend_store_factory, embedder):
    for mode, why in SHAPES.items():
        store = backend_store_factory({"dims": DIMS, "embed": embedder, "fields": ["text"]})
        degraded_turn(store, embedder, mode, why, use_async=False)
        embedder.mode = mode
        with pytest.raises((EmbeddingFailed, EmbeddingDimensionMismatch)):
            store.put(FACTS, "f", {"subject": "user", "predicate": "pet", "content": "A cat."})
        embedder.mode = None
        assert store.get(FACTS, "f") is None


# ----------------------------------------------------------------------------- config


def test_embed_timeout_config():
    fake = HashEmbeddings(DIMS)
    assert normalize_index({"dims": DIMS, "embed": fake}).embed_timeout == DEFAULT_EMBED_TIMEOUT
    assert normalize_index({"dims": DIMS, "embed": fake, "embed_timeout": 2}).embed_timeout == 2.0
    assert normalize_index({"dims": DIMS, "embed": fake, "embed_timeout": None}
                           ).embed_timeout is None
    for bad in (0, -1, "10", True, math.inf, math.nan, 10_000):
        with pytest.raises(ConfigurationError, match="embed_timeout"):
            normalize_index({"dims": DIMS, "embed": fake, "embed_timeout": bad})


def test_no_timeout_calls_inline(embedder):
    """embed_timeout=None: the embedder runs in the caller's thread, without a limit."""
    threads: list[str] = []

    class Recording(HashEmbeddings):
        def embed_query(self, text: str) -> list[float]:
            threads.append(threading.current_thread().name)
            return super().embed_query(text)

    for timeout, inline in ((None, True), (5, False)):
        threads.clear()
        index = {"dims": DIMS, "embed": Recording(DIMS), "fields": ["text"],
                 "embed_timeout": timeout}
        with SqliteMemoryStore.from_conn_string(":memory:", index=index) as store:
            store.setup()
            store.search(FACTS, query="Lyon")
        assert (threads == [threading.current_thread().name]) is inline, threads


# ----------------------------------------------------------------------------- chat models


@pytest.fixture
def mem_store() -> Iterator[SqliteMemoryStore]:
    store = SqliteMemoryStore(connect_sqlite(":memory:"))
    store.setup()
    yield store
    assert store.check_invariants().ok
    store.conn.close()


def test_malformed_extraction_output_falls_back_to_rules(mem_store):
    model = ScriptedChatModel.of(
        "Noted.", tool_reply("ExtractionResult", {"candidates": "not a list"}))
    graph = create_memory_chat_graph(model, store=mem_store, checkpointer=InMemorySaver())
    state = turn(graph, "I live in Lyon and my dog's name is Rex.", "x")
    trace = state["memory_trace"]
    assert state["messages"][-1].content == "Noted."
    assert trace["extraction"]["method"] == "rules"
    assert any("extraction model failed" in d for d in trace["degraded"]), trace["degraded"]
    facts = [p["outcome"] for p in trace["promotions"] if p["kind"] == "fact"]
    assert facts == ["written", "written"]


def test_ungrounded_extraction_items_are_dropped_and_counted(mem_store):
    model = ScriptedChatModel.of("Noted.", tool_reply("ExtractionResult", {"candidates": [
        {"kind": "fact", "subject": "user", "predicate": "home_city", "content": "Lives in Oslo",
         "value": "Oslo", "confidence": 0.9, "grounding": "I live in Oslo"},  # not said
    ]}))
    graph = create_memory_chat_graph(model, store=mem_store, checkpointer=InMemorySaver())
    state = turn(graph, "I live in Lyon.", "x")
    extraction = state["memory_trace"]["extraction"]
    assert extraction["method"] == "model" and extraction["dropped"] == 1
    # nothing extracted (the model named no entity either); the turn itself is still logged
    assert [p["kind"] for p in state["memory_trace"]["promotions"]] == ["episode"]
    assert mem_store.search(FACTS) == []


def test_malformed_combined_reply_degrades(mem_store):
    model = ScriptedChatModel.of(tool_reply("ReplyWithMemories", {"reply": 5, "candidates": 1}))
    graph = create_memory_chat_graph(model, store=mem_store, checkpointer=InMemorySaver(),
                                     combined=True)
    state = turn(graph, "Please always answer in French.", "x")
    trace = state["memory_trace"]
    assert state["messages"][-1].content  # the offline reply
    assert any("malformed structured reply" in d for d in trace["degraded"]), trace["degraded"]
    assert trace["model_call"]["error"].startswith("model failed")
    assert all(p["outcome"] in ("written", "rejected") for p in trace["promotions"])
