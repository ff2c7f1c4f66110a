"""Pure ranking decisions: filters, fusion, freshness, confidence, relevance tiers.

Nothing here touches a database; the stores call these functions on the candidates their
scope-filtered queries return.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from langgraph_typed_memory.errors import InvalidQuery, InvalidRecord
from langgraph_typed_memory.schemas import check_json_value

__all__ = [
    "Tier",
    "Ranked",
    "matches_filter",
    "validate_filter",
    "query_terms",
    "cosine_scores",
    "fuse",
    "freshness",
    "tier_of",
    "DEFAULT_TIER_DECAY_WEIGHTS",
    "tier_half_life",
]

Tier = Literal["high", "standard", "low"]
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_TERM = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 64
MAX_QUERY_CHARS = 8_000
"""The longest search query a store takes (`InvalidQuery` beyond)."""


def validate_filter(filter: Mapping[str, Any] | None) -> None:
    """Check a search filter's shape before any I/O.

    Raises:
        InvalidQuery: a non-dict filter, a non-string key, or an unknown `$` operator.
    """
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise InvalidQuery(f"filter must be a dict of field -> value, got {filter!r:.80}.")
    for key in filter:
        if not isinstance(key, str) or not key:
            raise InvalidQuery(f"filter key {key!r} must be a non-empty string.")
    try:
        check_json_value(dict(filter), "filter", "filter")
    except InvalidRecord as exc:
        raise InvalidQuery(str(exc)) from None
    for key, value in filter.items():
        if isinstance(value, Mapping):
            ops = [k for k in value if isinstance(k, str) and k.startswith("$")]
            unknown = sorted(set(ops) - _OPERATORS)
            if unknown:
                raise InvalidQuery(
                    f"filter on {key!r} uses unknown operator(s) {unknown}; "
                    f"use one of {sorted(_OPERATORS)}."
                )
            if not ops:
                validate_filter(value)


def _compare(item_value: Any, filter_value: Any) -> bool:
    if isinstance(filter_value, Mapping):
        if any(k.startswith("$") for k in filter_value):
            return all(_apply(item_value, op, v) for op, v in filter_value.items())
        if not isinstance(item_value, Mapping):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare(i, f) for i, f in zip(item_value, filter_value, strict=True))
        )
    return bool(item_value == filter_value)


def _apply(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    if op == "$gt":
        return left > right
    if op == "$gte":
        return left >= right
    if op == "$lt":
        return left < right
    return left <= right


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter semantics: top-level keys, nested dict equality, `$` operators. A
    dotted key (`"user.level"`) names the top-level key of that name when the value has one
    (as LangGraph's in-memory and Postgres stores read it), else the nested field (as its
    SQLite store reads it).

    Example:
        >>> matches_filter({"n": 3, "m": {"a": 1}}, {"n": {"$gte": 2}, "m": {"a": 1}})
        True
        >>> matches_filter({"user": {"access-level": "public"}}, {"user.access-level": "public"})
        True
    """
    if not filter:
        return True
    return all(_compare(_field(value, k), v) for k, v in filter.items())


def _field(value: Mapping[str, Any], key: str) -> Any:
    """A filter key's field: the top-level key, else the dotted path through nested objects."""
    if key in value or "." not in key:
        return value.get(key)
    found: Any = value
    for part in key.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours yourself yourselves s t d ll m re ve
