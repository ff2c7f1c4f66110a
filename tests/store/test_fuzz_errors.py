"""Fuzzing the public calls: a bad argument raises the package's typed error, and writes nothing.

Hypothesis calls every public store call (`get`, `put`, `delete`, `search`,
`list_namespaces`, `batch`, `history`, `audit`, `promote`, their async twins) and the
namespace builders (`memory_namespace`, `parse_namespace`) with arbitrary arguments: wrong
types, None, bytes, lists where tuples go, odd strings (NUL, lone surrogates, dots, the
reserved root, unfilled templates, thousands of characters), NaN and infinities, integers past
64 bits, values nested thousands deep or holding themselves, and near-valid calls with one
argument broken. Each call either succeeds or raises a subclass of `TypedMemoryError`;
anything else (a `TypeError`, a `RecursionError`, a driver's error) fails the test. When a
call raises, the store must be as before: the rows of `memories`, `memory_vectors` and
`memory_audit` (count and newest row) are unchanged. The backend fixture checks the
database's invariants after each test.

The default run makes `CASES` calls per backend; the slow variant (`make stress`:
`pytest -m slow --run-slow`) makes `STRESS_CASES`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import (
    BaseStore,
    GetOp,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from langgraph_typed_memory import memory_namespace, parse_namespace
from langgraph_typed_memory.errors import TypedMemoryError, shown
from langgraph_typed_memory.gate import Proposal
from langgraph_typed_memory.store.core.protocol import Sql
from tests.conftest import FakeClock, hash_index

logger = logging.getLogger(__name__)

CASES = 300
"""Calls per backend in the default run (a few seconds)."""
STRESS_CASES = 6_000
"""Calls per backend in the slow variant."""
HYPOTHESIS = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                              HealthCheck.large_base_example, HealthCheck.filter_too_much],
}


class BigInt(int):
    """An integer past what Python prints (4,300 digits) whose repr still works, so that
    Hypothesis can report an example holding one; the store sees an int."""

    def __repr__(self) -> str:
        return f"BigInt(<{self.bit_length()} bits>)"


def nested(depth: int, leaf: Any = 1, as_dict: bool = False) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"x": value} if as_dict else [value]
    return value


def cyclic() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


# ------------------------------------------------------------------ strategies

KINDS = ["policy", "preference", "fact", "episode", "procedure", "observation", "entity"]
ODD_STRINGS = [
    "", " ", ".", "a.b", "\x00", "a\x00b", "\ud800", "x\udfff", "langgraph", "*", "tenant:",
    "tenant:acme", "Tenant:acme", "user:alice", "agent:bot", "user:a.b", "fact", "Fact", "facts",
    "{langgraph_user_id}", "tenant:a:b", "tenant:{x}", "\n", "%", "_", "'", '"', "\\", "$eq",
    "k'; DROP TABLE memories; --", "[", "a[", "{b", "[*]", "a.b[0].c", "$",
]
LONG_STRINGS = [("x", 2_000), ("\u00e9", 700), ("\U0001f600", 400), ("a", 1_025),
                ("\U0001f600", 300), ("a", 8_001), ("w ", 20_000)]
long_text = st.sampled_from(LONG_STRINGS).map(lambda spec: spec[0] * spec[1])
odd_text = st.one_of(
    st.sampled_from(ODD_STRINGS), long_text,
    st.text(max_size=12),
    st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None),
            max_size=8),
    st.builds(lambda a, b: a + b, st.text(max_size=6),
              st.sampled_from(["\x00", "\ud800", "\udc00", ".", ":", "\x1f"])),
)
huge_ints = st.sampled_from([BigInt(10**5000), BigInt(-(10**4400)), 2**63, -(2**63) - 1,
                             2**64, 10**30, 2**63 - 1, -(2**63)])
odd_numbers = st.one_of(
    st.integers(-(2**70), 2**70), huge_ints,
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308, 5e-324, True, False]),
)
junk = st.one_of(
    st.none(), st.booleans(), odd_numbers, odd_text,
    st.binary(max_size=8), st.sampled_from([b"docs", bytearray(b"x"), b"\x00"]),
    st.builds(object), st.just(set()), st.just(frozenset({"a"})), st.just(1j),
    st.just(Decimal("1.5")), st.just(datetime(2026, 1, 1, tzinfo=UTC)),
    st.just(uuid.UUID(int=7)), st.builds(cyclic), st.just(lambda: None),
    st.builds(nested, st.sampled_from([63, 64, 65, 100, 900, 2_000, 5_000]),
              st.sampled_from([1, "x", None]), st.booleans()),
)
json_keys = st.one_of(odd_text, st.sampled_from(["text", "n", "metadata", "value"]))
odd_keys = st.one_of(json_keys, st.integers(), st.none(), st.just(("t",)), st.just(1.5))
json_leaves = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
json_like = st.recursive(
    st.one_of(json_leaves, json_leaves, junk),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.tuples(children),
        st.dictionaries(json_keys, children, max_size=3),
        st.dictionaries(odd_keys, children, max_size=2),
    ),
    max_leaves=8,
)

labels = st.one_of(odd_text, st.sampled_from(["docs", "sub", "notes"]), junk)
typed_scopes = st.sampled_from([
    ("tenant:acme",), ("tenant:acme", "user:alice"), ("tenant:acme", "agent:bot"),
    ("tenant:acme", "user:alice", "agent:bot"), ("tenant:acme.io", "user:alice@example.com"),
    ("tenant:a%", "user:_"),
])
valid_namespaces = st.one_of(
    st.builds(lambda scope, kind: (*scope, kind), typed_scopes, st.sampled_from(KINDS)),
    st.sampled_from([("docs",), ("docs", "sub"), ("notes", "x")]),
)
namespaces = st.one_of(
    valid_namespaces, valid_namespaces,
    st.builds(list, valid_namespaces),
    st.lists(labels, max_size=5).map(tuple),
    st.lists(labels, max_size=4),
    st.builds(lambda ns, label: (*ns[:-1], label), valid_namespaces, labels),
    st.builds(lambda ns, label: (label, *ns), valid_namespaces, labels),
    st.just(()), st.tuples(long_text, long_text),
    junk,
)
keys = st.one_of(st.sampled_from(["k", "tone", "city", "d1"]), odd_text, junk)


def typed_value(kind: str, extra: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, dict[str, Any]] = {
        "policy": {"value": {"max": 5}, "created_by": "ops"},
        "preference": {"value": "terse"},
        "fact": {"subject": "user", "predicate": "pet", "content": "The user has a cat."},
        "episode": {"title": "Refund", "summary": "Approved a refund."},
        "procedure": {"rule": "Confirm the order id."},
        "observation": {"category": "format", "quote": "prefers tables"},
        "entity": {"name": "Miso", "type": "pet"},
    }
    return {**base[kind], **extra}


extras = st.dictionaries(
    st.sampled_from(["value", "metadata", "confidence", "source_turn", "source_run_id",
                     "occurred_at", "key", "status", "content", "tags", "aliases",
                     "colour"]),
    st.one_of(json_like, junk), max_size=2,
)
values = st.one_of(
    st.builds(typed_value, st.sampled_from(KINDS), extras),
    st.builds(typed_value, st.sampled_from(KINDS), st.just({})),
    st.dictionaries(json_keys, json_like, max_size=4),
    st.builds(lambda v: {"text": "a note", "n": v}, st.one_of(json_like, junk)),
    json_like, junk,
)
ttls = st.one_of(st.sampled_from([None, 5, 0.5, 0, -1, 10**9, 10**9 + 1, 1e308]),
                 odd_numbers, junk)
indexes = st.one_of(
    st.sampled_from([None, False, True, ["text"], ["text", "n"], [], "text", ["$"],
                     ["[*]"], ["a[", "{b"], ["n[0]", "metadata.title"], [""], [5],
                     ["a\x00"], ("text",)]),
    st.lists(long_text, max_size=1),
    st.lists(odd_text, max_size=2), junk,
)
windows = st.one_of(st.sampled_from([0, 1, 10, 10**18, 10**18 + 1, -1]),
                    st.integers(-5, 50), odd_numbers, junk)
refreshes = st.one_of(st.none(), st.booleans(), junk)
queries = st.one_of(st.none(), st.sampled_from(["cat", "Alice Lyon", "' OR 1=1 --", "*",
                                                "NEAR(a b)"]), odd_text, junk)
filters = st.one_of(
    st.none(), st.just({"n": 1}), st.just({"n": {"$gt": math.inf}}),
    st.dictionaries(json_keys, json_like, max_size=3),
    st.dictionaries(json_keys, st.dictionaries(
        st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$regex", "x"]),
        st.one_of(json_like, junk), max_size=2), max_size=2),
    st.dictionaries(odd_keys, json_like, max_size=2),
    json_like, junk,
)
paths = st.one_of(
    st.none(), st.just(()), st.just(("docs",)), st.just(["tenant:acme"]),
    st.just(("tenant:acme.io", "*")), st.lists(labels, max_size=3).map(tuple),
    st.lists(labels, max_size=3), junk,
)
depths = st.one_of(st.none(), st.integers(-2, 5), odd_numbers, junk)
proposal = st.one_of(
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["fact", "preference", "episode", "policy", "gossip"])},
        optional={"subject": st.one_of(st.just("user"), junk),
                  "predicate": st.one_of(st.just("pet"), junk),
                  "content": st.one_of(st.just("The user has a cat named Miso."), odd_text,
                                       junk),
                  "key": st.one_of(st.just("tone"), odd_text, junk),
                  "value": st.one_of(json_like, junk),
                  "confidence": st.one_of(st.just(0.9), odd_numbers, junk),
                  "scope": st.one_of(st.sampled_from(["user", "agent", "tenant"]), junk),
                  "metadata": st.one_of(json_like, junk),
                  "status": st.just("active")},
    ),
    st.just(Proposal(kind="fact", subject="user", predicate="pet",
                     content="The user has a dog.", confidence=0.9)),
    st.builds(lambda v: Proposal(kind="fact", subject="user", predicate="pet",
                                 content="The user has a dog.", value=v, confidence=0.9),
              st.one_of(json_like, junk)),
    st.dictionaries(odd_keys, json_like, max_size=3), junk,
)
ids = st.one_of(st.sampled_from(["acme", "alice", "bot", "acme.io"]), st.none(), odd_text, junk)


@dataclass
class Call:
    """One call of a public function or store method, with its arguments."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        shown_args = [shown(a, 60) for a in self.args]
        shown_args += [f"{k}={shown(v, 60)}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(shown_args)})"


Arguments = tuple[tuple[Any, ...], dict[str, Any]]
BUILDERS = {"memory_namespace", "parse_namespace"}
REQUIRED = {"tenant_id"}


def call(name: str, good: st.SearchStrategy[Arguments],
         bad: dict[int | str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Call]:
    """A call of `name` (or of its async twin) with good arguments, one of them broken, or
    several: `bad` maps a position or keyword to what may replace it. Optional keywords
    are sometimes left out."""

    @st.composite
    def build(draw: st.DrawFn) -> Call:
        twins = [name] if name in BUILDERS else [name, f"a{name}"]
        called = draw(st.sampled_from(twins))
        args, kwargs = draw(good)
        args, kwargs = list(args), dict(kwargs)
        mode = draw(st.sampled_from(["good", "one", "one", "one", "several"]))
        slots = sorted(bad, key=str)
        broken: set[int | str] = set()
        if mode == "one":
            broken = {draw(st.sampled_from(slots))}
        elif mode == "several":
            broken = draw(st.sets(st.sampled_from(slots), min_size=1))
        for slot in broken:
            if isinstance(slot, int):
                args[slot] = draw(bad[slot])
            else:
                kwargs[slot] = draw(bad[slot])
        optional = sorted(set(kwargs) - REQUIRED - broken)
        if optional:
            for dropped in draw(st.sets(st.sampled_from(optional))):
                del kwargs[dropped]
        return Call(called, tuple(args), kwargs)

    return build()


typed_namespaces = st.builds(lambda scope, kind: (*scope, kind), typed_scopes,
                             st.sampled_from(KINDS))
good_keys = st.one_of(st.sampled_from(["k", "tone", "city", "d1", "k'0", "%"]),
                      st.text(min_size=1, max_size=12), st.integers(0, 99),
                      st.just(uuid.UUID(int=7)))
good_refresh = st.sampled_from([None, True, False])
good_windows = st.integers(0, 20)
good_json = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.text(min_size=1, max_size=8), children, max_size=3),
    max_leaves=6,
)


