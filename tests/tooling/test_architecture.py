"""The package's modules import each other in one direction: no import circles.

Every import of a package module counts, at module level, under `TYPE_CHECKING` or inside a
function: a circle hidden in a function still ties two modules together (each must be read
with the other in mind). The test reads the sources with `ast`, so it needs no import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import langgraph_typed_memory

ROOT = Path(langgraph_typed_memory.__file__).parent
PACKAGE = ROOT.name


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports (a name imported from a package counts as
    its submodule when there is one)."""

    def resolve(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
                found = {resolve(f"{node.module}.{a.name}") for a in node.names}
            elif isinstance(node, ast.Import):
                found = {resolve(a.name) for a in node.names if a.name.startswith(PACKAGE)}
            else:
                continue
            graph[module] |= found - {module, ""}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_no_import_circles() -> None:
    modules = _modules()
    assert f"{PACKAGE}.store.core.engine" in modules  # the walk found the package
    assert _circles(_imports(modules)) == []


def test_plans_and_maintenance_do_not_import_the_engine_or_the_store_classes() -> None:
    """Plans are built on `Records`; maintenance runs them through the store's public
    `run_plan`, so neither reaches back to what drives them."""
    graph = _imports(_modules())
    plans = ["store.core.search", "store.core.listings", "store.core.promote",
             "store.core.records", "store.core.ops",
             "store.governance.sweeps", "store.governance.erasure",
             "store.governance.portability", "maintenance.plans"]
    for name in plans:
        assert f"{PACKAGE}.store.core.engine" not in graph[f"{PACKAGE}.{name}"], name
    for module, imported in graph.items():
        if module.startswith(f"{PACKAGE}.maintenance"):
            assert f"{PACKAGE}.store.core.base" not in imported, module
    runner = graph[f"{PACKAGE}.maintenance.runner"]
    assert not any(m.startswith(f"{PACKAGE}.nodes") for m in runner)


DOC = ROOT.parent / "docs" / "architecture.md"


def _named_in_doc() -> set[str]:
    """Package paths `docs/architecture.md` names: `a/b.py` files and `a/` rooms, in code
    spans or diagrams, resolved against a room named before them in the same cell or line."""
    import re

    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"(?<![\w/.])((?:[a-z_0-9]+/)+[a-z_0-9]+\.py|(?:[a-z_0-9]+/)+)(?![\w/])",
                           text))
    for rooms, cell in re.findall(r"^\| [^|]+ \| ([^|]+) \| ([^\n]+)$", text, re.M):
        for room in re.findall(r"`(store/[a-z]+/)`", rooms):
            named |= {room + f for f in re.findall(r"`([a-z_0-9]+\.py)`", cell)}
    return named


def test_the_architecture_page_names_only_what_exists() -> None:
    for path in _named_in_doc():
        if path.startswith(("graphs/", "tests/", "docs/", "benchmarks/")):
            assert (ROOT.parent / path).exists(), path
        else:
            assert (ROOT / path).exists(), f"docs/architecture.md names {path}, which is gone"


def test_the_architecture_page_names_every_store_module() -> None:
    named = _named_in_doc()
    for path in sorted((ROOT / "store").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if path.name == "__init__.py":
            continue
        assert relative in named, f"docs/architecture.md does not say what {relative} holds"


def test_only_the_index_room_imports_its_modules() -> None:
    """The rest of the store reaches the search caches through `store.index` alone."""
    graph = _imports(_modules())
    room = f"{PACKAGE}.store.index"
    for module, imported in graph.items():
        if module == room or module.startswith(room + "."):
            continue
        inside = sorted(m for m in imported if m.startswith(room + "."))
        assert not inside, f"{module} imports {inside}: import from {room} instead"
