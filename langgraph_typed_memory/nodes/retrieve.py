"""The retrieve node: every policy, procedure and preference in scope, and the facts and
episodes a question finds, in one fan-out."""

from __future__ import annotations

import logging
from collections.abc import Collection, Generator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.store.base import BaseStore, SearchOp

from langgraph_typed_memory.config import check_number
from langgraph_typed_memory.entities.directories import DIRECTORIES
from langgraph_typed_memory.entities.graph import (
    ABOUT_WEIGHT,
    EntityFocus,
    focus,
    fuse_about,
    names_in,
)
from langgraph_typed_memory.errors import StoreUnusable
from langgraph_typed_memory.gate import own_scope
from langgraph_typed_memory.lifecycle import DURING_KEY, NEWEST_KEY
from langgraph_typed_memory.namespaces import Scope, scope_from_config
from langgraph_typed_memory.nodes._common import (
    arecord_thread,
    last_human,
    noting,
    record_thread,
    resolve_store,
    run_id_from_config,
)
from langgraph_typed_memory.nodes.running import Call, arun, run
from langgraph_typed_memory.nodes.running import Plan as NodePlan
from langgraph_typed_memory.results import SearchResults
from langgraph_typed_memory.scoring import MAX_QUERY_CHARS
from langgraph_typed_memory.state import new_trace
from langgraph_typed_memory.turns import message_text
from langgraph_typed_memory.understanding import TimeWindow, only_time, time_window

__all__ = ["create_retrieve_node", "SLOT_KINDS", "DEFAULT_FACTS", "DEFAULT_EPISODES"]

logger = logging.getLogger(__name__)

DEFAULT_FACTS = 16
"""Facts the retrieve node asks for at most: the assemble node shows as many as fit."""
DEFAULT_EPISODES = 40
"""Episodes (logged turns and summaries) it asks for at most, as for facts."""
NEWEST_FILL = 10
"""Without vectors, the most facts (and episodes) of the newest the node adds when the
question's words found fewer than it asked for."""
MAX_CANDIDATES = 1_000_000
"""The most facts or episodes a retrieve node may ask for."""
ENTITY_POOL = 3
"""The search for records about a question's entities asks for this many times as many
facts and episodes as the slots hold: records about them that the question's own ranking
leaves below the slot."""
_WORD_MODES = ("lexical", "like")

SLOT_KINDS = {
    "policies": "policy",
    "procedures": "procedure",
    "preferences": "preference",
    "facts": "fact",
    "episodes": "episode",
}
_AT = {slot: at for at, slot in enumerate(SLOT_KINDS)}
"""Where each slot's results are in a fan-out's answers."""
_TRACE_FIELDS = {
    "policies": "policies_applied",
    "procedures": "procedures_applied",
    "preferences": "preferences_applied",
    "facts": "facts_returned",
    "episodes": "episodes_returned",
}


def _ops(scope: Scope, query: str, facts: int, episodes: int,
         window: TimeWindow | None = None) -> list[SearchOp]:
    """One search per slot, and the named span's episodes last when the question names one."""
    labels = scope.labels()
    limits = {"facts": facts, "episodes": episodes}
    ops = [
        SearchOp(
            (*labels, kind),
            None,
            limits.get(slot, 10),
            0,
            query if slot in limits and query else None,
            refresh_ttl=False,
        )
        for slot, kind in SLOT_KINDS.items()
    ]
    return [*ops, _window_op(scope, window, episodes)] if window is not None else ops


def _spanned(results: list[Any], window: TimeWindow | None, episodes: int, query: str
             ) -> list[Any]:
    """The slots' results, the named span's episodes put first in the episodes slot."""
    if window is None:
        return results
    *slots, spanned = results
    at = _AT["episodes"]
    slots[at] = _span_first(slots[at], spanned, episodes, only_time(query, window))
    return slots


