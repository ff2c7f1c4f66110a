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

from langgraph.store.base import BaseStore

from langgraph_typed_memory import AsyncSqliteMemoryStore
from langgraph_typed_memory.embeddings import local_index_config

DB_ENV = "TYPED_MEMORY_DB"
DEFAULT_DB = ".typed-memory/langgraph-dev.db"


@asynccontextmanager
async def generate_store() -> AsyncIterator[BaseStore]:
    """Open, set up and yield the async memory store for the server's lifetime."""
    target = os.environ.get(DB_ENV, DEFAULT_DB)
    if target.startswith(("postgresql://", "postgres://")):
        from langgraph_typed_memory import AsyncPostgresMemoryStore

        async with AsyncPostgresMemoryStore.from_conn_string(
            target, pool_size=8, index=local_index_config()
        ) as pg_store:
            await pg_store.setup()
            yield pg_store
        return
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteMemoryStore.from_conn_string(target, index=local_index_config()) as store:
        await store.setup()
        yield store
