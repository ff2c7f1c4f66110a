"""Every public function, class and method of the package carries a runnable example.

Public: the names the package and its public subpackages export (`__all__` of
`langgraph_typed_memory`, `.nodes`, `.maintenance`), and the public methods those classes
define themselves (inherited LangGraph methods keep LangGraph's documentation). An example is
a doctest (`>>>`); doctests run with the suite (`--doctest-modules`), so an example that
breaks fails too. Async twins (`afoo` beside `foo`) and overrides share the example of the
method they mirror. Objects whose example needs a Postgres server are listed in NEEDS_SERVER.
"""

from __future__ import annotations

import importlib
import inspect

import pytest
from pydantic import BaseModel

NEEDS_SERVER = {
    "langgraph_typed_memory.store.postgres.store.PostgresMemoryStore",
    "langgraph_typed_memory.store.postgres.store.AsyncPostgresMemoryStore",
}


PUBLIC_PACKAGES = ("langgraph_typed_memory", "langgraph_typed_memory.nodes",
                   "langgraph_typed_memory.maintenance")


def _methods(cls: type) -> dict[str, list[object]]:
    """Public methods our classes in `cls`'s MRO define, each with every definition of it (an
    override shares the example of the method it overrides)."""
    out: dict[str, list[object]] = {}
    for klass in cls.__mro__:
        if not klass.__module__.startswith("langgraph_typed_memory"):
            continue
        for attr, member in vars(klass).items():
            if attr.startswith("_") or not inspect.isfunction(member):
                continue
            if hasattr(BaseModel, attr):
                continue  # pydantic's hooks (model_post_init...)
            if attr.startswith("a") and hasattr(cls, attr[1:]):
                continue  # the async twin of a documented sync method
            out.setdefault(f"{cls.__module__}.{cls.__qualname__}.{attr}", []).append(member)
    return out


def _public_objects() -> dict[str, list[object]]:
    found: dict[str, list[object]] = {}
    for package in PUBLIC_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            found[f"{obj.__module__}.{obj.__qualname__}"] = [obj]
            if inspect.isclass(obj):
                found.update(_methods(obj))
    return found


PUBLIC = _public_objects()


def test_the_walk_finds_the_public_surface() -> None:
    assert "langgraph_typed_memory.store.sqlite.store.SqliteMemoryStore" in PUBLIC
    assert len(PUBLIC) > 50


@pytest.mark.parametrize("path", sorted(PUBLIC))
def test_public_object_has_an_example(path: str) -> None:
    if path in NEEDS_SERVER:
        pytest.skip("needs a Postgres server: docs/backends.md's example runs instead")
    docs = [inspect.getdoc(obj) or "" for obj in PUBLIC[path]]
    assert any(">>>" in doc for doc in docs), (
        f"{path} has no doctest example: add an `Example:` with `>>>` lines")