def _fill_ops(
    scope: Scope, results: list[Any], facts: int, episodes: int
) -> dict[str, SearchOp]:
    """Listings of the newest facts and episodes, for the slots a word search came back
    short on (no vectors: a question sharing no word with a memory finds nothing), so what
    the user said lately still reaches the prompt.

    Example:
        >>> from langgraph_typed_memory.results import SearchResults
        >>> found = [SearchResults([], retrieval_mode=mode)
        ...          for mode in ("exact", "exact", "exact", "hybrid", "like")]
        >>> ops = _fill_ops(Scope("acme", "alice"), found, 16, 40)
        >>> [(slot, op.limit, op.filter) for slot, op in ops.items()]
        [('episodes', 10, {'$newest': True})]
    """
    limits = {"facts": facts, "episodes": episodes}
    by_slot = dict(zip(SLOT_KINDS, results, strict=True))
    return {
        slot: SearchOp((*scope.labels(), SLOT_KINDS[slot]), {NEWEST_KEY: True},
                       min(NEWEST_FILL, limit - len(by_slot[slot])), 0, None,
                       refresh_ttl=False)
        for slot, limit in limits.items()
        if (getattr(by_slot[slot], "retrieval_mode", None) or "").split("+")[0] in _WORD_MODES
        and len(by_slot[slot]) < limit
    }


def _fill(results: list[Any], fills: dict[str, SearchOp], newest: list[Any]) -> set[str]:
    """Append to each short slot's results the newest records it lacks; the slots that
    gained any."""
    extra = dict(zip(fills, newest, strict=True))
    gained = set()
    for slot, found in zip(SLOT_KINDS, results, strict=True):
        seen = {item.key for item in found}
        added = [item for item in extra.get(slot, ()) if item.key not in seen]
        if added:
            found.extend(added)
            gained.add(slot)
    return gained


def _window(store: BaseStore, query: str) -> TimeWindow | None:
    """The span of time the question names, by the store's clock (UTC now for a store
    without one)."""
    if not query:
        return None
    clock = getattr(store, "clock", None)
    now = clock() if callable(clock) else datetime.now(UTC)
    return time_window(query, now)


def _window_op(scope: Scope, window: TimeWindow, limit: int) -> SearchOp:
    """The logged turns (and other episodes) of the named span, latest first."""
    span = [window.start.isoformat(), window.end.isoformat()]
    return SearchOp((*scope.labels(), "episode"), {DURING_KEY: span}, limit, 0, None,
                    refresh_ttl=False)


def _span_first(ranked: Any, spanned: Any, limit: int, only_time: bool) -> SearchResults:
    """The episodes slot when the question names a span of time: the span's episodes the
    search found lead, in its order. A question about nothing but the span ("what did I say
    yesterday?") then gets the span's other episodes, latest first, before the rest; one that
    names something too ("the budget I mentioned last week") the rest of the search first,
    and the span's others only where room is left (they do not share its subject).

    Example:
        >>> from types import SimpleNamespace
        >>> def Item(key): return SimpleNamespace(namespace=("tenant:t", "episode"), key=key)
        >>> ranked = SearchResults([Item(k) for k in "abcd"], retrieval_mode="hybrid")
        >>> span = [Item(k) for k in "xdb"]
        >>> [i.key for i in _span_first(ranked, span, 5, only_time=True)]
        ['b', 'd', 'x', 'a', 'c']
        >>> [i.key for i in _span_first(ranked, span, 5, only_time=False)]
        ['b', 'd', 'a', 'c', 'x']
    """
    inside = {(*item.namespace, item.key) for item in spanned}
    found = {(*item.namespace, item.key) for item in ranked}
    lead = [i for i in ranked if (*i.namespace, i.key) in inside]
    others = [i for i in spanned if (*i.namespace, i.key) not in found]
    rest = [i for i in ranked if (*i.namespace, i.key) not in inside]
    order = [*lead, *others, *rest] if only_time else [*lead, *rest, *others]
    return SearchResults(order[:limit], retrieval_mode=getattr(ranked, "retrieval_mode", None)
                         or "during", degraded=list(getattr(ranked, "degraded", [])))


