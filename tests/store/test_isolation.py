"""Isolation: no read path ever returns memory from outside the caller's scope.

Hypothesis generates multi-tenant datasets (every kind, untyped items too, near-duplicate
texts across scopes, ids that differ by a suffix, a case or a SQL wildcard, updates and
deletes) and random reads through every read path: `get`, `search` (hybrid, lexical-only,
vector-weighted, the LIKE fallback, list and exhaustive lookup, with filters and windows),
`list_namespaces`, `history`, the retrieve node, the search tool, and untyped searches. A
second property covers the promotion gate: a proposal never lands in, or changes, a scope
the caller cannot see.

The caller's visible scope (docs/namespaces.md): same tenant, record user None or the caller's
user, record agent None or the caller's agent. Every returned item is checked against a model
of what was written: it must exist there, at that namespace and key, with that value, in a
scope the caller can see. Exhaustive reads (policy, preference and procedure lookups, lists,
`list_namespaces`, `get`) must also return everything they should, in order.

For speed, each test uses one store per backend and configuration; every generated example
writes into its own universe of tenants (a fresh tag prefixes every tenant id), so the data
of earlier examples stays behind as cross-tenant noise that no read may ever see. (A leak
that depends on that noise makes Hypothesis report a flaky failure: its replay runs in a
fresh universe. The first failure it saw is attached.)
"""

from __future__ import annotations

import ast
import asyncio
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, MatchCondition, PutOp

from langgraph_typed_memory import MemoryItem
from langgraph_typed_memory.namespaces import EXACT_KINDS, KINDS, Scope, is_typed
from langgraph_typed_memory.nodes import create_retrieve_node
from langgraph_typed_memory.scoring import matches_filter
from langgraph_typed_memory.tools import create_search_memory_tool
from tests.conftest import hash_index

READ_EXAMPLES = 50
"""Datasets per backend in the normal run; each is read `READS_PER_DATASET` times."""
READS_PER_DATASET = 20
"""Reads per dataset, through every path (see `reads_for`)."""
PROMOTE_EXAMPLES = 100
STRESS = 10
"""The slow variants (`make stress`: `pytest -m slow --run-slow`) run 10x the examples."""

TENANTS = ["acme", "acme2", "ac%", "ac_e", "Acme", "acme.io"]  # prefixes, wildcards, case, dots
USERS = ["alice", "alice2", "al%", "_", "bob", "alice.bob", "alice@example.com"]
AGENTS = ["bot", "bot2", "b*t"]
KEYS = ["k0", "k1", "%", "_", "k'0"]
SENTENCES = [
    "The user lives in Lyon near gate {n}",
    "Invoice {n} was paid in March",
    "Favourite colour is green shade {n}",
    "Shipping address is Berlin flat {n}",
]
VOCAB = sorted({w.lower() for s in SENTENCES for w in s.split() if w != "{n}"} | {"3", "7"})
FRAGMENTS = ["yon", "nvoic", "reen", "erli", "ippin", "avour"]  # substrings only: LIKE fallback
NASTY = ["?!", "...", "%", "_", "*", "'", "' OR 1=1 --", "NEAR(lyon gate)", '"lyon"', "lyon*",
         "a AND OR NOT b", "gate:*"]
PROJECTS = ["p1", "p2"]
CONFIGS = {
    "hybrid": {"index": hash_index()},
    "lexical": {"index": None},
    "vector": {"index": hash_index(), "retrieval": {"lexical_weight": 0.0}},
}
TOOL_KINDS = ["fact", "episode", "preference", "policy", "procedure"]
SLOTS = {"policies": "policy", "procedures": "procedure", "preferences": "preference",
         "facts": "fact", "episodes": "episode"}
ASYNC_BACKENDS = {"async_sqlite", "async_postgres"}
HYPOTHESIS = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


# ------------------------------------------------------------------ scopes and the model


