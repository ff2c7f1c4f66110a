"""Semantic discovery with the fallback cascade, the exact lookup and history mode.

`typed_search` answers a search on a typed namespace: every visible record of an exact kind,
or, for a ranked kind, the fusion of the dialect's lexical and vector candidates weighted by
freshness and confidence (docs/retrieval.md), falling back to vector-only, lexical-only and a
substring match when a component is missing or failing. History mode adds superseded and
expired versions. Plans over the records, like erasure and promotion.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from langgraph.store.base import Item, SearchOp

from langgraph_typed_memory.errors import (
    EmbeddingDimensionMismatch,
    InvalidQuery,
    StoreUnusable,
)
from langgraph_typed_memory.lifecycle import (
    ADDITIONS_KEY,
    DURING_KEY,
    HISTORY_STATUSES,
    IF_CHANGED_KEY,
    NEWEST_KEY,
    split_additions,
    split_during,
    split_history,
    split_if_changed,
    split_newest,
)
from langgraph_typed_memory.namespaces import (
    EXACT_KINDS,
    Scope,
    TypedNamespace,
    parse_namespace,
)
from langgraph_typed_memory.results import MemoryItem, SearchResults
from langgraph_typed_memory.schemas import validate_record
from langgraph_typed_memory.scoring import (
    DEFAULT_TIER_DECAY_WEIGHTS,
    freshness,
    fuse,
    matches_filter,
    query_terms,
    tier_half_life,
    tier_of,
)
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.listings import during_listing, newest_listing
from langgraph_typed_memory.store.core.protocol import (
    EmbedError,
    Plan,
    Sql,
    Wait,
    interleave,
    timed_out,
)
from langgraph_typed_memory.store.index import VectorRanking

if TYPE_CHECKING:
    from langgraph_typed_memory.store.core.records import Records

__all__ = ["typed_search", "visible_scope_sql", "scope_read", "QueryVectors"]

T = TypeVar("T")

_HISTORY_SQL = "m.status IN (" + ", ".join(f"'{s}'" for s in HISTORY_STATUSES) + ")"
"""What history-mode search may return (a constant list, never caller input)."""


def visible_scope_sql(scope: Scope, kind: str, status: str) -> tuple[str, list[Any]]:
    """The scope filter of a typed read: own scope plus the wider shared scopes, of the
    records whose status passes `status` (an SQL constant).

    Example:
        >>> visible_scope_sql(Scope("acme", user_id="alice"), "fact", "m.status = 'active'")[1]
        ['fact', 'acme', 'fact', 'acme', 'alice']
    """
    return q.visible_filter(kind, scope.tenant_id, scope.user_id, scope.agent_id, status)


def scope_read(scope: Scope, kind: str, status: str, now: float) -> q.ScopeRead:
    """The rows of `kind` a ranked search of `scope` reads: those whose status passes
    `status` (an SQL constant), live at `now`."""
    return q.ScopeRead(kind, scope.tenant_id, scope.user_id, scope.agent_id, status, now)


class QueryVectors:
    """The vectors of a batch's search queries, embedded while its reads start.

    The embedder works (in its own thread, or task) while the searches send their first
    statements and rank their words; a search asks for its query's vector (`get`) where it
    needs it, the first to ask waits for the embedder until the call's deadline (its
    `embed_timeout`, counted from the start of the call), and every search of the batch
    shares the answer: the vectors, or the `EmbedError` that the search degrades on.
    """

    def __init__(self, records: Records, queries: list[str], future: Future[Any],
                 timeout: float | None) -> None:
        self._records, self._queries, self._future = records, queries, future
        self._timeout = timeout
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._vectors: dict[str, list[float] | EmbedError] | None = None

    def get(self, query: str) -> Plan[list[float] | EmbedError]:
        """The vector of `query`, one of the batch's, or why there is none."""
        if self._vectors is None:
            try:
                answer = yield Wait(self._future, self._deadline)
            except TimeoutError:
                assert self._timeout is not None
                answer = timed_out(self._timeout)
            if self._vectors is None:  # another search may have waited in the same turn
                self._vectors = self._answered(answer)
        return self._vectors[query]

    def _answered(self, answer: Any) -> dict[str, list[float] | EmbedError]:
        if isinstance(answer, EmbedError):
            return dict.fromkeys(self._queries, answer)
        try:
            self._records.check_vectors(answer, len(self._queries))
        except EmbeddingDimensionMismatch as exc:
            return dict.fromkeys(self._queries, EmbedError(exc))
        return dict(zip(self._queries, answer, strict=True))