@dataclass(slots=True)
class _Found:
    """What the fan-out found: each slot's results, the slots the newest listing filled, and
    the question's entities."""

    results: list[Any]
    filled: set[str] = field(default_factory=set)
    entities: EntityFocus | None = None


Plan = Generator[list[SearchOp], list[Any], _Found]
"""The fan-out as a plan: it yields store batches and receives their results (the sync
and async drivers only execute)."""
_RANKED = ("facts", "episodes")
POOLED = ("episodes",)
"""The slots a deeper search for records about the question's entities feeds. Facts have
none: a scope holds far fewer facts than logged turns, the question's own facts search
already reaches most of those about a name, and each deeper search costs about as much as
the slot's own (5 ms of the fan-out at 100,000 memories); the facts slot fuses the records
about the entities among its own results."""


def _entity_ops(scope: Scope, query: str, limits: Mapping[str, int]) -> list[SearchOp]:
    """The deeper searches for records about the question's entities (`POOLED` slots)."""
    return [SearchOp((*scope.labels(), SLOT_KINDS[slot]), None, limits[slot] * ENTITY_POOL, 0,
                     query, refresh_ttl=False) for slot in POOLED]


def _deepened(ops: list[SearchOp], pools: list[SearchOp]) -> list[SearchOp]:
    """`ops` with the `POOLED` slots' searches replaced by the deeper `pools` (the same
    search, more results): one search serves the slot and the records about the entities.

    Example:
        >>> ops = _ops(Scope("acme", "alice"), "Is VW hiring?", 16, 40)
        >>> deeper = _entity_ops(Scope("acme", "alice"), "Is VW hiring?", {"episodes": 40})
        >>> [op.limit for op in _deepened(ops, deeper)]
        [10, 10, 10, 16, 120]
    """
    deeper = dict(zip(POOLED, pools, strict=True))
    slots = [deeper.get(slot, op) for slot, op in zip(SLOT_KINDS, ops, strict=False)]
    return [*slots, *ops[len(SLOT_KINDS):]]


def _cut(results: list[Any], limits: Mapping[str, int]) -> list[Any]:
    """The results of `_deepened` searches, each `POOLED` slot cut to its limit."""
    out = list(results)
    for slot in POOLED:
        at = _AT[slot]
        out[at] = SearchResults(results[at][:limits[slot]],
                                retrieval_mode=getattr(results[at], "retrieval_mode", None)
                                or "list", degraded=list(getattr(results[at], "degraded", [])))
    return out


def _about(results: list[Any], pools: list[Any], found: EntityFocus,
           limits: Mapping[str, int], *, other_names: bool, weight: float) -> None:
    """Each ranked slot's results fused with the records about the question's entities: those
    its deeper search found (`POOLED` slots), and those among its own results. The deeper
    search's ranking counts fully when it searched `other_names` (names the question did
    not use), else as `weight` (it ranks the question's own matches)."""
    pooled = dict(zip(POOLED, pools, strict=False))
    for slot in _RANKED:
        at, pool = _AT[slot], pooled.get(slot, [])
        fused = fuse_about(results[at], pool, found.targets, limits[slot],
                           weight=1.0 if other_names and pool else weight)
        results[at] = SearchResults(
            fused, retrieval_mode=getattr(results[at], "retrieval_mode", None) or "list",
            degraded=list(dict.fromkeys([*getattr(results[at], "degraded", []),
                                         *getattr(pool, "degraded", [])])))