@st.composite
def good_put(draw: st.DrawFn) -> Arguments:
    ns = draw(valid_namespaces)
    key = draw(good_keys)
    if ns[0].startswith("tenant:"):
        value = typed_value(ns[-1], draw(st.sampled_from([
            {}, {"confidence": 0.7}, {"metadata": {"project": "p1"}}, {"source_turn": 3},
            {"metadata": {"n": 2**63 - 1, "deep": nested(60)}}])))
        if ns[-1] in ("preference", "policy") and draw(st.booleans()):
            value = {"value": {"max": draw(good_json)}, "created_by": "ops"}
            if ns[-1] == "preference":
                value = {"value": draw(good_json)}
    else:
        value = {"text": draw(st.text(max_size=30)), "n": draw(good_json)}
    kwargs = {"index": draw(st.sampled_from([None, False, ["text"], ["n", "text"]])),
              "ttl": draw(st.sampled_from([None, 5, 0.5, 10**9]))}
    return (ns, key, value), kwargs


good_get = st.builds(lambda ns, key, r: ((ns, key), {"refresh_ttl": r}),
                     valid_namespaces, good_keys, good_refresh)
good_delete = st.builds(lambda ns, key: ((ns, key), {}), valid_namespaces, good_keys)
good_search = st.builds(
    lambda ns, as_list, cut, q, f, lim, off, r: (
        ((list if as_list else tuple)(ns[:cut] if cut else ns),),
        {"query": q, "filter": f, "limit": lim, "offset": off, "refresh_ttl": r}),
    valid_namespaces, st.booleans(), st.integers(0, 2),
    st.sampled_from([None, "cat", "Alice Lyon", "report", "' OR 1=1 --", "*"]),
    st.sampled_from([None, {"n": 1}, {"metadata": {"project": "p1"}}, {"n": {"$gt": 0}},
                     {"n": {"$lt": math.inf}}, {"tag": "a\x00"}]),
    good_windows, good_windows, good_refresh,
)
good_list = st.builds(
    lambda p, sfx, d, lim, off: ((), {"prefix": p, "suffix": sfx, "max_depth": d,
                                     "limit": lim, "offset": off}),
    st.sampled_from([None, (), ("tenant:acme",), ["docs"], ("tenant:acme.io", "*")]),
    st.sampled_from([None, ("fact",), ["sub"]]),
    st.one_of(st.none(), st.integers(1, 4)), good_windows, good_windows,
)
good_history = st.builds(lambda ns, key: ((ns, key), {}), typed_namespaces, good_keys)
good_proposal = st.sampled_from([
    {"kind": "fact", "subject": "user", "predicate": "pet",
     "content": "The user has a cat named Miso.", "confidence": 0.9},
    {"kind": "preference", "key": "tone", "value": "terse", "confidence": 0.9},
    {"kind": "episode", "title": "Refund", "content": "Approved a refund.",
     "task_complete": True, "confidence": 0.9},
    {"kind": "fact", "subject": "acme", "predicate": "hq", "content": "Acme is in Berlin.",
     "confidence": 0.95, "scope": "tenant"},
])
good_promote = st.builds(
    lambda props, t, u, a, run, turn, src: ((props,), {
        "tenant_id": t, "user_id": u, "agent_id": a, "run_id": run, "turn": turn,
        "source": src}),
    st.lists(good_proposal, max_size=3), st.sampled_from(["acme", "acme.io"]),
    st.sampled_from([None, "alice"]), st.sampled_from([None, "bot"]),
    st.sampled_from([None, "run-1"]), st.sampled_from([None, 1]),
    st.sampled_from([None, "tool"]),
)
good_builder = st.builds(
    lambda kind, t, u, a: ((kind,), {"tenant_id": t, "user_id": u, "agent_id": a}),
    st.sampled_from(KINDS), st.sampled_from(["acme", "acme.io"]),
    st.sampled_from([None, "alice"]), st.sampled_from([None, "bot"]),
)
good_parse = st.builds(lambda ns: ((ns,), {}), typed_namespaces)


