def test_put_get_search(store):
    ns = ("tenant:acme", "user:alice", "fact")
    store.put(ns, "f1", {"subject": "alice", "predicate": "city", "content": "Alice lives in Lyon"})
    store.put(("notes", "a"), "n1", {"text": "hello world"})
    assert store.get(ns, "f1").value["content"] == "Alice lives in Lyon"
    hits = store.search(ns, query="where does alice live")
    assert hits.retrieval_mode == "hybrid"
    assert hits[0].key == "f1"
    res = store.search(("notes",), query="hello")
    assert res[0].key == "n1" and res[0].score is not None
    assert store.list_namespaces() == [("notes", "a"), ("tenant:acme", "user:alice", "fact")]
