# Humans and CI run the same targets. Everything installs itself into .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install demo test lint typecheck unit stress bench clean

# torch is pinned: 2.13.0 is the CPU build (from local disk on the project's machines); a plain
# `torch` requirement pulls the multi-gigabyte CUDA build.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[postgres,local,dev]'
	touch $(STAMP)

install: $(STAMP)

demo: install  ## The main job on the embedded default (SQLite file, offline).
	$(BIN)/python examples/memory_chat_demo.py --db .typed-memory/demo.db

test: install lint typecheck  ## The whole suite, both backends.
	$(BIN)/pytest -q

unit: install  ## Fast tests without Postgres.
	TYPED_MEMORY_SKIP_POSTGRES=1 $(BIN)/pytest -q

lint: install
	$(BIN)/ruff check .

typecheck: install
	$(BIN)/mypy

stress: install  ## The long variants of the reliability suites.
	$(BIN)/pytest -q -m slow --run-slow

bench: install  ## Backend measurements behind docs/backends.md.
	$(BIN)/python benchmarks/vector_scan.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .typed-memory