def typed_search(
    records: Records, op: SearchOp, query_vectors: QueryVectors | None
) -> Plan[SearchResults]:
    """A search on a typed namespace; what it used is recorded for access tracking."""
    typed = parse_namespace(op.namespace_prefix)
    history, plain = split_history(op.filter)  # history mode: filter={"$history": True}
    newest, plain = split_newest(plain)
    during, plain = split_during(plain)
    since, plain = split_if_changed(plain)
    additions, plain = split_additions(plain)
    op = op._replace(filter=plain)
    if since is not None and not (newest and not op.query and not history):
        raise InvalidQuery(
            f"filter {IF_CHANGED_KEY} makes a {NEWEST_KEY} listing conditional: pass it with "
            f"{NEWEST_KEY}: True, without a query or $history."
        )
    if additions and since is None:
        raise InvalidQuery(
            f"filter {ADDITIONS_KEY} lists what was added since an earlier listing: pass it "
            f"with {IF_CHANGED_KEY} (that listing's version) and {NEWEST_KEY}: True."
        )
    if during is not None:
        if op.query or history:
            raise InvalidQuery(
                f"filter {DURING_KEY} lists a span of time latest first: it takes no query "
                "and no $history. Search without it, or list the span and rank it yourself."
            )
        return (yield from during_listing(records, op, typed, *during))
    if newest and not op.query and not history:
        return (yield from newest_listing(records, op, typed, since, additions))
    results = yield from _typed_find(records, op, typed, query_vectors, history)
    # What a search uses (access tracking): every record of an exact lookup, ranked results of tier
    # high or standard; a listing or a low-relevance tail is not a use.
    used = [i for i in results if isinstance(i, MemoryItem) and results.retrieval_mode != "list"
            and (results.retrieval_mode == "exact" or i.tier in ("high", "standard"))]
    if history:
        yield from records.reactivate(used, actor="store.search")
    yield from records.access.note([i.memory["id"] for i in used])
    return results


def _typed_find(
    records: Records,
    op: SearchOp,
    typed: TypedNamespace,
    query_vectors: QueryVectors | None,
    history: bool,
) -> Plan[SearchResults]:
    visible = _HISTORY_SQL if history else "m.status = 'active'"
    scope_where, scope_params = visible_scope_sql(typed.scope, typed.kind, visible)
    now = records.clock().timestamp()
    where, params = f"{scope_where} AND {q.LIVE}", [*scope_params, now]
    if typed.kind in EXACT_KINDS:
        # Exhaustive known-scope lookup. No ranking, no top-k: every active record.
        kinds = _FAN_OUT_KINDS if typed.kind in _FAN_OUT_KINDS else (typed.kind,)
        rows = yield _exact_listing(typed.scope, visible, now, history, kinds)
        items = [
            records.to_item(r, None, retrieval_mode="exact")
            for r in rows
            if r[5] == typed.kind and (
                not op.filter or matches_filter(records.dialect.load_json(r[4]), op.filter))
        ]
        return SearchResults(items, retrieval_mode="exact")
    if not op.query:
        rows = yield Sql(
            f"SELECT {q.COLUMNS} FROM memories m WHERE {where} ORDER BY m.seq", params
        )
        rows = [r for r in rows
                if not op.filter or matches_filter(records.dialect.load_json(r[4]), op.filter)]
        page = rows[op.offset : op.offset + op.limit]
        return SearchResults(
            [records.to_item(r, None, retrieval_mode="list") for r in page], retrieval_mode="list"
        )
    if not history:
        scope = scope_read(typed.scope, typed.kind, _searchable(typed.kind), now)
        return (yield from _hybrid(records, op, typed, scope, query_vectors))
    # History mode: active and expired records keep their index entries and go through
    # the cascade; superseded ones have none and are matched on their stored text.
    indexed = scope_read(typed.scope, typed.kind, "m.status IN ('active', 'expired')", now)
    window = op._replace(offset=0, limit=op.offset + op.limit)
    found = yield from _hybrid(records, window, typed, indexed, query_vectors)
    superseded, args = visible_scope_sql(typed.scope, typed.kind, "m.status = 'superseded'")
    older = yield from _superseded_matches(
        records, window, typed, f"{superseded} AND {q.LIVE}", [*args, now])
    # One common measure for indexed and unindexed versions: the share of the query's
    # terms a record's text holds scales every score by (1 + share) / 2.
    terms = set(query_terms(op.query or ""))
    for item in found:
        share = _term_share(typed, item, terms)
        item.score = (item.score or 0.0) * (1 + share) / 2  # type: ignore[attr-defined]
    merged = sorted([*found, *older], key=lambda i: -(i.score or 0.0))
    return SearchResults(merged[op.offset : op.offset + op.limit],
                         retrieval_mode=found.retrieval_mode, degraded=found.degraded)


