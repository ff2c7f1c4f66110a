"""The package's errors: one base class, typed subclasses that also inherit the builtin that fits.

Every message names the object, the bad value and how to fix it. Nothing is written when one
of these is raised from a store call: validation runs before any I/O.
"""

from __future__ import annotations

import reprlib
from typing import Any

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
    "StoreUnusable",
    "StoreNotSetUp",
    "StoreClosed",
    "SchemaVersionError",
    "ConfigurationError",
    "InvalidPassphrase",
    "ExportFileError",
    "ExportFormatError",
    "ExportDecryptError",
    "ImportCollision",
    "NothingToExport",
    "InvalidVerdict",
    "UnknownMemory",
    "shown",
]


class TypedMemoryError(Exception):
    """Base class of every error raised by `langgraph_typed_memory`.

    Example:
        >>> from langgraph_typed_memory import parse_namespace
        >>> try:
        ...     parse_namespace(("tenant:acme", "recipes"))
        ... except TypedMemoryError as exc:
        ...     print(type(exc).__name__)
        UnknownKind
    """


class InvalidNamespace(TypedMemoryError, InvalidNamespaceError):
    """A namespace that does not follow the typed grammar (see docs/namespaces.md).

    It is also LangGraph's `InvalidNamespaceError` (a `ValueError`), so code that catches
    LangGraph's error keeps working.

    Example:
        >>> from langgraph_typed_memory import parse_namespace
        >>> parse_namespace(("acme", "fact"))
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidNamespace: ...
    """


class UnknownKind(InvalidNamespace):
    """A typed namespace whose last label is not one of the memory kinds.

    Example:
        >>> issubclass(UnknownKind, InvalidNamespace), issubclass(UnknownKind, ValueError)
        (True, True)
    """


class InvalidRecord(TypedMemoryError, ValueError):
    """A value that does not validate against its kind's schema, or an out-of-range argument.

    Example:
        >>> from langgraph_typed_memory.schemas import validate_record
        >>> validate_record("fact", "k", {"subject": "user"}, ("tenant:a", "user:b", "fact"))
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidRecord: ...
    """


class StatusNotAllowed(InvalidRecord):
    """The caller tried to set a field the store computes (status, supersession, hashes).

    Example:
        >>> from langgraph_typed_memory.schemas import validate_record
        >>> validate_record("preference", "tone", {"value": "terse", "status": "active"},
        ...                 ("tenant:a", "user:b", "preference"))
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.StatusNotAllowed: ...
    """


class InvalidQuery(TypedMemoryError, ValueError):
    """A bad search argument: filter, limit, offset, query text.

    Example:
        >>> from langgraph_typed_memory.scoring import validate_filter
        >>> validate_filter({"n": {"$regex": "x"}})
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidQuery: ...
    """


class EmbeddingDimensionMismatch(TypedMemoryError, ValueError):
    """An embedder returned vectors whose size differs from the configured `dims`.

    Example:
        >>> issubclass(EmbeddingDimensionMismatch, ValueError)
        True
    """


class EmbeddingFailed(TypedMemoryError, RuntimeError):
    """The embedder raised while indexing a write; nothing was written.

    Example:
        >>> issubclass(EmbeddingFailed, RuntimeError)
        True
    """


class StoreUnusable(TypedMemoryError, RuntimeError):
    """The store cannot serve any read or write as it is: a misconfiguration, not a
    degradation a turn can go on without, so the prebuilt nodes raise it instead of going on
    without memory (`StoreNotSetUp`, `StoreClosed`).

    Example:
        >>> issubclass(StoreNotSetUp, StoreUnusable), issubclass(StoreClosed, RuntimeError)
        (True, True)
    """


class StoreNotSetUp(StoreUnusable):
    """The store's tables do not exist (`store.setup()` was never called on this database),
    or are older than this version of the package (not migrated since an upgrade).

    Raised at the first read or write, by the store and by the prebuilt nodes.

    Example:
        >>> issubclass(StoreNotSetUp, RuntimeError)
        True
    """


