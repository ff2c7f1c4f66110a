"""LangMem's memory tools work on our stores exactly as on LangGraph's `InMemoryStore`.

One script of `manage_memory` / `search_memory` calls (create, update, delete, search with
limit, offset and filter, a second user, a structured profile in a sub-namespace, the tools'
argument errors) runs against LangGraph's `InMemoryStore` (the reference) and against each of
our backends, with the same index configuration and the shared fake embedder. Each output
must match: UUIDs are replaced by their order of first appearance (LangMem draws them with
`uuid4`), timestamps are not compared (only that both stores return them), scores must agree
within 1e-5, and unscored results spanning several namespaces are compared as sets (the
documented order difference, see tests/store/test_differential.py).

The tools are run four ways: called directly with `store=` (sync and async), and without
`store=` from a `ToolNode` in a one-node `StateGraph` compiled with `store=our_store`, fed an
`AIMessage` with the tool call (sync and async), which is how an agent calls them and how
LangMem finds the store (`get_store()`).

Typed namespaces are another matter: LangMem's `{"content": ...}` values fit no kind's schema,
and its templates fill whole labels only. The last tests pin down what does and does not work
there, and the documented recipe (LangMem for untyped notes beside the typed tools).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel

from langgraph_typed_memory import InvalidNamespace, SqliteMemoryStore, connect_sqlite
from langgraph_typed_memory.nodes import create_retrieve_node
from langgraph_typed_memory.tools import create_memory_tools
from tests.conftest import hash_index

langmem = pytest.importorskip("langmem")

U1 = {"configurable": {"langgraph_user_id": "u1"}}
U2 = {"configurable": {"langgraph_user_id": "u2"}}
MISSING = "00000000-0000-4000-8000-000000000000"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Profile(BaseModel):
    name: str
    languages: list[str] = []


# (tool, arguments, config); "$n" in an `id` stands for the n-th memory the run created.
SCRIPT: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("manage", {"content": "User prefers dark mode in every editor"}, U1),
    ("manage", {"content": "User's favourite language is Python"}, U1),
    ("manage", {"content": "User lives in Lyon and likes dark chocolate"}, U2),
    ("search", {"query": "dark mode editor"}, U1),
    ("search", {"query": "dark mode editor"}, U2),
    ("manage", {"action": "update", "id": "$0", "content": "User switched to light mode"}, U1),
    ("search", {"query": "light mode"}, U1),
    ("search", {"query": "mode", "limit": 1}, U1),
    ("search", {"query": "mode", "limit": 1, "offset": 1}, U1),
    ("search", {"query": "python", "filter": {"content": "User's favourite language is Python"}},
     U1),
    ("search", {"query": ""}, U1),
    ("profile", {"content": {"name": "Ada", "languages": ["Python", "Rust"]}}, U1),
    ("search", {"query": "which languages does the user know"}, U1),
    ("manage", {"action": "delete", "id": "$1"}, U1),
    ("search", {"query": "python language"}, U1),
    ("manage", {"action": "delete", "id": "$1"}, U1),  # deleting twice is not an error
    ("manage", {"action": "update", "id": MISSING, "content": "Upserted by update"}, U1),
    ("search", {"query": "upserted", "limit": 10}, U1),
    ("manage", {"action": "create", "id": MISSING, "content": "x"}, U1),  # error
    ("manage", {"action": "delete"}, U1),  # error
    ("search", {"query": "lyon"}, U2),
]

Caller = Callable[[str, dict[str, Any], dict[str, Any]], Any]


def tools(store: BaseStore | None) -> dict[str, Any]:
    return {
        "manage": langmem.create_manage_memory_tool(
            namespace=("memories", "{langgraph_user_id}"), store=store),
        "profile": langmem.create_manage_memory_tool(
            namespace=("memories", "{langgraph_user_id}", "profile"), schema=Profile,
            actions_permitted=("create", "update"), store=store, name="manage_profile"),
        "search": langmem.create_search_memory_tool(
            namespace=("memories", "{langgraph_user_id}"), store=store),
    }


def direct(store: BaseStore) -> Caller:
    found = tools(store)

    def call(tool: str, args: dict[str, Any], config: dict[str, Any]) -> Any:
        try:
            return found[tool].invoke(args, config)
        except ValueError as exc:
            return f"error: {exc}"

    return call


def direct_async(store: BaseStore) -> Callable[..., Awaitable[Any]]:
    found = tools(store)

    async def call(tool: str, args: dict[str, Any], config: dict[str, Any]) -> Any:
        try:
            return await found[tool].ainvoke(args, config)
        except ValueError as exc:
            return f"error: {exc}"

    return call


def tool_graph(store: BaseStore) -> Any:
    """A one-node graph: a `ToolNode` running LangMem's tools, which find the store at run time."""
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(list(tools(None).values()), handle_tool_errors=True))
    builder.add_edge(START, "tools")
    return builder.compile(store=store)