_FAN_OUT_KINDS = ("policy", "preference", "procedure")
"""The exact kinds a fan-out lists together (entities are listed on their own)."""


def _exact_listing(scope: Scope, visible: str, now: float, history: bool,
                   kinds: tuple[str, ...] = _FAN_OUT_KINDS) -> Sql:
    """Every record of `kinds` visible from `scope` whose status passes `visible` (an SQL
    constant), live at `now`: wider scopes first, then by key. One statement for the three
    kinds, `shared`: the policies, procedures and preferences of a fan-out, asked together,
    are read once, and each search keeps its kind's rows (in the same order).

    Example:
        >>> sql = _exact_listing(Scope("acme", "alice"), "m.status = 'active'", 5.0, False)
        >>> sql.params[:5], len(sql.params), sql.shared  # per kind: the tenant's, the user's
        (['policy', 'acme', 'policy', 'acme', 'alice'], 16, True)
    """
    where, params = q.visible_filter(kinds, scope.tenant_id, scope.user_id, scope.agent_id,
                                     visible)
    return Sql(
        f"SELECT {q.COLUMNS} FROM memories m WHERE {where} AND {q.LIVE} "
        "ORDER BY (m.user_id IS NOT NULL), (m.agent_id IS NOT NULL), m.key, "
        + ("m.seq DESC" if history else "m.seq"),
        [*params, now], shared=True)


def _searchable(kind: str) -> str:
    """The statuses a ranked search reads: active records, and for episodes also the ones
    compaction folded into a summary (their text stays in the full-text index; their
    embeddings are gone, so only the words find them): nothing a user said is unreachable."""
    return "m.status IN ('active', 'compacted')" if kind == "episode" else "m.status = 'active'"


def _term_share(typed: TypedNamespace, item: Item, terms: set[str]) -> float:
    """Share of the query terms found in a typed record's indexed text."""
    if not terms:
        return 0.0
    text = validate_record(typed.kind, item.key, item.value, typed.namespace()).search_text
    return len(terms & set(query_terms(text))) / len(terms)


def _superseded_matches(
    records: Records, op: SearchOp, typed: TypedNamespace, where: str, params: list[Any]
) -> Plan[list[Item]]:
    """History mode: superseded versions matching the query's terms, scored by the
    share of the terms their indexed text holds, times the usual priors."""
    terms = list(dict.fromkeys(query_terms(op.query or "")))[:16]
    if not terms:
        return []
    hits = " + ".join(
        f"(CASE WHEN {records.dialect.position_fn}(lower(CAST(m.value AS TEXT)), ?) > 0 "
        "THEN 1 ELSE 0 END)" for _ in terms
    )
    depth = max(records.retrieval.candidate_depth, op.limit) * 4
    rows = yield Sql(
        f"SELECT {q.COLUMNS}, {hits} AS hits FROM memories m WHERE {where} "
        "ORDER BY hits DESC, m.seq DESC LIMIT ?",
        [*terms, *params, depth],
    )
    settings, now, out = records.retrieval, records.clock().timestamp(), []
    for r in rows:
        if not r[-1]:
            break
        value = records.dialect.load_json(r[4])
        if not matches_filter(value, op.filter):
            continue
        item = records.to_item(r[:-1])
        relevance = _term_share(typed, item, set(terms))
        if relevance <= 0 or relevance < settings.min_relevance:
            continue
        age_days = (now - (r[12] if r[12] is not None else r[13])) / 86400.0
        fresh = freshness(age_days, settings.half_lives_days.get(typed.kind))
        score = (relevance * (1 - settings.freshness_weight + settings.freshness_weight * fresh)
                 * (1 - settings.confidence_weight
                    + settings.confidence_weight * float(r[10] or 0.0)))
        out.append(records.to_item(
            r[:-1], score * (1 + relevance) / 2, retrieval_mode="like", tier=tier_of(relevance,
                                                               *settings.tier_thresholds),
            relevance=relevance, lexical_rank=None, vector_rank=None,
        ))
    return out


