"""The contract every backend and connection mode must meet (one suite, run over all of them)."""

from __future__ import annotations

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp

from langgraph_typed_memory import (
    EmbeddingDimensionMismatch,
    EmbeddingFailed,
    InvalidNamespace,
    InvalidQuery,
    InvalidRecord,
    MemoryItem,
    StatusNotAllowed,
    UnknownKind,
)
from tests.conftest import call_maintenance, hash_index
from tests.fake_embeddings import FailingEmbeddings, HashEmbeddings, QueryFailingEmbeddings

ALICE_FACTS = ("tenant:acme", "user:alice", "fact")
ALICE_PREFS = ("tenant:acme", "user:alice", "preference")


def fact(content: str, subject: str = "alice", predicate: str = "note", **extra):
    return {"subject": subject, "predicate": predicate, "content": content, **extra}


# ------------------------------------------------------------------ untyped: LangGraph semantics


def test_untyped_put_get_update_delete(store, clock):
    ns = ("docs", "a")
    store.put(ns, "k", {"text": "first", "n": 1})
    created = store.get(ns, "k").created_at
    clock.advance(minutes=1)
    store.put(ns, "k", {"text": "second", "n": 2})
    item = store.get(ns, "k")
    assert item.value == {"text": "second", "n": 2}
    assert item.created_at == created and item.updated_at > created
    store.delete(ns, "k")
    assert store.get(ns, "k") is None
    assert store.search(ns) == []


def test_untyped_search_filter_limit_offset(store):
    ns = ("docs",)
    for i in range(5):
        store.put(ns, f"k{i}", {"text": f"doc {i}", "n": i, "meta": {"even": i % 2 == 0}})
    assert [i.key for i in store.search(ns, filter={"n": {"$gte": 3}})] == ["k3", "k4"]
    assert [i.key for i in store.search(ns, filter={"meta": {"even": True}})] == ["k0", "k2", "k4"]
    assert [i.key for i in store.search(ns, limit=2, offset=1)] == ["k1", "k2"]
    hits = store.search(ns, query="doc 3")
    assert hits[0].key == "k3" and hits[0].score == pytest.approx(max(h.score for h in hits))


