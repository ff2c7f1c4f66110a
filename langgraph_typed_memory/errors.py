"""The package's errors: one base class, typed subclasses that also inherit the builtin that fits.

Every message names the object, the bad value and how to fix it. Nothing is written when one
of these is raised from a store call: validation runs before any I/O.
"""

from __future__ import annotations

from langgraph.store.base import InvalidNamespaceError

__all__ = [
    "TypedMemoryError",
    "InvalidNamespace",
    "UnknownKind",
    "InvalidRecord",
    "StatusNotAllowed",
    "InvalidQuery",
    "EmbeddingDimensionMismatch",
    "EmbeddingFailed",
    "SchemaVersionError",
    "ConfigurationError",
]


class TypedMemoryError(Exception):
    """Base class of every error raised by `langgraph_typed_memory`."""


class InvalidNamespace(TypedMemoryError, InvalidNamespaceError):
    """A namespace that does not follow the typed grammar (see docs/namespaces.md).

    It is also LangGraph's `InvalidNamespaceError` (a `ValueError`), so code that catches
    LangGraph's error keeps working.
    """


class UnknownKind(InvalidNamespace):
    """A typed namespace whose last label is not one of the memory kinds."""


class InvalidRecord(TypedMemoryError, ValueError):
    """A value that does not validate against its kind's schema, or an out-of-range argument."""


class StatusNotAllowed(InvalidRecord):
    """The caller tried to set a field the store computes (status, supersession, hashes)."""


class InvalidQuery(TypedMemoryError, ValueError):
    """A bad search argument: filter, limit, offset, query text."""


class EmbeddingDimensionMismatch(TypedMemoryError, ValueError):
    """An embedder returned vectors whose size differs from the configured `dims`."""


class EmbeddingFailed(TypedMemoryError, RuntimeError):
    """The embedder raised while indexing a write; nothing was written."""


class SchemaVersionError(TypedMemoryError, RuntimeError):
    """The database was set up by an incompatible configuration or a newer version."""


class ConfigurationError(TypedMemoryError, ValueError):
    """A store or retrieval configuration value is wrong."""