def _fan_out(scope: Scope, query: str, facts: int, episodes: int,
             window: TimeWindow | None, entity_graph: BaseStore | None,
             entity_weight: float = ABOUT_WEIGHT) -> Plan:
    """The retrieve node's reads, in one batch. A question that names something, with the
    entity graph on (the store it reads), also reads the scope's entity directory (listed
    only if it changed since last read: `DIRECTORIES`) and the deeper searches for records
    about the known entities it names: those of the directory held from the last read (the
    search with the names they go by), or, with none held yet, on the chance that it names
    some (the question's own words). A deeper search for the question's own words (no other
    names to add) is the slot's search too, cut to the slot: one search, not two. When the
    directory read names others, or none held before, those searches run (again) in a second
    batch."""
    ops = _ops(scope, query, facts, episodes, window)
    limits = {"facts": facts, "episodes": episodes}
    entities: EntityFocus | None = None
    if entity_graph is not None and query and names_in(query):
        labels = own_scope(scope).labels()
        read = DIRECTORIES.read(entity_graph, labels)
        guess = focus(query, read.held[1]) if read.held is not None else None
        searched = query if guess is None else guess.query if guess.targets else None
        pools = _entity_ops(scope, searched, limits) if searched is not None else []
        shared = searched == query  # the slots' own searches, deeper, are the pools
        if shared:
            ops, pools = _deepened(ops, pools), []
        found = yield [*ops, read.op, *pools]
        results: list[Any] = _cut(found[:len(ops)], limits) if shared else found[:len(ops)]
        known = DIRECTORIES.known(entity_graph, labels, read, found[len(ops)])
        held = read.held[1] if read.held is not None else None
        entities = guess if guess is not None and known is held else focus(query, known)
        if entities.targets:
            if entities.query != searched:
                pools = yield _entity_ops(scope, entities.query, limits)
            elif shared:
                pools = [found[_AT[slot]] for slot in POOLED]
            else:
                pools = found[len(ops) + 1:]
            _about(results, pools, entities, limits, other_names=entities.query != query,
                   weight=entity_weight)
    else:
        results = yield ops
    results = _spanned(results, window, episodes, query)
    out = _Found(results, entities=entities)
    if fills := _fill_ops(scope, results, facts, episodes):
        out.filled = _fill(results, fills, (yield list(fills.values())))
    return out


def _searched(text: str) -> str:
    """What the searches look for: the user's message, or of one longer than a store's query
    takes (a pasted log, say) its first `MAX_QUERY_CHARS` characters, cut at a space. The
    word ranking reads a query's first `MAX_QUERY_TERMS` words and the bundled embedder its
    first 256 tokens: the rest would not change the results. The exact lookups (policies,
    procedures, preferences) take no query and are unaffected.

    Example:
        >>> len(_searched("word " * 5000)) <= 8000, _searched("short question")
        (True, 'short question')
    """
    if len(text) <= MAX_QUERY_CHARS:
        return text
    cut = text[:MAX_QUERY_CHARS]
    logger.info("retrieve: the message is %d characters; its first %d are searched",
                len(text), MAX_QUERY_CHARS)
    return cut[:cut.rfind(" ")] if " " in cut else cut


def _batched(plan: Plan, store: BaseStore) -> Generator[Call, Any, _Found]:
    """The fan-out's store batches as calls for the node's runner (`running.run`/`arun`)."""
    try:
        ops = next(plan)
        while True:
            ops = plan.send((yield Call(store.batch, store.abatch, (ops,))))
    except StopIteration as done:
        return done.value


def _turn_index(state: Mapping[str, Any], messages_key: str = "messages") -> int:
    """This turn's index in the thread: the state's turn counter (`memory_turns`) plus one.

    A thread without the counter (its first turn, or one checkpointed before the counter
    existed) counts its user messages instead, once; from then on the counter carries on,
    also after the assemble node trimmed the messages the running summary absorbed.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> _turn_index({"messages": [HumanMessage("hi"), AIMessage("hello"), HumanMessage("ok")]})
        2
        >>> _turn_index({"messages": [HumanMessage("ok")], "memory_turns": 41})
        42
    """
    counted = state.get("memory_turns")
    if counted is not None:
        return int(counted) + 1
    return sum(1 for m in state.get(messages_key) or () if m.type == "human")


