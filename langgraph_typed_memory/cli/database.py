"""Which database the CLI (and LangGraph's server, `graphs/store.py`) opens, and opening it.

`TYPED_MEMORY_DB` (or `--db`) is a SQLite file path or a ``postgresql://`` URL; without
either, the SQLite file `.typed-memory/memory.db`. Every command except `setup` refuses a
database that does not exist or has not been set up, instead of creating one by accident.

The stores and the database drivers are imported when a database is opened, not with this
module: `typed-memory --help` imports it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from langgraph_typed_memory.errors import TypedMemoryError

if TYPE_CHECKING:
    from langgraph_typed_memory.cli.inspection import SchemaState
    from langgraph_typed_memory.store.core.base import SyncMemoryStore

__all__ = [
    "DB_ENV",
    "DEFAULT_DB",
    "CliError",
    "OpenedStore",
    "resolve_database",
    "is_postgres_url",
    "redact",
    "driver_reason",
    "open_store",
]

DB_ENV = "TYPED_MEMORY_DB"
DEFAULT_DB = ".typed-memory/memory.db"


class CliError(TypedMemoryError):
    """An expected failure of a CLI command: one line for the user and an exit code.

    Example:
        >>> err = CliError("no database at x.db", exit_code=1)
        >>> str(err), err.exit_code
        ('no database at x.db', 1)
    """

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def resolve_database(db: str | None = None) -> str:
    """The database to open: `db` if given, else `$TYPED_MEMORY_DB`, else `DEFAULT_DB`.

    Example:
        >>> resolve_database("/tmp/x.db")
        '/tmp/x.db'
    """
    return db or os.environ.get(DB_ENV) or DEFAULT_DB


def is_postgres_url(target: str) -> bool:
    """Whether `target` names a Postgres database rather than a SQLite file.

    Example:
        >>> is_postgres_url("postgresql://app@db/memory"), is_postgres_url("memory.db")
        (True, False)
    """
    return target.startswith(("postgresql://", "postgres://"))


def redact(target: str) -> str:
    """`target` fit to print: a URL's password replaced by ``***``.

    Example:
        >>> redact("postgresql://app:s3cret@db:5432/memory")
        'postgresql://app:***@db:5432/memory'
    """
    if not is_postgres_url(target):
        return target
    parts = urlsplit(target)
    if parts.password is None:
        return target
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass(slots=True)
class OpenedStore:
    """A store opened by the CLI, with what was decided while opening it."""

    store: SyncMemoryStore
    target: str
    backend: str
    schema: SchemaState
    notes: list[str] = field(default_factory=list)
    """Things the user should know (e.g. why search is lexical-only), printed to stderr."""


def _no_embedding(texts: Sequence[str]) -> list[list[float]]:
    raise CliError(
        "this store was opened only to create its schema (--dims without an embedder); "
        "it cannot embed text",
        exit_code=1,
    )


def _index(
    use_index: bool, dims: int | None, schema: SchemaState, notes: list[str]
) -> dict[str, Any] | None:
    """The index config to open the store with (see `open_store`)."""
    stored_dims = schema.dims
    if dims is not None:  # setup --dims N: the schema only needs the size
        from langgraph_typed_memory.embeddings import LOCAL_MODEL_DIMS, local_index_config

        local = local_index_config() if use_index and dims == LOCAL_MODEL_DIMS else None
        return {**local, "embed_timeout": None} if local else {"dims": dims, "embed": _no_embedding}
    if not use_index:
        return None
    if schema.applied and stored_dims is None:
        return None  # set up lexical-only: no vectors to search, none to add behind its back
    from langgraph_typed_memory.embeddings import local_index_config

    config = local_index_config()
    if config is None:
        notes.append("no embedder installed (the 'local' extra): lexical-only retrieval")
        return None
    if stored_dims is not None and stored_dims != config["dims"]:
        notes.append(
            f"the database stores {stored_dims}-d vectors and the CLI's embedder makes "
            f"{config['dims']}-d ones: lexical-only retrieval"
        )
        return None
    # The model loads on the first query (seconds): a one-shot command waits for it rather
    # than degrading to lexical under the store's default per-call timeout.
    return {**config, "embed_timeout": None}


def _check_sqlite_path(path: str, create: bool) -> None:
    if path == ":memory:" or path.startswith("file:"):
        return
    target = Path(path)
    if create:
        # A new database is private to its owner: SQLite gives the -wal and -shm files the
        # database file's permissions.
        try:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not target.exists():
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as exc:
            raise CliError(f"cannot create {path}: {exc.strerror}") from None
        return
    if target.exists():
        return
    where = (
        f"the directory {target.parent} does not exist"
        if not target.parent.exists() else "the file does not exist"
    )
    raise CliError(
        f"no database at {path} ({where}); pass --db PATH_OR_URL or set {DB_ENV}, "
        "or create it with `typed-memory setup`"
    )


def _connect(target: str) -> tuple[Any, str]:
    """A raw connection to `target` and the backend's name."""
    if not is_postgres_url(target):
        from langgraph_typed_memory.store.sqlite.store import connect_sqlite

        try:
            return connect_sqlite(target), "sqlite"
        except sqlite3.Error as exc:
            raise CliError(f"cannot open the SQLite database {target}: {exc}") from None
    try:
        import psycopg
    except ImportError:
        raise CliError(
            "Postgres needs the 'postgres' extra: pip install 'langgraph-typed-memory[postgres]'"
        ) from None
    extra: dict[str, Any] = {} if "connect_timeout" in target else {"connect_timeout": 10}
    try:
        return psycopg.connect(target, autocommit=True, **extra), "postgres"
    except psycopg.Error as exc:
        raise CliError(f"cannot connect to {redact(target)}: {driver_reason(exc)}") from None


