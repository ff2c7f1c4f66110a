"""Every Python example in the README and docs/ runs, offline, in a scratch directory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"```python\n(.*?)```", re.DOTALL)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = [
    pytest.param(block, id=f"{path.name}-{i}")
    for path in DOCS
    for i, block in enumerate(FENCE.findall(path.read_text()))
]


@pytest.mark.parametrize("code", EXAMPLES)
def test_doc_example_runs(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<doc example>", "exec"), {"__name__": "__doc_example__"})


def test_docs_have_examples() -> None:
    assert EXAMPLES, "the README lost its example"
