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
    SchemaVersionError,
    StatusNotAllowed,
    TypedMemoryError,
    UnknownKind,
    UnknownMemory,
)
from langgraph_typed_memory.maintenance import (
    FeedbackResult,
    MaintenanceConfig,
    MaintenanceReport,
    create_memory_maintenance_graph,
)
from langgraph_typed_memory.namespaces import KINDS, Kind, Scope, memory_namespace, parse_namespace
from langgraph_typed_memory.results import MemoryItem, SearchResults
from langgraph_typed_memory.retriever import TypedMemoryRetriever
from langgraph_typed_memory.schemas import (
    EpisodeMemory,
    FactMemory,
    ObservationMemory,
    PolicyMemory,
    PreferenceMemory,
    ProcedureMemory,
)
from langgraph_typed_memory.store.portability import ExportReport, ImportReport
from langgraph_typed_memory.store.sqlite import (
    AsyncSqliteMemoryStore,
    SqliteMemoryStore,
    connect_sqlite,
)

__all__ = [
    "SqliteMemoryStore",
    "AsyncSqliteMemoryStore",
    "connect_sqlite",
    "PostgresMemoryStore",
    "AsyncPostgresMemoryStore",
    "LocalEmbeddings",
    "TypedMemoryRetriever",
    "RetrievalConfig",
    "LifecycleConfig",
    "MemoryItem",
    "SearchResults",
    "Scope",
    "Kind",
    "KINDS",
    "memory_namespace",
    "parse_namespace",
    "PolicyMemory",
    "PreferenceMemory",
    "FactMemory",
    "EpisodeMemory",
    "ProcedureMemory",
    "ObservationMemory",
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
    "InvalidPassphrase",
    "ExportFileError",
    "ExportFormatError",
    "ExportDecryptError",
    "ImportCollision",
    "ExportReport",
    "ImportReport",
    "MaintenanceConfig",
    "MaintenanceReport",
    "FeedbackResult",
    "InvalidVerdict",
    "UnknownMemory",
    "create_memory_maintenance_graph",
]


def __getattr__(name: str) -> object:
    # The Postgres stores need the `postgres` extra; import them only when asked for.
    if name in ("PostgresMemoryStore", "AsyncPostgresMemoryStore"):
        from langgraph_typed_memory.store import postgres

        return getattr(postgres, name)
    raise AttributeError(f"module 'langgraph_typed_memory' has no attribute {name!r}")
