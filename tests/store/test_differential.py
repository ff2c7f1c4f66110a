"""Differential test: untyped namespaces have exactly LangGraph's store semantics.

The same seeded random sequences of ``put`` / ``delete`` / ``get`` / ``search`` /
``list_namespaces`` calls are applied to LangGraph's ``InMemoryStore`` (the reference) and to
one of our stores (every backend of the ``backend_store_factory`` fixture), and every result
is compared. Sequences cover four index configurations (none; ``fields=["text"]``; the
default ``["$"]``; ``["text", "meta.title"]``), per-put ``index=False`` / ``index=[...]``
(including a ``[*]`` path that yields several vectors per item), overwrites, deletes of
present and missing keys, reads of missing keys, equality / nested-dict / list filters and
``$eq $ne $gt $gte $lt $lte`` operators, ``limit`` / ``offset`` from 0 to past the end, and
``list_namespaces`` with prefix (also with ``*``), suffix, ``max_depth``, limit and offset.

One store per index configuration is shared by all sequences; each sequence lives under its
own root label (``seq7``, ``seq17``, ...), so a search or listing that leaks across roots
(e.g. ``seq1`` matching ``seq17``) fails. The namespace labels include ``a``, ``ab``,
``a_b`` and ``a-b`` to catch prefix matching done with SQL ``LIKE`` wildcards or on joined
strings, and ordering of namespaces that is not tuple order.

Known, intended differences, which the comparison allows for:

* Timestamps are never compared: ``InMemoryStore`` resets ``created_at`` on update, ours
  keeps the first one (like LangGraph's ``PostgresStore``).
* ``InMemoryStore`` keeps listing namespaces that became empty (and, through a
  ``defaultdict``, namespaces that were only read from). Ours lists only namespaces holding
  items (like ``PostgresStore``), so empty namespaces are purged from the reference before
  each ``list_namespaces`` call.
* Order of search results without a (usable) query: ours returns items in creation order
  (first put of a key; delete then put creates it anew), ``InMemoryStore`` groups by
  namespace first. When the matches lie in one namespace both orders coincide and the
  windows are compared exactly. When they span several namespaces, the window must have the
  reference's length, contain only matching items with their current values and no
  duplicates, and equal the full match set when ``offset == 0`` and ``limit`` covers it.
* Order among equal scores with a query: each returned item must carry the score the
  reference gives that item (within 1e-5), and the sequence of scores must equal the
  reference's, position by position. This is the same as comparing runs of equal scores as
  sets, while allowing a different choice among tied items cut by ``limit`` / ``offset``.
* Items without vectors (``index=False`` or no text at the indexed fields) come after the
  scored ones (``InMemoryStore``'s "scoreless" fill, score ``None``). Their count must
  match; their order may differ, so they must be scoreless matches of the query, without
  duplicates, and all of them when the reference returns all of them. (``InMemoryStore``
  fills them in ignoring ``offset``; that quirk is part of the compared behaviour.)

* Stale vectors: a put drops the item's previous vectors before embedding the new version.
  LangGraph's ``InMemoryStore`` and ``PostgresStore`` keep vectors of fields the new version
  does not re-embed, and go on scoring the item by text it no longer holds. The reference's
  vectors for a key are cleared before each put to compare everything else exactly.

Generated data avoids one ``InMemoryStore`` bug: a put whose indexed fields hold the same
text twice makes it raise ("Number of embeddings ... does not match"), so each field draws
its text from its own vocabulary and ``[*]`` lists hold distinct words.

Failures report the seed, index configuration and the operations up to the failing one.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from langgraph.store.base import BaseStore, IndexConfig, Item, SearchItem
from langgraph.store.memory import InMemoryStore

from tests.fake_embeddings import HashEmbeddings

Namespace: TypeAlias = tuple[str, ...]
Value: TypeAlias = dict[str, Any]
StoreFactory: TypeAlias = Callable[[IndexConfig | None], BaseStore]

SYNC_SEQUENCES = 200
ASYNC_SEQUENCES = 20
SCORE_TOLERANCE = 1e-5
EVERYTHING = 1_000_000  # a limit that returns every match

# --- the data the operations are drawn from ------------------------------------------------

LABELS = ("a", "b", "ab", "a_b", "a-b")
KEYS = ("k0", "k1", "k2", "k3", "kö")
# Disjoint vocabularies per indexed field (see the module docstring).
TEXTS = ("apple", "apple pie", "banana", "banana split", "cherry apple", "date")
TITLES = ("red fox", "fox", "blue whale", "quiet owl")
OTHERS = ("lorem", "ipsum dolor", "dolor")
TAGS = ("alpha", "beta", "gamma", "delta")
QUERIES = (*TEXTS, "apple banana", "fox", "whale owl", "dolor", "beta gamma", "zebra")
X_VALUES = (-1.5, 0.0, 0.5, 2.0, 2.5, 3.25)

INDEX_CONFIGS: dict[str, Callable[[], IndexConfig | None]] = {
    "no-index": lambda: None,
    "fields=text": lambda: {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]},
    "fields=default": lambda: {"dims": 16, "embed": HashEmbeddings(16)},
    "fields=text,meta.title": lambda: {
        "dims": 16,
        "embed": HashEmbeddings(16),
        "fields": ["text", "meta.title"],
    },
}
CONFIG_NAMES = tuple(INDEX_CONFIGS)

# --- operations -------------------------------------------------------------------------


@dataclass(frozen=True)
class Put:
    namespace: Namespace
    key: str
    value: Value
    index: Literal[False] | list[str] | None = None


@dataclass(frozen=True)
class Delete:
    namespace: Namespace
    key: str


@dataclass(frozen=True)
class Get:
    namespace: Namespace
    key: str


@dataclass(frozen=True)
class Search:
    prefix: Namespace
    query: str | None
    filter: dict[str, Any] | None
    limit: int
    offset: int


@dataclass(frozen=True)
class ListNamespaces:
    prefix: Namespace
    suffix: Namespace | None
    max_depth: int | None
    limit: int
    offset: int


Op: TypeAlias = Put | Delete | Get | Search | ListNamespaces


@dataclass(frozen=True)
class Hit:
    """A search result without timestamps."""

    namespace: Namespace
    key: str
    value: Value
    score: float | None

    @property
    def id(self) -> tuple[Namespace, str]:
        return (self.namespace, self.key)


# --- generation -------------------------------------------------------------------------


def _value(rng: random.Random) -> Value:
    value: Value = {"n": rng.randint(0, 5), "x": rng.choice(X_VALUES)}
    roll = rng.random()
    if roll < 0.7:
        value["text"] = rng.choice(TEXTS)
    elif roll < 0.76:
        value["text"] = rng.sample(TEXTS[:4], rng.randint(1, 2))  # indexed as JSON text
    elif roll < 0.8:
        value["text"] = rng.choice((7, ""))
    if rng.random() < 0.6:
        meta: Value = {"tag": rng.choice(("red", "blue"))}
        if rng.random() < 0.7:
            meta["title"] = rng.choice(TITLES)
        if rng.random() < 0.3:
            meta["depth"] = {"level": rng.randint(0, 2)}
        value["meta"] = meta
    if rng.random() < 0.5:
        value["tags"] = rng.sample(TAGS, rng.randint(0, 3))
    if rng.random() < 0.3:
        value["other"] = rng.choice(OTHERS)
    if rng.random() < 0.4:
        value["flag"] = rng.random() < 0.5
    if rng.random() < 0.2:
        value["note"] = None
    return value


def _put_index(rng: random.Random) -> Literal[False] | list[str] | None:
    return rng.choices(
        (None, False, ["other"], ["text"], ["meta.title", "other"], ["tags[*]"]),
        weights=(60, 15, 10, 5, 5, 5),
    )[0]


def _namespace(rng: random.Random, root: str) -> Namespace:
    depth = rng.choices((0, 1, 2, 3), weights=(1, 5, 4, 2))[0]
    return (root, *(rng.choice(LABELS) for _ in range(depth)))


def _comparison(rng: random.Random) -> dict[str, Any]:
    field = rng.choice(("n", "x"))
    bound: float = rng.randint(0, 5) if field == "n" else rng.choice((*X_VALUES, 1, 2))
    ops = rng.sample(("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"), rng.randint(1, 2))
    return {field: {op: bound for op in ops}}


def _filter(rng: random.Random) -> dict[str, Any] | None:
    if rng.random() < 0.5:
        return None
    makers: list[Callable[[], dict[str, Any]]] = [
        lambda: {"text": rng.choice(TEXTS)},
        lambda: {"n": rng.randint(0, 5)},
        lambda: {"x": rng.choice((2, 2.0, 0.5, -1.5))},
        lambda: {"flag": rng.random() < 0.5},
        lambda: {"meta": {"tag": rng.choice(("red", "blue"))}},
        lambda: {"meta": {"depth": {"level": rng.randint(0, 2)}}},
        lambda: {"tags": rng.sample(TAGS, rng.randint(0, 2))},
        lambda: _comparison(rng),
        lambda: _comparison(rng),
        lambda: _comparison(rng),
    ]
    result: dict[str, Any] = {}
    for _ in range(rng.choices((1, 2), weights=(3, 1))[0]):
        result.update(rng.choice(makers)())
    return result


def generate_ops(seed: int, root: str) -> list[Op]:
    """A deterministic random operation sequence whose namespaces all start with ``root``."""
    rng = random.Random(seed)
    pool = list(dict.fromkeys(_namespace(rng, root) for _ in range(rng.randint(2, 4))))
    live: list[tuple[Namespace, str]] = []  # keys currently present, as the generator sees it

    def some_namespace() -> Namespace:
        return rng.choice(pool) if rng.random() < 0.9 else _namespace(rng, root)

    def some_prefix() -> Namespace:
        namespace = some_namespace()
        return namespace[: rng.randint(1, len(namespace))]

    def existing_or_new() -> tuple[Namespace, str]:
        if live and rng.random() < 0.65:
            return rng.choice(live)
        return some_namespace(), rng.choice(KEYS)

    def some_suffix() -> Namespace | None:
        roll = rng.random()
        if roll < 0.6:
            return None
        if roll < 0.9:
            namespace = rng.choice(pool)
            suffix = list(namespace[-rng.randint(1, min(2, len(namespace))) :])
            if rng.random() < 0.2:
                suffix[0] = "*"
            return tuple(suffix)
        return tuple(rng.choice(LABELS) for _ in range(rng.randint(1, 2)))

    ops: list[Op] = []
    for step in range(rng.randint(15, 25)):
        kinds = ("put", "delete", "get", "search", "list")
        kind = rng.choices(kinds, (40, 10, 12, 28, 10))[0] if step >= 3 else "put"
        if kind == "put":
            namespace, key = some_namespace(), rng.choice(KEYS)
            ops.append(Put(namespace, key, _value(rng), _put_index(rng)))
            if (namespace, key) not in live:
                live.append((namespace, key))
        elif kind == "delete":
            namespace, key = existing_or_new()
            ops.append(Delete(namespace, key))
            if (namespace, key) in live:
                live.remove((namespace, key))
        elif kind == "get":
            ops.append(Get(*existing_or_new()))
        elif kind == "search":
            roll = rng.random()
            query = None if roll < 0.45 else "" if roll < 0.5 else rng.choice(QUERIES)
            ops.append(
                Search(
                    some_prefix(),
                    query,
                    _filter(rng),
                    limit=rng.choice((10, 10, 0, 1, 2, 3, 100)),
                    offset=rng.choice((0, 0, 0, 1, 2, 5)),
                )
            )
        else:
            prefix = some_prefix()
            if len(prefix) > 1 and rng.random() < 0.2:
                prefix = (*prefix[:-1], "*")
            ops.append(
                ListNamespaces(
                    prefix,
                    some_suffix(),
                    max_depth=rng.choice((None, None, 1, 2, 3, 4)),
                    limit=rng.choice((100, 100, 0, 1, 2, 3)),
                    offset=rng.choice((0, 0, 0, 1, 2, 5)),
                )
            )
    return ops


# --- running operations -----------------------------------------------------------------


def _item(item: Item | None) -> tuple[Namespace, str, Value] | None:
    return None if item is None else (tuple(item.namespace), item.key, item.value)


def _hits(items: list[SearchItem]) -> list[Hit]:
    return [Hit(tuple(i.namespace), i.key, i.value, i.score) for i in items]


def apply_sync(store: BaseStore, op: Op) -> Any:
    """Run ``op`` through the sync API; return its result without timestamps."""
    if isinstance(op, Put):
        return store.put(op.namespace, op.key, op.value, index=op.index)
    if isinstance(op, Delete):
        return store.delete(op.namespace, op.key)
    if isinstance(op, Get):
        return _item(store.get(op.namespace, op.key))
    if isinstance(op, Search):
        return _hits(
            store.search(
                op.prefix, query=op.query, filter=op.filter, limit=op.limit, offset=op.offset
            )
        )
    return [
        tuple(ns)
        for ns in store.list_namespaces(
            prefix=op.prefix,
            suffix=op.suffix,
            max_depth=op.max_depth,
            limit=op.limit,
            offset=op.offset,
        )
    ]


async def apply_async(store: BaseStore, op: Op) -> Any:
    """Run ``op`` through the async API; return its result without timestamps."""
    if isinstance(op, Put):
        return await store.aput(op.namespace, op.key, op.value, index=op.index)
    if isinstance(op, Delete):
        return await store.adelete(op.namespace, op.key)
    if isinstance(op, Get):
        return _item(await store.aget(op.namespace, op.key))
    if isinstance(op, Search):
        return _hits(
            await store.asearch(
                op.prefix, query=op.query, filter=op.filter, limit=op.limit, offset=op.offset
            )
        )
    return [
        tuple(ns)
        for ns in await store.alist_namespaces(
            prefix=op.prefix,
            suffix=op.suffix,
            max_depth=op.max_depth,
            limit=op.limit,
            offset=op.offset,
        )
    ]


# --- comparing with the reference -------------------------------------------------------


class Mismatch(AssertionError):
    pass


class Reference:
    """Applies each operation to an ``InMemoryStore`` and checks the store's result."""

    def __init__(self, label: str, index: IndexConfig | None, ops: list[Op]) -> None:
        self.label = label
        self.ops = ops
        self.store = InMemoryStore(index=index)
        self.ranked_search = index is not None

    def failure(self, step: int, message: str) -> Mismatch:
        """``message`` with the seed, index configuration and operations up to ``step``."""
        listing = "\n".join(f"  {i:2}: {o!r}" for i, o in enumerate(self.ops[: step + 1]))
        return Mismatch(f"{self.label}, operation {step}: {message}\n{listing}")

    def check(self, step: int, got: Any) -> None:
        op = self.ops[step]
        if isinstance(op, Put):
            # Intended difference: a put replaces the item's vectors. LangGraph's stores keep
            # the old vectors of fields the new version does not re-embed (index=False, or no
            # text at the field) and keep scoring the item by text it no longer holds.
            self.store._vectors.get(op.namespace, {}).pop(op.key, None)
        try:
            if isinstance(op, Search):
                self._check_search(op, got)
            elif isinstance(op, ListNamespaces):
                self._check_list_namespaces(op, got)
            else:
                expected = apply_sync(self.store, op)
                _expect(got == expected, "results differ", expected, got)
        except Mismatch as exc:
            raise self.failure(step, str(exc)) from None

    def _check_list_namespaces(self, op: ListNamespaces, got: list[Namespace]) -> None:
        data = self.store._data
        for namespace in [ns for ns, items in data.items() if not items]:
            del data[namespace]
        expected = apply_sync(self.store, op)
        _expect(got == expected, "list_namespaces differs", expected, got)

    def _check_search(self, op: Search, got: list[Hit]) -> None:
        window: list[Hit] = apply_sync(self.store, op)
        everything: list[Hit] = apply_sync(
            self.store, Search(op.prefix, op.query, op.filter, limit=EVERYTHING, offset=0)
        )
        matches = {hit.id: hit for hit in everything}
        _expect(len(got) == len(window), "wrong number of results", window, got)
        _expect(len({hit.id for hit in got}) == len(got), "duplicate results", window, got)
        for hit in got:
            ref = matches.get(hit.id)
            ok = ref is not None and hit.value == ref.value
            _expect(ok, f"{hit.id} is not a match with this value", window, got)
        if self.ranked_search and op.query:
            self._check_ranked(window, everything, matches, got)
        else:
            self._check_unranked(op, window, everything, got)

    def _check_unranked(
        self, op: Search, window: list[Hit], everything: list[Hit], got: list[Hit]
    ) -> None:
        _expect(all(hit.score is None for hit in got), "scores without a query", window, got)
        if len({hit.namespace for hit in everything}) <= 1:
            _expect(got == window, "results differ (one namespace)", window, got)
        elif op.offset == 0 and op.limit >= len(everything):
            _expect(_ids(got) == _ids(everything), "result sets differ", everything, got)

    def _check_ranked(
        self,
        window: list[Hit],
        everything: list[Hit],
        matches: Mapping[tuple[Namespace, str], Hit],
        got: list[Hit],
    ) -> None:
        scored = [hit for hit in window if hit.score is not None]
        got_scored = [hit for hit in got if hit.score is not None]
        _expect(
            got[: len(got_scored)] == got_scored and len(got_scored) == len(scored),
            "scored results must come first, as many as in the reference",
            window,
            got,
        )
        for ref_hit, hit in zip(scored, got_scored, strict=True):
            _expect(_close(hit.score, ref_hit.score), "score sequence differs", window, got)
            _expect(_close(hit.score, matches[hit.id].score), f"{hit.id} scored wrong", window, got)
        scoreless = {hit.id for hit in everything if hit.score is None}
        got_scoreless = _ids(got[len(got_scored) :])
        _expect(got_scoreless <= scoreless, "scored items in the scoreless tail", window, got)
        if len(window) - len(scored) == len(scoreless):
            _expect(got_scoreless == scoreless, "scoreless tails differ", window, got)