def test_untyped_list_namespaces(store):
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z",)]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "x")]
    assert store.list_namespaces(suffix=("d",)) == [("a", "b", "d")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z",)]
    assert store.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c")]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "b", "d")]


def test_ttl_expiry_refresh_and_sweep(backend_store_factory, clock):
    store = backend_store_factory(None, clock=clock, ttl={"refresh_on_read": True})
    ns = ("sessions",)
    store.put(ns, "short", {"v": 1}, ttl=10)
    store.put(ns, "forever", {"v": 2})
    clock.advance(minutes=8)
    assert store.get(ns, "short") is not None  # refreshes: now expires at +18
    clock.advance(minutes=8)
    assert store.get(ns, "short", refresh_ttl=False) is not None
    clock.advance(minutes=3)
    assert store.get(ns, "short") is None
    assert [i.key for i in store.search(ns)] == ["forever"]
    assert call_maintenance(store, "sweep_ttl") == 1
    assert store.list_namespaces() == [("sessions",)]


def test_batch_reads_before_writes_last_put_wins(store):
    ns = ("b",)
    results = store.batch(
        [PutOp(ns, "k", {"v": 1}), GetOp(ns, "k"), PutOp(ns, "k", {"v": 2}), SearchOp(ns)]
    )
    assert results[1] is None and results[3] == []
    assert store.get(ns, "k").value == {"v": 2}


# ------------------------------------------------------------------ typed: schema and status


def test_typed_put_validates_and_normalizes(store):
    store.put(ALICE_FACTS, "f1", fact("Alice lives in Lyon", predicate="city"))
    item = store.get(ALICE_FACTS, "f1")
    assert isinstance(item, MemoryItem)
    assert item.value["confidence"] == 0.8 and item.value["content"] == "Alice lives in Lyon"
    assert item.memory["status"] == "active"
    assert item.memory["scope"] == {"tenant_id": "acme", "user_id": "alice", "agent_id": None}


@pytest.mark.parametrize(
    ("namespace", "value", "error", "names"),
    [
        (ALICE_FACTS, {"subject": "a", "predicate": "b"}, InvalidRecord, "content"),
        (ALICE_FACTS, fact("x", confidence=1.5), InvalidRecord, "confidence"),
        (ALICE_FACTS, fact("x", status="active"), StatusNotAllowed, "status"),
        (ALICE_FACTS, fact("x", superseded_by="f0"), StatusNotAllowed, "superseded_by"),
        (ALICE_FACTS, fact("x", colour="red"), InvalidRecord, "colour"),
        (ALICE_FACTS, fact("nul\x00byte"), InvalidRecord, "NUL"),
        (ALICE_FACTS, fact("bad \ud800 surrogate"), InvalidRecord, "surrogate"),
        (ALICE_PREFS, {"value": 1, "confidence": float("nan")}, InvalidRecord, "nan"),
        (("tenant:acme", "user:alice", "fcat"), fact("x"), UnknownKind, "fcat"),
        (("tenant:acme", "user:alice"), fact("x"), UnknownKind, "user:alice"),
        (("tenant:acme", "bob", "fact"), fact("x"), InvalidNamespace, "bob"),
        (("tenant:", "fact"), fact("x"), InvalidNamespace, "tenant:"),
        (("tenant:acme", "agent:a", "user:b", "fact"), fact("x"), InvalidNamespace, "user:b"),
    ],
)
def test_typed_bad_input_is_refused_and_writes_nothing(store, namespace, value, error, names):
    store.put(ALICE_FACTS, "keep", fact("existing memory"))
    before = store.get(ALICE_FACTS, "keep")
    with pytest.raises(error, match=names):
        store.batch([PutOp(ALICE_FACTS, "other", fact("valid")), PutOp(namespace, "k", value)])
    assert store.get(ALICE_FACTS, "other") is None
    assert store.get(ALICE_FACTS, "keep") == before


def test_supersession_keeps_history(store, clock):
    store.put(ALICE_PREFS, "format", {"value": "xml"})
    clock.advance(days=1)
    store.put(ALICE_PREFS, "format", {"value": "json"})
    store.put(ALICE_PREFS, "format", {"value": "json"})  # same value: no new version
    assert store.get(ALICE_PREFS, "format").value["value"] == "json"
    versions = store.history(ALICE_PREFS, "format")
    assert [(v.value["value"], v.status) for v in versions] == [
        ("json", "active"),
        ("xml", "superseded"),
    ]
    assert versions[1].memory["superseded_by"] == versions[0].memory["id"]
    current = [i.value["value"] for i in store.search(ALICE_PREFS)]
    assert current == ["json"]


def test_typed_delete_revokes(store):
    store.put(ALICE_FACTS, "f", fact("Alice likes tea"))
    store.delete(ALICE_FACTS, "f")
    assert store.get(ALICE_FACTS, "f") is None
    assert store.search(ALICE_FACTS, query="tea") == []
    assert [v.status for v in store.history(ALICE_FACTS, "f")] == ["revoked"]


def test_tenant_facts_enter_provisional(store):
    tenant = ("tenant:acme", "fact")
    store.put(tenant, "f", fact("Acme is headquartered in Oslo", subject="acme"))
    assert store.get(tenant, "f").status == "provisional"
    assert store.search(ALICE_FACTS, query="Oslo headquarters") == []


# ------------------------------------------------------------------ scope


def test_reads_see_own_and_wider_scopes_only(store):
    store.put(("tenant:acme", "preference"), "lang", {"value": "en", "source": "admin_set"})
    store.put(ALICE_PREFS, "format", {"value": "json"})
    store.put(("tenant:acme", "user:bob", "preference"), "format", {"value": "csv"})
    store.put(("tenant:acme", "agent:bot", "preference"), "style", {"value": "brief"})
    store.put(("tenant:other", "user:alice", "preference"), "format", {"value": "pdf"})
    seen = lambda ns: sorted((i.key, i.value["value"]) for i in store.search(ns))  # noqa: E731
    assert seen(ALICE_PREFS) == [("format", "json"), ("lang", "en")]
    assert seen(("tenant:acme", "user:alice", "agent:bot", "preference")) == [
        ("format", "json"), ("lang", "en"), ("style", "brief"),
    ]
    assert seen(("tenant:acme", "preference")) == [("lang", "en")]
    assert seen(("tenant:other", "user:bob", "preference")) == []


def test_scope_filter_runs_before_ranking(backend_store_factory):
    store = backend_store_factory(hash_index())
    mine = ("tenant:a", "user:u", "fact")
    texts = ["invoice total for march", "shipping address in Berlin", "favourite colour is green"]
    for i, text in enumerate(texts):
        store.put(mine, f"a{i}", fact(text))
    hits = store.search(mine, query="invoice total", limit=3)
    before = [(i.key, round(i.score, 6)) for i in hits]
    noisy = ("tenant:b", "user:u", "fact")
    store.batch(
        [PutOp(noisy, f"b{i}", fact(f"invoice total for march {i % 7}")) for i in range(10_000)]
    )
    after = store.search(mine, query="invoice total", limit=3)
    assert [(i.key, round(i.score, 6)) for i in after] == before
    assert all(i.memory["scope"]["tenant_id"] == "a" for i in after)
    theirs = store.search(noisy, query="shipping address Berlin favourite colour", limit=50)
    assert theirs and all(i.key.startswith("b") for i in theirs)


def test_word_rarity_is_counted_in_the_scope(backend_store_factory, clock):
    """BM25's document frequencies, row count and mean length are the searching scope's:
    another tenant's many rows holding a query word change neither this tenant's ranking nor
    its scores (the clock stands still: freshness weighs the scores too)."""
    store = backend_store_factory(None, clock=clock)  # lexical only
    mine = ("tenant:a", "user:u", "fact")
    store.batch([PutOp(mine, "x", fact("alpha")), PutOp(mine, "y", fact("beta beta"))]
                + [PutOp(mine, f"f{i}", fact(f"gamma delta {i}")) for i in range(6)])

    def ranking():
        hits = store.search(mine, query="alpha beta", limit=5)
        assert hits.retrieval_mode == "lexical"
        return [(i.key, round(i.score, 9), i.memory["lexical_rank"]) for i in hits]

    before = ranking()
    assert [key for key, *_ in before] == ["y", "x"]  # as rare here: the word said twice wins
    store.batch([PutOp(("tenant:b", "user:u", "fact"), f"b{i}", fact(f"beta {i}"))
                 for i in range(300)])
    assert ranking() == before


# ------------------------------------------------------------------ read paths


def test_known_scope_lookup_is_exhaustive(store):
    store.batch(
        [PutOp(ALICE_PREFS, f"p{i:03d}", {"value": i}) for i in range(150)]
        + [PutOp(("tenant:acme", "policy"), f"rule{i}", {"value": {"n": i}, "created_by": "ops"})
           for i in range(30)]
    )
    store.put(ALICE_PREFS, "p000", {"value": "changed"})
    prefs = store.search(ALICE_PREFS, query="anything", limit=5)
    assert prefs.retrieval_mode == "exact"
    assert len(prefs) == 150 and [p.key for p in prefs] == [f"p{i:03d}" for i in range(150)]
    assert prefs[0].value["value"] == "changed"
    policies = store.search(("tenant:acme", "user:alice", "policy"))
    assert len(policies) == 30 and [p.key for p in policies][:2] == ["rule0", "rule1"]


def test_newest_lists_the_namespaces_own_current_records_newest_first(store, clock):
    store.batch([PutOp(ALICE_FACTS, k, fact(f"note {k}", predicate=k)) for k in "abcd"])
    store.put(ALICE_FACTS, "a", fact("note a, changed", predicate="a"))  # newest now
    store.delete(ALICE_FACTS, "c")
    store.put(("tenant:acme", "fact"), "org", fact("tenant-wide", subject="acme"))
    newest = store.search(ALICE_FACTS, filter={"$newest": True}, limit=2)
    assert newest.retrieval_mode == "newest"
    assert [i.key for i in newest] == ["a", "d"] and newest[0].value["content"] == "note a, changed"
    rest = store.search(ALICE_FACTS, filter={"$newest": True, "predicate": "b"})
    assert [i.key for i in rest] == ["b"]  # the other filter keys still apply
    assert [i.key for i in store.search(ALICE_FACTS, filter={"$newest": True}, offset=2)] == ["b"]
    with pytest.raises(InvalidQuery, match=r"\$newest"):
        store.search(ALICE_FACTS, filter={"$newest": "yes"})


def test_a_newest_listing_is_conditional_on_the_version_it_returned(store, clock):
    entities = ("tenant:acme", "user:alice", "entity")
    store.put(entities, "e1", {"name": "Lena", "type": "person"})
    first = store.search(entities, filter={"$newest": True})
    assert [i.key for i in first] == ["e1"] and isinstance(first.version, str)

    def since(version):
        return store.search(entities, filter={"$newest": True, "$if_changed": version})

    same = since(first.version)
    assert same.retrieval_mode == "unchanged" and list(same) == [] and same.version == first.version
    # writes elsewhere (another user's entities, the user's facts) leave it as it was
    store.put(("tenant:acme", "user:bob", "entity"), "e1", {"name": "Tom"})
    store.put(ALICE_FACTS, "f", fact("note"))
    assert since(first.version).retrieval_mode == "unchanged"
    changes = [
        lambda: store.put(entities, "e2", {"name": "Vienna", "type": "place"}),  # added
        lambda: store.put(entities, "e1", {"name": "Lena", "aliases": ["Lenny"]}),  # changed
        lambda: store.delete(entities, "e2"),  # deleted
    ]
    version = first.version
    for change in changes:
        change()
        listed = since(version)
        assert listed.retrieval_mode == "newest" and listed.version != version
        assert [i.key for i in listed] == [i.key for i in store.search(
            entities, filter={"$newest": True})]
        version = listed.version
    assert since(version).retrieval_mode == "unchanged"
    # a record listed that expires makes the listing stale without any write
    store.put(entities, "e3", {"name": "Acme"}, ttl=5)
    listed = since(version)
    assert [i.key for i in listed] == ["e3", "e1"]
    assert since(listed.version).retrieval_mode == "unchanged"
    clock.advance(minutes=6)
    gone = since(listed.version)
    assert gone.retrieval_mode == "newest" and [i.key for i in gone] == ["e1"]
    with pytest.raises(InvalidQuery, match=r"\$if_changed"):
        store.search(entities, filter={"$if_changed": version})  # only with $newest
    with pytest.raises(InvalidQuery, match=r"not the version"):
        since("yesterday")
    with pytest.raises(InvalidQuery, match=r"\$if_changed"):
        since(7)


def test_a_conditional_listing_can_list_only_the_records_added(store, clock):
    entities = ("tenant:acme", "user:alice", "entity")
    store.put(entities, "e1", {"name": "Lena"}, ttl=60)

    def since(version, **more):
        return store.search(entities, filter={"$newest": True, "$if_changed": version,
                                              "$additions": True, **more})

    version = store.search(entities, filter={"$newest": True}).version
    assert since(version).retrieval_mode == "unchanged"
    store.put(entities, "e2", {"name": "Vienna", "type": "place"})
    store.put(entities, "e3", {"name": "Graz", "type": "place"})
    added = since(version)
    assert (added.retrieval_mode, [i.key for i in added]) == ("added", ["e3", "e2"])
    assert since(added.version).retrieval_mode == "unchanged"
    store.put(entities, "e4", {"name": "Oslo", "type": "place"})
    assert [i.key for i in since(version)] == ["e4", "e3", "e2"]  # from any version
    # the other filter keys apply to what was added; its version covers all of it
    places = store.search(entities, filter={"$newest": True, "$if_changed": added.version,
                                            "$additions": True, "type": "place"})
    assert [i.key for i in places] == ["e4"]
    assert since(places.version).retrieval_mode == "unchanged"
    # more added than the limit, a rewrite, a deletion, an expiry: listed whole
    whole = store.search(entities, filter={"$newest": True, "$if_changed": version,
                                           "$additions": True}, limit=2)
    assert (whole.retrieval_mode, [i.key for i in whole]) == ("newest", ["e4", "e3"])
    version = since(version).version
    for change in (lambda: store.put(entities, "e2", {"name": "Wien"}),
                   lambda: store.delete(entities, "e3"),
                   lambda: clock.advance(minutes=61)):
        change()
        listed = since(version)
        assert listed.retrieval_mode == "newest"
        assert [i.key for i in listed] == [i.key for i in store.search(
            entities, filter={"$newest": True})]
        version = listed.version
    assert [i.key for i in store.search(entities, filter={"$newest": True})] == ["e2", "e4"]
    with pytest.raises(InvalidQuery, match=r"\$additions"):
        store.search(entities, filter={"$newest": True, "$additions": True})
    with pytest.raises(InvalidQuery, match=r"\$additions"):
        since(version, **{"$additions": "yes"})


def test_a_filtered_newest_listing_reads_past_its_first_page(store, monkeypatch):
    from langgraph_typed_memory.store.core import listings

    monkeypatch.setattr(listings, "NEWEST_PAGE", 4)
    store.batch([PutOp(ALICE_FACTS, f"k{i:02d}", fact(f"note {i}", predicate=f"p{i % 5}"))
                 for i in range(23)])
    found = store.search(ALICE_FACTS, filter={"$newest": True, "predicate": "p0"}, limit=10)
    assert [i.key for i in found] == ["k20", "k15", "k10", "k05", "k00"]
    two = store.search(ALICE_FACTS, filter={"$newest": True, "predicate": "p0"}, limit=2,
                       offset=1)
    assert [i.key for i in two] == ["k15", "k10"]


def test_during_lists_the_records_of_a_span_latest_first(store):
    episodes = ("tenant:acme", "user:alice", "episode")
    days = {"e1": 1, "e2": 3, "e3": 3, "e4": 5, "e5": 8}  # March 2026
    store.batch([PutOp(episodes, key, {
        "title": key, "summary": f"what happened on day {day}",
        "occurred_at": f"2026-03-0{day}T12:00:00+00:00"}) for key, day in days.items()])
    store.put(episodes, "e6", {"title": "no time", "summary": "when? nobody said"})
    store.put(("tenant:acme", "user:bob", "episode"), "b1", {
        "title": "bob", "summary": "bob's day", "occurred_at": "2026-03-04T12:00:00+00:00"})
    span = ["2026-03-02T00:00:00+00:00", "2026-03-06T00:00:00+00:00"]
    found = store.search(episodes, filter={"$during": span}, limit=10)
    assert found.retrieval_mode == "during"
    assert [i.key for i in found] == ["e4", "e3", "e2"]  # latest first; a tie: the later write
    assert [i.key for i in store.search(episodes, filter={"$during": span}, limit=1,
                                        offset=1)] == ["e3"]
    only = store.search(episodes, filter={"$during": span, "title": "e2"})
    assert [i.key for i in only] == ["e2"]  # the other filter keys still apply
    end = "2026-03-05T12:00:00+00:00"  # the end is not in the span
    assert [i.key for i in store.search(episodes, filter={"$during": [span[0], end]})] == [
        "e3", "e2"]
    for bad in ("yesterday", [span[0]], [span[1], span[0]], ["2026-03-02T00:00:00", end]):
        with pytest.raises(InvalidQuery, match=r"\$during"):
            store.search(episodes, filter={"$during": bad})
    with pytest.raises(InvalidQuery, match="no query"):
        store.search(episodes, query="day", filter={"$during": span})


def test_a_filtered_during_listing_reads_past_its_first_page(store, monkeypatch):
    from langgraph_typed_memory.store.core import listings

    monkeypatch.setattr(listings, "NEWEST_PAGE", 4)
    episodes = ("tenant:acme", "user:alice", "episode")
    store.batch([PutOp(episodes, f"k{i:02d}", {
        "title": f"t{i % 5}", "summary": f"turn {i}",
        "occurred_at": f"2026-03-01T{i:02d}:00:00+00:00"}) for i in range(23)])
    span = ["2026-03-01T00:00:00+00:00", "2026-03-02T00:00:00+00:00"]
    found = store.search(episodes, filter={"$during": span, "title": "t0"}, limit=10)
    assert [i.key for i in found] == ["k20", "k15", "k10", "k05", "k00"]


def test_hybrid_ranks_exact_term_the_vector_misses(backend_store_factory):
    blind = {"dims": 32, "embed": HashEmbeddings(32, ignore=frozenset({"zq4471"})),
             "fields": ["text"]}
    topics = ["payment", "login", "search", "upload", "billing", "email"]
    filler = [f"what went wrong: an error in the {topics[i % 6]} service, ticket {i}"
              for i in range(30)]
    target = "checkout failed with zq4471"
    query = "what went wrong with zq4471"

    def ranking(retrieval):
        store = backend_store_factory(blind, retrieval=retrieval)
        store.batch([PutOp(ALICE_FACTS, f"n{i}", fact(t)) for i, t in enumerate(filler)]
                    + [PutOp(ALICE_FACTS, "target", fact(target))])
        hits = store.search(ALICE_FACTS, query=query, limit=5)
        return hits, [h.key for h in hits]

    vector_hits, vector_only = ranking({"lexical_weight": 0.0})
    assert "target" not in vector_only
    assert vector_hits.retrieval_mode == "vector"  # a zero-weight retriever is not run
    hybrid_hits, hybrid = ranking(None)
    assert hybrid_hits.retrieval_mode == "hybrid"
    assert hybrid[0] == "target"
    top = hybrid_hits[0].memory
    assert top["lexical_rank"] == 1 and top["tier"] in {"high", "standard", "low"}


def test_cascade_reports_the_mode(backend_store_factory):
    data = [PutOp(ALICE_FACTS, "f", fact("Alice moved to Lyon in May"))]
    no_embedder = backend_store_factory(None)
    no_embedder.batch(data)
    hits = no_embedder.search(ALICE_FACTS, query="Lyon")
    assert hits.retrieval_mode == "lexical" and hits[0].key == "f"
    like = no_embedder.search(ALICE_FACTS, query="yon")  # no full word matches: substring
    assert like.retrieval_mode == "like" and like[0].key == "f"

    failing = backend_store_factory(
        {"dims": 32, "embed": QueryFailingEmbeddings(32), "fields": ["text"]}
    )
    failing.batch(data)
    degraded = failing.search(ALICE_FACTS, query="Lyon")
    assert degraded.retrieval_mode == "lexical" and degraded[0].key == "f"
    assert "embedder failed" in degraded.degraded[0]

    with_vectors = backend_store_factory(hash_index())
    with_vectors.batch(data)
    only_vector = with_vectors.search(ALICE_FACTS, query="?!")  # no lexical terms
    assert only_vector.retrieval_mode == "vector" and only_vector[0].key == "f"


def test_ranked_search_respects_filter_and_window(store):
    store.batch([
        PutOp(ALICE_FACTS, f"f{i}", fact(f"trip to Rome day {i}", metadata={"day": i}))
        for i in range(12)
    ])
    hits = store.search(ALICE_FACTS, query="trip Rome", filter={"metadata": {"day": 3}})
    assert [h.key for h in hits] == ["f3"]
    page1 = [h.key for h in store.search(ALICE_FACTS, query="trip Rome", limit=4)]
    page2 = [h.key for h in store.search(ALICE_FACTS, query="trip Rome", limit=4, offset=4)]
    assert len(page1) == len(page2) == 4 and not set(page1) & set(page2)


# ------------------------------------------------------------------ embeddings and errors


def test_wrong_embedding_dimension_writes_nothing(backend_store_factory):
    store = backend_store_factory({"dims": 8, "embed": HashEmbeddings(16), "fields": ["text"]})
    with pytest.raises(EmbeddingDimensionMismatch, match="dims=8"):
        store.put(ALICE_FACTS, "f", fact("x"))
    with pytest.raises(EmbeddingDimensionMismatch):
        store.put(("notes",), "n", {"text": "hello"})
    assert store.get(ALICE_FACTS, "f") is None and store.get(("notes",), "n") is None


def test_failing_embedder_on_write_writes_nothing(backend_store_factory):
    store = backend_store_factory({"dims": 8, "embed": FailingEmbeddings(), "fields": ["text"]})
    with pytest.raises(EmbeddingFailed, match="Nothing was written"):
        store.put(("notes",), "n", {"text": "hello"})
    store.put(("notes",), "n2", {"text": "hello"}, index=False)
    assert store.get(("notes",), "n") is None and store.get(("notes",), "n2") is not None


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"limit": -1}, InvalidQuery),
        ({"limit": 10**18 + 1}, InvalidQuery),
        ({"offset": -5}, InvalidQuery),
        ({"filter": {"n": {"$regex": ".*"}}}, InvalidQuery),
        ({"filter": "n = 1; DROP TABLE memories"}, InvalidQuery),
        ({"query": "x" * 9000}, InvalidQuery),
    ],
)
def test_bad_search_arguments(store, kwargs, error):
    with pytest.raises(error):
        store.search(("docs",), **kwargs)


