# The two commands of the README, and their helpers. Python 3.11 and uv do the installing;
# `memory-pipeline local up` fetches, builds and starts the local servers (cached after the first run).
UV_VERSION := 0.13.8
PYTHON ?= python3.11
UV := $(PYTHON) -m uv
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON := $(PYTHON)

.PHONY: run test lint install up down status bench pi-extension screenshots

PORT ?= 3000

## run: install, start Elasticsearch + both llama-servers, open the Dagster UI on 127.0.0.1:$(PORT) (make run PORT=3001)
run: install
	$(UV) run --frozen memory-pipeline dev --port $(PORT)

## test: install, lint, start the local servers, run the whole test suite; then the tests that keep runs in a
## stored Dagster instance again, on a local PostgreSQL (Debian's, installed if missing)
test: install lint
	$(UV) run --frozen memory-pipeline local up
	$(UV) run --frozen pytest
	MEMORY_PIPELINE_TEST_DAGSTER_STORAGE=postgres $(UV) run --frozen pytest -m dagster_storage

lint: install
	$(UV) run --frozen ruff check memory_pipeline memory_pipeline_tests bench testkit
	$(UV) run --frozen ruff format --check memory_pipeline memory_pipeline_tests bench testkit

install:
	@$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet "uv==$(UV_VERSION)"
	$(UV) sync --frozen

up: install
	$(UV) run --frozen memory-pipeline local up

down:
	$(UV) run --frozen memory-pipeline local down

status:
	$(UV) run --frozen memory-pipeline local status

## bench: the benchmarks; results go to bench/results.md
bench: install
	$(UV) run --frozen memory-pipeline local up
	$(UV) run --frozen python -m bench

## pi-extension: pi and Node 22, pinned by pi-extension/package-lock.json (the e2e tests install them when missing)
pi-extension:
	cd pi-extension && npm ci --no-audit --no-fund

## screenshots: the memory browser's pages on a demo history, into docs/screenshots/ (headless chromium)
screenshots: install
	$(UV) run --frozen memory-pipeline local up
	$(UV) run --frozen python -m bench screenshots
