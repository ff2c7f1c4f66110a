"""Tenant, user and agent ids as people have them: emails, domains, UUIDs.

A typed namespace's ids may hold "." and "@" (`tenant:acme.io`, `user:alice@example.com`) and
read back exactly as written, through the store and through the memory nodes. The store keeps
a namespace as one text whose labels are separated by "." (`namespaces.encode_namespace`), so
these tests check on every backend that a dotted id never reaches another scope: `a.b` next to
`a` and `b`, emails that share a prefix, and an email that is another one plus a suffix.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_typed_memory.errors import ConfigurationError, InvalidNamespace
from langgraph_typed_memory.namespaces import (
    Scope,
    decode_namespace,
    encode_namespace,
    memory_namespace,
    parse_namespace,
    scope_from_config,
)
from langgraph_typed_memory.nodes import create_promote_node, create_retrieve_node

EMAIL = "alice@example.com"
ID_UUID = str(uuid.UUID(int=42))
IDS = ["a", "b", "a.b", "b.a", "a.b.c", "ab", "acme.io", EMAIL, "alice@example.co",
       "alice@example.com.evil", "alice", ID_UUID, "x y/z", "ünï.cødé"]


def fact(text: str) -> dict[str, Any]:
    return {"subject": "user", "predicate": "note", "content": text}


def config(**configurable: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": "t1", **configurable}}


# ---------------------------------------------------------------- the stored text (pure)


@pytest.mark.parametrize("ident", IDS)
def test_a_namespace_round_trips_through_its_stored_text(ident):
    for ns in [("tenant:" + ident, "policy"), ("tenant:acme", "user:" + ident, "fact"),
               ("tenant:" + ident, "user:" + ident, "agent:" + ident, "episode")]:
        assert parse_namespace(ns).namespace() == ns
        assert decode_namespace(encode_namespace(ns)) == ns


def test_stored_texts_are_distinct_and_no_scope_prefixes_another():
    namespaces = [(f"tenant:{t}", f"user:{u}", "fact") for t in IDS for u in IDS]
    namespaces += [(f"tenant:{t}", "fact") for t in IDS]
    texts = {encode_namespace(ns): ns for ns in namespaces}
    assert len(texts) == len(namespaces)
    scopes = {encode_namespace(ns[:-1]) for ns in namespaces}
    for scope in scopes:
        for text, ns in texts.items():
            if text.startswith(scope + "."):  # the SQL prefix match of list_namespaces
                assert encode_namespace(ns[: len(decode_namespace(scope))]) == scope


def test_dot_free_namespaces_are_stored_as_before():
    for ns in [("tenant:acme", "user:alice", "fact"), ("memories", "alice"), ("docs",),
               ("users", "123", "prefs")]:
        assert encode_namespace(ns) == ".".join(ns)
        assert decode_namespace(".".join(ns)) == ns


def test_ids_that_cannot_name_a_scope_are_still_refused():
    for bad in ["a:b", "", "x" * 129, "tab\there", "newline\n"]:
        with pytest.raises(InvalidNamespace, match="invalid id"):
            memory_namespace("fact", tenant_id="acme", user_id=bad)
    assert memory_namespace("fact", tenant_id="acme.io", user_id=EMAIL) == (
        "tenant:acme.io", f"user:{EMAIL}", "fact")


# ---------------------------------------------------------------- the store, every backend


def test_email_and_domain_ids_round_trip_exactly(store):
    ns = ("tenant:acme.io", f"user:{EMAIL}", "agent:support.bot", "fact")
    store.put(ns, "city", fact("Alice lives in Lyon."))
    item = store.get(ns, "city")
    assert tuple(item.namespace) == ns
    assert item.memory["scope"] == {"tenant_id": "acme.io", "user_id": EMAIL,
                                    "agent_id": "support.bot"}
    [found] = store.search(ns, query="where does alice live")
    assert tuple(found.namespace) == ns
    assert store.list_namespaces(prefix=("tenant:acme.io",)) == [ns]
    assert store.list_namespaces(prefix=("tenant:acme.io", f"user:{EMAIL}")) == [ns]
    assert [tuple(v.namespace) for v in store.history(ns, "city")] == [ns]
    store.delete(ns, "city")
    assert store.get(ns, "city") is None
    assert [e["to_status"] for e in store.audit(ns, "city")] == ["active", "revoked"]


def test_dotted_ids_never_reach_into_another_scope(store):
    for tenant in ["a", "b", "a.b", "b.a", "a.b.c"]:
        store.put((f"tenant:{tenant}", "policy"), "p",
                  {"value": {"tenant": tenant}, "created_by": "ops"})
        for user in ["a", "b", "a.b", "a.b.c"]:
            store.put((f"tenant:{tenant}", f"user:{user}", "preference"), "who",
                      {"value": f"{tenant}/{user}"})
    for tenant in ["a", "b", "a.b", "b.a", "a.b.c"]:
        [policy] = store.search((f"tenant:{tenant}", "policy"))
        assert policy.value["value"] == {"tenant": tenant}
        listed = store.list_namespaces(prefix=(f"tenant:{tenant}",))
        assert listed and all(ns[0] == f"tenant:{tenant}" for ns in listed)
        for user in ["a", "b", "a.b", "a.b.c"]:
            ns = (f"tenant:{tenant}", f"user:{user}", "preference")
            assert [p.value["value"] for p in store.search(ns)] == [f"{tenant}/{user}"]
            assert store.get(ns, "who").value["value"] == f"{tenant}/{user}"
            listed = store.list_namespaces(prefix=ns[:2])
            assert listed == [ns]


def test_emails_sharing_a_prefix_stay_apart(store):
    users = [EMAIL, "alice@example.co", "alice@example.com.evil", "alice@example", "alice"]
    for user in users:
        store.put(("tenant:acme.io", f"user:{user}", "fact"), "mail",
                  fact(f"The user's mailbox is {user}."))
    for user in users:
        ns = ("tenant:acme.io", f"user:{user}", "fact")
        found = store.search(ns, query="mailbox")
        assert [i.value["content"] for i in found] == [f"The user's mailbox is {user}."]
        assert store.list_namespaces(prefix=ns[:2]) == [ns]
    assert store.search(("tenant:acme", f"user:{EMAIL}", "fact"), query="mailbox") == []
    assert store.list_namespaces(prefix=("tenant:acme",)) == []


# ---------------------------------------------------------------- the nodes, every backend


def test_the_nodes_scope_memory_by_email_and_domain(store):
    alice = config(tenant_id="acme.io", user_id=EMAIL)
    state = {"messages": [HumanMessage("I live in Lyon.")],
             "memory_candidates": [{"kind": "fact", "subject": "user", "predicate": "home_city",
                                    "content": "The user lives in Lyon.", "value": "Lyon",
                                    "confidence": 0.9, "grounding": "I live in Lyon"}],
             "memory_trace": {"turn_index": 1}}
    out = create_promote_node(store).invoke(state, alice)
    assert out["memory_trace"]["degraded"] == []
    assert {p["outcome"] for p in out["memory_trace"]["promotions"]} == {"written"}

    retrieve = create_retrieve_node(store)
    question = {"messages": [HumanMessage("Where do I live?")]}
    found = retrieve.invoke(question, alice)["memory_context"]["facts"]
    assert [f["value"]["content"] for f in found] == ["The user lives in Lyon."]
    assert tuple(found[0]["namespace"]) == ("tenant:acme.io", f"user:{EMAIL}", "fact")
    for other in [config(tenant_id="acme.io", user_id="alice@example.co"),
                  config(tenant_id="acme.io", user_id="alice@example.com.evil"),
                  config(tenant_id="acme", user_id=EMAIL),
                  config(tenant_id="acme.io.x", user_id=EMAIL)]:
        out = retrieve.invoke(question, other)
        assert out["memory_context"]["facts"] == [], other
        assert out["memory_trace"]["degraded"] == []


def test_configured_ids_are_taken_exactly():
    assert scope_from_config(config(tenant_id="acme.io", user_id=EMAIL, agent_id=ID_UUID)) \
        == Scope("acme.io", EMAIL, ID_UUID)
    assert scope_from_config(config(langgraph_auth_user_id="bob@example.org")).user_id == \
        "bob@example.org"


@pytest.mark.parametrize("key", ["tenant_id", "user_id", "agent_id", "langgraph_auth_user_id"])
def test_a_configured_id_that_cannot_name_a_scope_fails_the_first_call(key):
    bad = config(**{key: "urn:alice"})
    with pytest.raises(ConfigurationError, match=rf"configurable\['{key}'\]='urn:alice'"):
        scope_from_config(bad)
    with pytest.raises(ConfigurationError, match="urn:alice"):
        create_retrieve_node(_NeverCalled()).invoke({"messages": [HumanMessage("hi")]}, bad)
    with pytest.raises(ConfigurationError, match="urn:alice"):
        create_promote_node(_NeverCalled()).invoke(
            {"messages": [HumanMessage("I live in Lyon.")], "memory_trace": {}}, bad)


def test_a_thread_id_that_cannot_name_the_thread_scope_says_to_send_a_user_id():
    with pytest.raises(ConfigurationError, match="Send a user_id"):
        scope_from_config({"configurable": {"thread_id": "a:b"}})


class _NeverCalled:
    """A store the nodes must not reach: the configuration is refused first."""

    def batch(self, ops: Any) -> Any:
        raise AssertionError("the store was called")

    def promote(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the store was called")