""".split())
"""English function words (Snowball's list, which Postgres' `english` configuration drops too):
in a question they match nearly every record and drown the words that carry its meaning."""

ROLE_WORDS = frozenset({"user", "assistant"})
"""The words naming the conversation's roles, which nearly every stored text carries: a fact
says "The user lives in Lyon.", a logged turn reads "user: I live in Lyon.". A query naming
the user ("what does the user like to drink", as a model writes a memory tool's query) would
match every record on them, so the search drops them as it drops stop words. The stored texts
keep them."""


def query_terms(query: str) -> list[str]:
    """Word terms of a query for full-text search: safe to quote in any FTS syntax.

    Stop words and the role words every record holds (`ROLE_WORDS`) are dropped, unless
    the query has nothing else (then all its words count).

    Example:
        >>> query_terms("What's Bob's DOB? (1990-*)")
        ['bob', 'dob', '1990']
        >>> query_terms("What does the user like to drink?")
        ['like', 'drink']
        >>> query_terms("Who is it?")
        ['who', 'is', 'it']
    """
    words = [t.lower() for t in _TERM.findall(query)]
    content = [w for w in words if w not in STOP_WORDS and w not in ROLE_WORDS]
    return (content or words)[:MAX_QUERY_TERMS]


def cosine_scores(query: Sequence[float], matrix: np.ndarray) -> np.ndarray:
    """Cosine similarity of one query against each row of a matrix (zero rows score 0)."""
    q = np.asarray(query, dtype=np.float32)
    qn = float(np.linalg.norm(q))
    if matrix.size == 0 or qn == 0.0:
        return np.zeros(len(matrix), dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = np.inf
    return (matrix @ q) / (norms * qn)


def freshness(age_days: float, half_life_days: float | None) -> float:
    """Exponential decay 2^(-age/half-life); 1.0 for kinds without decay.

    Example:
        >>> freshness(30, 30)
        0.5
    """
    if half_life_days is None:
        return 1.0
    return float(2.0 ** (-max(age_days, 0.0) / half_life_days))


DEFAULT_TIER_DECAY_WEIGHTS: Mapping[int, float] = {0: 1.0, 1: 4.0, 2: 12.0}
"""Tier-aware decay of episodes: the episode half-life is multiplied by the weight of
its compaction tier, so a weekly summary (tier 1) fades 4x slower than a raw episode and a
monthly one (tier 2) 12x slower: older periods stay findable through their summaries."""


def tier_half_life(
    half_life_days: float | None,
    tier: Any,
    weights: Mapping[int, float] = DEFAULT_TIER_DECAY_WEIGHTS,
) -> float | None:
    """The half-life of an episode of compaction `tier` (None: no decay; unknown tier: 0).

    Example:
        >>> tier_half_life(30, 0), tier_half_life(30, 1), tier_half_life(30, 2)
        (30.0, 120.0, 360.0)
        >>> freshness(120, tier_half_life(30, 1))
        0.5
    """
    if half_life_days is None:
        return None
    level = tier if isinstance(tier, int) and not isinstance(tier, bool) else 0
    return float(half_life_days) * float(weights.get(level, weights.get(0, 1.0)))


class Ranked(NamedTuple):
    """One fused result."""

    id: str
    score: float
    """Final score in [0, 1]: normalized fusion x freshness x confidence weights."""
    relevance: float
    """How well it matches the query, in [0, 1] (see `fuse`): what the tier reads."""
    tier: Tier
    lexical_rank: int | None
    vector_rank: int | None


def tier_of(relevance: float, high: float, standard: float) -> Tier:
    """Label a normalized relevance with a tier the prompt can use instead of a bare score."""
    if relevance >= high:
        return "high"
    return "standard" if relevance >= standard else "low"


def _normalized(hits: Sequence[tuple[str, float]], method: str, rrf_k: float) -> dict[str, float]:
    """Per-list scores in [0, 1]: min-max of the raw scores (rsf), of reciprocal ranks
    (rrf), or each score over the best (best: for non-negative scores)."""
    if method == "rrf":
        return {ident: (rrf_k + 1) / (rrf_k + rank + 1) for rank, (ident, _) in enumerate(hits)}
    scores = [score for _, score in hits]
    low, high = min(scores), max(scores)
    if method == "best":
        low = min(low, 0.0)
    span = high - low
    return {ident: (score - low) / span if span > 0 else 1.0 for ident, score in hits}


def fuse(
    lexical: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    *,
    weights: Mapping[str, float],
    method: Literal["rsf", "rrf"] = "rsf",
    rrf_k: float = 60.0,
    priors: Mapping[str, tuple[float, float]],
    freshness_weight: float,
    confidence_weight: float,
    tiers: tuple[float, float],
    searched: Collection[str] | None = None,
) -> list[Ranked]:
    """Fuse two ranked (id, score) lists, then weight by freshness and confidence.

    Each list that ran is normalized to [0, 1]: relative score fusion (``rsf``, min-max of
    the raw scores, so a far-ahead BM25 match keeps its lead) or reciprocal rank fusion
    (``rrf``, k / (k + rank), ranks only); their weighted mean, times
    ``(1 - w_f + w_f * freshness) * (1 - w_c + w_c * confidence)`` with
    ``priors[id] = (freshness, confidence)``, is the score results are ranked by.

    Relevance (what the tier and ``min_relevance`` read) is the same weighted mean, except
    that with ``rsf`` a full-text score is divided by the best one instead of min-max
    normalized: min-max gives the weakest full-text match 0, which in a small candidate set
    labels a record holding the question's words "low" only for matching fewer of them. And
    its mean is over the lists `searched` (default: those with hits), so when full text ran
    and matched nothing, the nearest vector is not "high" for want of competition.

    Example:
        >>> r = fuse([("a", 9.0), ("b", 3.0)], [("b", 0.9), ("c", 0.1)],
        ...          weights={"lexical": 1, "vector": 1}, priors={}, freshness_weight=0,
        ...          confidence_weight=0, tiers=(0.6, 0.3))
        >>> [(x.id, round(x.score, 2), round(x.relevance, 2), x.tier) for x in r]
        [('a', 0.5, 0.5, 'standard'), ('b', 0.5, 0.67, 'high'), ('c', 0.0, 0.0, 'low')]
    """
    lists = {"lexical": lexical, "vector": vector}
    ran = [name for name, hits in lists.items() if hits and weights[name] > 0]
    total = sum(weights[name] for name in ran) or 1.0
    ranks: dict[str, dict[str, int]] = {"lexical": {}, "vector": {}}
    for name, hits in lists.items():
        first = ranks[name]
        for rank, (ident, _) in enumerate(hits, 1):
            first.setdefault(ident, rank)
    relevance = dict.fromkeys([*ranks["lexical"], *ranks["vector"]], 0.0)
    strength = dict(relevance)
    strength_total = sum(weights[n] for n in lists
                         if (n in ran or n in (searched or ())) and weights[n] > 0)
    for name in ran:
        weight = weights[name]
        norms = _normalized(lists[name], method, rrf_k)
        for ident, norm in norms.items():
            relevance[ident] += weight * norm / total
        if name == "lexical" and method == "rsf":
            norms = _normalized(lists[name], "best", rrf_k)
        for ident, norm in norms.items():
            strength[ident] += weight * norm / strength_total
    fresh_base, confidence_base = 1 - freshness_weight, 1 - confidence_weight
    high, standard = tiers
    lexical_ranks, vector_ranks = ranks["lexical"], ranks["vector"]
    keyed = []
    for ident, rel in relevance.items():
        rel = min(max(rel, 0.0), 1.0)
        shown = min(max(strength[ident], 0.0), 1.0)
        fresh, conf = priors.get(ident, (1.0, 1.0))
        score = (rel * (fresh_base + freshness_weight * fresh)
                 * (confidence_base + confidence_weight * conf))
        lexical_rank, vector_rank = lexical_ranks.get(ident), vector_ranks.get(ident)
        keyed.append((-score, lexical_rank or 10**9, vector_rank or 10**9, ident, Ranked(
            ident, score, shown,
            "high" if shown >= high else "standard" if shown >= standard else "low",
            lexical_rank, vector_rank)))
    keyed.sort()  # ids differ: the Ranked is never compared
    return [entry[4] for entry in keyed]


def finite_or_raise(name: str, value: float) -> float:
    """Refuse NaN and infinities in numeric settings."""
    if not math.isfinite(value):
        raise InvalidQuery(f"{name} is {value}; use a finite number.")
    return value
