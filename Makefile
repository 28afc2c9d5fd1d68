# Two commands on a fresh machine with Python 3.11 and pip:
#   make quickstart   create .venv, install, run the quickstart experiment
#   make test         the same install, then the whole test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PLUGINS := $(sort $(dir $(wildcard plugins/*/pyproject.toml)))
STAMP  := $(VENV)/.installed
# The CPU build of torch (for the dense plugin) lies here on our machines; an
# unpinned search elsewhere would fetch a multi-GB CUDA build instead.
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)

.PHONY: install quickstart quickstart-corpus test test-all lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# One pip call installs the core and every plugin package, editable, so the
# plugins' entry points are registered exactly as a third party's would be.
$(STAMP): $(PY) pyproject.toml $(wildcard plugins/*/pyproject.toml)
	$(PY) -m pip install --quiet $(FIND_LINKS) -e '.[test,lint]' $(addprefix -e ,$(PLUGINS))
	# bytecode now, as pip writes it for a regular install: an editable one compiles on
	# first import, and not at all where PYTHONDONTWRITEBYTECODE is set (0.3 s a command)
	$(PY) -m compileall -q -x '/data/' evalframe $(PLUGINS)
	touch $(STAMP)

install: $(STAMP)

quickstart: install
	$(PY) -m evalframe +experiment=quickstart

# Every core (pytest-xdist); `make test PYTEST_ARGS=-n0` runs it in one process.
# PYTHONDONTWRITEBYTECODE (set on some machines) is cleared for pytest: with it, every
# worker rewrites and compiles the asserts of every test module, and of every module of
# each distribution with a pytest plugin, on every run (collection 10 s, then 3.5 s)
PYTEST_ARGS ?= -n auto
test: install
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q $(PYTEST_ARGS)

# The suite and the tests marked `extended` (the dense model over all of Cranfield and
# a submitit sweep, minutes of two cores; `make test` and CI skip them)
test-all: install
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q $(PYTEST_ARGS) --extended

lint: install
	$(VENV)/bin/ruff check evalframe plugins tests tools bench
	$(VENV)/bin/ruff format --check evalframe plugins tests tools bench
	$(VENV)/bin/mypy evalframe $(filter-out %.egg-info/,$(wildcard plugins/*/evalframe_*/))
	$(VENV)/bin/lint-imports

# The MLflow UI on the default store (./mlflow.db), at http://127.0.0.1:5000
.PHONY: mlflow-ui
mlflow-ui: install
	$(PY) -m evalframe ui

clean:
	rm -rf outputs multirun .pytest_cache .mypy_cache .ruff_cache

# Re-chunk the docs into the quickstart corpus (then re-check golden.jsonl's ids).
quickstart-corpus: install
	$(PY) tools/chunk_docs.py README.md docs/architecture.md docs/plugins.md docs/metrics.md \
		-o evalframe/data/quickstart/corpus.jsonl

# Performance benchmark (docs/performance.md): evalframe, ranx, pytrec_eval and
# ir_measures on generated 10k/50k/100k x 100 runs, each in its own process.
.PHONY: bench
bench: install
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) bench/bench.py

# The DVC pipeline (docs/dvc.md) with this virtualenv's evalframe and dvc on PATH;
# --pull: a fresh clone fetches the golden sets a stage needs from the repository's remote.
.PHONY: repro
repro: install
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" DVC_NO_ANALYTICS=1 $(VENV)/bin/dvc repro --pull