def op_of(kind: str, arguments: Arguments) -> Any:
    """The batch op a good call's arguments stand for."""
    (args, kwargs) = arguments
    if kind == "get":
        return GetOp(args[0], str(args[1]), bool(kwargs.get("refresh_ttl", True)))
    if kind == "put":
        return PutOp(args[0], str(args[1]), args[2], index=kwargs["index"], ttl=kwargs["ttl"])
    return SearchOp(tuple(args[0]), kwargs["filter"], kwargs["limit"], kwargs["offset"],
                    kwargs["query"])


good_ops = st.one_of(
    good_get.map(lambda a: op_of("get", a)), good_put().map(lambda a: op_of("put", a)),
    good_search.map(lambda a: op_of("search", a)),
    st.just(ListNamespacesOp((MatchCondition("prefix", ("tenant:acme",)),), None, 10, 0)),
)
bad_ops = st.one_of(
    st.builds(GetOp, namespaces, keys, refreshes),
    st.builds(lambda ns, k, v, i, t: PutOp(ns, k, v, index=i, ttl=t),
              namespaces, keys, values, indexes, ttls),
    st.builds(SearchOp, namespaces, filters, windows, windows, queries, refreshes),
    st.builds(ListNamespacesOp,
              st.one_of(st.lists(st.builds(MatchCondition, st.sampled_from(["prefix", "suffix",
                                                                             "infix", None]),
                                           paths), max_size=2).map(tuple), junk),
              depths, windows, windows),
    junk,
)
good_batch = st.lists(good_ops, min_size=1, max_size=3).map(lambda ops: ((ops,), {}))
bad_batch = st.one_of(
    st.builds(lambda good, bad, at: [*good[:at], bad, *good[at:]],
              st.lists(good_ops, max_size=2), bad_ops, st.integers(0, 2)),
    st.lists(bad_ops, min_size=1, max_size=3).map(tuple), junk,
)
window_args = {"limit": windows, "offset": windows}
calls = st.one_of(
    call("get", good_get, {0: namespaces, 1: keys, "refresh_ttl": refreshes}),
    call("put", good_put(), {0: namespaces, 1: keys, 2: values, "index": indexes, "ttl": ttls}),
    call("delete", good_delete, {0: namespaces, 1: keys}),
    call("search", good_search, {0: namespaces, "query": queries, "filter": filters,
                                 "refresh_ttl": refreshes, **window_args}),
    call("list_namespaces", good_list, {"prefix": paths, "suffix": paths, "max_depth": depths,
                                        **window_args}),
    call("batch", good_batch, {0: bad_batch}),
    call("history", good_history, {0: namespaces, 1: keys}),
    call("audit", good_history, {0: namespaces, 1: keys}),
    call("promote", good_promote, {
        0: st.one_of(st.lists(proposal, max_size=3), junk), "tenant_id": ids, "user_id": ids,
        "agent_id": ids, "run_id": ids, "turn": windows, "source": ids}),
    call("memory_namespace", good_builder, {0: st.one_of(odd_text, junk), "tenant_id": ids,
                                            "user_id": ids, "agent_id": ids}),
    call("parse_namespace", good_parse, {0: namespaces}),
)