def visible(record: Scope, caller: Scope) -> bool:
    """The visibility rule: same tenant, and a user / agent that is absent or the caller's own."""
    return (
        record.tenant_id == caller.tenant_id
        and record.user_id in (None, caller.user_id)
        and record.agent_id in (None, caller.agent_id)
    )


def scope_dict(scope: Scope) -> dict[str, str | None]:
    return {"tenant_id": scope.tenant_id, "user_id": scope.user_id, "agent_id": scope.agent_id}


def contains(stored: Any, written: dict[str, Any]) -> bool:
    """A normalized typed value holds every field that was written, unchanged."""
    return isinstance(stored, dict) and all(stored.get(k) == v for k, v in written.items())


@dataclass
class Record:
    ns: tuple[str, ...]
    key: str
    kind: str | None
    """None: untyped."""
    scope: Scope | None
    value: dict[str, Any]
    seq: int
    """Creation order of the current row (what list mode sorts by)."""

    @property
    def searchable(self) -> bool:
        """Active: tenant-wide facts enter `provisional`, invisible to search."""
        assert self.scope is not None
        return not (self.kind == "fact" and self.scope.level == "tenant")


@dataclass
class Model:
    """What the store should hold: the current record at each (namespace, key)."""

    current: dict[tuple[tuple[str, ...], str], Record] = field(default_factory=dict)
    versions: dict[tuple[tuple[str, ...], str], list[dict[str, Any]]] = field(
        default_factory=dict
    )
    seq: itertools.count = field(default_factory=itertools.count)

    def apply(self, batch: list[Write]) -> None:
        """One store batch: the last write to a key wins."""
        last = {(w.ns, w.key): w for w in batch}
        for address, w in last.items():
            old = self.current.get(address)
            if w.value is None:
                self.current.pop(address, None)  # typed: revoked; untyped: deleted
                continue
            if old is not None and old.value == w.value:
                continue  # same value: no new version
            if w.kind is not None:
                self.versions.setdefault(address, []).append(w.value)
            keep = old.seq if old is not None and w.kind is None else next(self.seq)
            self.current[address] = Record(w.ns, w.key, w.kind, w.scope, w.value, keep)

    def visible_records(self, caller: Scope, kind: str) -> list[Record]:
        return sorted(
            (r for r in self.current.values()
             if r.kind == kind and r.scope is not None and visible(r.scope, caller)),
            key=lambda r: r.seq,
        )


# ------------------------------------------------------------------ strategies


@dataclass(frozen=True)
class Write:
    ns: tuple[str, ...]
    key: str
    kind: str | None
    scope: Scope | None
    value: dict[str, Any] | None


def typed_value(kind: str, text: str, n: int, project: str) -> dict[str, Any]:
    meta = {"metadata": {"project": project, "n": n}}
    if kind == "policy":
        return {"value": {"limit": n, "rule": text}, "created_by": "ops", **meta}
    if kind == "preference":
        return {"value": text, **meta}
    if kind == "fact":
        return {"subject": "user", "predicate": "note", "content": text, **meta}
    if kind == "episode":
        return {"title": f"Task {n}", "summary": text, **meta}
    if kind == "procedure":
        return {"rule": text, **meta}
    if kind == "entity":
        return {"name": text, "type": "place", "aliases": [f"gate {n}"], **meta}
    return {"category": "habit", "quote": text, **meta}


relative_scopes = st.builds(
    Scope,
    st.sampled_from(TENANTS),
    st.none() | st.sampled_from(USERS),
    st.none() | st.sampled_from(AGENTS),
)


@st.composite
def sentences(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(SENTENCES)).format(n=draw(st.integers(0, 12)))


WRITE_MOVES = ["none"] * 4 + ["wider"] * 3 + ["user", "agent", "narrower", "tenant"]
READ_MOVES = ["none"] * 4 + ["narrower"] * 4 + ["wider", "user", "agent", "tenant"]


