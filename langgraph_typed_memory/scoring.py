"""Pure ranking decisions: filters, fusion, freshness, confidence, relevance tiers (D2).

Nothing here touches a database; the stores call these functions on the candidates their
scope-filtered queries return.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from langgraph_typed_memory.errors import InvalidQuery

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
]

Tier = Literal["high", "standard", "low"]
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_TERM = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 64


def validate_filter(filter: Mapping[str, Any] | None) -> None:
    """Check a search filter's shape before any I/O.

    Raises:
        InvalidQuery: a non-dict filter, a non-string key, or an unknown `$` operator.
    """
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise InvalidQuery(f"filter must be a dict of field -> value, got {filter!r:.80}.")
    for key, value in filter.items():
        if not isinstance(key, str) or not key:
            raise InvalidQuery(f"filter key {key!r} must be a non-empty string.")
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
    """LangGraph's filter semantics: top-level keys, nested dict equality, `$` operators.

    Example:
        >>> matches_filter({"n": 3, "m": {"a": 1}}, {"n": {"$gte": 2}, "m": {"a": 1}})
        True
    """
    if not filter:
        return True
    return all(_compare(value.get(k), v) for k, v in filter.items())


def query_terms(query: str) -> list[str]:
    """Word terms of a query for full-text search: safe to quote in any FTS syntax.

    Example:
        >>> query_terms("What's Bob's DOB? (1990-*)")
        ['what', 's', 'bob', 's', 'dob', '1990']
    """
    return [t.lower() for t in _TERM.findall(query)][:MAX_QUERY_TERMS]


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


@dataclass(frozen=True, slots=True)
class Ranked:
    """One fused result."""

    id: str
    score: float
    """Final score in [0, 1]: normalized fusion x freshness x confidence weights."""
    relevance: float
    """Normalized fusion score alone, in [0, 1]."""
    tier: Tier
    lexical_rank: int | None
    vector_rank: int | None


def tier_of(relevance: float, high: float, standard: float) -> Tier:
    """Label a normalized relevance with a tier the prompt can use instead of a bare score."""
    if relevance >= high:
        return "high"
    return "standard" if relevance >= standard else "low"


def fuse(
    lexical: Sequence[str],
    vector: Sequence[str],
    *,
    weights: Mapping[str, float],
    rrf_k: float,
    priors: Mapping[str, tuple[float, float]],
    freshness_weight: float,
    confidence_weight: float,
    tiers: tuple[float, float],
) -> list[Ranked]:
    """Weighted reciprocal-rank fusion of two ranked id lists, then prior weighting.

    `priors[id] = (freshness, confidence)`, both in [0, 1]. Relevance is the fused score
    divided by the best score possible (first in every list that ran), so it lies in [0, 1]
    whatever the weights. The final score multiplies relevance by
    ``(1 - w_f + w_f * freshness) * (1 - w_c + w_c * confidence)``.

    Example:
        >>> r = fuse(["a", "b"], ["b", "c"], weights={"lexical": 1, "vector": 1}, rrf_k=60,
        ...          priors={}, freshness_weight=0, confidence_weight=0, tiers=(0.6, 0.3))
        >>> [x.id for x in r]
        ['b', 'a', 'c']
    """
    lists = {"lexical": lexical, "vector": vector}
    ran = [name for name, ids in lists.items() if ids]
    best = sum(weights[name] / (rrf_k + 1) for name in ran) or 1.0
    raw: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {"lexical": {}, "vector": {}}
    for name in ran:
        for rank, ident in enumerate(lists[name]):
            if ident in ranks[name]:
                continue
            ranks[name][ident] = rank + 1
            raw[ident] = raw.get(ident, 0.0) + weights[name] / (rrf_k + rank + 1)
    out = []
    for ident, value in raw.items():
        relevance = min(value / best, 1.0)
        fresh, conf = priors.get(ident, (1.0, 1.0))
        score = (
            relevance
            * (1 - freshness_weight + freshness_weight * fresh)
            * (1 - confidence_weight + confidence_weight * conf)
        )
        out.append(
            Ranked(
                id=ident,
                score=score,
                relevance=relevance,
                tier=tier_of(relevance, *tiers),
                lexical_rank=ranks["lexical"].get(ident),
                vector_rank=ranks["vector"].get(ident),
            )
        )
    out.sort(key=lambda r: (-r.score, r.id))
    return out


def finite_or_raise(name: str, value: float) -> float:
    """Refuse NaN and infinities in numeric settings."""
    if not math.isfinite(value):
        raise InvalidQuery(f"{name} is {value}; use a finite number.")
    return value