def _ids(hits: list[Hit]) -> set[tuple[Namespace, str]]:
    return {hit.id for hit in hits}


def _close(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= SCORE_TOLERANCE


def _expect(ok: bool, what: str, expected: Any, got: Any) -> None:
    if not ok:
        raise Mismatch(f"{what}\n  expected (InMemoryStore): {expected!r}\n  got: {got!r}")


# --- the tests --------------------------------------------------------------------------


class SharedStores:
    """One store of the backend under test per index configuration, made on first use."""

    def __init__(self, factory: StoreFactory) -> None:
        self.factory = factory
        self.stores: dict[str, BaseStore] = {}

    def __getitem__(self, config: str) -> BaseStore:
        if config not in self.stores:
            self.stores[config] = self.factory(INDEX_CONFIGS[config]())
        return self.stores[config]


def _sequence(seed: int, prefix: str) -> tuple[str, list[Op], Reference]:
    config = CONFIG_NAMES[seed % len(CONFIG_NAMES)]
    ops = generate_ops(seed, root=f"{prefix}{seed}")
    return config, ops, Reference(f"seed {seed} [{config}]", INDEX_CONFIGS[config](), ops)


def test_untyped_semantics_match_inmemory(backend_store_factory: StoreFactory) -> None:
    stores = SharedStores(backend_store_factory)
    for seed in range(SYNC_SEQUENCES):
        config, ops, reference = _sequence(seed, "seq")
        store = stores[config]
        for step, op in enumerate(ops):
            try:
                got = apply_sync(store, op)
            except Exception as exc:
                raise reference.failure(step, f"the store raised {exc!r}") from exc
            reference.check(step, got)


async def test_untyped_semantics_match_inmemory_async(
    backend_store_factory: StoreFactory,
) -> None:
    stores = SharedStores(backend_store_factory)
    for seed in range(ASYNC_SEQUENCES):
        config, ops, reference = _sequence(seed, "aseq")
        store = stores[config]
        for step, op in enumerate(ops):
            try:
                got = await apply_async(store, op)
            except Exception as exc:
                raise reference.failure(step, f"the store raised {exc!r}") from exc
            reference.check(step, got)


def test_generated_sequences_exercise_the_interesting_cases() -> None:
    """Guards the generator: the comparison is only as good as what it is fed."""
    ops = [op for seed in range(SYNC_SEQUENCES) for op in generate_ops(seed, f"seq{seed}")]
    puts = [op for op in ops if isinstance(op, Put)]
    searches = [op for op in ops if isinstance(op, Search)]
    lists = [op for op in ops if isinstance(op, ListNamespaces)]
    assert len({(op.namespace, op.key) for op in puts}) < len(puts)  # overwrites happen
    assert {False, None} <= {op.index for op in puts if not isinstance(op.index, list)}
    assert any(isinstance(op, Delete) for op in ops)
    assert any(op.query for op in searches) and any(op.filter for op in searches)
    assert any(op.offset > 0 for op in searches) and any(op.limit == 0 for op in searches)
    assert any(op.suffix for op in lists) and any(op.max_depth for op in lists)
    assert any("*" in op.prefix for op in lists)
