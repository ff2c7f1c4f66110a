"""Typed, scoped, governed long-term memory for LangGraph.

Example:
    >>> from langgraph_typed_memory import SqliteMemoryStore, memory_namespace
    >>> with SqliteMemoryStore.from_conn_string(":memory:") as store:
    ...     store.setup()
    ...     ns = memory_namespace("fact", tenant_id="acme", user_id="alice")
    ...     store.put(ns, "f1", {"subject": "alice", "predicate": "city",
    ...                          "content": "Alice lives in Lyon"})
    ...     hits = store.search(ns, query="where does alice live")
    ...     print(hits.retrieval_mode, hits[0].value["content"], hits[0].memory["tier"])
    lexical Alice lives in Lyon high
"""

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langgraph_typed_memory.assembly import AssemblyConfig
    from langgraph_typed_memory.config import LifecycleConfig, RetrievalConfig
    from langgraph_typed_memory.embeddings import LocalEmbeddings
    from langgraph_typed_memory.errors import (
        ConfigurationError,
        EmbeddingDimensionMismatch,
        EmbeddingFailed,
        ExportDecryptError,
        ExportFileError,
        ExportFormatError,
        ImportCollision,
        InvalidNamespace,
        InvalidPassphrase,
        InvalidQuery,
        InvalidRecord,
        InvalidVerdict,
        NothingToExport,
        SchemaVersionError,
        StatusNotAllowed,
        StoreClosed,
        StoreNotSetUp,
        StoreUnusable,
        TypedMemoryError,
        UnknownKind,
        UnknownMemory,
    )
    from langgraph_typed_memory.gate import GateConfig, Outcome, Proposal
    from langgraph_typed_memory.maintenance import (
        FeedbackResult,
        MaintenanceConfig,
        MaintenanceReport,
        create_memory_maintenance_graph,
    )
    from langgraph_typed_memory.middleware import MemoryMiddleware
    from langgraph_typed_memory.namespaces import (
        KINDS,
        Kind,
        Scope,
        memory_namespace,
        parse_namespace,
    )
    from langgraph_typed_memory.results import MemoryItem, SearchResults
    from langgraph_typed_memory.retriever import TypedMemoryRetriever
    from langgraph_typed_memory.schemas import (
        EntityMemory,
        EpisodeMemory,
        FactMemory,
        ObservationMemory,
        PolicyMemory,
        PreferenceMemory,
        ProcedureMemory,
    )
    from langgraph_typed_memory.store.core.retry import RetryPolicy
    from langgraph_typed_memory.store.governance.portability import ExportReport, ImportReport
    from langgraph_typed_memory.store.postgres.store import (
        AsyncPostgresMemoryStore,
        PostgresMemoryStore,
    )
    from langgraph_typed_memory.store.sqlite.store import (
        AsyncSqliteMemoryStore,
        SqliteMemoryStore,
        connect_sqlite,
    )

_EXPORTS = {
    "LifecycleConfig": "langgraph_typed_memory.config",
    "RetrievalConfig": "langgraph_typed_memory.config",
    "LocalEmbeddings": "langgraph_typed_memory.embeddings",
    "ConfigurationError": "langgraph_typed_memory.errors",
    "EmbeddingDimensionMismatch": "langgraph_typed_memory.errors",
    "EmbeddingFailed": "langgraph_typed_memory.errors",
    "ExportDecryptError": "langgraph_typed_memory.errors",
    "ExportFileError": "langgraph_typed_memory.errors",
    "ExportFormatError": "langgraph_typed_memory.errors",
    "ImportCollision": "langgraph_typed_memory.errors",
    "InvalidNamespace": "langgraph_typed_memory.errors",
    "InvalidPassphrase": "langgraph_typed_memory.errors",
    "InvalidQuery": "langgraph_typed_memory.errors",
    "InvalidRecord": "langgraph_typed_memory.errors",
    "InvalidVerdict": "langgraph_typed_memory.errors",
    "SchemaVersionError": "langgraph_typed_memory.errors",
    "StatusNotAllowed": "langgraph_typed_memory.errors",
    "TypedMemoryError": "langgraph_typed_memory.errors",
    "UnknownKind": "langgraph_typed_memory.errors",
    "UnknownMemory": "langgraph_typed_memory.errors",
    "NothingToExport": "langgraph_typed_memory.errors",
    "StoreUnusable": "langgraph_typed_memory.errors",
    "StoreNotSetUp": "langgraph_typed_memory.errors",
    "StoreClosed": "langgraph_typed_memory.errors",
    "GateConfig": "langgraph_typed_memory.gate",
    "Proposal": "langgraph_typed_memory.gate",
    "Outcome": "langgraph_typed_memory.gate",
    "AssemblyConfig": "langgraph_typed_memory.assembly",
    "RetryPolicy": "langgraph_typed_memory.store.core.retry",
    "FeedbackResult": "langgraph_typed_memory.maintenance",
    "MaintenanceConfig": "langgraph_typed_memory.maintenance",
    "MaintenanceReport": "langgraph_typed_memory.maintenance",
    "create_memory_maintenance_graph": "langgraph_typed_memory.maintenance",
    "MemoryMiddleware": "langgraph_typed_memory.middleware",
    "KINDS": "langgraph_typed_memory.namespaces",
    "Kind": "langgraph_typed_memory.namespaces",
    "Scope": "langgraph_typed_memory.namespaces",
    "memory_namespace": "langgraph_typed_memory.namespaces",
    "parse_namespace": "langgraph_typed_memory.namespaces",
    "MemoryItem": "langgraph_typed_memory.results",
    "SearchResults": "langgraph_typed_memory.results",
    "TypedMemoryRetriever": "langgraph_typed_memory.retriever",
    "EntityMemory": "langgraph_typed_memory.schemas",
    "EpisodeMemory": "langgraph_typed_memory.schemas",
    "FactMemory": "langgraph_typed_memory.schemas",
    "ObservationMemory": "langgraph_typed_memory.schemas",
    "PolicyMemory": "langgraph_typed_memory.schemas",
    "PreferenceMemory": "langgraph_typed_memory.schemas",
    "ProcedureMemory": "langgraph_typed_memory.schemas",
    "ExportReport": "langgraph_typed_memory.store.governance.portability",
    "ImportReport": "langgraph_typed_memory.store.governance.portability",
    "AsyncSqliteMemoryStore": "langgraph_typed_memory.store.sqlite.store",
    "SqliteMemoryStore": "langgraph_typed_memory.store.sqlite.store",
    "connect_sqlite": "langgraph_typed_memory.store.sqlite.store",
    "PostgresMemoryStore": "langgraph_typed_memory.store.postgres.store",
    "AsyncPostgresMemoryStore": "langgraph_typed_memory.store.postgres.store",
}
"""The public names and where each lives: imported on first use, so `import
langgraph_typed_memory` (and the CLI's `--help`) stays cheap, and the Postgres stores need the
`postgres` extra only when asked for. The imports under `TYPE_CHECKING` above name the same
set for type checkers (a test holds the two together)."""

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'langgraph_typed_memory' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