@st.composite
def near(draw: st.DrawFn, homes: list[Scope], moves: list[str]) -> Scope:
    """A home scope or a neighbour: wider, narrower, another user, agent or tenant."""
    if not homes or draw(st.integers(0, 9)) == 0:
        return draw(relative_scopes)
    home = draw(st.sampled_from(homes))
    tenant, user, agent = home.tenant_id, home.user_id, home.agent_id
    change = draw(st.sampled_from(moves))
    if change == "wider":
        user, agent = draw(st.sampled_from([(None, agent), (user, None), (None, None)]))
    elif change == "user":
        user = draw(st.none() | st.sampled_from(USERS))
    elif change == "agent":
        agent = draw(st.none() | st.sampled_from(AGENTS))
    elif change == "narrower":
        user = user or draw(st.sampled_from(USERS))
        agent = agent or draw(st.sampled_from(AGENTS))
    elif change == "tenant":
        tenant = draw(st.sampled_from(TENANTS))
    return Scope(tenant, user, agent)


@st.composite
def relative_writes(draw: st.DrawFn, homes: list[Scope], kinds: list[str]) -> tuple[Any, ...]:
    """A write with tenant names still untagged: (scope, kind or None, key, value, place)."""
    kind = draw(st.sampled_from([*kinds, "untyped"]))
    key = draw(st.sampled_from(KEYS))
    n, text = draw(st.integers(0, 12)), draw(sentences())
    project = draw(st.sampled_from(PROJECTS))
    if draw(st.integers(0, 9)) == 0:
        value = None  # a delete
    elif kind == "untyped":
        value = {"text": text, "n": n, "project": project}
    else:
        value = typed_value(kind, text, n, project)
    place = draw(st.integers(0, 4))  # where an untyped item lives
    return draw(near(homes, WRITE_MOVES)), None if kind == "untyped" else kind, key, value, place


@st.composite
def datasets(draw: st.DrawFn) -> list[list[tuple[Any, ...]]]:
    """One to three write batches clustered around a few home scopes and kinds."""
    homes = draw(st.lists(relative_scopes, min_size=1, max_size=3))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=2, max_size=4, unique=True))
    batch = st.lists(relative_writes(homes, kinds), min_size=4, max_size=16)
    return draw(st.lists(batch, min_size=1, max_size=3))


def untyped_namespace(tag: str, tenant: str, place: int) -> tuple[str, ...]:
    """Untyped namespaces that look like typed ones without being typed."""
    return [
        ("docs", tag),
        ("docs", tag, "x%"),
        ("docs", f"{tag}_0"),  # its string starts with the first one's (no tag has a _)
        ("docs", tag, "user:alice"),  # a scope label but no kind: untyped
        ("tenant", untyped_label(tenant), "fact"),  # no colon: untyped
    ][place]


def untyped_label(ident: str) -> str:
    """An id as an untyped label, which cannot hold "." (a typed id can: `acme.io`)."""
    return ident.replace(".", "-")


def tagged(scope: Scope, tag: str) -> Scope:
    return Scope(f"{tag}-{scope.tenant_id}", scope.user_id, scope.agent_id)


def to_write(raw: tuple[Any, ...], tag: str) -> Write:
    rel, kind, key, value, place = raw
    scope = tagged(rel, tag)
    if kind is None:
        return Write(untyped_namespace(tag, scope.tenant_id, place), key, None, None, value)
    return Write((*scope.labels(), kind), key, kind, scope, value)


queries = st.one_of(
    sentences(),
    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4).map(" ".join),
    st.sampled_from(FRAGMENTS),
    st.sampled_from(NASTY),
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12),
)
filters = st.sampled_from([
    None, None, None, {"metadata": {"project": "p1"}}, {"metadata": {"project": "p2"}},
    {"metadata": {"n": {"$gte": 6}}}, {"metadata": {"n": {"$lt": 6}, "project": "p1"}},
])


