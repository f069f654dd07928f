# Turbobase: two commands from a fresh clone.
#   make run    venv + install, database + migrate, demo data, gunicorn and workers (Ctrl-C stops all)
#   make test   venv + install, the whole test suite (honours DATABASE_URL)
#   make test-fast  the suite without real workers and PostgreSQL-only tests; make test-unit: no database
#   make lint   ruff (check and format check), import contracts (lint-imports), mypy over the rooms,
#               the code's shape (tools/lint_shape.py: no import cycle, module <= 400, function <= 60 lines)
#   make schema-check   the OpenAPI schema builds without a warning and validates
#   make bench  every bench on a throwaway PostgreSQL database (DATABASE_URL admin, BENCH_DB, BENCH_ARGS)

PYTHON_BOOTSTRAP ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
# Extra pytest arguments, e.g. make test PYTEST_ARGS="-x tests/records"
PYTEST_ARGS ?=

# The rooms mypy checks (tests/ and bench/ are linted by ruff only).
ROOMS := kernel extensions guardrails records sources processes turbobase

.PHONY: run test test-fast test-unit lint install install-runtime migrate demo clean-venv schema-check bench

# The stamp is rebuilt whenever the pinned requirements or the project metadata change.
$(VENV)/.installed: requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON_BOOTSTRAP) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	$(PY) manage.py collectstatic --noinput -v0
	@touch $@

# Development tools (pytest, ruff, mypy, import-linter) on top of the runtime.
$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

# `make run` needs only the runtime; tests and lint need the development tools too.
install-runtime: $(VENV)/.installed

install: $(VENV)/.installed $(VENV)/.installed-dev

# tb_prepare creates the PostgreSQL database DATABASE_URL names when it is missing, then migrates
# (tb_run collects the static files itself).
migrate: install-runtime
	$(PY) manage.py tb_prepare --no-static

demo: migrate
	$(PY) manage.py tb_demo

run: demo
	PORT=$(PORT) $(PY) manage.py tb_run

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: install
	$(PY) -m pytest -m "not workers and not postgres_only" $(PYTEST_ARGS)

test-unit: install
	$(PY) -m pytest -m unit $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy $(ROOMS)
	$(PY) tools/lint_shape.py

schema-check: install
	$(PY) manage.py spectacular --validate --fail-on-warn --file /dev/null

# PostgreSQL only: DATABASE_URL is the admin connection; the bench creates and drops BENCH_DB.
BENCH_ARGS ?=
$(VENV)/.installed-bench: requirements-bench.txt $(VENV)/.installed
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-bench.txt
	@touch $@

bench: $(VENV)/.installed-bench
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres} $(PY) bench/suite.py $(BENCH_ARGS)

clean-venv:
	rm -rf $(VENV)
