"""The benchmark scripts as the tests import them: as `python benchmarks/<name>.py` runs
them, with `benchmarks/` (and its `_common`) on the path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def load_benchmark(name: str) -> Any:
    """Import `benchmarks/<name>.py` once per process."""
    folder = str(REPO / "benchmarks")
    if folder not in sys.path:
        sys.path.append(folder)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