def _for_the_turn(item: dict[str, Any]) -> dict[str, Any]:
    """A retrieved item as the turn's state keeps it: without an episode's `context` (the
    messages before a logged turn, kept for full-text search only: never shown), which
    would be checkpointed with every step of the turn.

    Example:
        >>> _for_the_turn({"key": "e1", "value": {"summary": "user: hi", "context": ["a"]}})
        {'key': 'e1', 'value': {'summary': 'user: hi'}}
    """
    value = item.get("value")
    if isinstance(value, dict) and "context" in value:
        item["value"] = {k: v for k, v in value.items() if k != "context"}
    return item


def _finish(
    state: dict[str, Any], config: RunnableConfig | None, results: list[Any] | None,
    error: BaseException | None, messages_key: str, filled: Collection[str] = (),
    window: TimeWindow | None = None, entities: EntityFocus | None = None,
) -> dict[str, Any]:
    scope = scope_from_config(config)
    turn = _turn_index(state, messages_key)
    trace = new_trace(
        run_id=run_id_from_config(config), turn_index=turn,
        tenant_id=scope.tenant_id, user_id=scope.user_id, agent_id=scope.agent_id,
    )
    context: dict[str, list[dict[str, Any]]] = {slot: [] for slot in SLOT_KINDS}
    retrieval = trace["retrieval"]
    if error is not None:
        trace["degraded"].append(f"retrieve failed: {error!r:.200}")
        logger.warning("retrieve failed, the turn goes on without memory: %r", error)
        retrieval["retrieval_mode"] = "failed"
        return {"memory_context": context, "memory_trace": trace, "memory_turns": turn}
    assert results is not None
    if window is not None:
        retrieval["time_window"] = {"phrase": window.phrase, "start": window.start.isoformat(),
                                    "end": window.end.isoformat()}
    about = entities is not None and bool(entities.targets)
    if entities is not None:
        retrieval["entities"] = entities.trace()
    for slot, found in zip(SLOT_KINDS, results, strict=True):
        context[slot] = [_for_the_turn(item.dict()) for item in found]
        retrieval[_TRACE_FIELDS[slot]] = [
            (d.get("memory") or {}).get("id", d["key"]) for d in context[slot]
        ]
        mode = getattr(found, "retrieval_mode", None)
        mode = f"{mode}+entities" if about and slot in _RANKED else mode
        mode = f"{mode}+window" if window is not None and slot == "episodes" else mode
        retrieval["modes"][slot] = f"{mode}+newest" if slot in filled else mode
        for why in getattr(found, "degraded", []):
            trace["degraded"].append(why)
            logger.warning("retrieve, %s: %s", slot, why)
    retrieval["retrieval_mode"] = retrieval["modes"].get("facts")
    return {"memory_context": context, "memory_trace": trace, "memory_turns": turn}


