"""Exact vector search on a cached matrix per scope, valid while the scope's version holds.

Both backends rank vectors the same way: the scope's vectors, read once after the SQL scope
filter, are kept unit-normalized as one float32 matrix, so a query is one matrix-vector
product (exact: every vector in scope is scored). An LRU keeps `size` scopes.

Validity comes from the database, not from this process: triggers (migration
`0008_scope_versions`) count every change to a scope cell (kind, tenant, user, agent) in
`memory_scope_versions`, whoever makes it (this store, another store object on the same
connection, another process, a maintenance job). A search reads the sum of the counters of the
cells it can see (one indexed lookup) and reloads the matrix when the sum moved. Cells are
never deleted and counters only grow, so the sum moves on every change.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from langgraph_typed_memory.store.protocol import Plan, Sql

__all__ = [
    "ScopeVectorCache", "VERSIONS_TABLE", "BACKFILL", "ROW_CELL", "VECTOR_CELL", "bump_cell",
]

VERSIONS_TABLE = (
    """CREATE TABLE memory_scope_versions (
        kind TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        version BIGINT NOT NULL
    )""",
    """CREATE UNIQUE INDEX memory_scope_versions_cell ON memory_scope_versions
        (kind, tenant_id, coalesce(user_id, ''), coalesce(agent_id, ''))""",
)
"""DDL shared by both dialects: one counter per scope cell (NULL user/agent: wider cells)."""

def bump_cell(source: str) -> str:
    """The statement counting one change of the cell(s) `source` yields: `source` is a VALUES
    list or a SELECT of (kind, tenant_id, user_id, agent_id, 1), in the dialect's trigger
    syntax.

    Example:
        >>> bump_cell("VALUES ('fact', 'acme', NULL, NULL, 1)")[:33]
        'INSERT INTO memory_scope_versions'
    """
    return (
        "INSERT INTO memory_scope_versions (kind, tenant_id, user_id, agent_id, version) "
        f"{source} ON CONFLICT (kind, tenant_id, coalesce(user_id, ''), coalesce(agent_id, '')) "
        "DO UPDATE SET version = memory_scope_versions.version + 1"
    )


ROW_CELL = "VALUES ({row}.kind, {row}.tenant_id, {row}.user_id, {row}.agent_id, 1)"
"""The cell of the trigger's row (`{row}`: OLD or NEW) of `memories`."""
VECTOR_CELL = ("SELECT m.kind, m.tenant_id, m.user_id, m.agent_id, 1 FROM memories m "
               "WHERE m.seq = {row}.seq AND m.kind IS NOT NULL")
"""The cell of the record a `memory_vectors` trigger row belongs to (none if untyped)."""

BACKFILL = (
    "INSERT INTO memory_scope_versions (kind, tenant_id, user_id, agent_id, version) "
    "SELECT DISTINCT kind, tenant_id, user_id, agent_id, 1 FROM memories "
    "WHERE kind IS NOT NULL AND tenant_id IS NOT NULL"
)
"""Cells for the rows that existed before the migration."""

Decode = Callable[[list[Any]], np.ndarray]
"""Turns the fetched embedding values of n rows into an (n, dims) float32 matrix."""


@dataclass(slots=True)
class _ScopeMatrix:
    version: int
    seqs: np.ndarray
    matrix: np.ndarray
    """Unit-normalized rows (zero vectors stay zero)."""
    expires: np.ndarray


class ScopeVectorCache:
    """Per-scope normalized vector matrices, checked against the scope's version each query.

    Example:
        >>> cache = ScopeVectorCache(size=2)
        >>> len(cache)
        0
    """

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], _ScopeMatrix] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def top_k(
        self,
        where: str,
        params: Sequence[Any],
        cells: tuple[str, Sequence[Any]],
        query: Sequence[float],
        depth: int | None,
        now: float,
        *,
        embedding: str,
        decode: Decode,
    ) -> Plan[list[tuple[int, float]]]:
        """Best-first (seq, cosine) among rows matching `where` (alias `m` for memories, `v`
        for memory_vectors) that have not expired at `now`, one per record (max over its
        vectors). `cells` filters `memory_scope_versions` (alias `m`) to the cells the scope
        can see; `embedding` is the SQL expression fetched for `v.embedding`."""
        cell_where, cell_params = cells
        version = int((yield Sql(
            f"SELECT coalesce(sum(m.version), 0) FROM memory_scope_versions m WHERE {cell_where}",
            list(cell_params),
        ))[0][0])
        key = (where, tuple(params))
        entry = self._entries.get(key)
        if entry is None or entry.version != version:
            rows = yield Sql(
                f"SELECT v.seq, {embedding}, m.expires_at FROM memory_vectors v "
                f"JOIN memories m ON m.seq = v.seq WHERE {where}",
                list(params),
            )
            entry = _scope_matrix(rows, version, decode)
            self._entries[key] = entry
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        self._entries.move_to_end(key)
        if not len(entry.seqs):
            return []
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        scores = entry.matrix @ (q / norm) if norm else np.zeros(len(entry.seqs), np.float32)
        scores = np.where(entry.expires > now, scores, -np.inf)
        return _top(entry.seqs, scores, depth)


def _scope_matrix(rows: list[tuple[Any, ...]], version: int, decode: Decode) -> _ScopeMatrix:
    if not rows:
        empty = np.zeros(0)
        return _ScopeMatrix(version, empty.astype(np.int64), empty.astype(np.float32), empty)
    matrix = decode([r[1] for r in rows])
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    expires = np.array([np.inf if r[2] is None else r[2] for r in rows], dtype=np.float64)
    return _ScopeMatrix(version, np.array([r[0] for r in rows], dtype=np.int64),
                        matrix / norms, expires)


def _top(seqs: np.ndarray, scores: np.ndarray, depth: int | None) -> list[tuple[int, float]]:
    """Best-first (seq, score), one per record (max over its vectors), expired ones left out."""
    live = np.isfinite(scores)
    seqs, scores = seqs[live], scores[live]
    if depth is not None and len(scores) > depth * 4:
        keep = np.argpartition(-scores, depth * 4)[: depth * 4]  # enough for max-pooling
        seqs, scores = seqs[keep], scores[keep]
    order = np.argsort(-scores, kind="stable")
    best: dict[int, float] = {}
    for i in order:
        seq = int(seqs[i])
        if seq not in best:
            best[seq] = float(scores[i])
            if depth is not None and len(best) == depth:
                break
    return list(best.items())
