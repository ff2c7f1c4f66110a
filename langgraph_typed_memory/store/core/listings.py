"""The listings of a typed namespace: its own current records newest first (`$newest`,
conditional on an earlier listing's `version` with `$if_changed`), and those of a span of
time latest first (`$during`). Plans over `Records`: indexed reads of the namespace, page
after page when the filter's other keys leave rows out; no ranking, no access counted."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langgraph.store.base import SearchOp

from langgraph_typed_memory.errors import InvalidQuery
from langgraph_typed_memory.lifecycle import IF_CHANGED_KEY, NEWEST_KEY
from langgraph_typed_memory.namespaces import TypedNamespace, encode_namespace
from langgraph_typed_memory.results import SearchResults
from langgraph_typed_memory.scoring import matches_filter
from langgraph_typed_memory.store.core import queries as q
from langgraph_typed_memory.store.core.protocol import Plan, Reads, Sql
from langgraph_typed_memory.store.index import answers_of

if TYPE_CHECKING:
    from langgraph_typed_memory.store.core.records import Records

__all__ = ["newest_listing", "during_listing", "listing_version", "NEWEST_PAGE"]


def newest_listing(records: Records, op: SearchOp, typed: TypedNamespace, since: str | None = None,
                   additions: bool = False) -> Plan[SearchResults]:
    """The namespace's own current records, newest first (its index of active rows by ns and
    seq), with the `version` they were listed at; nothing (mode ``unchanged``) when `since`,
    an earlier listing's version, still holds. With `additions`, when the namespace only
    gained records since (`_Version.added`), those alone (mode ``added``)."""
    ns, now = encode_namespace(typed.namespace()), records.clock().timestamp()
    scope = typed.scope
    counters = Sql(q.SQL_CELL_COUNTERS, [typed.kind, scope.tenant_id, scope.user_id or "",
                                         scope.agent_id or ""])

    def page(last: tuple[Any, ...] | None, size: int) -> Sql:
        before = last[0] if last else 2**62  # above any sequence number
        return Sql(q.SQL_NEWEST, [ns, now, before, size])

    if since is None:  # the counters with the first page, in one round trip (counters first:
        # a write between the two makes the version older than the rows, never newer)
        counted, first = answers_of((yield Reads((counters, page(None, _page_size(op))))))
    else:
        counted = yield counters
    cell = (int(counted[0][0]), int(counted[0][1])) if counted else (0, 0)
    if since is not None:
        held = _parse(since)
        if held.holds(cell, now):
            return SearchResults([], retrieval_mode="unchanged", version=since)
        added = held.added(cell, now) if additions and op.offset == 0 else 0
        if 0 < added <= op.limit:
            newer = yield Sql(q.SQL_NEWEST_AFTER, [ns, now, held.newest, added + 1])
            if len(newer) == added:  # else some were written out of their counted order
                return _listed(records, _kept(records, op, newer), "added", listing_version(
                    cell, now, min(held.soonest, _soonest(newer)), newer[0][0]))
        first = yield page(None, _page_size(op))
    newest = first[0][0] if first else 0
    rows = yield from _listing(records, op, page, first)
    return _listed(records, rows, "newest", listing_version(cell, now, _soonest(rows), newest))


def listing_version(cell: tuple[int, int], now: float, soonest: float, newest: int = 0) -> str:
    """The version of a `$newest` listing: its cell's counters (every change, records added),
    when it was listed, when the first record it listed expires (inf: none does), and the
    sequence number of the namespace's newest record then.

    Example:
        >>> listing_version((7, 3), 100.0, math.inf, 42)
        '7:3:100.0:inf:42'
    """
    return f"{cell[0]}:{cell[1]}:{now!r}:{soonest!r}:{newest}"


@dataclass(frozen=True, slots=True)
class _Version:
    """A listing's version, read."""

    cell: tuple[int, int]
    listed: float
    soonest: float
    newest: int

    def holds(self, cell: tuple[int, int], now: float) -> bool:
        """Whether a listing is still what the namespace holds: its cell has not changed
        since (the counters count every write, status change and deletion), and at `now` no
        record it listed has expired (nor is `now` before it was listed: an unlisted record
        may not have expired then).

        Example:
            >>> held = _parse("7:3:100.0:inf:42")
            >>> held.holds((7, 3), 150.0), held.holds((8, 3), 150.0)
            (True, False)
            >>> _parse("7:3:100.0:120.0:42").holds((7, 3), 150.0)
            False
        """
        return self.cell == cell and self.listed <= now < self.soonest

    def added(self, cell: tuple[int, int], now: float) -> int:
        """How many records the namespace gained since, when that is all that changed: no
        write to a record it held (no status change, no deletion) and none of them expired;
        0 otherwise.

        Example:
            >>> held = _parse("7:3:100.0:inf:42")
            >>> held.added((7, 5), 150.0), held.added((8, 5), 150.0)  # and something else
            (2, 0)
        """
        if self.cell[0] != cell[0] or not self.listed <= now < self.soonest:
            return 0
        return max(cell[1] - self.cell[1], 0)


