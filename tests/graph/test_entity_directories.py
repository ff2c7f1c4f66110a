"""The nodes' entity directories: listed again only when the scope's entity records changed,
on every backend, and never kept past an erasure."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_typed_memory.entities.directories import DIRECTORIES, Directories
from langgraph_typed_memory.graph import create_memory_chat_graph

ALICE = ("tenant:acme", "user:alice")
BOB = ("tenant:acme", "user:bob")


def names(known: Any) -> list[str]:
    return [e.name for e in known.entities]


def read(dirs: Directories, store: Any, labels: tuple[str, ...]) -> tuple[Any, str]:
    """The directory and how the store answered its read."""
    ticket = dirs.read(store, labels)
    found = store.batch([ticket.op])[0]
    return dirs.known(store, labels, ticket, found), found.retrieval_mode


def test_a_directory_is_listed_again_only_after_its_scope_changed(store: Any) -> None:
    dirs = Directories()
    store.put((*ALICE, "entity"), "e1", {"name": "Lena", "type": "person"})
    first, mode = read(dirs, store, ALICE)
    assert (names(first), mode) == (["Lena"], "newest")
    again, mode = read(dirs, store, ALICE)
    assert mode == "unchanged" and again is first
    store.put((*BOB, "entity"), "e1", {"name": "Tom"})  # another scope's entities
    assert read(dirs, store, ALICE)[1] == "unchanged"
    store.put((*ALICE, "entity"), "e2", {"name": "Vienna", "type": "place"})
    known, mode = read(dirs, store, ALICE)  # only added to: the record added is listed alone
    assert (names(known), mode) == (["Lena", "Vienna"], "added")
    store.put((*ALICE, "entity"), "e3", {"name": "Graz", "type": "place"})
    store.put((*ALICE, "entity"), "e4", {"name": "Tom", "type": "person",
                                         "links": [["lives_in", "e3"]]})
    known, mode = read(dirs, store, ALICE)
    assert (names(known), mode) == (["Lena", "Vienna", "Graz", "Tom"], "added")
    assert known.links == (("e4", "lives_in", "e3"),)
    store.put((*ALICE, "entity"), "e1", {"name": "Lena", "aliases": ["Lenny"]})  # a rewrite
    known, mode = read(dirs, store, ALICE)  # changed otherwise too: listed whole again
    assert (names(known), mode) == (["Vienna", "Graz", "Tom", "Lena"], "newest")
    assert known.entities[-1].aliases == ("Lenny",)
    store.delete((*ALICE, "entity"), "e1")
    known, mode = read(dirs, store, ALICE)
    assert (names(known), mode) == (["Vienna", "Graz", "Tom"], "newest")
    for _ in range(2):  # what a directory holds is what listing it whole gives
        store.put((*ALICE, "entity"), "e5", {"name": "Oslo", "links": [["near", "e3"]]})
        known, _ = read(dirs, store, ALICE)
        whole, _ = read(Directories(), store, ALICE)
        assert (known.entities, known.links) == (whole.entities, whole.links)


def test_the_scopes_kept_are_bounded(store: Any) -> None:
    dirs = Directories(scopes=2)
    users = [("tenant:acme", f"user:u{i}") for i in range(3)]
    for labels in users:
        store.put((*labels, "entity"), "e1", {"name": "Lena"})
        read(dirs, store, labels)
    assert len(dirs) == 2
    assert read(dirs, store, users[0])[1] == "newest"  # the least recently read went first
    assert read(dirs, store, users[2])[1] == "unchanged"


def test_an_erasure_drops_the_directories_held(store: Any) -> None:
    dirs = Directories()
    store.put((*ALICE, "entity"), "e1", {"name": "Lena"})
    store.put((*BOB, "entity"), "e1", {"name": "Tom"})
    read(dirs, store, ALICE)
    read(dirs, store, BOB)
    assert len(dirs) == 2
    store.erase("acme", "alice")
    assert len(dirs) == 0  # no copy of the erased user's entities stays in memory
    known, mode = read(dirs, store, ALICE)
    assert (names(known), mode) == ([], "newest")
    read(dirs, store, BOB)
    store.erase("acme", "bob")  # the store is followed once, however often it forgets
    assert len(dirs) == 0 and len(store.records.dialect.cache._forgetting) == 1


def test_through_the_chat_loop_an_unchanged_directory_is_not_listed(store: Any,
                                                                     monkeypatch: Any) -> None:
    answers: list[str] = []
    batch = store.batch

    def watched(ops: Any) -> Any:
        out = batch(ops)
        answers.extend(r.retrieval_mode for op, r in zip(ops, out, strict=True)
                       if getattr(op, "namespace_prefix", ())[-1:] == ("entity",))
        return out

    monkeypatch.setattr(store, "batch", watched)
    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    config = {"configurable": {"tenant_id": "acme", "user_id": "alice", "thread_id": "t"}}
    for text in ("My sister Lena lives in Vienna.", "What does Lena do?",
                 "I like rainy days.", "Where does Lena live?"):
        out = graph.invoke({"messages": [HumanMessage(text)]}, config)
    # the first read lists the empty directory; after turn 1 wrote Lena and Vienna, turn 2's
    # question lists them alone (records were only added); every other read (each turn's
    # extract, turn 4's question) is answered "unchanged"
    assert answers == ["newest", "unchanged", "added", "unchanged", "unchanged"]
    assert out["memory_trace"]["retrieval"]["entities"]["named"] == ["Lena"]
    DIRECTORIES.forget(store)
