"""Validation of store operations: pure functions run on a whole batch before any I/O.

A bad operation raises a typed error that names the namespace, key or argument and says how
to fix it; since validation precedes every write, nothing of the batch is written.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, SearchOp

from langgraph_typed_memory.errors import InvalidNamespace, InvalidQuery, InvalidRecord
from langgraph_typed_memory.namespaces import Scope, is_typed, parse_namespace, parse_scope
from langgraph_typed_memory.schemas import check_json_value
from langgraph_typed_memory.scoring import validate_filter
from langgraph_typed_memory.store.promotion import PromoteOp

__all__ = ["HistoryOp", "validate_op", "check_namespace", "check_key", "check_window"]

MAX_LIMIT = 10_000
MAX_TURN = 2**31 - 1
MAX_KEY_CHARS = 1024
MAX_QUERY_CHARS = 8_000

class HistoryOp(NamedTuple):
    """Every version of a typed record, newest first, or its audit trail."""

    namespace: tuple[str, ...]
    key: str
    audit: bool = False


def check_namespace(namespace: Any, what: str) -> tuple[str, ...]:
    if not isinstance(namespace, tuple) or not all(isinstance(x, str) for x in namespace):
        raise InvalidNamespace(f"{what} {namespace!r} must be a tuple of strings.")
    for label in namespace:
        if not label or "." in label:
            raise InvalidNamespace(
                f"{what} {namespace!r}: label {label!r} is empty or contains '.'; "
                "labels are non-empty and dot-free."
            )
        try:
            check_json_value(label, f"{what} {namespace!r}", "label")
        except InvalidRecord as exc:
            raise InvalidNamespace(str(exc)) from None
    if namespace and namespace[0] == "langgraph":
        raise InvalidNamespace(f"{what} {namespace!r}: the root label 'langgraph' is reserved.")
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
    for name, value in (("limit", limit), ("offset", offset)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_LIMIT:
            raise InvalidQuery(
                f"{what}: {name}={value!r} must be an int between 0 and {MAX_LIMIT}."
            )



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
        validate_filter(op.filter)
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
            if not isinstance(cond.path, tuple) or not all(
                isinstance(x, str) for x in cond.path
            ):
                raise InvalidQuery(f"match path {cond.path!r} must be a tuple of strings.")
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
        if len(op.proposals) > MAX_LIMIT:
            raise InvalidQuery(f"{len(op.proposals)} proposals in one batch; max {MAX_LIMIT}.")
    else:
        raise InvalidQuery(f"Unknown operation type {type(op).__name__}.")