def _parse(version: str) -> _Version:
    try:
        changes, added, listed, soonest, newest = version.split(":")
        return _Version((int(changes), int(added)), float(listed), float(soonest), int(newest))
    except ValueError:
        raise InvalidQuery(
            f"filter {IF_CHANGED_KEY}={version!r:.80} is not the version of a {NEWEST_KEY} "
            "listing: pass the `version` attribute of an earlier listing's results."
        ) from None


def _soonest(rows: list[tuple[Any, ...]]) -> float:
    """When the first of `rows` expires (inf: none does)."""
    return min((r[15] for r in rows if r[15] is not None), default=math.inf)


def _kept(records: Records, op: SearchOp, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """`rows` that match the filter's other keys."""
    return [r for r in rows
            if not op.filter or matches_filter(records.dialect.load_json(r[4]), op.filter)]


def during_listing(records: Records, op: SearchOp, typed: TypedNamespace, start: float, end: float
            ) -> Plan[SearchResults]:
    """The namespace's current records whose time of occurrence falls in [start, end), latest
    first (its index of active rows by ns, occurrence and seq). Records without a time of
    occurrence are not listed."""
    ns, now = encode_namespace(typed.namespace()), records.clock().timestamp()

    def page(last: tuple[Any, ...] | None, size: int) -> Sql:
        before = (last[12], last[0]) if last else (end, 0)  # (occurred_at, seq); not `end`
        return Sql(q.SQL_DURING, [ns, now, start, *before, size])

    return _listed(records, (yield from _listing(records, op, page)), "during")


NEWEST_PAGE = 500
"""Rows a filtered listing reads at a time."""


def _page_size(op: SearchOp) -> int:
    """The rows a listing reads at a time: the window, or more when a filter leaves some out."""
    want = op.offset + op.limit
    return want if not op.filter else max(want, NEWEST_PAGE)


def _listing(records: Records, op: SearchOp,
             page: Callable[[tuple[Any, ...] | None, int], Sql],
             first: list[tuple[Any, ...]] | None = None) -> Plan[list[tuple[Any, ...]]]:
    """The rows of a listing read page after page (`page(last row read, size)`; `first`: the
    first page, read already), until the window is full when the filter's other keys leave
    some rows out."""
    want, size = op.offset + op.limit, _page_size(op)
    rows: list[Any] = []
    last = None
    while len(rows) < want:
        read = first if first is not None and last is None else (yield page(last, size))
        rows.extend(_kept(records, op, read))
        if len(read) < size:
            break
        last = read[-1]
    return rows[op.offset: op.offset + op.limit]


def _listed(records: Records, rows: list[tuple[Any, ...]], mode: str, version: str | None = None
            ) -> SearchResults:
    return SearchResults([records.to_item(r, None, retrieval_mode=mode) for r in rows],
                         retrieval_mode=mode, version=version)