@dataclass(frozen=True)
class Read:
    path: str
    caller: Scope
    kind: str = "fact"
    key: str = "k0"
    query: str | None = None
    filter: dict[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    extra: int = 0


@st.composite
def aimed(
    draw: st.DrawFn, typed: list[tuple[Scope, str]], path: str, allowed: list[str],
    **fields: st.SearchStrategy[Any],
) -> Read:
    """A read whose caller and kind are mostly near what was written, sometimes anything."""
    targets = [(scope, kind) for scope, kind in typed if kind in allowed]
    if targets and draw(st.integers(0, 9)):
        scope, kind = draw(st.sampled_from(targets))
        caller = draw(near([scope], READ_MOVES))
    else:
        caller, kind = draw(relative_scopes), draw(st.sampled_from(allowed))
    return Read(path, caller, kind, **{name: draw(value) for name, value in fields.items()})


def reads_for(raw_writes: list[tuple[Any, ...]]) -> st.SearchStrategy[list[Read]]:
    """Twenty reads through every path, aimed at (and around) what was written."""
    typed = sorted({(w[0], w[1]) for w in raw_writes if w[1] is not None}, key=repr)
    keys = st.sampled_from(sorted({w[2] for w in raw_writes}) or KEYS) | st.sampled_from(KEYS)
    exact, ranked = sorted(EXACT_KINDS), ["fact", "episode", "observation"]

    def some(count: int, path: str, allowed: list[str], **fields: Any) -> st.SearchStrategy:
        read = aimed(typed, path, allowed, **fields)
        return st.lists(read, min_size=count, max_size=count)

    return st.tuples(
        some(3, "get", list(KINDS), key=keys),
        some(2, "history", list(KINDS), key=keys),
        some(2, "search", exact, query=st.none() | queries, filter=filters),
        some(2, "search", ranked, filter=filters, limit=st.sampled_from([1, 3, 10_000]),
             offset=st.sampled_from([0, 1, 5])),
        some(4, "search", ranked, query=queries, filter=filters,
             limit=st.sampled_from([1, 3, 10, 10_000]), offset=st.sampled_from([0, 0, 1, 5])),
        some(2, "list_namespaces", list(KINDS), extra=st.integers(0, 4)),
        some(2, "untyped", list(KINDS), query=st.none() | queries,
             limit=st.sampled_from([2, 10_000]), extra=st.integers(0, 5)),
        some(1, "node", list(KINDS), query=st.just("") | queries),
        some(2, "tool", TOOL_KINDS, query=st.just("") | queries,
             limit=st.sampled_from([1, 5, 20])),
    ).map(lambda groups: [read for group in groups for read in group])


# ------------------------------------------------------------------ checking reads


@dataclass
class Universe:
    """One example's tenants, its model, and the store configuration it was written to."""

    tag: str
    model: Model
    config: str
    store: BaseStore
    use_async: bool
    stats: Counter[str]
    """Retrieval modes seen, reads run, items checked."""

    def check_item(self, item: Any, caller: Scope, kind: str) -> Record:
        """A typed item returned to `caller`: real, visible, and reported truthfully."""
        assert isinstance(item, MemoryItem), item
        record = self.model.current.get((tuple(item.namespace), item.key))
        assert record is not None, f"not a current record of this universe: {item}"
        assert record.scope is not None and visible(record.scope, caller), (
            f"{caller} sees {record.scope} through {kind}"
        )
        assert record.kind == kind == item.memory["kind"]
        assert item.memory["scope"] == scope_dict(record.scope)
        assert contains(item.value, record.value)
        self.stats["items"] += 1
        self.stats["wider scope items"] += record.scope != caller
        return record


def run(universe: Universe, read: Read) -> None:
    caller = tagged(read.caller, universe.tag)
    CHECKS[read.path](universe, read, caller)


def check_get(u: Universe, read: Read, caller: Scope) -> None:
    ns = (*caller.labels(), read.kind)
    item = u.store.get(ns, read.key)
    record = u.model.current.get((ns, read.key))
    if record is None:
        assert item is None, item
    else:
        assert u.check_item(item, caller, read.kind) is record
        assert tuple(item.namespace) == ns


def check_history(u: Universe, read: Read, caller: Scope) -> None:
    ns = (*caller.labels(), read.kind)
    versions = u.store.history(ns, read.key)
    written = u.model.versions.get((ns, read.key), [])
    assert len(versions) == len(written)
    for version, value in zip(versions, reversed(written), strict=True):
        assert tuple(version.namespace) == ns and version.key == read.key
        assert version.memory["scope"] == scope_dict(caller)
        assert contains(version.value, value)
    if versions:
        current = u.model.current.get((ns, read.key))
        expected = "revoked" if current is None else ("active", "provisional")
        assert versions[0].status in expected


def expected_search(u: Universe, read: Read, caller: Scope) -> list[Record]:
    return [
        r for r in u.model.visible_records(caller, read.kind)
        if r.searchable and matches_filter(r.value, read.filter)
    ]


def check_search(u: Universe, read: Read, caller: Scope) -> None:
    ns = (*caller.labels(), read.kind)
    found = u.store.search(ns, query=read.query, filter=read.filter, limit=read.limit,
                           offset=read.offset)
    u.stats[found.retrieval_mode] += 1
    records = [u.check_item(item, caller, read.kind) for item in found]
    assert len({id(r) for r in records}) == len(records), "a record returned twice"
    expected = expected_search(u, read, caller)
    assert all(r in expected for r in records)
    if read.kind in EXACT_KINDS:  # every visible record, widest scope first, then by key
        order = sorted(expected, key=lambda r: (r.scope.user_id is not None,
                                                r.scope.agent_id is not None, r.key))
        assert records == order
    elif not read.query:  # list mode: creation order, windowed
        assert records == expected[read.offset: read.offset + read.limit]
    elif u.config == "lexical":  # no embedder: BM25, else substrings
        assert found.retrieval_mode in ("lexical", "like") and len(records) <= read.limit
    else:  # the vector retriever scores every in-scope record
        assert found.retrieval_mode in ("hybrid", "vector")
        assert len(records) == min(read.limit, max(0, len(expected) - read.offset))


def check_list_namespaces(u: Universe, read: Read, caller: Scope) -> None:
    tenant, user = caller.labels()[0], f"user:{caller.user_id}"
    prefix, suffix, depth = [
        ((tenant,), None, None),
        ((tenant, user), None, None),
        ((tenant,), (read.kind,), None),
        ((tenant, "*", read.kind), None, None),
        ((tenant,), None, 2),
    ][read.extra]
    found = u.store.list_namespaces(prefix=prefix, suffix=suffix, max_depth=depth, limit=10_000)

    def wanted(ns: tuple[str, ...]) -> bool:
        if len(ns) < len(prefix) or (suffix and ns[-len(suffix):] != suffix):
            return False
        return all(p in ("*", n) for p, n in zip(prefix, ns, strict=False))

    namespaces = {r.ns for r in u.model.current.values() if wanted(r.ns)}
    assert found == sorted({ns[:depth] if depth else ns for ns in namespaces})


def check_untyped(u: Universe, read: Read, caller: Scope) -> None:
    prefix = [(), ("docs",), ("docs", u.tag), ("tenant", untyped_label(caller.tenant_id)),
              ("docs", u.tag, "user:alice"), ("docs", u.tag)][read.extra]  # 2 twice as often
    found = u.store.search(prefix, query=read.query, limit=read.limit)
    assert not any(isinstance(i, MemoryItem) or is_typed(tuple(i.namespace)) for i in found)
    if read.extra >= 2:  # prefixes inside this universe: compare with the model
        expected = [r for r in sorted(u.model.current.values(), key=lambda r: r.seq)
                    if r.kind is None and r.ns[: len(prefix)] == prefix]
        got = [(tuple(i.namespace), i.key) for i in found]
        assert len(set(got)) == len(got)
        assert set(got) <= {(r.ns, r.key) for r in expected}
        if read.limit >= len(expected):
            assert len(got) == len(expected)
        for item in found:
            assert item.value == u.model.current[tuple(item.namespace), item.key].value


def configurable(caller: Scope) -> dict[str, Any]:
    scope = {"tenant_id": caller.tenant_id, "user_id": caller.user_id,
             "agent_id": caller.agent_id}
    return {"configurable": {k: v for k, v in scope.items() if v is not None}}


def invoke(u: Universe, runnable: Any, payload: Any, config: dict[str, Any]) -> Any:
    if u.use_async:
        return asyncio.run(runnable.ainvoke(payload, config))
    return runnable.invoke(payload, config)


def check_node(u: Universe, read: Read, caller: Scope) -> None:
    node = create_retrieve_node(u.store)
    out = invoke(u, node, {"messages": [HumanMessage(read.query or "")]}, configurable(caller))
    trace = out["memory_trace"]
    assert trace["retrieval"]["retrieval_mode"] != "failed", trace["degraded"]
    assert (trace["tenant_id"], trace["user_id"], trace["agent_id"]) == (
        caller.tenant_id, caller.user_id, caller.agent_id)
    for slot, kind in SLOTS.items():
        items = out["memory_context"][slot]
        records = []
        for data in items:
            item = MemoryItem(tuple(data["namespace"]), data["key"], data["value"],
                              data["created_at"], data["updated_at"], memory=data["memory"])
            records.append(u.check_item(item, caller, kind))
        expected = [r for r in u.model.visible_records(caller, kind) if r.searchable]
        if kind in EXACT_KINDS:
            assert sorted(id(r) for r in records) == sorted(id(r) for r in expected)
        else:
            assert set(map(id, records)) <= set(map(id, expected))


def shows(text: str, value: Any) -> bool:
    """Whether the tool printed this value (dicts compare as dicts: jsonb reorders keys)."""
    if isinstance(value, dict) and text.startswith("{"):
        return ast.literal_eval(text) == value
    return text == str(value)


_LINE = re.compile(r"^- \[(\w+)(?:, (?:high|standard|low))?\] (.+?): (.*)$")


def check_tool(u: Universe, read: Read, caller: Scope) -> None:
    tool = create_search_memory_tool(u.store)
    text = invoke(u, tool, {"query": read.query or "", "kind": read.kind, "limit": read.limit},
                  configurable(caller))
    expected = [r for r in u.model.visible_records(caller, read.kind) if r.searchable]
    if text == "No memory found.":
        assert read.kind not in EXACT_KINDS or not expected
        return
    header, *lines = text.split("\n")
    assert header.startswith(f"Found {len(lines)} "), text
    for line in lines:
        match = _LINE.match(line)
        assert match, line
        kind, key, shown = match.groups()
        assert kind == read.kind
        assert any(r.key == key and any(shows(shown, v) for v in r.value.values())
                   for r in expected), f"{caller} got {line!r} from outside its scope"
    if read.kind in EXACT_KINDS:
        assert len(lines) == len(expected)
    else:
        assert len(lines) <= read.limit


CHECKS: dict[str, Callable[[Universe, Read, Scope], None]] = {
    "get": check_get,
    "history": check_history,
    "search": check_search,
    "list_namespaces": check_list_namespaces,
    "untyped": check_untyped,
    "node": check_node,
    "tool": check_tool,
}


# ------------------------------------------------------------------ the read property


def reads_never_cross_scope(
    factory: Callable[..., BaseStore], backend: str, examples: int
) -> Counter[str]:
    stores = {name: factory(**config) for name, config in CONFIGS.items()}
    tags = (f"u{i}" for i in itertools.count())
    stats: Counter[str] = Counter()

    @settings(max_examples=examples, **HYPOTHESIS)
    @given(
        batches=datasets(),
        data=st.data(),
    )
    def check(batches: list[list[tuple[Any, ...]]], data: st.DataObject) -> None:
        tag = next(tags)
        config = sorted(CONFIGS)[int(tag[1:]) % len(CONFIGS)]  # each configuration in turn
        universe = Universe(tag, Model(), config, stores[config], backend in ASYNC_BACKENDS,
                            stats)
        for raw in batches:
            batch = [to_write(w, universe.tag) for w in raw]
            universe.store.batch([PutOp(w.ns, w.key, w.value) for w in batch])
            universe.model.apply(batch)
        for read in data.draw(reads_for([w for raw in batches for w in raw])):
            run(universe, read)
            stats["reads"] += 1

    check()
    return stats


def test_reads_never_cross_scope(backend_store_factory, backend) -> None:
    stats = reads_never_cross_scope(backend_store_factory, backend, READ_EXAMPLES)
    assert stats["reads"] >= 1_000
    assert {"exact", "list", "hybrid", "vector", "lexical", "like"} <= set(stats), stats
    assert stats["wider scope items"] > 50, stats  # reads do see the shared scopes


@pytest.mark.slow
def test_reads_never_cross_scope_long(backend_store_factory, backend) -> None:
    stats = reads_never_cross_scope(backend_store_factory, backend, READ_EXAMPLES * STRESS)
    assert stats["reads"] >= 10_000


# ------------------------------------------------------------------ the promotion property


@st.composite
def proposals(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["fact", "fact", "preference", "episode", "policy"]))
    n, text = draw(st.integers(0, 4)), draw(sentences())
    common = {"confidence": draw(st.sampled_from([0.9, 0.75, 0.95, 0.4])),
              "scope": draw(st.sampled_from(["user", "agent", "tenant"]))}
    if kind == "fact":
        return {"kind": "fact", "subject": draw(st.sampled_from(["user", "acme"])),
                "predicate": draw(st.sampled_from(["home_city", "employer", "pet"])),
                "content": text, "value": n, "correction": draw(st.booleans()),
                "grounding": f"I said {n}", **common}
    if kind == "preference":
        return {"kind": "preference", "key": draw(st.sampled_from(KEYS)), "value": text,
                **common}
    if kind == "episode":
        return {"kind": "episode", "title": f"Task {n}", "content": text,
                "task_complete": draw(st.sampled_from([True, True, False])), **common}
    return {"kind": "policy", "key": "refunds", "value": {"max": n}}


