"""The scopes' entity directories as the nodes last read them, read again only when changed.

Every turn (the extract node) and every question naming something (the retrieve node)
resolves names against the scope's entity directory. Listing and parsing it whole each time
costs every turn in proportion to the entities the scope holds. `Directories` keeps each
scope's parsed directory with the `version` the store listed it at; the next read asks the
store for the listing only if the scope's entity records changed since (the `$if_changed`
filter of a `$newest` listing: the store compares its counters of the scope, one indexed
row) and parses it only then.

Kept per store object (weakly: a store closed and dropped takes its directories with it), the
`DIRECTORY_SCOPES` most recently read scopes of each, and dropped when the store forgets
what it cached (after an erasure, with its search caches: no copy of an erased user's
entities stays in memory); one lock guards the bookkeeping, never a read. A store that lists
without versions (LangGraph's) is read whole every time, as before. The nodes share
`DIRECTORIES`: what the retrieve node read at the start of a turn saves the extract node its
read at the end.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import BaseStore, SearchOp

from langgraph_typed_memory.entities.records import (
    directory,
    directory_op,
    directory_records,
    with_added,
)
from langgraph_typed_memory.entities.turns import KnownEntities

__all__ = ["Directories", "DirectoryRead", "DIRECTORIES", "DIRECTORY_SCOPES"]

DIRECTORY_SCOPES = 1024
"""The most scopes whose directories are kept per store object (least recently read first
out)."""

Held = tuple[str, KnownEntities]
"""(version, directory) of a scope."""


@dataclass(frozen=True, slots=True)
class DirectoryRead:
    """One read of a scope's directory: the store op to run, and the directory held when it
    was made (what an ``unchanged`` answer means)."""

    op: SearchOp
    held: Held | None


class Directories:
    """Parsed entity directories per store and scope, each with the version it was listed at.

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> labels = ("tenant:acme", "user:alice")
        >>> store.put((*labels, "entity"), "e1", {"name": "Lena", "type": "person"})
        >>> dirs = Directories()
        >>> read = dirs.read(store, labels)
        >>> [e.name for e in dirs.known(store, labels, read, store.batch([read.op])[0]).entities]
        ['Lena']
        >>> again = dirs.read(store, labels)
        >>> store.batch([again.op])[0].retrieval_mode  # nothing listed: the directory held is
        'unchanged'
    """

    def __init__(self, scopes: int = DIRECTORY_SCOPES) -> None:
        self.scopes = scopes
        self._held: weakref.WeakKeyDictionary[BaseStore, OrderedDict[tuple[str, ...], Held]] = (
            weakref.WeakKeyDictionary())
        self._followed: weakref.WeakSet[BaseStore] = weakref.WeakSet()
        self._lock = threading.Lock()

    def read(self, store: BaseStore, labels: Sequence[str]) -> DirectoryRead:
        """The read of the scope's directory: conditional on the version held, if any."""
        key = tuple(labels)
        with self._lock:
            scopes = self._held.get(store)
            held = scopes.get(key) if scopes is not None else None
            if held is not None and scopes is not None:
                scopes.move_to_end(key)
        return DirectoryRead(directory_op(key, since=held[0] if held else None), held)

    def known(self, store: BaseStore, labels: Sequence[str], read: DirectoryRead,
              found: Any) -> KnownEntities:
        """The directory after `read`'s op returned `found`: the one held when the store
        answered ``unchanged``, with the records added when it answered ``added``, else the
        listing parsed (and kept when it has a version)."""
        mode = getattr(found, "retrieval_mode", None)
        if read.held is not None and mode == "unchanged" and (
                getattr(found, "version", None) == read.held[0]):
            return read.held[1]
        if read.held is not None and mode == "added":
            known = with_added(read.held[1], directory_records(found))
        else:
            known = directory(directory_records(found))
        version = getattr(found, "version", None)
        if isinstance(version, str):
            with self._lock:
                scopes = self._held.get(store)
                if scopes is None:
                    scopes = self._held[store] = OrderedDict()
                    self._follow(store)
                scopes[tuple(labels)] = (version, known)
                scopes.move_to_end(tuple(labels))
                while len(scopes) > self.scopes:
                    scopes.popitem(last=False)
        return known

    def _follow(self, store: BaseStore) -> None:
        """Drop the store's directories whenever its caches forget (after an erasure); once
        per store."""
        if store in self._followed:
            return
        self._followed.add(store)
        on_forget = getattr(store, "on_forget", None)  # the product's stores have it
        if callable(on_forget):
            held = weakref.ref(store)
            on_forget(lambda: self.forget(held()))

    def forget(self, store: BaseStore | None) -> None:
        """Drop every directory kept for `store`."""
        if store is not None:
            with self._lock:
                self._held.pop(store, None)

    def __len__(self) -> int:
        """The directories kept, over all stores."""
        with self._lock:
            return sum(len(scopes) for scopes in self._held.values())


DIRECTORIES = Directories()
"""The directories the nodes share."""
