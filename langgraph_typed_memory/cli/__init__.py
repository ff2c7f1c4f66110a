"""The `typed-memory` command line: inspect, search, explain, erase, check, maintain,
export/import and benchmark a memory store, and import existing conversations into it. See
docs/cli.md.

Example:
    >>> import contextlib, io, os, tempfile
    >>> db = os.path.join(tempfile.mkdtemp(), "memory.db")
    >>> with contextlib.redirect_stdout(io.StringIO()) as out:
    ...     code = main(["--db", db, "--no-index", "setup"])
    >>> code, out.getvalue().startswith("schema ready")
    (0, True)
"""

from langgraph_typed_memory.cli.app import build_parser, main
from langgraph_typed_memory.cli.database import (
    DB_ENV,
    DEFAULT_DB,
    CliError,
    is_postgres_url,
    open_store,
    resolve_database,
)

__all__ = [
    "main",
    "build_parser",
    "CliError",
    "DB_ENV",
    "DEFAULT_DB",
    "resolve_database",
    "is_postgres_url",
    "open_store",
]
