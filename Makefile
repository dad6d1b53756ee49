# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: setup run test test-fast test-contract-all lint typecheck browser-deps clean

$(PY):
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# torch first and pinned: the CPU wheel on this disk. Installing it before the project means no later
# resolution step can pull a CUDA build.
$(STAMP): pyproject.toml clients/python/pyproject.toml | $(PY)
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[dev]"
	$(PIP) install -q -e clients/python
	touch $(STAMP)

setup: $(STAMP)
	$(PY) manage.py migrate --noinput -v 0
	$(PY) manage.py bootstrap

run: setup
	$(PY) manage.py serve --host $(HOST) --port $(PORT)

# Debian's chromium for the browser tests; never `playwright install` (it downloads a browser).
browser-deps:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium could not be installed; browser tests will be skipped"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy environments lab clients/python/practicum_client

test: $(STAMP) browser-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -q --durations=30 $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow" -x $(PYTEST_ARGS)

test-contract-all: $(STAMP)  # the contract check over every registered task (the suite samples a few per environment)
	PRACTICUM_CONTRACT_ALL=1 $(PY) -m pytest -q tests/environments/test_contract.py $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) db.sqlite3 var staticfiles
