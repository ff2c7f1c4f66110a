"""Validation of store operations: pure functions run on a whole batch before any I/O.

A bad operation raises a typed error that names the namespace, key or argument and says how
to fix it; since validation precedes every write, nothing of the batch is written.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, SearchOp

from langgraph_typed_memory.errors import InvalidNamespace, InvalidQuery, InvalidRecord, shown
from langgraph_typed_memory.gate import Proposal
from langgraph_typed_memory.namespaces import (
    SCOPE_PREFIXES,
    Scope,
    check_untyped,
    is_typed,
    parse_namespace,
    parse_scope,
)
from langgraph_typed_memory.schemas import MAX_RUN_ID_CHARS, MAX_VALUE_DEPTH, check_json_value
from langgraph_typed_memory.scoring import MAX_QUERY_CHARS, validate_filter

__all__ = [
    "HistoryOp",
    "validate_op",
    "batch_ops",
    "key_argument",
    "prefix_argument",
    "check_namespace",
    "check_key",
    "check_window",
    "check_match_path",
    "check_filter",
    "MAX_WINDOW",
    "MAX_KEY_BYTES",
    "MAX_KEY_CHARS",
    "MAX_NAMESPACE_BYTES",
    "MAX_TTL_MINUTES",
]

MAX_WINDOW = 10**18
"""The largest `limit` or `offset`: more than any database holds, and small enough that the
row counts a search asks the database for (up to eight times its window) stay 64-bit."""
MAX_PROPOSALS = 10_000
MAX_TURN = 2**31 - 1
MAX_KEY_BYTES = 1024
"""The longest key, in bytes of UTF-8 (1,024 characters of ASCII)."""
MAX_KEY_CHARS = MAX_KEY_BYTES
"""The most characters a key can then have (what `check_invariants` checks stored keys by)."""
MAX_NAMESPACE_BYTES = 1600
"""The longest namespace a write may name, in bytes of UTF-8, its labels joined by ".". With
the longest key, it fits one entry of Postgres's (namespace, key) index (2,704 bytes); every
typed namespace fits (ids hold at most 128 characters)."""
MAX_TTL_MINUTES = 10**9
"""The longest TTL, about 1,900 years (for no expiry, give `ttl=None`): expiry times stay
finite in both databases."""
_OPS = "GetOp, PutOp, SearchOp or ListNamespacesOp (from langgraph.store.base)"


def _a(value: Any) -> str:
    """The type of `value` with its article, for a message: "an int", "a list"."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


class PromoteOp(NamedTuple):
    """Offer proposals to the gate on behalf of a caller's scope."""

    scope: Scope
    proposals: Sequence[Proposal | Mapping[str, Any]]
    run_id: str | None = None
    turn: int | None = None
    source: str | None = None
    """Who observed the proposals (default: the caller's user, else agent, else 'app')."""


class HistoryOp(NamedTuple):
    """Every version of a typed record, newest first, or its audit trail."""

    namespace: tuple[str, ...]
    key: str
    audit: bool = False


def batch_ops(ops: Any) -> list[Op]:
    """The operations of a `batch` call as a list; anything but an iterable of them (a
    string, a dict, None, a single op) is refused before any I/O.

    Example:
        >>> batch_ops((GetOp(("docs",), "k"),))
        [GetOp(namespace=('docs',), key='k', refresh_ttl=True)]
        >>> batch_ops(None)
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidQuery: batch: ops=None must be a list of ...
    """
    if (isinstance(ops, (str, bytes, Mapping, GetOp, PutOp, SearchOp, ListNamespacesOp))
            or not isinstance(ops, Iterable)):
        raise InvalidQuery(
            f"batch: ops={shown(ops)} must be a list of operations, each a {_OPS}; "
            "wrap a single one in a list."
        )
    return list(ops)


def key_argument(key: Any) -> Any:
    """A key as LangGraph's `BaseStore` methods take it: an int or a UUID turned into text
    (they call `str(key)`); anything else is left for `check_key` to accept or refuse, so
    `None` is refused rather than stored under "None".

    Example:
        >>> key_argument(42), key_argument("tone"), key_argument(None)
        ('42', 'tone', None)
    """
    if (isinstance(key, int) and not isinstance(key, bool)) or isinstance(key, uuid.UUID):
        return str(key)
    return key


def prefix_argument(namespace_prefix: Any) -> Any:
    """A search prefix given as a list read as the tuple it stands for, as LangGraph's SQL
    stores read it; anything else is left for `check_namespace`.

    Example:
        >>> prefix_argument(["tenant:acme", "user:alice", "fact"])
        ('tenant:acme', 'user:alice', 'fact')
    """
    return tuple(namespace_prefix) if isinstance(namespace_prefix, list) else namespace_prefix