def driver_reason(exc: BaseException) -> str:
    """The driver's whole message on one line: the host and port it tried and why it failed
    (libpq writes the cause first and a hint on the next line), not only its last line.

    Example:
        >>> driver_reason(OSError("port 1 failed: Connection refused\\n\\tIs the server running?"))
        'port 1 failed: Connection refused; Is the server running?'
        >>> driver_reason(OSError())
        'OSError'
    """
    lines = [" ".join(line.split()) for line in str(exc).splitlines()]
    return "; ".join(line for line in lines if line) or type(exc).__name__


def _make_store(backend: str, conn: Any, index: dict[str, Any] | None) -> SyncMemoryStore:
    if backend == "sqlite":
        from langgraph_typed_memory.store.sqlite.store import SqliteMemoryStore

        return SqliteMemoryStore(conn, index=index)
    from langgraph_typed_memory.store.postgres.store import PostgresMemoryStore

    return PostgresMemoryStore(conn, index=index)


def _expected_migrations(backend: str, dims: int | None) -> list[str]:
    if backend == "sqlite":
        from langgraph_typed_memory.store.sqlite.dialect import SqliteDialect

        return [name for name, _ in SqliteDialect().migrations(dims)]
    from langgraph_typed_memory.store.postgres.dialect import PostgresDialect

    return [name for name, _ in PostgresDialect().migrations(dims)]


@contextmanager
def open_store(
    target: str,
    *,
    use_index: bool = True,
    create: bool = False,
    dims: int | None = None,
) -> Iterator[OpenedStore]:
    """Open the memory store at `target` for one CLI command; closes it on exit.

    Args:
        target: A SQLite path or a ``postgresql://`` URL (see `resolve_database`).
        use_index: Embed with the bundled MiniLM when it is installed and the database's
            vectors have its size; otherwise (or False) retrieval is lexical-only.
        create: `setup`: create the SQLite file's directory and let an empty database in.
            Without it, a missing file or a database without the schema is an error.
        dims: `setup --dims N`: the vector size to create the schema for.

    Raises:
        CliError: the database is missing, unreachable, not set up or behind this version.

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "m.db")
        >>> with open_store(path, use_index=False, create=True) as opened:
        ...     opened.store.setup()
        ...     print(opened.backend, opened.store.check_invariants().ok)
        sqlite True
    """
    from langgraph_typed_memory.cli.inspection import schema_plan

    if not is_postgres_url(target):
        _check_sqlite_path(target, create)
    conn, backend = _connect(target)
    try:
        probe = _make_store(backend, conn, None)
        schema: SchemaState = probe._run(schema_plan())
        notes: list[str] = []
        index = _index(use_index, dims, schema, notes)
        store = _make_store(backend, conn, index)
        if not create:
            _require_schema(target, backend, schema, index)
        yield OpenedStore(store, target, backend, schema, notes)
    finally:
        conn.close()


def _require_schema(
    target: str, backend: str, schema: SchemaState, index: dict[str, Any] | None
) -> None:
    if schema.applied is None:
        raise CliError(
            f"the database {redact(target)} has no memory schema: run "
            f"`typed-memory --db {redact(target)} setup` first"
        )
    expected = _expected_migrations(backend, index["dims"] if index else None)
    pending = [name for name in expected if name not in schema.applied]
    if pending:
        raise CliError(
            f"the schema of {redact(target)} is behind this version (pending migrations: "
            f"{', '.join(pending)}): run `typed-memory setup`"
        )