def test_sql_metacharacters_are_data(store):
    nasty = "k'; DROP TABLE memories; --%_*"
    store.put(("docs", "x%_"), nasty, {"text": "a\"b'c%_"})
    store.put(("docs", "xab"), "k", {"text": "other"})
    assert store.get(("docs", "x%_"), nasty).value == {"text": "a\"b'c%_"}
    assert [i.key for i in store.search(("docs", "x%_"))] == [nasty]
    hits = store.search(ALICE_FACTS, query="\"' OR 1=1 -- NEAR(a b) *")
    assert hits == []


def test_setup_is_idempotent(store):
    call_maintenance(store, "setup")
    store.put(("docs",), "k", {"text": "still here"})
    assert store.get(("docs",), "k") is not None


async def test_async_api(store):
    await store.aput(ALICE_FACTS, "f", fact("Alice adopted a cat named Miso"))
    await store.aput(("notes",), "n", {"text": "cat food"})
    assert (await store.aget(ALICE_FACTS, "f")).value["content"].endswith("Miso")
    hits = await store.asearch(ALICE_FACTS, query="cat name")
    assert hits[0].key == "f" and hits.retrieval_mode == "hybrid"
    assert await store.alist_namespaces(prefix=("notes",)) == [("notes",)]
    assert [v.status for v in await store.ahistory(ALICE_FACTS, "f")] == ["active"]
    await store.adelete(("notes",), "n")
    assert await store.aget(("notes",), "n") is None


