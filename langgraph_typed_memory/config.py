"""The one configuration normalizer every backend shares.

Keys are defined once here (TypedDicts), validated once, and turned into frozen settings the
stores read. A test checks that the documented example configuration takes effect.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig, TTLConfig
from langgraph.store.base.embed import ensure_embeddings, tokenize_path

from langgraph_typed_memory.errors import ConfigurationError

__all__ = [
    "RetrievalConfig",
    "RetrievalSettings",
    "IndexSettings",
    "TTLSettings",
    "normalize_retrieval",
    "normalize_index",
    "normalize_ttl",
    "reject_unknown_keys",
    "check_number",
    "DEFAULT_HALF_LIVES_DAYS",
    "LifecycleConfig",
    "RetentionConfig",
    "LifecycleSettings",
    "normalize_lifecycle",
]

DEFAULT_HALF_LIVES_DAYS: dict[str, float | None] = {
    "episode": 30.0,
    "preference": 90.0,
    "fact": 180.0,
    "observation": 30.0,
    "procedure": None,
    "policy": None,
    "entity": None,
}
"""Freshness half-lives per kind; None means no decay."""


class RetrievalConfig(TypedDict, total=False):
    """How semantic discovery ranks fact, episode and observation memory.

    Example:
        >>> normalize_retrieval({"candidate_depth": 100}).candidate_depth
        100
    """

    candidate_depth: int
    """How many candidates each retriever (lexical, vector) returns before fusion. Default 50."""
    fusion: Literal["rsf", "rrf"]
    """How the two lists combine: relative score fusion (min-max scores) or reciprocal rank
    fusion. Default "rsf"."""
    rrf_k: float
    """The reciprocal-rank-fusion constant k in k / (k + rank), for fusion="rrf". Default 60."""
    lexical_weight: float
    """Weight of the BM25 list in the fusion. Default 1.5 (LoCoMo: docs/benchmarks.md). 0 skips
    the lexical retriever while the embedder works (it still stands in when it fails)."""
    vector_weight: float
    """Weight of the vector list in the fusion. Default 1.0."""
    freshness_weight: float
    """How much freshness (2^-age/half-life) can lower a score, 0..1. Default 0.2."""
    confidence_weight: float
    """How much a low confidence can lower a score, 0..1. Default 0.2."""
    half_lives_days: dict[str, float | None]
    """Per-kind half-lives overriding `DEFAULT_HALF_LIVES_DAYS`."""
    min_relevance: float
    """Drop results whose normalized relevance is below this, 0..1. Default 0 (keep all)."""
    tier_thresholds: tuple[float, float]
    """Relevance at or above which a result is 'high', then 'standard'. Default (0.6, 0.3)."""


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    """Validated `RetrievalConfig` with defaults filled."""

    candidate_depth: int = 50
    fusion: Literal["rsf", "rrf"] = "rsf"
    rrf_k: float = 60.0
    lexical_weight: float = 1.5
    vector_weight: float = 1.0
    freshness_weight: float = 0.2
    confidence_weight: float = 0.2
    half_lives_days: Mapping[str, float | None] = field(
        default_factory=lambda: dict(DEFAULT_HALF_LIVES_DAYS)
    )
    min_relevance: float = 0.0
    tier_thresholds: tuple[float, float] = (0.6, 0.3)


def reject_unknown_keys(what: str, config: Mapping[str, Any], known: Iterable[str]) -> None:
    """The one check every config normalizer starts with.

    Raises:
        ConfigurationError: naming the unknown keys and listing the known ones.
    """
    known = sorted(known)
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ConfigurationError(
            f"{what} config has unknown key(s) {unknown}; known keys: {known}."
        )


def check_number(what: str, value: Any, low: float, high: float, fix: str, *,
                 integer: bool = False) -> Any:
    """`value` if it is a finite number (an int, with `integer`) in [low, high]; else a
    `ConfigurationError` naming `what` and the value, ending with how to `fix` it.

    Example:
        >>> check_number("gate config review_threshold", 0.8, 0, 1, "use a number in [0, 1]")
        0.8
        >>> check_number("assembly config recent_turns", 2.5, 1, 10, "use an int in [1, 10]",
        ...              integer=True)
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: assembly config recent_turns=2.5: ...
    """
    kinds = (int,) if integer else (int, float)
    if (not isinstance(value, kinds) or isinstance(value, bool)
            or not math.isfinite(value) or not low <= value <= high):
        raise ConfigurationError(f"{what}={value!r}: {fix}.")
    return value if integer else float(value)


def _unit(name: str, value: Any) -> float:
    return float(check_number(f"retrieval config {name}", value, 0, 1, "use a number in [0, 1]"))


def normalize_retrieval(config: RetrievalConfig | Mapping[str, Any] | None) -> RetrievalSettings:
    """Validate a retrieval config and fill defaults.

    Raises:
        ConfigurationError: an unknown key or an out-of-range value, named.
    """
    config = dict(config or {})
    reject_unknown_keys("retrieval", config, RetrievalConfig.__annotations__)
    out: dict[str, Any] = {}
    if "candidate_depth" in config:
        depth = config["candidate_depth"]
        if not isinstance(depth, int) or isinstance(depth, bool) or not 1 <= depth <= 10_000:
            raise ConfigurationError(
                f"retrieval config candidate_depth={depth!r}: use an int in [1, 10000]."
            )
        out["candidate_depth"] = depth
    if "fusion" in config:
        if config["fusion"] not in ("rsf", "rrf"):
            raise ConfigurationError(
                f"retrieval config fusion={config['fusion']!r}: use 'rsf' or 'rrf'."
            )
        out["fusion"] = config["fusion"]
    if "rrf_k" in config:
        k = config["rrf_k"]
        if not isinstance(k, (int, float)) or isinstance(k, bool) or not 0 <= k <= 10_000:
            raise ConfigurationError(f"retrieval config rrf_k={k!r}: use a number in [0, 10000].")
        out["rrf_k"] = float(k)
    for name in ("lexical_weight", "vector_weight"):
        if name in config:
            w = config[name]
            if not isinstance(w, (int, float)) or isinstance(w, bool) or not 0 <= w <= 100:
                raise ConfigurationError(
                    f"retrieval config {name}={w!r}: use a number in [0, 100]."
                )
            out[name] = float(w)
    for name in ("freshness_weight", "confidence_weight", "min_relevance"):
        if name in config:
            out[name] = _unit(name, config[name])
    if "half_lives_days" in config:
        lives = dict(DEFAULT_HALF_LIVES_DAYS)
        for kind, days in dict(config["half_lives_days"]).items():
            if kind not in lives:
                raise ConfigurationError(f"half_lives_days names unknown kind {kind!r}.")
            if days is not None and (not isinstance(days, (int, float)) or days <= 0):
                raise ConfigurationError(
                    f"half_lives_days[{kind!r}]={days!r}: use a positive number of days or None."
                )
            lives[kind] = None if days is None else float(days)
        out["half_lives_days"] = lives
    if "tier_thresholds" in config:
        high, standard = (_unit("tier_thresholds", v) for v in config["tier_thresholds"])
        if standard > high:
            raise ConfigurationError(
                f"tier_thresholds={config['tier_thresholds']!r}: the 'high' threshold comes "
                "first and must be >= the 'standard' one."
            )
        out["tier_thresholds"] = (high, standard)
    return RetrievalSettings(**out)


DEFAULT_EMBED_TIMEOUT = 10.0
"""Seconds an embedding call may take by default (index config key `embed_timeout`)."""


@dataclass(frozen=True, slots=True)
class IndexSettings:
    """A validated LangGraph `IndexConfig`."""

    dims: int
    embeddings: Embeddings
    fields: tuple[str, ...]
    paths: tuple[tuple[str, Any], ...]
    """(field, tokenized path) pairs, as LangGraph tokenizes them."""
    embed_timeout: float | None = DEFAULT_EMBED_TIMEOUT
    """Seconds an embedding call may take before the store gives up on it (None: no limit)."""


def normalize_index(index: IndexConfig | Mapping[str, Any] | None) -> IndexSettings | None:
    """Validate LangGraph's `IndexConfig` (`dims`, `embed`, `fields`) and `embed_timeout`.

    `text_fields`, the name LangGraph's `SqliteStore` reads for `fields`, is taken too.

    `embed` may be an `Embeddings`, a callable, an `init_embeddings` string, or
    ``"local:all-MiniLM-L6-v2"`` for the bundled offline model (the `local` extra).
    `embed_timeout` (seconds, default 10, None for no limit) bounds every embedding call: a
    search whose query embedding overruns it degrades to lexical retrieval (recorded in
    `degraded`), a put fails with `EmbeddingFailed` and writes nothing, and a promotion
    writes without vectors (recorded in the outcome's reason).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> fake = DeterministicFakeEmbedding(size=8)
        >>> normalize_index({"dims": 8, "embed": fake, "embed_timeout": 2.5}).embed_timeout
        2.5

    Raises:
        ConfigurationError: missing or wrong `dims`/`embed`/`fields`/`embed_timeout`, or
            `fields` and `text_fields` naming different paths.
    """
    if index is None:
        return None
    index = dict(index)
    reject_unknown_keys(
        "index", index,
        ("dims", "embed", "fields", "text_fields", "ann_index_config", "distance_type",
         "embed_timeout"),
    )
    timeout = index.get("embed_timeout", DEFAULT_EMBED_TIMEOUT)
    if timeout is not None and (
        not isinstance(timeout, (int, float)) or isinstance(timeout, bool)
        or not 0 < timeout <= 3600
    ):
        raise ConfigurationError(
            f"index config embed_timeout={timeout!r}: use a number of seconds in (0, 3600], "
            "or None for no limit."
        )
    dims = index.get("dims")
    if not isinstance(dims, int) or isinstance(dims, bool) or not 1 <= dims <= 16_000:
        raise ConfigurationError(
            f"index config dims={dims!r}: give the embedding size as an int, e.g. 384."
        )
    embed = index.get("embed")
    if embed is None:
        raise ConfigurationError("index config needs 'embed': an Embeddings or callable.")
    if isinstance(embed, str) and embed.startswith("local:"):
        from langgraph_typed_memory.embeddings import LocalEmbeddings

        embed = LocalEmbeddings(embed.removeprefix("local:"))
    fields = _index_fields(index)
    return IndexSettings(
        dims=dims,
        embeddings=ensure_embeddings(embed),
        fields=tuple(fields),
        paths=tuple((f, f if f == "$" else tokenize_path(f)) for f in fields),
        embed_timeout=None if timeout is None else float(timeout),
    )


def _index_fields(index: Mapping[str, Any]) -> list[str]:
    """The paths to embed: `fields`, as LangGraph's `PostgresStore` and `InMemoryStore` read
    them, or `text_fields`, the name LangGraph's `SqliteStore` reads; either a list of paths
    or one path. Both may be given if they name the same paths.

    Example:
        >>> _index_fields({"text_fields": "text"}), _index_fields({})
        (['text'], ['$'])
    """
    given = {name: index[name] for name in ("fields", "text_fields") if index.get(name)}
    normalized = {
        name: [paths] if isinstance(paths, str) else paths for name, paths in given.items()
    }
    for name, paths in normalized.items():
        if not isinstance(paths, (list, tuple)) or not all(
            isinstance(p, str) and p for p in paths
        ):
            raise ConfigurationError(
                f"index config {name}={given[name]!r}: give a list of paths, e.g. ['text']."
            )
    if len(normalized) == 2 and list(normalized["fields"]) != list(normalized["text_fields"]):
        raise ConfigurationError(
            f"index config fields={given['fields']!r} and text_fields={given['text_fields']!r} "
            "name different paths; give one of them (text_fields is the name LangGraph's "
            "SqliteStore reads, fields the name of its other stores)."
        )
    return list(next(iter(normalized.values()), ["$"]))


@dataclass(frozen=True, slots=True)
class TTLSettings:
    """A validated LangGraph `TTLConfig`."""

    default_ttl: float | None = None
    refresh_on_read: bool = True
    sweep_interval_minutes: float | None = None


def normalize_ttl(ttl: TTLConfig | Mapping[str, Any] | None) -> TTLSettings:
    """Validate LangGraph's `TTLConfig` (default_ttl, refresh_on_read, sweep_interval_minutes)."""
    ttl = dict(ttl or {})
    reject_unknown_keys("ttl", ttl, ("default_ttl", "refresh_on_read", "sweep_interval_minutes"))
    for name in ("default_ttl", "sweep_interval_minutes"):
        v = ttl.get(name)
        if v is not None and (not isinstance(v, (int, float)) or v <= 0):
            raise ConfigurationError(f"ttl config {name}={v!r}: use a positive number of minutes.")
    return TTLSettings(
        default_ttl=ttl.get("default_ttl"),
        refresh_on_read=bool(ttl.get("refresh_on_read", True)),
        sweep_interval_minutes=ttl.get("sweep_interval_minutes"),
    )


class RetentionConfig(TypedDict, total=False):
    """Retention classes: how long typed records of each class may be kept.

    A record names its class in ``metadata["retention"]``; the sweep forgets records older
    than their class's maximum age (counted from when the record was written).

    Example:
        >>> s = normalize_lifecycle({"retention": {"classes": {"short": 30, "legal_hold": None}}})
        >>> s.retention_classes["short"], s.retention_classes["legal_hold"]
        (30.0, None)
    """

    classes: dict[str, float | None]
    """Class name -> maximum age in days (None: kept until deleted, e.g. a legal hold)."""
    default: float | None
    """Maximum age in days of typed records that name no class. Default None (no limit)."""


class LifecycleConfig(TypedDict, total=False):
    """Freshness, expiry, garbage collection, access tracking and retention.

    Half-lives per kind are `RetrievalConfig.half_lives_days`: ranking and expiry share them.

    Example:
        >>> normalize_lifecycle({"expiry_floor": 0.1}).expiry_floor
        0.1
    """

    expiry_floor: float
    """An active fact or observation whose freshness falls below this expires, 0..1.
    Default 0.05."""
    access_boost_step: float
    """Freshness multiplier gained per retrieval: boost = 1 + step x access_count. Default 0.1."""
    access_boost_cap: float
    """Largest access boost, >= 1. Default 1.5."""
    gc_after_days: float
    """Garbage collection forgets records expired for at least this many days... Default 180."""
    gc_below_confidence: float
    """...and whose confidence is below this, 0..1. Default 0.5."""
    retention: RetentionConfig
    """Retention classes and the default maximum age (see `RetentionConfig`)."""
    access_flush_every: int
    """Access counts are buffered in memory and appended to the access log in one batch once
    this many records are pending (in the background, or with a write transaction that comes
    first; always before a sweep). Default 2,048; 1 writes on every read."""
    access_flush_seconds: float
    """...or once this much of the process's own time (not the store's clock) has passed
    since the last flush. Default 60."""
    access_log_rows: int
    """Counts are appended to an access log, folded into each record's uses by the sweeps,
    an export and `flush_access`, and in the background once this process has logged this
    many entries since the last fold. Default 8,192."""


@dataclass(frozen=True, slots=True)
class LifecycleSettings:
    """Validated `LifecycleConfig` with defaults filled."""

    expiry_floor: float = 0.05
    access_boost_step: float = 0.1
    access_boost_cap: float = 1.5
    gc_after_days: float = 180.0
    gc_below_confidence: float = 0.5
    retention_classes: Mapping[str, float | None] = field(default_factory=dict)
    retention_default: float | None = None
    access_flush_every: int = 2048
    access_flush_seconds: float = 60.0
    access_log_rows: int = 8192


def _days(what: str, value: Any) -> float | None:
    if value is None:
        return None
    return check_number(what, value, 1e-9, 1e6,
                        "use a positive number of days, or None for no limit")


_LIFECYCLE_RANGES: dict[str, tuple[float, float, str, bool]] = {
    "expiry_floor": (0, 1, "use a number in [0, 1]", False),
    "gc_below_confidence": (0, 1, "use a number in [0, 1]", False),
    "access_boost_step": (0, 10, "use a number in [0, 10]", False),
    "access_boost_cap": (1, 100, "use a number in [1, 100] (1: no boost)", False),
    "gc_after_days": (0, 1e6, "use a number of days >= 0", False),
    "access_flush_every": (1, 1_000_000, "use an int in [1, 1000000]", True),
    "access_flush_seconds": (0, 86_400, "use a number of seconds in [0, 86400]", False),
    "access_log_rows": (1, 100_000_000, "use an int in [1, 100000000]", True),
}


def normalize_lifecycle(config: LifecycleConfig | Mapping[str, Any] | None) -> LifecycleSettings:
    """Validate a lifecycle config and fill defaults.

    Raises:
        ConfigurationError: an unknown key, an out-of-range value or a bad retention class,
            named.
    """
    if config is not None and not isinstance(config, Mapping):
        raise ConfigurationError(f"lifecycle config must be a dict, got {config!r:.80}.")
    config = dict(config or {})
    reject_unknown_keys("lifecycle", config, LifecycleConfig.__annotations__)
    out: dict[str, Any] = {}
    for name, (low, high, fix, integer) in _LIFECYCLE_RANGES.items():
        if name in config:
            out[name] = check_number(f"lifecycle config {name}", config[name], low, high, fix,
                                     integer=integer)
    if "retention" in config:
        retention = config["retention"]
        if not isinstance(retention, Mapping):
            raise ConfigurationError(
                f"lifecycle config retention={retention!r:.80}: use a dict such as "
                "{'classes': {'short': 30, 'legal_hold': None}, 'default': None}."
            )
        reject_unknown_keys("lifecycle retention", retention, RetentionConfig.__annotations__)
        classes = retention.get("classes", {})
        if not isinstance(classes, Mapping):
            raise ConfigurationError(
                f"retention classes={classes!r:.80}: use a dict of class name -> days or None."
            )
        normalized: dict[str, float | None] = {}
        for name, days in classes.items():
            if not isinstance(name, str) or not name.strip() or len(name) > 64:
                raise ConfigurationError(
                    f"retention class name {name!r:.80}: use a non-empty string of at most "
                    "64 characters."
                )
            normalized[name] = _days(f"retention class {name!r}", days)
        out["retention_classes"] = normalized
        out["retention_default"] = _days("retention default", retention.get("default"))
    return LifecycleSettings(**out)
