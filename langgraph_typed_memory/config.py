"""The configurations every backend shares, each declared once.

A configuration is a frozen dataclass whose fields carry their default and the check their
value must pass (`option`): building one validates it, and `of` builds one from the plain
dict an app passes (`retrieval={"candidate_depth": 100}`), refusing unknown keys. LangGraph's
own `IndexConfig` and `TTLConfig` are validated into `IndexSettings` and `TTLSettings`. A
test checks that the documented example configuration takes effect.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Literal, Self

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig, TTLConfig
from langgraph.store.base.embed import ensure_embeddings, tokenize_path

from langgraph_typed_memory.errors import ConfigurationError

__all__ = [
    "Options",
    "option",
    "RetrievalConfig",
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


def reject_unknown_keys(what: str, config: Mapping[str, Any], known: Iterable[str]) -> None:
    """The one check every configuration starts with.

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


Check = Callable[[str, Any], Any]
"""How a configuration field checks its value: `check(what, value)` returns the value (made
canonical: an int as a float, a list as a frozenset) or raises `ConfigurationError` naming
`what` ("gate config review_threshold") and how to fix it."""


def number(low: float, high: float, fix: str = "", *, integer: bool = False) -> Check:
    """A check for a number (an int, with `integer`) in [low, high].

    Example:
        >>> number(0, 1)("gate config review_threshold", 1)
        1.0
    """
    def said(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else str(x)

    fix = fix or f"use {'an int' if integer else 'a number'} in [{said(low)}, {said(high)}]"
    return lambda what, value: check_number(what, value, low, high, fix, integer=integer)


UNIT = number(0, 1)
"""A check for a number in [0, 1]."""


def one_of(*allowed: Any, fix: str) -> Check:
    """A check for one of `allowed` values.

    Example:
        >>> one_of("rsf", "rrf", fix="use 'rsf' or 'rrf'")("retrieval config fusion", "rrf")
        'rrf'
    """
    def check(what: str, value: Any) -> Any:
        if value not in allowed:
            raise ConfigurationError(f"{what}={value!r}: {fix}.")
        return value
    return check


def option(default: Any = MISSING, check: Check | None = None, *,
           factory: Callable[[], Any] | None = None) -> Any:
    """A configuration field: its default (or `factory`) and the check its value passes."""
    if factory is not None:
        return field(default_factory=factory, metadata={"check": check})
    return field(default=default, metadata={"check": check})


class Options:
    """What every configuration shares: building one runs each field's check (a bad value
    fails at once, named), then `_check_together` for what involves several fields; `of`
    builds one from a mapping.

    Example:
        >>> RetrievalConfig(lexical_weight=-1)
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: retrieval config lexical_weight=-1: ...
    """

    __slots__ = ()
    what: ClassVar[str]
    """How messages name the configuration ("gate" in "gate config review_threshold=2")."""

    def __post_init__(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            check = f.metadata.get("check")
            if check is not None:
                object.__setattr__(self, f.name, check(f"{self.what} config {f.name}",
                                                       getattr(self, f.name)))
        self._check_together()

    def _check_together(self) -> None:
        """Checks that involve several fields (none by default)."""

    @classmethod
    def of(cls, config: Self | Mapping[str, Any] | None) -> Self:
        """The configuration a mapping (or None: the defaults) describes; one given is
        returned as it is.

        Example:
            >>> RetrievalConfig.of({"fusion": "rrf"}).fusion, RetrievalConfig.of(None).rrf_k
            ('rrf', 60.0)

        Raises:
            ConfigurationError: not a mapping, an unknown key or a bad value, named.
        """
        if isinstance(config, cls):
            return config
        if config is not None and not isinstance(config, Mapping):
            raise ConfigurationError(f"{cls.what} config must be a dict, got {config!r:.80}.")
        given = dict(config or {})
        reject_unknown_keys(cls.what, given, [f.name for f in fields(cls)])  # type: ignore[arg-type]
        return cls(**given)


def _half_lives(what: str, value: Any) -> dict[str, float | None]:
    lives = dict(DEFAULT_HALF_LIVES_DAYS)
    for kind, days in dict(value).items():
        if kind not in lives:
            raise ConfigurationError(f"half_lives_days names unknown kind {kind!r}.")
        if days is not None and (not isinstance(days, (int, float)) or days <= 0):
            raise ConfigurationError(
                f"half_lives_days[{kind!r}]={days!r}: use a positive number of days or None.")
        lives[kind] = None if days is None else float(days)
    return lives


def _tiers(what: str, value: Any) -> tuple[float, float]:
    high, standard = (UNIT("retrieval config tier_thresholds", v) for v in value)
    if standard > high:
        raise ConfigurationError(
            f"tier_thresholds={value!r}: the 'high' threshold comes first and must be >= the "
            "'standard' one.")
    return high, standard


@dataclass(frozen=True, slots=True)
class RetrievalConfig(Options):
    """How semantic discovery ranks fact, episode and observation memory (pass a dict with
    these keys, or this class).

    Example:
        >>> normalize_retrieval({"candidate_depth": 100}).candidate_depth
        100
    """

    what: ClassVar[str] = "retrieval"
    candidate_depth: int = option(50, number(1, 10_000, integer=True))
    """How many candidates each retriever (lexical, vector) returns before fusion. Default 50."""
    fusion: Literal["rsf", "rrf"] = option("rsf", one_of("rsf", "rrf", fix="use 'rsf' or 'rrf'"))
    """How the two lists combine: relative score fusion (min-max scores) or reciprocal rank
    fusion. Default "rsf"."""
    rrf_k: float = option(60.0, number(0, 10_000))
    """The reciprocal-rank-fusion constant k in k / (k + rank), for fusion="rrf". Default 60."""
    lexical_weight: float = option(1.5, number(0, 100))
    """Weight of the BM25 list in the fusion. Default 1.5 (LoCoMo: docs/benchmarks.md). 0 skips
    the lexical retriever while the embedder works (it still stands in when it fails)."""
    vector_weight: float = option(1.0, number(0, 100))
    """Weight of the vector list in the fusion. Default 1.0."""
    freshness_weight: float = option(0.2, UNIT)
    """How much freshness (2^-age/half-life) can lower a score, 0..1. Default 0.2."""
    confidence_weight: float = option(0.2, UNIT)
    """How much a low confidence can lower a score, 0..1. Default 0.2."""
    half_lives_days: Mapping[str, float | None] = option(
        check=_half_lives, factory=lambda: dict(DEFAULT_HALF_LIVES_DAYS))
    """Per-kind half-lives overriding `DEFAULT_HALF_LIVES_DAYS`."""
    min_relevance: float = option(0.0, UNIT)
    """Drop results whose normalized relevance is below this, 0..1. Default 0 (keep all)."""
    tier_thresholds: tuple[float, float] = option((0.6, 0.3), _tiers)
    """Relevance at or above which a result is 'high', then 'standard'. Default (0.6, 0.3)."""


def normalize_retrieval(config: RetrievalConfig | Mapping[str, Any] | None) -> RetrievalConfig:
    """A retrieval configuration from what an app passed (`RetrievalConfig.of`).

    Raises:
        ConfigurationError: an unknown key or an out-of-range value, named.
    """
    return RetrievalConfig.of(config)


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


def _days(what: str, value: Any) -> float | None:
    if value is None:
        return None
    return check_number(what, value, 1e-9, 1e6,
                        "use a positive number of days, or None for no limit")


def _classes(what: str, value: Any) -> dict[str, float | None]:
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"retention classes={value!r:.80}: use a dict of class name -> days or None.")
    classes: dict[str, float | None] = {}
    for name, days in value.items():
        if not isinstance(name, str) or not name.strip() or len(name) > 64:
            raise ConfigurationError(
                f"retention class name {name!r:.80}: use a non-empty string of at most 64 "
                "characters.")
        classes[name] = _days(f"retention class {name!r}", days)
    return classes


@dataclass(frozen=True, slots=True)
class RetentionConfig(Options):
    """Retention classes: how long typed records of each class may be kept.

    A record names its class in ``metadata["retention"]``; the sweep forgets records older
    than their class's maximum age (counted from when the record was written).

    Example:
        >>> s = normalize_lifecycle({"retention": {"classes": {"short": 30, "legal_hold": None}}})
        >>> s.retention.classes["short"], s.retention.classes["legal_hold"]
        (30.0, None)
    """

    what: ClassVar[str] = "lifecycle retention"
    classes: Mapping[str, float | None] = option(check=_classes, factory=dict)
    """Class name -> maximum age in days (None: kept until deleted, e.g. a legal hold)."""
    default: float | None = option(None, lambda what, value: _days("retention default", value))
    """Maximum age in days of typed records that name no class. Default None (no limit)."""


def _retention(what: str, value: Any) -> RetentionConfig:
    if not isinstance(value, (Mapping, RetentionConfig)):
        raise ConfigurationError(
            f"{what}={value!r:.80}: use a dict such as "
            "{'classes': {'short': 30, 'legal_hold': None}, 'default': None}.")
    return RetentionConfig.of(value)


@dataclass(frozen=True, slots=True)
class LifecycleConfig(Options):
    """Freshness, expiry, garbage collection, access tracking and retention (pass a dict with
    these keys, or this class).

    Half-lives per kind are `RetrievalConfig.half_lives_days`: ranking and expiry share them.

    Example:
        >>> normalize_lifecycle({"expiry_floor": 0.1}).expiry_floor
        0.1
    """

    what: ClassVar[str] = "lifecycle"
    expiry_floor: float = option(0.05, UNIT)
    """An active fact or observation whose freshness falls below this expires, 0..1.
    Default 0.05."""
    access_boost_step: float = option(0.1, number(0, 10))
    """Freshness multiplier gained per retrieval: boost = 1 + step x access_count. Default 0.1."""
    access_boost_cap: float = option(1.5, number(1, 100, "use a number in [1, 100] (1: no boost)"))
    """Largest access boost, >= 1. Default 1.5."""
    gc_after_days: float = option(180.0, number(0, 1e6, "use a number of days >= 0"))
    """Garbage collection forgets records expired for at least this many days... Default 180."""
    gc_below_confidence: float = option(0.5, UNIT)
    """...and whose confidence is below this, 0..1. Default 0.5."""
    retention: RetentionConfig = option(check=_retention, factory=RetentionConfig)
    """Retention classes and the default maximum age (see `RetentionConfig`)."""
    access_flush_every: int = option(2048, number(1, 1_000_000, integer=True))
    """Access counts are buffered in memory and appended to the access log in one batch once
    this many records are pending (in the background, or with a write transaction that comes
    first; always before a sweep). Default 2,048; 1 writes on every read."""
    access_flush_seconds: float = option(
        60.0, number(0, 86_400, "use a number of seconds in [0, 86400]"))
    """...or once this much of the process's own time (not the store's clock) has passed
    since the last flush. Default 60."""
    access_log_rows: int = option(8192, number(1, 100_000_000, integer=True))
    """Counts are appended to an access log, folded into each record's uses by the sweeps,
    an export and `flush_access`, and in the background once this process has logged this
    many entries since the last fold. Default 8,192."""


def normalize_lifecycle(config: LifecycleConfig | Mapping[str, Any] | None) -> LifecycleConfig:
    """A lifecycle configuration from what an app passed (`LifecycleConfig.of`).

    Raises:
        ConfigurationError: an unknown key, an out-of-range value or a bad retention class,
            named.
    """
    return LifecycleConfig.of(config)