def test_audit_trail_answers_why(store, clock):
    store.put(ALICE_PREFS, "format", {"value": "xml"})
    clock.advance(hours=1)
    store.put(ALICE_PREFS, "format", {"value": "json"})
    clock.advance(hours=1)
    store.delete(ALICE_PREFS, "format")
    events = store.audit(ALICE_PREFS, "format")
    assert [(e["from_status"], e["to_status"], e["actor"]) for e in events] == [
        (None, "active", "store.put"),
        ("active", "superseded", "store.put"),
        (None, "active", "store.put"),
        ("active", "revoked", "store.delete"),
    ]
    versions = {v.value["value"]: v.memory["id"] for v in store.history(ALICE_PREFS, "format")}
    assert events[1]["memory_id"] == versions["xml"] and versions["json"] in events[1]["reason"]
    assert events[3]["at"] > events[0]["at"]


def test_invariant_checker_detects_a_broken_database(tmp_path):
    import sqlite3

    from langgraph_typed_memory import SqliteMemoryStore

    path = str(tmp_path / "broken.db")
    with SqliteMemoryStore.from_conn_string(path) as store:
        store.setup()
        store.put(ALICE_PREFS, "format", {"value": "xml"})
        store.put(ALICE_PREFS, "format", {"value": "json"})
        assert store.check_invariants().ok
        raw = sqlite3.connect(path)
        raw.execute("UPDATE memories SET superseded_by = 'nowhere' WHERE status = 'superseded'")
        raw.execute("UPDATE memories SET status = 'expired' WHERE status = 'active'")
        raw.commit()
        raw.close()
        report = store.check_invariants()
        assert not report.ok
        assert set(report.violations) == {
            "superseded rows point at an existing row",
            "every typed record's status is the last one its audit log records",
        }


