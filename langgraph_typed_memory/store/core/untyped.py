"""The drop-in path: searches of untyped namespaces and listings of namespaces, answered by
the database through the namespace index, so their cost grows with the namespaces read, not
with the table.

A search's filter runs in SQL (`filters.filter_sql`); when the database answers it exactly
the page is cut in SQL too, else rows come in chunks of creation order and LangGraph's
matcher (`scoring.matches_filter`) checks each until the page is full. A query ranks the
vectors of the namespace's rows (`Dialect.untyped_top`: SQLite ranks them cached in memory,
Postgres with pgvector); items without vectors fill the
page after the scored ones, as in `InMemoryStore`. Plans over `Records`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph.store.base import Item, ListNamespacesOp, SearchOp

from langgraph_typed_memory.namespaces import decode_namespace, encode_namespace, is_typed
from langgraph_typed_memory.scoring import matches_filter
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.filters import FilterSql, filter_sql
from langgraph_typed_memory.store.core.protocol import Plan, Sql
from langgraph_typed_memory.store.core.records import ts

if TYPE_CHECKING:
    from langgraph_typed_memory.store.core.records import Records

__all__ = ["untyped_search", "list_namespaces", "sql_namespaces"]

FIRST_CHUNK = 64
"""The fewest rows a search whose filter SQL cannot answer exactly reads at a time (then
four times as many each time, until the page is full)."""


def untyped_search(records: Records, op: SearchOp, query_vector: list[float] | None,
                   refresh: Any) -> Plan[list[Item]]:
    """An untyped search: `query_vector` ranks when given. `refresh(seqs, flag)` is the
    engine's TTL refresh of the items returned."""
    d = records.dialect
    prefix = encode_namespace(op.namespace_prefix) if op.namespace_prefix else None
    now = ts(records.clock())
    found = filter_sql(d.json, op.filter)
    if query_vector is not None:
        return (yield from _ranked(records, op, query_vector, prefix, now, found, refresh))
    if found.exact:
        sql, params = q.untyped_page(prefix, d.range_ops, now, _clause(found),
                                     take=op.limit, skip=op.offset)
        page = (yield Sql(sql, params)) if op.limit else []
    else:
        page = (yield from _checked(records, op, prefix, now, found,
                                    op.offset + op.limit))[op.offset:]
    yield from refresh(_expiring(page), op.refresh_ttl)
    return [records.to_item(r, search=True) for r in page]


def _expiring(rows: list[tuple[Any, ...]]) -> list[int]:
    """The seqs of the rows with an expiry (a TTL to refresh): none, no UPDATE statement."""
    return [r[0] for r in rows if r[q.EXPIRES_AT] is not None]


def _clause(found: FilterSql, *more: str) -> q.Clause | None:
    parts = [p for p in (found.sql, *more) if p is not None]
    if not parts:
        return None
    return " AND ".join(f"({p})" for p in parts), list(found.params)


def _checked(records: Records, op: SearchOp, prefix: str | None, now: float,
             found: FilterSql, need: int, *more: str) -> Plan[list[tuple[Any, ...]]]:
    """The first `need` rows, in creation order, that the matcher keeps among those the
    filter's clause selects, read in growing chunks."""
    d = records.dialect
    out: list[tuple[Any, ...]] = []
    after, chunk = None, max(need, FIRST_CHUNK)
    while len(out) < need:
        sql, params = q.untyped_page(prefix, d.range_ops, now, _clause(found, *more),
                                     take=chunk, after=after)
        rows = yield Sql(sql, params)
        out += [r for r in rows if matches_filter(d.load_json(r[4]), op.filter)]
        if len(rows) < chunk:
            break
        after, chunk = rows[-1][0], chunk * 4
    return out[:need]


def _ranked(records: Records, op: SearchOp, query_vector: list[float], prefix: str | None,
            now: float, found: FilterSql, refresh: Any) -> Plan[list[Item]]:
    d = records.dialect
    depth = op.offset + op.limit
    if not depth:
        return []
    if found.exact:
        scored = yield from d.untyped_top(prefix, now, _clause(found), query_vector, depth)
    else:  # the matcher decides: the namespace's passing rows, then their vectors
        sql, params = q.untyped_where(prefix, d.range_ops, now, _clause(found))
        rows = yield Sql(f"SELECT m.seq, m.value FROM memories m WHERE {sql}", params)
        seqs = sorted(r[0] for r in rows if matches_filter(d.load_json(r[1]), op.filter))
        scored = (yield from d.vector_scores(seqs, query_vector))[:depth] if seqs else []
    page = scored[op.offset : depth]
    out: list[Item] = []
    read: list[tuple[Any, ...]] = []
    if page:
        clause, params = d.in_list("m.seq", [seq for seq, _ in page])
        by_seq = {r[0]: r for r in (yield Sql(q.sql_rows_by_seq(clause), params))}
        read = [by_seq[seq] for seq, _ in page if seq in by_seq]
        out = [records.to_item(by_seq[seq], score, search=True)
               for seq, score in page if seq in by_seq]
    if len(out) < op.limit:  # items without vectors, oldest first, as InMemoryStore fills
        if found.exact:
            sql, params = q.untyped_page(prefix, d.range_ops, now,
                                         _clause(found, q.NO_VECTORS), take=op.limit - len(out))
            rest = yield Sql(sql, params)
        else:
            rest = yield from _checked(records, op, prefix, now, found, op.limit - len(out),
                                       q.NO_VECTORS)
        out += [records.to_item(r, search=True) for r in rest]
        read += rest
    yield from refresh(_expiring(read), op.refresh_ttl)
    return out


# ---------------------------------------------------------------- namespaces

