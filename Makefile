# The two commands a fresh machine needs: `make` then `make test`.
# VENV picks the virtualenv every target uses, e.g. one per interpreter:
#   make VENV=.venv-3.12 PY=python3.12 && make VENV=.venv-3.12 PY=python3.12 test
PY ?= python3
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
PYTHON := $(BIN)/python

# DEVELOP marks the generated package installed into the venv (editable: it follows
# every later `make generate`; reinstalled when its metadata changes).
DEVELOP := $(abspath $(VENV))/.responses-stream-develop

.PHONY: all install develop generate check test lint typecheck pytest fuzz mutate bench clean

all: install generate develop

$(BIN)/activate: requirements.txt
	$(PY) -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -r requirements.txt
	touch $(BIN)/activate

install: $(BIN)/activate

generate: install
	$(PYTHON) -m generator generate

develop: $(DEVELOP)

$(DEVELOP): generated/pyproject.toml $(BIN)/activate
	$(PYTHON) -m pip install --quiet --no-deps --no-build-isolation --editable ./generated
	touch $@

check: install
	$(PYTHON) -m generator check

lint: install
	$(BIN)/ruff check generator tests benchmarks
	$(BIN)/ruff format --check generator tests benchmarks
	cd generated && $(BIN)/ruff check --isolated --no-cache --select I,F,UP --line-length 100 --target-version py311 .

typecheck: install
	MYPYPATH=generated $(BIN)/mypy --strict generator
	cd generated && $(BIN)/mypy --strict --no-incremental responses_stream

pytest: install
	$(PYTHON) -m pytest

test: lint typecheck check pytest

# Every hypothesis target in tests/fuzz with at least 2,000 examples each; the
# statistics hypothesis prints give each target's count.
fuzz: install
	HYPOTHESIS_PROFILE=fuzz $(PYTHON) -m pytest tests/fuzz --hypothesis-show-statistics

# A mutation run over the generated emitters (a sample of 400 mutants; MUTATE_ARGS=--all
# runs every one): the share the generated tests kill must be at least 90%.
MUTATE_ARGS ?= --sample 400
mutate: install
	$(PYTHON) -m generator.testing.mutate --jobs 2 --min-kill-share 0.9 $(MUTATE_ARGS)

# The benchmark suite (benchmarks/): one table of medians and ratios on stdout, and
# docs/benchmarks.md with docs/benchmarks.png.  Needs the generated package installed.
bench: install develop
	$(PYTHON) -m pip install --quiet -r requirements-bench.txt
	$(PYTHON) -m benchmarks

clean:
	rm -rf $(sort .venv $(VENV)) .venv-* .generated-staging-*
