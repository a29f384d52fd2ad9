# Every target sets up what it needs: a fresh machine only needs Python 3.11, make and kubectl.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: venv test lint typecheck unit demo bench crd clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,bench]'
	rm -f $(VENV)/.installed-*
	touch $@

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/ruff format --check src tests benchmarks tools

typecheck: $(STAMP)
	$(BIN)/mypy src
	$(BIN)/mypy --strict tools

test: lint typecheck
	$(BIN)/pytest -q -p no:cacheprovider

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

# Until the controller lands, the demo starts the simulated cluster and shows kubectl using it.
demo: $(STAMP)
	$(BIN)/python -m jobset.demo

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

# Regenerate the JobSet CRD from tools/gen_crd.py (a test checks the committed file matches).
crd: $(STAMP)
	$(BIN)/python tools/gen_crd.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