_SEPARATOR, _ESCAPED, _LOW = "\x01\x01", "\x01\x02", "\x01"
"""Sort keys in tuple order: "." becomes "\\x01\\x01", below every character of a label
(a label's own "\\x01" becomes "\\x01\\x02"; labels never hold NUL)."""


def sql_namespaces(prefix: str | None, untyped: bool, range_ops: tuple[str, str],
                   position_fn: str, byte_order: str, now: float, max_depth: int | None,
                   window: tuple[int, int] | None) -> q.Clause:
    """The distinct current namespaces under an encoded prefix (None: all), cut to
    `max_depth` labels, in tuple order and cut to `window` (limit, offset) when given.

    The namespaces are found by stepping through the namespace index from one namespace to
    the next (a recursive query: one index probe per namespace, not a read of every row),
    in the `memories_untyped` index when `untyped` (the prefix names untyped namespaces);
    the depth is cut label by label; tuple order is byte order of a key where "." sorts
    below every label's characters (`byte_order`: the dialect's binary collation).

    Example:
        >>> sql, params = sql_namespaces("memories", True, (">=", "<"), "instr", "", 5.0,
        ...                              1, (100, 0))
        >>> params[:2], params[-2:]
        (['memories.', 'memories/'], [100, 0])
    """
    at_least, below = range_ops
    current = q.UNTYPED_CURRENT if untyped else f"m.{q.CURRENT}"
    # the next namespace in the index's own order: Postgres' pattern index orders by ~<~,
    # and only an ORDER BY in that order stops at the first row (not a sort of the range)
    order = "m.ns" if below == "<" else f"m.ns USING {below}"
    rest = f"{current} AND {q.LIVE} ORDER BY {order} LIMIT 1"
    if prefix is None:
        start, start_params = f"m.ns {at_least} ?", [""]
        step, step_params = f"m.ns {at_least} (names.ns || ?)", [_LOW]
    else:
        start, start_params = f"m.ns {at_least} ? AND m.ns {below} ?", [prefix + ".",
                                                                         prefix + "/"]
        step, step_params = (f"m.ns {at_least} (names.ns || ?) AND m.ns {below} ?",
                             [_LOW, prefix + "/"])
    sql = (
        "WITH RECURSIVE names(ns) AS ("
        f"SELECT (SELECT m.ns FROM memories m WHERE {start} AND {rest}) "
        f"UNION ALL SELECT (SELECT m.ns FROM memories m WHERE {step} AND {rest}) "
        "FROM names WHERE names.ns IS NOT NULL)"
    )
    params: list[Any] = [*start_params, now, *step_params, now]
    found = "SELECT ns FROM names WHERE ns IS NOT NULL"
    if prefix is not None:
        found += (" UNION ALL SELECT ns FROM (SELECT m.ns FROM memories m WHERE m.ns = ? AND "
                  f"{current} AND {q.LIVE} LIMIT 1) AS own")
        params += [prefix, now]
    if max_depth is None:
        sql += f", heads(head) AS ({found})"
    else:
        cut = (f"{position_fn}(rest, '.')")
        sql += (
            f", found(ns) AS ({found}), cut(head, rest, depth) AS ("
            "SELECT CAST('' AS TEXT), found.ns || '.', 0 FROM found UNION ALL "
            "SELECT head || CASE WHEN depth = 0 THEN '' ELSE '.' END || "
            f"substr(rest, 1, {cut} - 1), substr(rest, {cut} + 1), depth + 1 "
            "FROM cut WHERE depth < ? AND rest <> ''), "
            "heads(head) AS (SELECT DISTINCT head FROM cut WHERE depth = ? OR rest = '')"
        )
        params += [max_depth, max_depth]
    sql += " SELECT head FROM heads"
    if window is not None:
        sql += f" ORDER BY replace(replace(head, ?, ?), '.', ?){byte_order} LIMIT ? OFFSET ?"
        params += [_LOW, _ESCAPED, _SEPARATOR, *window]
    return sql, params


def list_namespaces(records: Records, op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
    """`list_namespaces`: the namespaces in SQL (prefix, depth, order and page); a suffix or
    a wildcard in the prefix, and typed namespaces (whose stored text orders differently
    from their labels), are matched, ordered and paged here, over the distinct namespaces
    the database returns."""
    d = records.dialect
    conditions = list(op.match_conditions or ())
    prefixes = [c.path for c in conditions if c.match_type == "prefix"]
    path = tuple(prefixes[0]) if len(prefixes) == 1 else ()
    fixed = path[: path.index("*")] if "*" in path else path
    in_sql = len(conditions) == len(prefixes) == 1 and fixed == path and not is_typed(path)
    prefix = encode_namespace(fixed) if fixed else None
    sql, params = sql_namespaces(
        prefix, bool(fixed) and not is_typed(fixed), d.range_ops, d.position_fn,
        d.byte_order, ts(records.clock()), op.max_depth if in_sql else None,
        (op.limit, op.offset) if in_sql else None)
    rows = yield Sql(sql, params)
    if in_sql:
        return [decode_namespace(r[0]) for r in rows]
    namespaces = [decode_namespace(r[0]) for r in rows]
    for cond in conditions:
        namespaces = [ns for ns in namespaces if _matches(cond.match_type, cond.path, ns)]
    if op.max_depth is not None:
        namespaces = [ns[: op.max_depth] for ns in namespaces]
    return sorted(set(namespaces))[op.offset : op.offset + op.limit]


def _matches(match_type: str, path: Sequence[str], ns: tuple[str, ...]) -> bool:
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path, strict=False) if match_type == "prefix" else zip(
        reversed(ns), reversed(path), strict=False
    )
    return all(p == "*" or n == p for n, p in pairs)
