"""Sans-I/O plumbing: the engine yields requests, a sync or an async driver executes them.

The decisions of a batch live once, in `engine.py`, as a generator. `drive_sync` and
`drive_async` only carry its requests to a connection or an embedder and send the answers
back, so the sync and async store classes cannot drift apart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.embeddings import Embeddings

__all__ = ["Sql", "Embed", "Begin", "Commit", "EmbedError", "Plan", "drive_sync", "drive_async"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sql:
    """Run one statement; the answer is the list of result rows (tuples)."""

    text: str
    params: Sequence[Any] = ()
    many: Sequence[Sequence[Any]] | None = field(default=None)
    """If set, executemany over these parameter rows (answer: [])."""


@dataclass(frozen=True, slots=True)
class Embed:
    """Embed texts; the answer is a list of vectors, or an `EmbedError`."""

    texts: Sequence[str]
    query: bool = False


@dataclass(frozen=True, slots=True)
class Begin:
    """Open the batch's write transaction."""


@dataclass(frozen=True, slots=True)
class Commit:
    """Commit the batch's write transaction."""


@dataclass(frozen=True, slots=True)
class EmbedError:
    """The embedder raised; the engine decides whether to degrade or to fail."""

    error: BaseException


Request = Sql | Embed | Begin | Commit
Plan = Generator[Request, Any, T]


def _embed_sync(embeddings: Embeddings | None, req: Embed) -> Any:
    if embeddings is None:
        return EmbedError(RuntimeError("no embedder configured"))
    try:
        if req.query:
            return [embeddings.embed_query(t) for t in req.texts]
        return embeddings.embed_documents(list(req.texts))
    except Exception as exc:  # degrade or fail is the engine's decision
        return EmbedError(exc)


async def _embed_async(embeddings: Embeddings | None, req: Embed) -> Any:
    if embeddings is None:
        return EmbedError(RuntimeError("no embedder configured"))
    try:
        if req.query:
            return list(await asyncio.gather(*(embeddings.aembed_query(t) for t in req.texts)))
        return await embeddings.aembed_documents(list(req.texts))
    except Exception as exc:
        return EmbedError(exc)


def drive_sync(
    plan: Plan[T],
    execute: Callable[[Sql | Begin | Commit], list[tuple[Any, ...]]],
    embeddings: Embeddings | None,
    rollback: Callable[[], None],
) -> T:
    """Run a plan to completion with blocking I/O; roll back if it fails mid-transaction."""
    in_txn = False
    try:
        req = plan.send(None)
        while True:
            if isinstance(req, Embed):
                req = plan.send(_embed_sync(embeddings, req))
                continue
            try:
                answer = execute(req)
            except Exception as exc:
                if in_txn or not isinstance(req, Sql):
                    raise
                req = plan.throw(exc)  # a failed read: the plan may degrade
                continue
            in_txn = isinstance(req, Begin) or (in_txn and not isinstance(req, Commit))
            req = plan.send(answer)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    except BaseException:
        if in_txn:
            rollback()
        raise


async def drive_async(
    plan: Plan[T],
    execute: Callable[[Sql | Begin | Commit], Awaitable[list[tuple[Any, ...]]]],
    embeddings: Embeddings | None,
    rollback: Callable[[], Awaitable[None]],
) -> T:
    """Run a plan to completion with awaited I/O; roll back if it fails mid-transaction."""
    in_txn = False
    try:
        req = plan.send(None)
        while True:
            if isinstance(req, Embed):
                req = plan.send(await _embed_async(embeddings, req))
                continue
            try:
                answer = await execute(req)
            except Exception as exc:
                if in_txn or not isinstance(req, Sql):
                    raise
                req = plan.throw(exc)  # a failed read: the plan may degrade
                continue
            in_txn = isinstance(req, Begin) or (in_txn and not isinstance(req, Commit))
            req = plan.send(answer)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    except BaseException:
        if in_txn:
            await rollback()
        raise