# ------------------------------------------------------------------ the property

STATE = """SELECT (SELECT count(*) FROM memories), (SELECT coalesce(max(seq), 0) FROM memories),
    (SELECT count(*) FROM memory_vectors), (SELECT count(*) FROM memory_audit)"""


def state(store: Any) -> tuple[Any, ...]:
    """What a refused call must not change: rows of records, vectors and audit events."""

    def plan() -> Any:
        rows = yield Sql(STATE)
        return tuple(rows[0])

    return tuple(store.run_plan(plan))


def execute(store: BaseStore, case: Call) -> Any:
    if case.name == "memory_namespace":
        return memory_namespace(*case.args, **case.kwargs)
    if case.name == "parse_namespace":
        return parse_namespace(*case.args)
    result = getattr(store, case.name)(*case.args, **case.kwargs)
    if asyncio.iscoroutine(result):
        return asyncio.run(result)
    return result


def seed(store: BaseStore) -> None:
    store.put(("tenant:acme", "user:alice", "fact"), "city",
              {"subject": "user", "predicate": "city", "content": "Alice lives in Lyon."})
    store.put(("tenant:acme", "user:alice", "preference"), "tone", {"value": "terse"})
    store.put(("docs",), "d1", {"text": "quarterly report", "n": 1}, ttl=600)