def check_namespace(namespace: Any, what: str) -> tuple[str, ...]:
    """A namespace is a tuple of non-empty, dot-free labels (ids of a typed namespace may hold
    "."), valid Unicode without NUL, not under the reserved root `langgraph`, and, when it is
    untyped, not a typed one that breaks the grammar (`namespaces.check_untyped`).

    Example:
        >>> check_namespace(("tenant:acme.io", "user:alice", "fact"), "namespace")
        ('tenant:acme.io', 'user:alice', 'fact')
        >>> check_namespace(b"docs", "namespace")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidNamespace: namespace b'docs' is a bytes, not ...
    """
    if not isinstance(namespace, tuple):
        raise InvalidNamespace(
            f"{what} {shown(namespace)} is {_a(namespace)}, not a tuple of "
            "strings: write it as a tuple, e.g. ('docs',) or ('tenant:acme', 'user:alice', "
            "'fact')."
        )
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespace(
                f"{what} {shown(namespace)} must be a tuple of strings: label {shown(label)} "
                f"is {_a(label)}."
            )
    typed = is_typed(namespace)
    for label in namespace:
        if not label or ("." in label and not (typed and label.startswith(SCOPE_PREFIXES))):
            raise InvalidNamespace(
                f"{what} {shown(namespace)}: label {shown(label)} is empty or contains '.'; "
                "labels are non-empty and dot-free (only the ids of a typed namespace, "
                "e.g. 'user:alice@example.com', may hold '.')."
            )
        try:
            _check_text(label, lambda: f"{what} {shown(namespace)}", "label")
        except InvalidRecord as exc:
            raise InvalidNamespace(str(exc)) from None
    if namespace and namespace[0] == "langgraph":
        raise InvalidNamespace(
            f"{what} {shown(namespace)}: the root label 'langgraph' is reserved; use another "
            "first label.")
    if not typed:
        check_untyped(namespace)
    return namespace


def check_key(key: Any, namespace: tuple[str, ...]) -> str:
    """A key is a non-empty string of at most `MAX_KEY_BYTES` bytes, valid Unicode without
    NUL.

    Example:
        >>> check_key("tone", ("docs",))
        'tone'
        >>> check_key(b"tone", ("docs",))
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidRecord: key b'tone' in ('docs',) is a bytes: ...
    """
    if not isinstance(key, str):
        raise InvalidRecord(
            f"key {shown(key)} in {shown(namespace)} is {_a(key)}: give a "
            "non-empty string (an int or a UUID is turned into one)."
        )
    if not key:
        raise InvalidRecord(f"key '' in {shown(namespace)} is empty: give a non-empty string.")
    _check_text(key, lambda: f"key in {shown(namespace)}", "key")
    size = len(key.encode("utf-8"))
    if size > MAX_KEY_BYTES:
        raise InvalidRecord(
            f"key {shown(key, 40)} in {shown(namespace)} is {size} bytes as UTF-8 "
            f"({len(key)} characters); the limit is {MAX_KEY_BYTES}: use a shorter key (a "
            "hash of a long one, for instance)."
        )
    return key


