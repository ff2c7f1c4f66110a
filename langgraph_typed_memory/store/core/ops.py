"""Validation of store operations: pure functions run on a whole batch before any I/O.

A bad operation raises a typed error that names the namespace, key or argument and says how
to fix it; since validation precedes every write, nothing of the batch is written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, SearchOp

from langgraph_typed_memory.errors import InvalidNamespace, InvalidQuery, InvalidRecord
from langgraph_typed_memory.gate import Proposal
from langgraph_typed_memory.namespaces import (
    SCOPE_PREFIXES,
    Scope,
    check_untyped,
    is_typed,
    parse_namespace,
    parse_scope,
)
from langgraph_typed_memory.schemas import check_json_value
from langgraph_typed_memory.scoring import MAX_QUERY_CHARS, validate_filter

__all__ = [
    "HistoryOp",
    "validate_op",
    "check_namespace",
    "check_key",
    "check_window",
    "check_match_path",
    "check_filter",
    "MAX_WINDOW",
]

MAX_WINDOW = 10**18
"""The largest `limit` or `offset`: more than any database holds, and small enough that the
row counts a search asks the database for (up to eight times its window) stay 64-bit."""
MAX_PROPOSALS = 10_000
MAX_TURN = 2**31 - 1
MAX_KEY_CHARS = 1024

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


def check_namespace(namespace: Any, what: str) -> tuple[str, ...]:
    if not isinstance(namespace, tuple) or not all(isinstance(x, str) for x in namespace):
        raise InvalidNamespace(f"{what} {namespace!r} must be a tuple of strings.")
    typed = is_typed(namespace)
    for label in namespace:
        if not label or ("." in label and not (typed and label.startswith(SCOPE_PREFIXES))):
            raise InvalidNamespace(
                f"{what} {namespace!r}: label {label!r} is empty or contains '.'; "
                "labels are non-empty and dot-free (only the ids of a typed namespace, "
                "e.g. 'user:alice@example.com', may hold '.')."
            )
        try:
            check_json_value(label, f"{what} {namespace!r}", "label")
        except InvalidRecord as exc:
            raise InvalidNamespace(str(exc)) from None
    if namespace and namespace[0] == "langgraph":
        raise InvalidNamespace(f"{what} {namespace!r}: the root label 'langgraph' is reserved.")
    if not typed:
        check_untyped(namespace)
    return namespace


def check_key(key: Any, namespace: tuple[str, ...]) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidRecord(f"key {key!r} in {namespace!r} must be a non-empty string.")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidRecord(
            f"key in {namespace!r} is {len(key)} characters; the limit is {MAX_KEY_CHARS}."
        )
    check_json_value(key, f"key in {namespace!r}", "key")
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
                f"{what}: {name}={value!r} must be an int between 0 and {MAX_WINDOW}."
            )


def check_match_path(path: Any) -> None:
    """A `list_namespaces` prefix or suffix is a tuple, list or other sequence of labels
    (strings, `*` for any label), as LangGraph's stores take it; a string alone is not.

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
            f"match path {path!r:.80} must be a tuple or list of strings, e.g. ('docs', '*')."
        )


def check_filter(filter: Any) -> None:
    """A search filter as LangGraph reads it (`scoring.validate_filter`), where bounds and
    values no stored record can hold still have a meaning: an infinity bounds a comparison
    (`{"price": {"$lt": inf}}`), and text with a NUL byte, which stored text never holds,
    equals nothing. NaN, lone surrogates and non-JSON values are refused.

    Example:
        >>> check_filter({"price": {"$lt": math.inf}, "tag": "a\\x00"})
        >>> check_filter({"price": {"$lt": math.nan}})
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidQuery: filter: filter.price.$lt is nan; ...
    """
    validate_filter(_representable(filter))


