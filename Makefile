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

.PHONY: all install develop generate check docs test e2e lint typecheck pytest fuzz mutate bench clean

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

# The documentation site (docs/ and mkdocs.yml) into site/, strictly: a warning, a broken
# link or anchor fails it. Mermaid, which draws the state diagrams, is fetched once from
# the npm registry into ~/.cache/responses-stream/docs and served from the site.
docs: install develop
	$(PYTHON) -m docsite

# The hand-written files of generated/ (HAND_WRITTEN in generator/resources.py) are held
# to the project's own rules, the rendered ones to the rules a generated package keeps.
HAND_WRITTEN := generated/responses_stream/_runtime generated/responses_stream_pytest.py \
	generated/tests/_support.py

lint: install
	$(BIN)/ruff check generator $(HAND_WRITTEN) tests benchmarks docsite
	$(BIN)/ruff format --check generator $(HAND_WRITTEN) tests benchmarks docsite
	cd generated && $(BIN)/ruff check --isolated --no-cache --select I,F,UP --line-length 100 --target-version py311 .

typecheck: install
	MYPYPATH=generated $(BIN)/mypy --strict generator
	cd generated && $(BIN)/mypy --strict --no-incremental responses_stream

# The suite in parallel, a worker a core (pytest-xdist): JOBS=1 runs it in one process.
JOBS ?= auto

pytest: install
	$(PYTHON) -m pytest -n $(JOBS)

test: lint typecheck check pytest

# The real clients, pinned in requirements-e2e.txt, against `serve` on 127.0.0.1: their
# environment is built once per pin set, outside the repo, so a second run takes seconds.
E2E_CACHE ?= $(HOME)/.cache/responses-stream/e2e
E2E_KEY = $(shell $(PY) -c "import hashlib,sys; print(hashlib.sha256(open('requirements-e2e.txt','rb').read()+sys.version.encode()).hexdigest()[:12])")
E2E_VENV = $(E2E_CACHE)/py-$(E2E_KEY)
E2E_NODE_KEY = $(shell $(PY) -c "import hashlib; print(hashlib.sha256(open('tests/e2e/node/package-lock.json','rb').read()).hexdigest()[:12])")
E2E_NODE = $(E2E_CACHE)/node-$(E2E_NODE_KEY)
e2e: install
	@test -f $(E2E_VENV)/.complete || ( rm -rf $(E2E_VENV) && $(PY) -m venv $(E2E_VENV) \
		&& timeout 900 $(E2E_VENV)/bin/python -m pip install --quiet -r requirements-e2e.txt \
		&& touch $(E2E_VENV)/.complete )
	@test -f $(E2E_NODE)/.complete || ( rm -rf $(E2E_NODE) && mkdir -p $(E2E_NODE) \
		&& cp tests/e2e/node/package.json tests/e2e/node/package-lock.json $(E2E_NODE)/ \
		&& cd $(E2E_NODE) && timeout 600 npm ci --no-audit --no-fund --ignore-scripts --silent \
		&& touch .complete )
	@echo "llama-server and its model (built once, in $(E2E_CACHE)/llama; 7 to 13 minutes cold)"
	LLAMA="$$(timeout 3000 $(PYTHON) tests/e2e/llama_setup.py $(E2E_CACHE)/llama)" \
		&& RESPONSES_STREAM_E2E_LLAMA="$$LLAMA" RESPONSES_STREAM_E2E_PYTHON=$(E2E_VENV)/bin/python \
		RESPONSES_STREAM_E2E_NODE=$(E2E_NODE) $(PYTHON) -m pytest tests/e2e

# Every hypothesis target in tests/fuzz with at least 2,000 examples each (the schema
# fuzzer, schemathesis against `serve`, adds its coverage phase and bodies the schemas
# refuse); the statistics hypothesis prints give each target's count, and the schema
# fuzzer prints the answers it got by route.
fuzz: install
	HYPOTHESIS_PROFILE=fuzz $(PYTHON) -m pytest tests/fuzz --hypothesis-show-statistics

# A mutation run over the generated emitters (a sample of 400 mutants; MUTATE_ARGS=--all
# runs every one): the share the generated tests kill must be at least 90%.
MUTATE_ARGS ?= --sample 400
mutate: install
	$(PYTHON) -m generator.testing.mutate --jobs 2 --min-kill-share 0.9 $(MUTATE_ARGS)

# The benchmark suite (benchmarks/): one table of medians and ratios on stdout, and
# docs/benchmarks.md with docs/benchmarks.png.  Needs the generated package installed.
# LiteLLM, the peer, runs from a venv of its own (requirements-litellm.txt), built once per
# pin set outside the repo.
BENCH_CACHE ?= $(HOME)/.cache/responses-stream/bench
LITELLM_KEY = $(shell $(PY) -c "import hashlib,sys; print(hashlib.sha256(open('requirements-litellm.txt','rb').read()+sys.version.encode()).hexdigest()[:12])")
LITELLM_VENV = $(BENCH_CACHE)/litellm-$(LITELLM_KEY)
bench: install develop
	$(PYTHON) -m pip install --quiet -r requirements-bench.txt
	@test -f $(LITELLM_VENV)/.complete || ( rm -rf $(LITELLM_VENV) && $(PY) -m venv $(LITELLM_VENV) \
		&& timeout 900 $(LITELLM_VENV)/bin/python -m pip install --quiet -r requirements-litellm.txt \
		&& touch $(LITELLM_VENV)/.complete )
	RESPONSES_STREAM_BENCH_LITELLM=$(LITELLM_VENV)/bin/litellm $(PYTHON) -m benchmarks

clean:
	rm -rf $(sort .venv $(VENV)) .venv-* .generated-staging-*