def fuzz(factory: Callable[..., BaseStore], cases: int) -> Counter[str]:
    store = factory(hash_index(), clock=FakeClock())
    seed(store)
    stats: Counter[str] = Counter()
    counter = itertools.count()

    @settings(max_examples=cases, **HYPOTHESIS)
    @given(case=calls)
    def check(case: Call) -> None:
        next(counter)
        before = state(store)
        try:
            execute(store, case)
        except TypedMemoryError as exc:
            stats[f"refused {type(exc).__name__}"] += 1
            stats["refused"] += 1
            assert state(store) == before, f"{case} raised {exc!r} but wrote"
        except Exception as exc:
            raise AssertionError(
                f"{case} raised {type(exc).__name__}, not a TypedMemoryError: {exc}") from exc
        else:
            stats["accepted"] += 1
        stats[case.name] += 1

    check()
    stats["cases"] = next(counter)
    return stats


def assert_covers(stats: Counter[str], cases: int, backend: str) -> None:
    logger.info("%s: %d calls, %d accepted, %d refused (%s); %s", backend, stats["cases"],
                stats["accepted"], stats["refused"],
                ", ".join(f"{k[8:]} {v}" for k, v in sorted(stats.items())
                          if k.startswith("refused ")),
                ", ".join(f"{k} {v}" for k, v in sorted(stats.items()) if " " not in k))
    assert stats["cases"] >= cases, stats
    for name in ("get", "put", "delete", "search", "list_namespaces", "batch", "history",
                 "audit", "promote", "aget", "aput", "adelete", "asearch", "alist_namespaces",
                 "abatch", "ahistory", "aaudit", "apromote", "memory_namespace",
                 "parse_namespace"):
        assert stats[name] > 0, (name, stats)
    assert stats["accepted"] > cases // 10 and stats["refused"] > cases // 4, stats


def test_bad_arguments_raise_typed_errors_and_write_nothing(
    backend_store_factory, backend: str
) -> None:
    stats = fuzz(backend_store_factory, CASES)
    assert_covers(stats, CASES, backend)


@pytest.mark.slow
def test_bad_arguments_raise_typed_errors_and_write_nothing_long(
    backend_store_factory, backend: str
) -> None:
    stats = fuzz(backend_store_factory, STRESS_CASES)
    assert_covers(stats, STRESS_CASES, backend)