def test_vector_results_follow_writes_and_expiry(store, clock):
    store.put(ALICE_FACTS, "a", fact("the garden has red tulips"))
    first = store.search(ALICE_FACTS, query="red tulips garden")
    assert [h.key for h in first] == ["a"]
    store.put(ALICE_FACTS, "b", fact("red tulips bloom in the garden in spring"), ttl=60)
    assert {h.key for h in store.search(ALICE_FACTS, query="red tulips garden")} == {"a", "b"}
    clock.advance(minutes=61)
    assert [h.key for h in store.search(ALICE_FACTS, query="red tulips garden")] == ["a"]


def test_new_records_join_the_cached_vectors_without_a_reload(store, clock):
    cache = store.records.dialect.vectors
    store.put(ALICE_FACTS, "a", fact("the garden has red tulips"))
    assert [h.key for h in store.search(ALICE_FACTS, query="red tulips")] == ["a"]
    loads = cache.full_loads
    store.batch([PutOp(ALICE_FACTS, k, fact(f"red tulips number {k}")) for k in ("b", "c")])
    assert {h.key for h in store.search(ALICE_FACTS, query="red tulips")} == {"a", "b", "c"}
    assert (cache.full_loads, cache.appended_loads) == (loads, 1)
    # Another user's write moves only their cell: nothing to fetch here.
    store.put(("tenant:acme", "user:bob", "fact"), "x", fact("red tulips for bob", "bob"))
    assert {h.key for h in store.search(ALICE_FACTS, query="red tulips")} == {"a", "b", "c"}
    assert (cache.full_loads, cache.appended_loads) == (loads, 1)
    # A deletion (or a status change) is logged: the record is masked, not the scope read
    # again.
    store.delete(ALICE_FACTS, "b")
    assert {h.key for h in store.search(ALICE_FACTS, query="red tulips")} == {"a", "c"}
    assert (cache.full_loads, cache.patched_loads) == (loads, 1)
    # A tenant fact waits as provisional for a second source: its vector is counted in a
    # cell alice sees, but it is not active, so the appended rows fall short: reload.
    loads = cache.full_loads
    store.promote([{"kind": "fact", "subject": "acme", "predicate": "office_flowers",
                    "content": "red tulips at the head office", "confidence": 0.9}],
                  tenant_id="acme", run_id="r")
    assert {h.key for h in store.search(ALICE_FACTS, query="red tulips")} == {"a", "c"}
    assert cache.full_loads == loads + 1