def promotions(homes: list[Scope]) -> st.SearchStrategy[tuple[Any, ...]]:
    """(caller, proposals, run id, source): callers near a few home scopes, so they collide."""
    return st.tuples(
        near(homes, WRITE_MOVES),
        st.lists(proposals(), min_size=1, max_size=4),
        st.sampled_from(["run-1", "run-2", "run-1", None]),
        st.sampled_from([None, "tool:search"]),
    )


@st.composite
def promotion_plans(draw: st.DrawFn) -> tuple[list[tuple[Any, ...]], tuple[Any, ...]]:
    """Earlier promotions, then the one under test (often an earlier caller's, again)."""
    homes = draw(st.lists(relative_scopes, min_size=1, max_size=3))
    setup = draw(st.lists(promotions(homes), min_size=1, max_size=5))
    target = draw(promotions(homes))
    repeat = draw(st.integers(0, 5))
    if repeat < len(setup):  # an earlier caller offers its proposals again, and more
        caller, batch, *_ = setup[repeat]
        target = (caller, [*batch, *target[1]], *target[2:])
    return setup, target


def scope_of(ns: tuple[str, ...]) -> Scope:
    ids = {label.split(":", 1)[0]: label.split(":", 1)[1] for label in ns[:-1]}
    return Scope(ids["tenant"], ids.get("user"), ids.get("agent"))