def message(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    name = tools(None)[tool].name
    return {"messages": [AIMessage("", tool_calls=[{"name": name, "args": args, "id": "c1"}])]}


def in_graph(store: BaseStore) -> Caller:
    graph = tool_graph(store)
    return lambda tool, args, config: graph.invoke(message(tool, args), config)[
        "messages"][-1].content


def in_graph_async(store: BaseStore) -> Callable[..., Awaitable[Any]]:
    graph = tool_graph(store)

    async def call(tool: str, args: dict[str, Any], config: dict[str, Any]) -> Any:
        return (await graph.ainvoke(message(tool, args), config))["messages"][-1].content

    return call


def resolve(args: dict[str, Any], created: list[str]) -> dict[str, Any]:
    ident = args.get("id")
    if isinstance(ident, str) and ident.startswith("$"):
        return {**args, "id": created[int(ident[1:])]}
    return args


def record(output: Any, created: list[str]) -> None:
    match = re.match(r"created memory (\S+)", str(output))
    if match:
        created.append(match.group(1))


def run(call: Caller) -> list[Any]:
    created: list[str] = []
    outputs = []
    for tool, args, config in SCRIPT:
        out = call(tool, resolve(args, created), config)
        record(out, created)
        outputs.append(out)
    return outputs


async def arun(call: Callable[..., Awaitable[Any]]) -> list[Any]:
    created: list[str] = []
    outputs = []
    for tool, args, config in SCRIPT:
        out = await call(tool, resolve(args, created), config)
        record(out, created)
        outputs.append(out)
    return outputs


def normalized(outputs: list[Any]) -> tuple[list[Any], list[list[float | None]]]:
    """UUIDs by order of appearance; search results without timestamps; scores apart."""
    names: dict[str, str] = {}

    def rename(text: str) -> str:
        return _UUID.sub(lambda m: names.setdefault(m.group(0), f"<id{len(names)}>"), text)

    shown, scores = [], []
    for out in outputs:
        text = rename(str(out))
        try:
            items = json.loads(text)
        except json.JSONDecodeError:
            shown.append(text)
            scores.append([])
            continue
        for item in items:
            assert set(item) == {"namespace", "key", "value", "created_at", "updated_at", "score"}
            del item["created_at"], item["updated_at"]
        scores.append([item.pop("score") for item in items])
        shown.append(items)
    return shown, scores


def unordered(items: list[dict[str, Any]], scores: list[float | None]) -> bool:
    """Unscored results from several namespaces: the documented order difference.

    `InMemoryStore` groups them by namespace, ours lists them in creation order (see
    tests/store/test_differential.py). The script's windows cover every match, so compare
    them as sets.
    """
    return all(s is None for s in scores) and len({tuple(i["namespace"]) for i in items}) > 1


def assert_same(ours: list[Any], reference: list[Any]) -> None:
    shown, scores = normalized(ours)
    ref_shown, ref_scores = normalized(reference)
    for step, (got, want) in enumerate(zip(shown, ref_shown, strict=True)):
        if isinstance(want, list) and unordered(want, ref_scores[step]):
            got, want = sorted(got, key=json.dumps), sorted(want, key=json.dumps)
        assert got == want, f"step {step} {SCRIPT[step]}"
    for step, (got, want) in enumerate(zip(scores, ref_scores, strict=True)):
        assert [s is None for s in got] == [s is None for s in want], f"step {step}"
        assert [s for s in got if s is not None] == pytest.approx(
            [s for s in want if s is not None], abs=1e-5), f"step {step} {SCRIPT[step]}"


INDEXES: dict[str, Callable[[], dict[str, Any] | None]] = {
    "no_index": lambda: None,
    "content": lambda: {**hash_index(), "fields": ["content"]},
    "whole_value": lambda: {k: v for k, v in hash_index().items() if k != "fields"},
    "text_only": hash_index,  # LangMem writes no `text` field: nothing gets a vector
}


@pytest.mark.parametrize("index", list(INDEXES))
def test_langmem_tools_match_in_memory_store(backend_store_factory, index):
    ours = run(direct(backend_store_factory(INDEXES[index]())))
    reference = run(direct(InMemoryStore(index=INDEXES[index]())))
    assert_same(ours, reference)
    scored = any(s is not None for step in normalized(ours)[1] for s in step)
    assert scored == (index in ("content", "whole_value"))  # ranked only when vectors exist


async def test_langmem_tools_async(backend_store_factory):
    ours = await arun(direct_async(backend_store_factory(INDEXES["content"]())))
    assert_same(ours, await arun(direct_async(InMemoryStore(index=INDEXES["content"]()))))


def test_langmem_tools_in_a_graph(backend_store_factory):
    ours = run(in_graph(backend_store_factory(INDEXES["content"]())))
    assert_same(ours, run(in_graph(InMemoryStore(index=INDEXES["content"]()))))
    assert any("Please fix your mistakes" in str(out) for out in ours)  # errors as messages


async def test_langmem_tools_in_a_graph_async(backend_store_factory):
    ours = await arun(in_graph_async(backend_store_factory(INDEXES["content"]())))
    assert_same(ours, await arun(in_graph_async(InMemoryStore(index=INDEXES["content"]()))))


def test_the_memories_are_plain_store_items(backend_store_factory):
    store = backend_store_factory(INDEXES["content"]())
    call = direct(store)
    key = call("manage", {"content": "User prefers tea"}, U1).split()[-1]
    uuid.UUID(key)
    item = store.get(("memories", "u1"), key)
    assert item is not None and item.value == {"content": "User prefers tea"}
    assert [i.key for i in store.search(("memories",), query="tea")] == [key]
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "u1")]


