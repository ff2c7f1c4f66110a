"""Which scopes are too large for the exact caches: measured from their cells' counters.

A ranked search of a scope whose cells fit the cache bound (`cache_bytes`) is answered
exactly in this process from full vector matrices and postings (`cells`). A scope whose
cells together would hold more is ranked another way: by sign-bit sketches rescored from
the database, its postings still held (`sketches`). On Postgres a scope whose sketches and
postings would not fit the bound either is ranked by the database (docs/large-scopes.md).
Each rule is an `OversizedScopes` measuring what its regime holds of a vector
(`exact_row_bytes`, `sketch_row_bytes`).

The size of a scope is measured from its cells' counters (`memory_scope_versions`), read
with every search anyway: every vector and record ever added to a cell, times what the exact
caches hold of each. Every ranked kind of the scope counts together: the retrieve node
searches the facts and the episodes of a scope in one fan-out, so a scope whose facts fit
the bound alone and whose episodes fit it alone, but not both, would have each search evict
what the other loaded. Counters only grow, so a scope found too large stays so for the
life of the store object, and is never read whole into the process to find out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from langgraph_typed_memory.store.core.protocol import Plan, Sql
from langgraph_typed_memory.store.core.queries import Cell, ScopeRead
from langgraph_typed_memory.store.index.cells import (
    CellCache,
    CellFamily,
    counted_cells,
    counters_sql,
)

__all__ = ["OversizedScopes", "POSTINGS_PER_RECORD", "VECTOR_ROW_EXTRA", "exact_row_bytes",
           "scope_bytes", "sketch_row_bytes"]

logger = logging.getLogger(__name__)

VECTOR_ROW_EXTRA = 40
"""What the vector caches hold per row beside its float32 vector: seq, expiry, priors."""
POSTINGS_PER_RECORD = 160
"""What the postings hold per record: seq, expiry, length and ~12 tokens' postings (about
120 bytes measured on the latency benchmark's texts, rounded up)."""


SKETCH_ROW_EXTRA = 16
"""What a sketch holds per row beside its bits: seq and expiry."""


def exact_row_bytes(dims: int | None) -> int:
    """What the exact caches hold per vector of `dims` float32s (None: no vectors).

    Example:
        >>> exact_row_bytes(384), exact_row_bytes(None)
        (1576, 0)
    """
    return 0 if dims is None else dims * 4 + VECTOR_ROW_EXTRA


def sketch_row_bytes(dims: int | None) -> int:
    """What a sketch holds per vector of `dims` dimensions: its bits in whole 64-bit words.

    Example:
        >>> sketch_row_bytes(384), sketch_row_bytes(100)
        (64, 32)
    """
    return 0 if dims is None else -(-dims // 64) * 8 + SKETCH_ROW_EXTRA


def scope_bytes(counted: Mapping[Cell, Any], row_bytes: int) -> int:
    """What a regime would hold of the cells `counted`: every vector and record ever added
    to them (their counters), at `row_bytes` a vector and `POSTINGS_PER_RECORD` a record.

    Example:
        >>> read = ScopeRead("fact", "acme", None, None, "m.status = 'active'", 5.0)
        >>> counted = counted_cells(read, [(None, None, 0, 1000, 1000, 9, "fact")])
        >>> scope_bytes(counted, exact_row_bytes(384)), scope_bytes(counted, 64)
        (1736000, 224000)
    """
    return sum(c.appends * row_bytes + c.inserts * POSTINGS_PER_RECORD
               for c in counted.values())


class OversizedScopes:
    """The cells of scopes found too large for the exact caches, and the rule that finds them.

    `row_bytes` is what the regime a scope would leave holds per vector (`exact_row_bytes`,
    `sketch_row_bytes`), beside `POSTINGS_PER_RECORD` per record; `families` are the cache
    families (`CellFamily.name`) whose entries of a cell found too large are dropped: the
    ones the backend no longer ranks it with.

    Example:
        >>> oversized = OversizedScopes(CellCache(2**20), exact_row_bytes(384), ("vectors",))
        >>> len(oversized)
        0
    """

    def __init__(self, cache: CellCache, row_bytes: int, families: tuple[str, ...]) -> None:
        self.cache, self.row_bytes, self.families = cache, row_bytes, families
        self._large: set[Cell] = set()

    def __len__(self) -> int:
        return len(self._large)

    def too_large(self, scope: ScopeRead, family: CellFamily[Any]) -> Plan[bool]:
        """Whether `scope` is too large: one of its cells is known too large, or its cells
        of every ranked kind measure more than the cache bound together (then all of them
        are). Only a scope with a cell `family` does not hold reads its counters first
        (shared with the other searches of the round trip); one held whole fits."""
        cells = scope.cells()
        if any(cell in self._large for cell in cells):
            return True
        if not family.cold_loads(scope, lambda where, params: Sql(where, params)):
            return False
        counted = counted_cells(scope, (yield counters_sql(scope)), every_kind=True)
        size = scope_bytes(counted, self.row_bytes)
        if size <= self.cache.max_bytes:
            return False
        with self.cache.lock:
            for cell in counted:
                self._large.add(cell)
                for name in self.families:
                    self.cache.drop((name, cell, scope.status))
        logger.info("scope %s/%s/%s measures ~%d MiB, over the cache bound of %d MiB",
                    scope.tenant_id, scope.user_id, scope.agent_id, size >> 20,
                    self.cache.max_bytes >> 20)
        return True
