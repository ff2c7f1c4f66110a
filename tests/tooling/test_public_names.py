"""The package's public names are declared once for the runtime (`_EXPORTS`) and once for
type checkers (the imports under `TYPE_CHECKING`): the two must name the same things from the
same modules, and every name must import."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import langgraph_typed_memory

INIT = Path(langgraph_typed_memory.__file__)


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse(INIT.read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    return {alias.asname or alias.name: node.module or ""
            for node in block.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def test_type_checkers_see_the_names_the_package_exports() -> None:
    assert _type_checking_imports() == langgraph_typed_memory._EXPORTS
    assert langgraph_typed_memory.__all__ == list(langgraph_typed_memory._EXPORTS)


def test_every_public_name_imports_from_where_it_is_said_to_live() -> None:
    for name, module in langgraph_typed_memory._EXPORTS.items():
        assert getattr(langgraph_typed_memory, name) is getattr(
            importlib.import_module(module), name), name


def test_the_documented_configuration_and_outcome_types_are_public() -> None:
    for name in ("GateConfig", "AssemblyConfig", "Proposal", "Outcome", "RetryPolicy",
                 "StoreUnusable", "StoreNotSetUp", "StoreClosed", "NothingToExport"):
        assert name in langgraph_typed_memory.__all__
