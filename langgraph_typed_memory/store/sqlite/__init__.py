"""SQLite: the embedded default.

`store` holds the store classes, `dialect` the SQL and migrations that differ from the other
backend. The store classes are importable from here too (loaded on first use, so reading the
dialect needs no driver).
"""

from __future__ import annotations

from typing import Any

__all__ = ['AsyncSqliteMemoryStore', 'SqliteMemoryStore', 'connect_sqlite']


def __getattr__(name: str) -> Any:
    if name in __all__:
        from langgraph_typed_memory.store.sqlite import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
