"""The store LangGraph's server uses (langgraph.json: `"store": {"path": ...}`).

`TYPED_MEMORY_DB` chooses the database: a SQLite file path (default
`.typed-memory/memory.db`, the `typed-memory` CLI's default too) or a `postgresql://` URL. The
offline MiniLM embedder is used when the `local` extra is installed; otherwise retrieval is
lexical-only. With `ttl=` (LangGraph's `TTLConfig`) given to the store, its TTL sweeper runs
for the server's lifetime: the server starts none for a custom store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from langgraph.store.base import BaseStore

from langgraph_typed_memory import AsyncSqliteMemoryStore
from langgraph_typed_memory.cli.database import is_postgres_url, resolve_database
from langgraph_typed_memory.embeddings import local_index_config


@asynccontextmanager
async def generate_store() -> AsyncIterator[BaseStore]:
    """Open, set up and yield the async memory store for the server's lifetime."""
    target = resolve_database()
    if is_postgres_url(target):
        from langgraph_typed_memory import AsyncPostgresMemoryStore

        async with AsyncPostgresMemoryStore.from_conn_string(
            target, pool_size=8, index=local_index_config()
        ) as pg_store:
            await pg_store.setup()
            await pg_store.start_ttl_sweeper()  # the server sweeps no custom store itself
            yield pg_store
        return
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteMemoryStore.from_conn_string(target, index=local_index_config()) as store:
        await store.setup()
        await store.start_ttl_sweeper()  # nothing to sweep without ttl= (pass one to use TTLs)
        yield store
