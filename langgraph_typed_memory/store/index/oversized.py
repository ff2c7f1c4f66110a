"""Which scopes are too large for the exact caches: measured from their cells' counters.

A ranked search of a scope whose cells fit the cache bound (`cache_bytes`) is answered
exactly in this process from full vector matrices and postings (`cells`). A scope whose
cells together would hold more is ranked another way by its backend: by the database on
Postgres, by sign-bit sketches rescored from the database on SQLite (docs/large-scopes.md).

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

__all__ = ["OversizedScopes", "POSTINGS_PER_RECORD", "VECTOR_ROW_EXTRA", "scope_bytes"]

logger = logging.getLogger(__name__)

VECTOR_ROW_EXTRA = 40
"""What the vector caches hold per row beside its float32 vector: seq, expiry, priors."""
POSTINGS_PER_RECORD = 160
"""What the postings hold per record: seq, expiry, length and ~12 tokens' postings (about
120 bytes measured on the latency benchmark's texts, rounded up)."""


def scope_bytes(counted: Mapping[Cell, Any], dims: int) -> int:
    """What the exact caches would hold of the cells `counted`: every vector and record ever
    added to them (their counters), at `dims` float32s a vector.

    Example:
        >>> read = ScopeRead("fact", "acme", None, None, "m.status = 'active'", 5.0)
        >>> scope_bytes(counted_cells(read, [(None, None, 0, 1000, 1000, 9, "fact")]), 384)
        1736000
    """
    return sum(c.appends * (dims * 4 + VECTOR_ROW_EXTRA) + c.inserts * POSTINGS_PER_RECORD
               for c in counted.values())


class OversizedScopes:
    """The cells of scopes found too large for the exact caches, and the rule that finds them.

    `dims` is the vectors' size (None: no vectors; only records count); `families` are the
    cache families (`CellFamily.name`) whose entries of a cell found too large are dropped:
    the ones the backend no longer ranks it with.

    Example:
        >>> oversized = OversizedScopes(CellCache(2**20), 384, ("vectors",))
        >>> len(oversized)
        0
    """

    def __init__(self, cache: CellCache, dims: int | None, families: tuple[str, ...]) -> None:
        self.cache, self.dims, self.families = cache, dims, families
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
        size = scope_bytes(counted, self.dims or 0)
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
