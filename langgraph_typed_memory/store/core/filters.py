"""A search filter as SQL, answered by the database where it answers exactly as LangGraph's
matcher does (`scoring.matches_filter`, the semantics of `InMemoryStore`).

`filter_sql(grammar, filter)` returns a `FilterSql`: a clause on the row's value (alias
`m`), its parameters, and whether it is `exact`. An exact clause selects exactly the rows the
matcher keeps, so a search can page in SQL. A clause that is not exact selects a superset
(what SQL cannot say identically is left out of it), and the matcher checks each row it
returns.

Exact in SQL: equality with text, numbers and booleans (`1 == 1.0 == True`, as in Python),
with None (a missing field or JSON null), nested objects and lists, `$eq`, `$ne`, and
`$gt`/`$gte`/`$lt`/`$lte` on numbers and booleans; a dotted top-level key (`"user.level"`)
names the key of that name when the value has one, else the nested field. Left to the
matcher: a range bound on a text field (Python's `float("3")` reads text as a number), a
bound or an equality with an integer or float of magnitude 2**53 or more (where the
databases' conversions between integers and floats could differ from Python's), `$eq`/`$ne`
with an object or a list, keys SQLite's JSON paths cannot name (holding `"`, `\\` or a
control character), and a few odd shapes (an operator object with a key that is no
operator).

Keys and values are always parameters: a grammar binds JSON paths, never interpolates them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from langgraph_typed_memory.store.core.queries import Clause

__all__ = ["FilterSql", "JsonGrammar", "Path", "filter_sql", "SAFE_NUMBER"]

Path = tuple[str | int, ...]
"""A field of the value: object keys (str) and array positions (int)."""

SAFE_NUMBER = 2.0**53
"""Numbers below this magnitude convert between integer and float exactly in Python, SQLite
and Postgres alike; an equality or a bound at or past it is left to the matcher."""

_RANGES = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


class JsonGrammar(Protocol):
    """The JSON conditions of one database, on the value of a row (alias `m`). A path
    steps into objects by key and into arrays by position only: a key looked up in anything
    but an object (an array, a number) finds nothing, as in `scoring._field`."""

    false: str
    """An always-false condition."""

    def key_ok(self, key: str) -> bool:
        """Whether a JSON path can name `key` exactly."""

    def type_in(self, path: Path, types: tuple[str, ...]) -> Clause:
        """The field holds one of the JSON types (`null`, `bool`, `number`, `string`,
        `array`, `object`); false when it is missing."""

    def absent(self, path: Path) -> Clause:
        """The field is missing or JSON null (Python's None)."""

    def has_key(self, key: str) -> Clause:
        """The value has the top-level key `key` (whatever its value, null included)."""

    def equals(self, path: Path, value: str | int | float | bool) -> Clause:
        """The field equals a text, a number or a boolean as Python compares them (numbers
        and booleans with each other, text with text)."""

    def compare(self, path: Path, op: str, bound: float) -> Clause:
        """The field is a number or a boolean and `float(field) op bound` (op: a comparison
        among `>`, `>=`, `<`, `<=`)."""

    def length_is(self, path: Path, n: int) -> Clause:
        """The field is an array of `n` elements."""

    def coalesce_false(self, sql: str) -> str:
        """`sql` with NULL read as false."""


@dataclass(frozen=True, slots=True)
class FilterSql:
    """A filter's clause (None: no condition SQL can add), its parameters, and whether the
    clause selects exactly the rows the matcher keeps."""

    sql: str | None
    params: list[Any]
    exact: bool


_TRUE = FilterSql(None, [], True)


def filter_sql(grammar: JsonGrammar, filter: Mapping[str, Any] | None) -> FilterSql:
    """A search filter (already validated, `ops.check_filter`) as a clause on `m.value`.

    Example:
        >>> from langgraph_typed_memory.store.sqlite.dialect import SQLITE_JSON
        >>> found = filter_sql(SQLITE_JSON, {"topic": "cats", "n": {"$gte": 2}})
        >>> found.exact, found.params[:3]
        (False, ['$."topic"', '$."topic"', 'cats'])
        >>> filter_sql(SQLITE_JSON, {"topic": "cats"}).exact
        True
    """
    if not filter:
        return _TRUE
    return _all([_top_level(grammar, key, value) for key, value in filter.items()])


def _all(parts: list[FilterSql]) -> FilterSql:
    known = [p for p in parts if p.sql is not None]
    exact = all(p.exact for p in parts)
    if not known:
        return FilterSql(None, [], exact)
    sql = " AND ".join(f"({p.sql})" for p in known)
    return FilterSql(sql, [x for p in known for x in p.params], exact)


def _clause(clause: Clause) -> FilterSql:
    return FilterSql(clause[0], list(clause[1]), True)


def _never(grammar: JsonGrammar) -> FilterSql:
    return FilterSql(grammar.false, [], True)


def _doubt() -> FilterSql:
    return FilterSql(None, [], False)


def _top_level(grammar: JsonGrammar, key: str, value: Any) -> FilterSql:
    """A top-level key: the key itself if the value has it, else (a dotted key) the nested
    field it names (`scoring._field`)."""
    if not grammar.key_ok(key):
        return _doubt()
    literal = _compare(grammar, (key,), value)
    if "." not in key:
        return literal
    parts = tuple(key.split("."))
    if not all(grammar.key_ok(p) for p in parts):
        return _doubt()
    # a lookup through anything but an object finds nothing, as `scoring._field` does
    nested = _compare(grammar, parts, value)
    if literal.sql is None or nested.sql is None:
        return _doubt()
    has, has_params = grammar.has_key(key)
    sql = f"(({has}) AND ({literal.sql})) OR (NOT ({has}) AND ({nested.sql}))"
    return FilterSql(sql, [*has_params, *literal.params, *has_params, *nested.params],
                     literal.exact and nested.exact)


def _compare(grammar: JsonGrammar, path: Path, value: Any) -> FilterSql:
    """`scoring._compare(field, value)` for the field at `path`."""
    if isinstance(value, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in value):
            return _all([_operator(grammar, path, op, operand) for op, operand in value.items()])
        if not all(grammar.key_ok(k) for k in value):
            return _doubt()
        return _all([_clause(grammar.type_in(path, ("object",))),
                     *(_compare(grammar, (*path, k), v) for k, v in value.items())])
    if isinstance(value, (list, tuple)):
        return _all([_clause(grammar.length_is(path, len(value))),
                     *(_compare(grammar, (*path, i), v) for i, v in enumerate(value))])
    return _equals(grammar, path, value)


def _equals(grammar: JsonGrammar, path: Path, value: Any) -> FilterSql:
    """`field == value` for a scalar (or None) `value`."""
    if value is None:
        return _clause(grammar.absent(path))
    if isinstance(value, str):
        return _never(grammar) if "\x00" in value else _clause(grammar.equals(path, value))
    if isinstance(value, bool):
        return _clause(grammar.equals(path, value))
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return _never(grammar)  # stored numbers are finite: nothing equals NaN or inf
        if abs(value) >= SAFE_NUMBER:
            return _doubt()
        return _clause(grammar.equals(path, value))
    return _doubt()


def _operator(grammar: JsonGrammar, path: Path, op: Any, operand: Any) -> FilterSql:
    """`scoring._apply(field, op, operand)`."""
    if op == "$eq":
        if isinstance(operand, (Mapping, list, tuple)):
            return _doubt()  # Python's == on objects and lists
        return _equals(grammar, path, operand)
    if op == "$ne":
        if isinstance(operand, (Mapping, list, tuple)):
            return _doubt()
        equal = _equals(grammar, path, operand)
        if not equal.exact or equal.sql is None:
            return _doubt()
        return FilterSql(f"NOT {grammar.coalesce_false(equal.sql)}", equal.params, True)
    if op not in _RANGES:
        return _doubt()  # the matcher reads any other key of an operator object as `$lte`
    if isinstance(operand, str):
        return _doubt()  # float("2.5") is a bound
    if not isinstance(operand, (int, float)):
        return _never(grammar)  # float(None), float([...]): no row passes
    bound = float(operand)
    if math.isnan(bound):
        return _never(grammar)
    if abs(operand) >= SAFE_NUMBER and not math.isinf(bound):
        return _doubt()
    numeric, params = grammar.compare(path, _RANGES[op], bound)
    text, text_params = grammar.type_in(path, ("string",))
    # a text field may hold a number Python's float() reads: the matcher decides those
    return FilterSql(f"({numeric}) OR ({text})", [*params, *text_params], False)