def _representable(value: Any) -> Any:
    """`value` with what only a filter may hold (infinities, NUL bytes) replaced by stand-ins
    of the same shape that any store could hold, for the checks values must pass."""
    if isinstance(value, float) and math.isinf(value):
        return 0.0
    if isinstance(value, str):
        return value.replace("\x00", " ")
    if isinstance(value, Mapping):
        return {k.replace("\x00", " ") if isinstance(k, str) else k: _representable(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_representable(v) for v in value]
    return value



def validate_op(op: Op) -> None:
    """Check one operation before any I/O; raise a typed error naming what is wrong."""
    if isinstance(op, GetOp):
        ns = check_namespace(op.namespace, "namespace")
        check_key(op.key, ns)
        if is_typed(ns):
            parse_namespace(ns)
    elif isinstance(op, SearchOp):
        ns = check_namespace(op.namespace_prefix, "namespace prefix")
        if is_typed(ns):
            parse_namespace(ns)
        check_filter(op.filter)
        check_window(op.limit, op.offset, f"search in {ns!r}")
        if op.query is not None:
            if not isinstance(op.query, str):
                raise InvalidQuery(f"query {op.query!r:.80} must be a string.")
            if len(op.query) > MAX_QUERY_CHARS:
                raise InvalidQuery(
                    f"query is {len(op.query)} characters; the limit is {MAX_QUERY_CHARS}."
                )
            try:
                check_json_value(op.query, f"search in {ns!r}", "query")
            except InvalidRecord as exc:
                raise InvalidQuery(str(exc)) from None
    elif isinstance(op, ListNamespacesOp):
        check_window(op.limit, op.offset, "list_namespaces")
        for cond in op.match_conditions or ():
            if cond.match_type not in ("prefix", "suffix"):
                raise InvalidQuery(f"match type {cond.match_type!r} is not prefix/suffix.")
            check_match_path(cond.path)
        if op.max_depth is not None and (
            not isinstance(op.max_depth, int) or op.max_depth < 1
        ):
            raise InvalidQuery(f"max_depth={op.max_depth!r} must be a positive int.")
    elif isinstance(op, HistoryOp):
        check_key(op.key, parse_namespace(check_namespace(op.namespace, "namespace"))
                   .namespace())
    elif isinstance(op, PutOp):
        ns = check_namespace(op.namespace, "namespace")
        if not ns:
            raise InvalidNamespace("namespace () is empty; give at least one label.")
        check_key(op.key, ns)
        if op.ttl is not None and (
            not isinstance(op.ttl, (int, float))
            or isinstance(op.ttl, bool)
            or not math.isfinite(op.ttl)
            or op.ttl <= 0
        ):
            raise InvalidRecord(
                f"ttl={op.ttl!r} for {op.key!r} in {ns!r}: use a positive number of minutes."
            )
    elif isinstance(op, PromoteOp):
        if not isinstance(op.scope, Scope):
            raise InvalidQuery(f"promote needs a Scope, got {op.scope!r:.80}.")
        for name in ("tenant_id", "user_id", "agent_id"):
            value = getattr(op.scope, name)
            if not (isinstance(value, str) or (value is None and name != "tenant_id")):
                raise InvalidNamespace(f"promote: {name}={value!r:.80} must be a string.")
        parse_scope(op.scope.labels())
        for name, value in (("run_id", op.run_id), ("source", op.source)):
            if value is not None and not isinstance(value, str):
                raise InvalidQuery(f"promote: {name}={value!r:.80} must be a string.")
            try:
                check_json_value(value, "promote", name)
            except InvalidRecord as exc:
                raise InvalidQuery(str(exc)) from None
        if op.turn is not None and (not isinstance(op.turn, int) or isinstance(op.turn, bool)
                                    or not 0 <= op.turn <= MAX_TURN):
            raise InvalidQuery(f"promote: turn={op.turn!r} must be an int in [0, {MAX_TURN}].")
        if isinstance(op.proposals, (str, bytes)) or not hasattr(op.proposals, "__len__"):
            raise InvalidQuery("proposals must be a list of dicts or Proposal objects.")
        if len(op.proposals) > MAX_PROPOSALS:
            raise InvalidQuery(
                f"{len(op.proposals)} proposals in one batch; max {MAX_PROPOSALS}."
            )
    else:
        raise InvalidQuery(f"Unknown operation type {type(op).__name__}.")