def check_window(limit: Any, offset: Any, what: str) -> None:
    """`limit` and `offset` are ints from 0 to `MAX_WINDOW`, as LangGraph's stores take them.

    Example:
        >>> check_window(100_000, 0, "list_namespaces")
        >>> check_window(-1, 0, "list_namespaces")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidQuery: list_namespaces: limit=-1 must be an ...
    """
    for name, value in (("limit", limit), ("offset", offset)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_WINDOW:
            raise InvalidQuery(
                f"{what}: {name}={shown(value)} must be an int between 0 and {MAX_WINDOW}."
            )


def check_match_path(path: Any) -> None:
    """A `list_namespaces` prefix or suffix is a tuple, list or other sequence of labels
    (strings, `*` for any label), as LangGraph's stores take it; a string alone is not. A
    label is checked as a namespace's: non-empty, valid Unicode without NUL, and dot-free
    unless it is a scope label (`tenant:acme.io`).

    Example:
        >>> check_match_path(["docs", "*"])
        >>> check_match_path("docs")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidQuery: match path 'docs' must be a tuple or ...
    """
    if (isinstance(path, (str, bytes)) or not isinstance(path, Sequence)
            or not all(isinstance(x, str) for x in path)):
        raise InvalidQuery(
            f"match path {shown(path)} must be a tuple or list of strings, e.g. ('docs', '*')."
        )
    for label in path:
        if not label or ("." in label and not label.startswith(SCOPE_PREFIXES)):
            raise InvalidNamespace(
                f"match path {shown(path)}: label {shown(label)} is empty or contains '.'; "
                "labels are non-empty and dot-free (only scope labels such as "
                "'tenant:acme.io' may hold '.')."
            )
        try:
            check_json_value(label, f"match path {shown(path)}", "label")
        except InvalidRecord as exc:
            raise InvalidNamespace(str(exc)) from None


def check_filter(filter: Any) -> None:
    """A search filter as LangGraph reads it (`scoring.validate_filter`), where bounds and
    values no stored record can hold still have a meaning: an infinity bounds a comparison
    (`{"price": {"$lt": inf}}`), and text with a NUL byte, which stored text never holds,
    and NaN, which stored numbers never are, equal nothing and bound nothing (as on
    LangGraph's stores). Lone surrogates, integers past 64 bits, nesting deeper than a value
    may (`schemas.MAX_VALUE_DEPTH`) and non-JSON values are refused.

    Example:
        >>> check_filter({"price": {"$lt": math.inf}, "tag": "a\\x00", "n": math.nan})
        >>> check_filter({"price": {"$lt": 2**70}})
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidQuery: filter: ...
    """
    validate_filter(_representable(filter, 0))


def _representable(value: Any, depth: int) -> Any:
    """`value` with what only a filter may hold (infinities, NaN, NUL bytes) replaced by stand-ins
    of the same shape that any store could hold, for the checks values must pass."""
    if isinstance(value, float) and not math.isfinite(value):
        return 0.0
    if isinstance(value, str):
        return value.replace("\x00", " ")
    if isinstance(value, (Mapping, list, tuple)) and depth >= MAX_VALUE_DEPTH:
        raise InvalidQuery(
            f"filter is nested more than {MAX_VALUE_DEPTH} levels deep, deeper than any "
            "stored value may be; a filter names fields of the value, so flatten it."
        )
    if isinstance(value, Mapping):
        return {k.replace("\x00", " ") if isinstance(k, str) else k:
                _representable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_representable(v, depth + 1) for v in value]
    return value


def _check_text(text: str, where: Callable[[], str], path: str) -> None:
    """`check_json_value` of a string; `where()`, the message's start, is made only when the
    string is refused (a get's checks ran longer than its statement)."""
    if "\x00" in text or not (text.isascii() or _encodes(text)):
        check_json_value(text, where(), path)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_refresh(refresh_ttl: Any, what: Callable[[], str]) -> None:
    if not isinstance(refresh_ttl, bool):
        raise InvalidQuery(
            f"{what()}: refresh_ttl={shown(refresh_ttl)} must be True or False (or None in the "
            "store's methods: the store's TTL config decides)."
        )


def _check_ttl(ttl: Any, key: str, ns: tuple[str, ...]) -> None:
    if ttl is None:
        return
    if (not isinstance(ttl, (int, float)) or isinstance(ttl, bool)
            or not 0 < ttl <= MAX_TTL_MINUTES):
        raise InvalidRecord(
            f"ttl={shown(ttl)} for {shown(key)} in {shown(ns)}: use a positive number of "
            f"minutes, at most {MAX_TTL_MINUTES:,} (or None for no expiry)."
        )


def _check_index(index: Any, key: str, ns: tuple[str, ...]) -> None:
    """`put(index=...)`: None (the store's fields), False (not indexed) or a list of field
    paths, each non-empty text of at most `MAX_KEY_BYTES` bytes."""
    if index is None or index is False:
        return
    where = f"index={shown(index)} for {shown(key)} in {shown(ns)}"
    if isinstance(index, (str, bytes)) or not isinstance(index, (list, tuple)):
        raise InvalidRecord(
            f"{where}: give None (the store's configured fields), False (not indexed) or a "
            "list of field paths, e.g. ['text', 'metadata.title']."
        )
    for path in index:
        if not isinstance(path, str) or not path:
            raise InvalidRecord(f"{where}: field path {shown(path)} must be a non-empty string.")
        check_json_value(path, where, "field path")
        if len(path.encode("utf-8")) > MAX_KEY_BYTES:
            raise InvalidRecord(
                f"{where}: field path {shown(path, 40)} is over {MAX_KEY_BYTES} bytes; name a "
                "field of the value.")


def _check_put_size(ns: tuple[str, ...]) -> None:
    size = len(".".join(ns).encode("utf-8"))
    if size > MAX_NAMESPACE_BYTES:
        raise InvalidNamespace(
            f"namespace {shown(ns)} is {size} bytes as UTF-8 (its labels joined by '.'); a "
            f"write's namespace may hold {MAX_NAMESPACE_BYTES}: use shorter labels."
        )


def validate_op(op: Op) -> None:
    """Check one operation before any I/O; raise a typed error naming what is wrong.

    Example:
        >>> validate_op(PutOp(("docs",), "k", {"text": "hi"}, ttl=5))
        >>> validate_op(GetOp(5, "k"))
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidNamespace: namespace 5 is an int, not a tuple ...
    """
    if isinstance(op, GetOp):
        ns = check_namespace(op.namespace, "namespace")
        check_key(op.key, ns)
        if is_typed(ns):
            parse_namespace(ns)
        _check_refresh(op.refresh_ttl, lambda: f"get {shown(op.key)} in {shown(ns)}")
    elif isinstance(op, SearchOp):
        ns = check_namespace(op.namespace_prefix, "namespace prefix")
        if is_typed(ns):
            parse_namespace(ns)
        check_filter(op.filter)
        check_window(op.limit, op.offset, f"search in {shown(ns)}")
        if op.query is not None:
            if not isinstance(op.query, str):
                raise InvalidQuery(f"query {shown(op.query)} must be a string (or None).")
            if len(op.query) > MAX_QUERY_CHARS:
                raise InvalidQuery(
                    f"query is {len(op.query)} characters; the limit is {MAX_QUERY_CHARS}: "
                    "search with the words that matter."
                )
            try:
                check_json_value(op.query, f"search in {shown(ns)}", "query")
            except InvalidRecord as exc:
                raise InvalidQuery(str(exc)) from None
        _check_refresh(op.refresh_ttl, lambda: f"search in {shown(ns)}")
    elif isinstance(op, ListNamespacesOp):
        check_window(op.limit, op.offset, "list_namespaces")
        conditions = op.match_conditions
        if conditions is None:
            conditions = ()
        if isinstance(conditions, (str, bytes)) or not isinstance(conditions, Sequence):
            raise InvalidQuery(
                f"list_namespaces: match_conditions={shown(conditions)} must be a tuple of "
                "MatchCondition (from langgraph.store.base), or None."
            )
        for cond in conditions:
            match_type = getattr(cond, "match_type", None)
            if match_type not in ("prefix", "suffix") or not hasattr(cond, "path"):
                raise InvalidQuery(
                    f"list_namespaces: match condition {shown(cond)} must be a MatchCondition "
                    "whose match_type is 'prefix' or 'suffix'."
                )
            check_match_path(cond.path)
        if op.max_depth is not None and (
            not isinstance(op.max_depth, int) or isinstance(op.max_depth, bool)
            or op.max_depth < 1
        ):
            raise InvalidQuery(
                f"list_namespaces: max_depth={shown(op.max_depth)} must be a positive int, "
                "or None for whole namespaces."
            )
    elif isinstance(op, HistoryOp):
        check_key(op.key, parse_namespace(check_namespace(op.namespace, "namespace"))
                   .namespace())
    elif isinstance(op, PutOp):
        ns = check_namespace(op.namespace, "namespace")
        if not ns:
            raise InvalidNamespace("namespace () is empty; give at least one label.")
        check_key(op.key, ns)
        _check_put_size(ns)
        _check_ttl(op.ttl, op.key, ns)
        _check_index(op.index, op.key, ns)
    elif isinstance(op, PromoteOp):
        _check_promote(op)
    else:
        raise InvalidQuery(
            f"Unknown operation {shown(op)} ({_a(op)}): a batch takes {_OPS}."
        )


def _check_promote(op: PromoteOp) -> None:
    if not isinstance(op.scope, Scope):
        raise InvalidQuery(f"promote needs a Scope, got {shown(op.scope)}.")
    for name in ("tenant_id", "user_id", "agent_id"):
        value = getattr(op.scope, name)
        if not (isinstance(value, str) or (value is None and name != "tenant_id")):
            raise InvalidNamespace(
                f"promote: {name}={shown(value)} must be a string"
                + (" (the tenant is required)." if name == "tenant_id" else " or None."))
    parse_scope(op.scope.labels())
    for name, value in (("run_id", op.run_id), ("source", op.source)):
        if value is not None and not isinstance(value, str):
            raise InvalidQuery(f"promote: {name}={shown(value)} must be a string (or None).")
        try:
            check_json_value(value, "promote", name)
        except InvalidRecord as exc:
            raise InvalidQuery(str(exc)) from None
        if value is not None and len(value) > MAX_RUN_ID_CHARS:
            raise InvalidQuery(
                f"promote: {name} is {len(value)} characters; the limit is "
                f"{MAX_RUN_ID_CHARS}: pass an id, not a description."
            )
    if op.turn is not None and (not isinstance(op.turn, int) or isinstance(op.turn, bool)
                                or not 0 <= op.turn <= MAX_TURN):
        raise InvalidQuery(
            f"promote: turn={shown(op.turn)} must be an int in [0, {MAX_TURN}] (or None).")
    if isinstance(op.proposals, (str, bytes)) or not hasattr(op.proposals, "__len__"):
        raise InvalidQuery(
            f"proposals must be a list of dicts or Proposal objects, got {shown(op.proposals)}."
        )
    if len(op.proposals) > MAX_PROPOSALS:
        raise InvalidQuery(
            f"{len(op.proposals)} proposals in one batch; max {MAX_PROPOSALS}: promote them "
            "in several calls."
        )