def test_changed_records_are_patched_into_the_cached_scope(store, clock, monkeypatch):
    """A deletion, a correction and an expiry change mask the record's cached rows and add
    its rows as they are now (the vector cache here; the postings likewise), with the
    results of a fresh store. A change the log no longer holds (trimmed by the sweep's
    garbage collection before a search read it) reloads the scope instead."""
    from langgraph_typed_memory.store.governance import sweeps as freshness

    cache = store.records.dialect.vectors
    for key in "abcd":
        store.put(ALICE_FACTS, key, fact(f"red tulips in bed {key}"))

    def found(query: str = "red tulips") -> list[str]:
        return [h.key for h in store.search(ALICE_FACTS, query=query, limit=10)]

    assert sorted(found()) == ["a", "b", "c", "d"]
    loads = cache.full_loads
    store.delete(ALICE_FACTS, "b")
    assert sorted(found()) == ["a", "c", "d"]
    store.put(ALICE_FACTS, "a", fact("white roses by the gate"))  # a correction
    store.put(ALICE_FACTS, "c", fact("red tulips in bed c"), ttl=60)  # same value, an expiry
    assert sorted(found()) == ["a", "c", "d"]
    hit = store.search(ALICE_FACTS, query="white roses gate", limit=1)[0]
    assert (hit.key, hit.value["content"]) == ("a", "white roses by the gate")
    clock.advance(minutes=61)
    assert sorted(found()) == ["a", "d"]
    assert (cache.full_loads, cache.patched_loads) == (loads, 2)
    monkeypatch.setattr(freshness, "CHANGES_KEPT", 0)
    store.delete(ALICE_FACTS, "d")
    store.sweep()
    assert found() == ["a"]
    assert (cache.full_loads, cache.patched_loads) == (loads + 1, 2)