def create_retrieve_node(
    store: BaseStore | None = None,
    /,
    *,
    facts: int = DEFAULT_FACTS,
    episodes: int = DEFAULT_EPISODES,
    messages_key: str = "messages",
    time_windows: bool = True,
    entity_graph: bool = True,
    entity_weight: float = ABOUT_WEIGHT,
) -> RunnableLambda:
    """Build the retrieve node.

    Every turn it loads, for the caller's scope (`configurable` keys `tenant_id`, `user_id`,
    `agent_id`), every active policy, procedure and preference (exhaustive), and the top
    facts and episodes for the newest user message (hybrid search), in one store batch; on a
    store without vectors, a slot the question's words left short gets the newest facts or
    episodes too (`NEWEST_FILL`, a second batch; the trace's mode reads e.g.
    `"lexical+newest"`). A question that names a span of time ("yesterday", "last week", "in
    May", "since Monday": `understanding.time_window`, by the store's clock) also lists that
    span's episodes, latest first, in the same batch; those the search found too lead the
    episodes slot (see `_span_first`; the trace's `retrieval.time_window`, and a mode like
    `"hybrid+window"`). A question that names entities the scope knows (resolved against
    its entity records as the write path resolves names: "VW" finds Volkswagen) also gets
    the records about them and about the entities one relation away ("Sarah" brings "the
    platform team" she leads): a second search, for the question with the names it did not
    use, keeps the records that carry those entities' ids, and their ranking is fused with
    the question's own (`entities.graph.fuse_about`; the trace's `retrieval.entities`, and a
    mode like `"hybrid+entities"`). The entity records and that search ride in the same batch
    (the search as the directory held from the last read tells it); a second batch searches
    again only when the directory just read tells otherwise. It writes
    `memory_context`, starts the turn's `memory_trace` and counts the turn in `memory_turns`
    (the trace's `turn_index`). A failing store degrades the turn (recorded in the trace and
    logged); no store at all is a misconfiguration and raises `ConfigurationError`.

    Args:
        store: The memory store; default: the graph's runtime store.
        facts: How many facts to retrieve at most (candidates: the assemble node shows as many
            as its token budget allows, best first).
        episodes: How many episodes to retrieve at most (candidates, as for facts).
        messages_key: The state key holding the conversation.
        time_windows: List the episodes of a span of time the question names (default
            True); False ranks by the question's words and meaning alone.
        entity_graph: Fuse in the records about the entities the question names and those
            one relation away (default True); False ranks without the entity graph.
        entity_weight: What the ranking of the records about the entities counts against
            the question's own (1) when it ranks the question's own matches, in [0, 1]
            (default 0.3, docs/retrieval.md); a search that added other names (an alias, a
            related entity) always counts as much as the question's.

    Raises:
        ConfigurationError: `facts` or `episodes` is not a whole number in [0, 1,000,000],
            or `entity_weight` not a number in [0, 1].

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> store.put(("tenant:acme", "user:alice", "preference"), "tone", {"value": "terse"})
        >>> node = create_retrieve_node(store)
        >>> out = node.invoke({"messages": [HumanMessage("hi")]},
        ...                   {"configurable": {"tenant_id": "acme", "user_id": "alice"}})
        >>> [p["value"]["value"] for p in out["memory_context"]["preferences"]]
        ['terse']
    """

    for name, count in (("facts", facts), ("episodes", episodes)):
        check_number(f"retrieve node {name}", count, 0, MAX_CANDIDATES,
                     f"use a whole number of candidates in [0, {MAX_CANDIDATES:,}]",
                     integer=True)
    weight = check_number("retrieve node entity_weight", entity_weight, 0, 1,
                          "use a number in [0, 1] (0.3 by default)")

    def begin(state: dict[str, Any], config: RunnableConfig
              ) -> tuple[BaseStore, Plan, TimeWindow | None]:
        query = _searched(message_text(last_human(state.get(messages_key) or [])))
        scope = scope_from_config(config)
        found_in = resolve_store(store)  # no store is a misconfiguration: it raises
        window = _window(found_in, query) if time_windows else None
        return found_in, _fan_out(scope, query, facts, episodes, window,
                                  found_in if entity_graph else None, weight), window

    def node(state: dict[str, Any], config: RunnableConfig) -> NodePlan[dict[str, Any]]:
        found_in, plan, window = begin(state, config)
        unrecorded = yield Call(record_thread, arecord_thread, (found_in, config))
        try:
            found = yield from _batched(plan, found_in)
        except StoreUnusable:  # a misconfiguration: fails loudly
            raise
        except Exception as exc:  # no exception reaches the graph
            return noting(_finish(state, config, None, exc, messages_key), unrecorded)
        return noting(_finish(state, config, found.results, None, messages_key, found.filled,
                               window, found.entities), unrecorded)

    def retrieve(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return run(node(state, config))

    async def aretrieve(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return await arun(node(state, config))

    return RunnableLambda(retrieve, afunc=aretrieve, name="retrieve")