def _hybrid(
    records: Records,
    op: SearchOp,
    typed: TypedNamespace,
    scope: q.ScopeRead,
    query_vectors: QueryVectors | None,
) -> Plan[SearchResults]:
    """Semantic discovery with the fallback cascade: hybrid, vector, lexical, like, over the
    live rows of `scope`."""
    settings = records.retrieval
    depth = None if op.filter else max(settings.candidate_depth, op.offset + op.limit)
    degraded: list[str] = []
    lexical: list[tuple[int, float]] = []
    vector: list[tuple[int, float]] = []
    terms = query_terms(op.query or "")
    embedded: list[list[float] | EmbedError] = []

    def query_vector() -> Plan[list[float] | None]:
        """The query's vector, asked once the vector search's cells are up to date."""
        assert query_vectors is not None
        embedded.append((yield from query_vectors.get(op.query or "")))
        return None if isinstance(embedded[0], EmbedError) else embedded[0]

    # A zero-weight lexical list adds nothing to the fusion: it runs only if the embedder
    # fails (it backs up the vector search), so it waits for the embedder's answer.
    lexical_beside = bool(terms) and (settings.lexical_weight > 0 or query_vectors is None)
    rankings: list[Plan[Any]] = []
    if query_vectors is not None:
        rankings.append(records.dialect.vector_top_k(scope, query_vector, depth))
    failed: list[Exception] = []
    if lexical_beside:  # a broken full-text index degrades, never fails
        rankings.append(_caught(records.dialect.lexical(scope, terms, depth), failed))
    # Together: their first statements (and those of caches catching up) share round
    # trips, and the embedder works meanwhile.
    ranked = yield from interleave(rankings)
    ranking: VectorRanking | None = ranked[0] if query_vectors is not None else None
    vector_ran = ranking is not None
    if embedded and isinstance(embedded[0], EmbedError):
        degraded.append(f"embedder failed: {embedded[0].error!r:.200}")
    lexical_wanted = bool(terms) and (settings.lexical_weight > 0 or not vector_ran)
    found: list[tuple[int, float]] | None = ranked[-1] if lexical_beside else None
    if lexical_wanted and not lexical_beside:
        found = yield from _caught(records.dialect.lexical(scope, terms, depth), failed)
    lexical_ran = lexical_wanted and not failed
    if lexical_ran:
        assert found is not None
        lexical = found
    elif failed:
        degraded.append(f"lexical failed: {failed[0]!r:.200}")
    if ranking is not None:
        vector = ranking.hits
    if lexical_ran and vector_ran:
        mode = "hybrid"
    elif vector_ran:
        mode = "vector"
    elif lexical:
        mode = "lexical"
    else:
        mode = "like"
        lexical = yield from _like(records, scope, terms or [op.query or ""], depth)
    regimes = [getattr(r, "regime", None) for r in (ranking, found)]
    if mode != "like" and any(regimes):
        # a scope too large for the exact caches: ranked by its vectors' sketches, or by
        # the database (Postgres) where the sketches do not fit either
        mode += "+" + next(regime for regime in regimes if regime)
    candidates = list(dict.fromkeys(seq for seq, _ in [*lexical, *vector]))
    priors = yield from _priors(records, typed, candidates, op.filter, ranking)
    fused = fuse(
        [(str(s), score) for s, score in lexical if str(s) in priors],
        [(str(s), score) for s, score in vector if str(s) in priors],
        weights={"lexical": settings.lexical_weight, "vector": settings.vector_weight},
        method=settings.fusion,
        rrf_k=settings.rrf_k,
        priors=priors,
        freshness_weight=settings.freshness_weight,
        confidence_weight=settings.confidence_weight,
        tiers=settings.tier_thresholds,
        searched=[name for name, ran in (("lexical", lexical_ran), ("vector", vector_ran))
                  if ran],
    )
    fused = [f for f in fused if f.relevance >= settings.min_relevance]
    page = fused[op.offset : op.offset + op.limit]
    rows_by_seq: dict[int, tuple[Any, ...]] = {}
    if page:  # whole rows for the page only: the other candidates needed only their priors
        clause, extra = records.dialect.in_list("m.seq", [int(f.id) for f in page])
        rows_by_seq = {r[0]: r for r in (yield Sql(
            f"SELECT {q.COLUMNS} FROM memories m WHERE {clause}", extra))}
    items = [
        records.to_item(
            rows_by_seq[int(f.id)],
            f.score,
            retrieval_mode=mode,
            tier=f.tier,
            relevance=f.relevance,
            lexical_rank=f.lexical_rank,
            vector_rank=f.vector_rank,
        )
        for f in page
        if int(f.id) in rows_by_seq  # gone since its priors were read: a concurrent delete
    ]
    return SearchResults(items, retrieval_mode=mode, degraded=degraded)