# Typed memory: what LangMem's tools can and cannot do there (docs/compatibility.md).

ALICE_TYPED = {"configurable": {"langgraph_user_id": "alice", "tenant_id": "acme",
                                "user_id": "alice", "run_id": "r1"}}


def sqlite_store() -> BaseStore:
    store = SqliteMemoryStore(connect_sqlite(":memory:"))
    store.setup()
    return store


@pytest.mark.parametrize("namespace", [
    ("tenant:acme", "user:alice", "fact"),
    ("tenant:acme", "user:alice", "preference"),
    ("tenant:acme", "user:alice", "episode"),
    ("tenant:acme", "user:{langgraph_user_id}", "fact"),
    ("tenant:acme", "{langgraph_user_id}", "fact"),
])
def test_langmem_cannot_write_typed_memory(namespace):
    store = sqlite_store()
    manage = langmem.create_manage_memory_tool(namespace=namespace, store=store)
    with pytest.raises(ValueError, match="schema|not typed|unexpected label|unfilled template"):
        manage.invoke({"content": "The user lives in Lyon."}, ALICE_TYPED)
    assert store.list_namespaces() == []


def test_langmem_fills_whole_labels_only():
    store = sqlite_store()
    for user in ("alice", "bob"):
        store.put(("tenant:acme", f"user:{user}", "fact"), "city", {
            "subject": user, "predicate": "home_city", "content": f"{user} lives in Lyon."})
    literal = ("tenant:acme", "user:{langgraph_user_id}", "fact")
    assert langmem.utils.NamespaceTemplate(literal)(ALICE_TYPED) == literal  # not filled
    unfilled = langmem.create_search_memory_tool(namespace=literal, store=store)
    with pytest.raises(InvalidNamespace, match="unfilled template"):  # not one shared user
        unfilled.invoke({"query": "Lyon"}, ALICE_TYPED)
    whole = langmem.create_search_memory_tool(
        namespace=("tenant:acme", "{memory_user}", "fact"), store=store)
    found = json.loads(whole.invoke({"query": "Lyon"}, {"configurable": {
        "memory_user": "user:alice"}}))
    assert [(hit["namespace"], hit["value"]["subject"]) for hit in found] == [
        (["tenant:acme", "user:alice", "fact"], "alice")]


def test_langmem_notes_beside_the_typed_tools_in_one_tool_node():
    """The documented recipe: LangMem for untyped notes, the typed tools for typed memory."""
    store = sqlite_store()
    notes = langmem.create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"))
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([notes, *create_memory_tools()]))
    builder.add_edge(START, "tools")
    graph = builder.compile(store=store)
    calls = [
        {"name": notes.name, "args": {"content": "Likes dark mode in every editor."}, "id": "c1"},
        {"name": "propose_fact", "args": {
            "subject": "user", "predicate": "home_city", "value": "Lyon",
            "content": "The user lives in Lyon.", "confidence": 0.9}, "id": "c2"},
    ]
    out = graph.invoke({"messages": [AIMessage("", tool_calls=calls)]}, ALICE_TYPED)
    said = [m.content for m in out["messages"][1:]]
    assert said[0].startswith("created memory") and said[1].startswith("written: fact")
    assert store.list_namespaces() == [("memories", "alice"), ("tenant:acme", "user:alice", "fact")]
    # The retrieve node reads typed memory only: the LangMem note never reaches the prompt.
    context = create_retrieve_node(store).invoke(
        {"messages": [HumanMessage("dark mode, and where do I live?")]}, ALICE_TYPED)[
            "memory_context"]
    shown = [item["value"] for slot in context.values() for item in slot]
    assert [v.get("content") for v in shown] == ["The user lives in Lyon."]