def universe_state(
    store: BaseStore, tenants: Iterable[str], keys: set[tuple[str, str]]
) -> dict[tuple[tuple[str, ...], str], Any]:
    """Every current record at the known (kind, key)s in the universe's namespaces."""
    listed = store.batch([
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", (f"tenant:{t}",)),),
                         limit=10_000)
        for t in tenants
    ])
    spaces = sorted({ns for found in listed for ns in found})
    addresses = [(ns, key) for ns in spaces for kind, key in sorted(keys) if ns[-1] == kind]
    items = store.batch([GetOp(ns, key) for ns, key in addresses])
    return {a: item.dict() for a, item in zip(addresses, items, strict=True) if item is not None}


def promote(store: BaseStore, raw: tuple[Any, ...], tag: str) -> tuple[Scope, list[Any]]:
    rel, batch, run_id, source = raw
    caller = tagged(rel, tag)
    outcomes = store.promote(batch, tenant_id=caller.tenant_id, user_id=caller.user_id,
                             agent_id=caller.agent_id, run_id=run_id, turn=1, source=source)
    assert len(outcomes) == len(batch)
    return caller, outcomes


def promotion_stays_in_scope(factory: Callable[..., BaseStore], examples: int) -> Counter[str]:
    store = factory(hash_index())
    tags = (f"p{i}" for i in itertools.count())
    seen: Counter[str] = Counter()

    @settings(max_examples=examples, **HYPOTHESIS)
    @given(plan=promotion_plans())
    def check(plan: tuple[list[tuple[Any, ...]], tuple[Any, ...]]) -> None:
        setup, target = plan
        tag = next(tags)
        tenants = [f"{tag}-{t}" for t in TENANTS]
        keys = {(o.kind, o.key) for raw in setup for o in promote(store, raw, tag)[1] if o.key}
        before = universe_state(store, tenants, keys)
        caller, outcomes = promote(store, target, tag)
        keys |= {(o.kind, o.key) for o in outcomes if o.key}
        after = universe_state(store, tenants, keys)
        for (ns, key), state in after.items():
            if before.get((ns, key)) != state:  # written or changed by the target promotion
                assert visible(scope_of(ns), caller), f"{caller} changed {ns} {key}"
        for address, state in before.items():
            if not visible(scope_of(address[0]), caller):
                assert after.get(address) == state, f"{caller} changed {address}"
                seen["records of other scopes kept"] += 1
        for outcome in outcomes:
            seen[outcome.outcome] += 1
            landed = [ns for (ns, _), s in after.items() if s["memory"]["id"] == outcome.id]
            assert all(visible(scope_of(ns), caller) for ns in landed), (outcome, landed)

    check()
    return seen


def test_promotion_never_lands_in_or_changes_another_scope(backend_store_factory) -> None:
    seen = promotion_stays_in_scope(backend_store_factory, PROMOTE_EXAMPLES)
    assert {"written", "deduplicated", "superseded", "rejected"} <= set(seen), seen
    assert seen["records of other scopes kept"] > 50, seen


@pytest.mark.slow
def test_promotion_never_lands_in_or_changes_another_scope_long(backend_store_factory) -> None:
    promotion_stays_in_scope(backend_store_factory, PROMOTE_EXAMPLES * STRESS)


def city(name: str, confidence: float) -> dict[str, Any]:
    return {"kind": "fact", "subject": "user", "predicate": "home_city",
            "content": f"The user lives in {name}.", "confidence": confidence}


def test_repeated_contradiction_is_deduplicated(store) -> None:
    alice = {"tenant_id": "acme", "user_id": "alice", "run_id": "run-1"}
    store.promote([city("Lyon", 0.95)], **alice)
    first = store.promote([city("Nice", 0.75)], **alice)[0]
    assert first.outcome == "contradicted"
    again = store.promote([city("Nice", 0.75)], **alice)[0]
    assert again.outcome == "deduplicated" and again.id == first.id