def test_a_database_from_before_the_change_log_is_upgraded_and_patched(
        make_store, clock, monkeypatch):
    """A database set up before migration 0015 (the log of changed records) and holding
    records takes the log at its next setup; a delete after that is patched into the cached
    scope. (The records are written by today's write path, so the columns it writes, the
    kept tokens of migration 0022, SQLite's sign bits of 0027 and Postgres' tsvector made
    by the insert, of its 0027, are there.)"""
    from langgraph_typed_memory.store.postgres.dialect import PostgresDialect
    from langgraph_typed_memory.store.sqlite.dialect import SqliteDialect

    for dialect in (SqliteDialect, PostgresDialect):
        monkeypatch.setattr(dialect, "migrations", lambda self, dims, every=dialect.migrations:
                            tuple(m for m in every(self, dims)
                                  if m[0] < "0015" or m[0] in ("0022_search_tokens",
                                                               "0027_sign_bits",
                                                               "0027_search_parsed_once")))
    store = make_store(hash_index(), clock=clock)
    store.batch([PutOp(ALICE_FACTS, k, fact(f"red tulips in bed {k}")) for k in "abc"])
    monkeypatch.undo()
    call_maintenance(store, "setup")
    cache = store.records.dialect.vectors
    assert sorted(h.key for h in store.search(ALICE_FACTS, query="red tulips")) == [
        "a", "b", "c"]
    store.delete(ALICE_FACTS, "b")
    assert sorted(h.key for h in store.search(ALICE_FACTS, query="red tulips")) == ["a", "c"]
    assert (cache.full_loads, cache.patched_loads) == (1, 1)