def _caught(plan: Plan[T], errors: list[Exception]) -> Plan[T | None]:
    """`plan`'s value, or None with its exception added to `errors`."""
    try:
        return (yield from plan)
    except StoreUnusable:  # a misconfiguration, not a degradation
        raise
    except Exception as exc:
        errors.append(exc)
        return None


def _priors(
    records: Records, typed: TypedNamespace, candidates: list[int],
    value_filter: dict[str, Any] | None, ranked: VectorRanking | None,
) -> Plan[dict[str, tuple[float, float]]]:
    """Freshness and confidence of each candidate (by str(seq)) that passes `value_filter`.
    Read from the cells the vector search `ranked` (if it ran) where they hold them and no
    filter needs the value, else from the columns they need, plus the value only when there
    is a filter to match."""
    if not candidates:
        return {}
    settings, now = records.retrieval, records.clock().timestamp()
    half_life = settings.half_lives_days.get(typed.kind)
    held = {} if ranked is None or value_filter else ranked.priors(candidates)
    missing = [seq for seq in candidates if seq not in held]
    if missing:
        clause, extra = records.dialect.in_list("m.seq", missing)
        tier = records.dialect.json_field("m.value", "compaction_tier")  # no JSON parsing
        value = ", m.value" if value_filter else ""
        for seq, confidence, occurred, created, episode_tier, *kept in (yield Sql(
                f"SELECT m.seq, m.confidence, m.occurred_at, m.created_at, {tier}{value} "
                f"FROM memories m WHERE {clause}", extra)):
            if value_filter and not matches_filter(records.dialect.load_json(kept[0]),
                                                   value_filter):
                continue
            held[seq] = (float(confidence or 0.0),
                         occurred if occurred is not None else created, int(episode_tier or 0))
    priors = {}
    for seq, (confidence, at, episode_tier) in held.items():
        life = half_life if typed.kind != "episode" else tier_half_life(  # compaction tiers
            half_life, episode_tier,
            getattr(settings, "tier_decay_weights", DEFAULT_TIER_DECAY_WEIGHTS))
        priors[str(seq)] = (freshness((now - at) / 86400.0, life), confidence)
    return priors


def _like(
    records: Records, scope: q.ScopeRead, terms: list[str], depth: int | None
) -> Plan[list[tuple[int, float]]]:
    """Last resort of the cascade: substring match, ranked by terms matched."""
    terms = [t for t in dict.fromkeys(t.lower() for t in terms) if t][:16]
    if not terms:
        return []
    where, params = scope.live()
    hits = " + ".join(
        f"(CASE WHEN {records.dialect.position_fn}(lower(m.search_text), ?) > 0 THEN 1 ELSE 0 END)"
        for _ in terms
    )
    rows = yield Sql(
        f"SELECT m.seq, {hits} AS hits FROM memories m WHERE {where} "
        f"AND m.search_text IS NOT NULL ORDER BY hits DESC, m.seq",
        [*terms, *params],
    )
    ranked = [(r[0], float(r[1])) for r in rows if r[1] > 0]
    return ranked if depth is None else ranked[:depth]
