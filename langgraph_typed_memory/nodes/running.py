"""A node's body as a plan: it yields the calls it needs (a store batch, a model call, a
promotion) and receives their results, and one sync and one async runner carry them out. So a
node is written once, and its `invoke` and `ainvoke` cannot drift apart."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Call", "Plan", "run", "arun"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call:
    """One call a plan asks for: `sync(*args, **kwargs)` when run blocking,
    `await async_(*args, **kwargs)` when run async. An error it raises is thrown into the
    plan at the `yield`, where the plan may handle it.

    Example:
        >>> import asyncio
        >>> def plan():
        ...     try:
        ...         got = yield Call(int, _aint, ("4",))
        ...     except ValueError:
        ...         return "refused"
        ...     return got * 2
        >>> async def _aint(text):
        ...     return int(text)
        >>> run(plan()), asyncio.run(arun(plan()))
        (8, 8)
    """

    sync: Callable[..., Any]
    async_: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Plan = Generator[Call, Any, T]


def run(plan: Plan[T]) -> T:
    """Carry out a plan's calls with blocking I/O and return what it returns."""
    try:
        call = next(plan)
        while True:
            try:
                result = call.sync(*call.args, **call.kwargs)
            except Exception as exc:
                call = plan.throw(exc)
                continue
            call = plan.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def arun(plan: Plan[T]) -> T:
    """Carry out a plan's calls, awaiting each, and return what it returns."""
    try:
        call = next(plan)
        while True:
            try:
                result = await call.async_(*call.args, **call.kwargs)
            except Exception as exc:
                call = plan.throw(exc)
                continue
            call = plan.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