def test_cached_priors_follow_real_changes_only(store, clock):
    """The priors of a ranked search come from the vector cache: a confidence change (by
    feedback) patches the record's rows and shows in the score; a restatement, which sets a
    record's status again to what it was, changes nothing the cache holds and reloads
    nothing."""
    cache = store.records.dialect.vectors
    notes = ("tenant:acme", "user:alice", "observation")
    store.put(notes, "o1", {"category": "format", "quote": "Asks for CSV exports.",
                            "confidence": 0.6})
    before = store.search(notes, query="CSV exports")[0]
    loads = cache.full_loads
    store.feedback(notes, "o1", "correct")  # confidence 0.6 -> 0.8
    after = store.search(notes, query="CSV exports")[0]
    assert after.score > before.score
    assert (cache.full_loads, cache.patched_loads) == (loads, 1)
    fact = {"kind": "fact", "subject": "user", "predicate": "bird",
            "content": "swallows fly west", "confidence": 0.9}
    store.promote([fact], tenant_id="acme", user_id="alice", run_id="r1")
    found = [h.key for h in store.search(ALICE_FACTS, query="swallows")]
    loads = cache.full_loads
    outcome = store.promote([fact], tenant_id="acme", user_id="alice", run_id="r2")
    assert [o.outcome for o in outcome] == ["deduplicated"]
    assert [h.key for h in store.search(ALICE_FACTS, query="swallows")] == found
    assert (cache.full_loads, cache.patched_loads) == (loads, 1)


def test_sqlite_vector_cache_sees_other_connections_writes(tmp_path):
    from langgraph_typed_memory import SqliteMemoryStore

    path = str(tmp_path / "shared.db")
    with SqliteMemoryStore.from_conn_string(path, index=hash_index()) as reader, \
            SqliteMemoryStore.from_conn_string(path, index=hash_index()) as writer:
        reader.setup()
        writer.put(ALICE_FACTS, "a", fact("blue whales sing"))
        assert [h.key for h in reader.search(ALICE_FACTS, query="whales sing")] == ["a"]
        writer.put(ALICE_FACTS, "b", fact("humpback whales sing songs"))
        assert {h.key for h in reader.search(ALICE_FACTS, query="whales sing")} == {"a", "b"}
        writer.delete(ALICE_FACTS, "a")
        assert [h.key for h in reader.search(ALICE_FACTS, query="whales sing")] == ["b"]


def test_a_second_store_on_the_same_connection_sees_the_first_ones_writes(store, clock, backend):
    if backend.startswith("async"):
        pytest.skip("an async store owns its connection's event loop")
    other = type(store)(store.conn, index=hash_index(), clock=clock)
    store.put(ALICE_FACTS, "a", fact("blue whales sing"))
    assert [h.key for h in other.search(ALICE_FACTS, query="whales sing")] == ["a"]
    store.put(ALICE_FACTS, "b", fact("humpback whales sing songs"))
    assert {h.key for h in other.search(ALICE_FACTS, query="whales sing")} == {"a", "b"}
    store.put(ALICE_FACTS, "a", fact("grey seals bark"))  # a re-put replaces the vector
    assert [h.key for h in other.search(ALICE_FACTS, query="whales sing")][0] == "b"
    store.delete(ALICE_FACTS, "b")
    assert [h.key for h in other.search(ALICE_FACTS, query="whales sing")] == ["a"]


def test_writes_to_one_tenant_keep_answers_right_for_all(store):
    other = ("tenant:other", "user:u", "fact")
    store.put(ALICE_FACTS, "a", fact("swallows fly south"))
    store.put(other, "o", fact("swallows fly north"))
    assert [h.key for h in store.search(ALICE_FACTS, query="swallows fly")] == ["a"]
    assert [h.key for h in store.search(other, query="swallows fly")] == ["o"]
    store.put(other, "o2", fact("swallows fly east"))
    assert [h.key for h in store.search(ALICE_FACTS, query="swallows fly")] == ["a"]
    assert {h.key for h in store.search(other, query="swallows fly")} == {"o", "o2"}
    store.promote([{"kind": "fact", "subject": "user", "predicate": "bird",
                    "content": "swallows fly west", "confidence": 0.9}],
                  tenant_id="acme", user_id="alice", run_id="r")
    assert len(store.search(ALICE_FACTS, query="swallows fly")) == 2
    store.erase("acme", "alice")
    assert store.search(ALICE_FACTS, query="swallows fly") == []
    assert len(store.search(other, query="swallows fly")) == 2