class StoreClosed(StoreUnusable):
    """The store's connection or pool was closed: a store opened with
    `with ...from_conn_string(...) as store:` used after its block, or on a connection the
    app closed. Raised at the read or write, by the store and by the prebuilt nodes.

    Example:
        >>> issubclass(StoreClosed, StoreUnusable)
        True
    """


class SchemaVersionError(TypedMemoryError, RuntimeError):
    """The database was set up by an incompatible configuration or a newer version.

    Example:
        >>> issubclass(SchemaVersionError, RuntimeError)
        True
    """


class ConfigurationError(TypedMemoryError, ValueError):
    """A store or retrieval configuration value is wrong.

    Example:
        >>> from langgraph_typed_memory.config import normalize_retrieval
        >>> normalize_retrieval({"candidate_dept": 10})
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: ...
    """


class InvalidPassphrase(TypedMemoryError, ValueError):
    """An export or import passphrase that is empty or not a str/bytes.

    Example:
        >>> from langgraph_typed_memory.store.governance.envelope import seal
        >>> seal(b"data", "")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidPassphrase: passphrase is empty: ...
    """


class ExportFileError(TypedMemoryError, ValueError):
    """An export file that cannot be imported; nothing was written (see the subclasses).

    Example:
        >>> issubclass(ExportFormatError, ExportFileError), issubclass(ExportFileError, ValueError)
        (True, True)
    """


class ExportFormatError(ExportFileError):
    """Not an export file, an unsupported format version, or a damaged header or payload.

    Example:
        >>> from langgraph_typed_memory.store.governance.envelope import unseal
        >>> unseal(b"not an export", "pw")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ExportFormatError: This is not a langgraph-typed-memory ...
    """


class ExportDecryptError(ExportFileError):
    """An export that fails authentication: a wrong passphrase, or a modified or truncated
    file.

    Example:
        >>> from langgraph_typed_memory.store.governance.envelope import seal, unseal
        >>> unseal(seal(b"data", "right", scrypt_n=2**10), "wrong")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ExportDecryptError: The export could not be decrypted: ...
    """


class ImportCollision(TypedMemoryError, ValueError):
    """An import onto a store that already holds part of the scope: import never merges.

    Example:
        >>> issubclass(ImportCollision, ValueError)
        True
    """


class NothingToExport(TypedMemoryError, LookupError):
    """An export of a scope this store holds nothing of (no record, audit event or deletion
    event): most often a tenant or user id typed differently from the stored one. No file is
    written; `allow_empty=True` writes an empty export anyway.

    Example:
        >>> import os, tempfile
        >>> from langgraph_typed_memory import SqliteMemoryStore
        >>> path = os.path.join(tempfile.mkdtemp(), "bob.lgtm")
        >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
        ...     store.setup()
        ...     store.export_scope(path, "a long passphrase", tenant_id="acme", user_id="bob")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.NothingToExport: Nothing to export: ...
        >>> os.path.exists(path)
        False
    """


class InvalidVerdict(InvalidRecord):
    """A feedback verdict that is not "correct", "wrong" or "dismissed".

    Example:
        >>> issubclass(InvalidVerdict, ValueError)
        True
    """


class UnknownMemory(TypedMemoryError, LookupError):
    """Feedback names a record that does not exist (or is no longer current).

    Example:
        >>> issubclass(UnknownMemory, LookupError)
        True
    """


class _MessageRepr(reprlib.Repr):
    """`reprlib.Repr` for error messages: integers too long to print are described, not
    printed (Python refuses to print one of more than 4,300 digits)."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 256:
            return f"<int of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_REPR = _MessageRepr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 60, 60


def shown(value: Any, width: int = 80) -> str:
    """`repr(value)` cut to at most `width` characters, for an error message: safe for any
    value a caller may pass (nesting thousands deep, cycles, integers of thousands of digits,
    a `__repr__` that raises).

    Example:
        >>> shown([[[[["deep"]]]]]), shown(10**5000)
        ('[[[[...]]]]', '<int of 16610 bits>')
        >>> shown("x" * 200, width=12)
        "'xxxxxxx...'"
    """
    try:
        text = _REPR.repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    if len(text) <= width:
        return text
    closing = text[-1] if text[-1] in "'\")]}" else ""
    return text[: max(width - 3 - len(closing), 1)] + "..." + closing
