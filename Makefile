# Turbobase: two commands from a fresh clone.
#   make run    venv + install, migrate, demo data, web server and workers (Ctrl-C stops all)
#   make test   venv + install, the whole test suite (honours DATABASE_URL)

PYTHON_BOOTSTRAP ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
# Extra pytest arguments, e.g. make test PYTEST_ARGS="-x tests/records"
PYTEST_ARGS ?=

.PHONY: run test install migrate demo clean-venv

# The stamp is rebuilt whenever the pinned requirements or the project metadata change.
$(VENV)/.installed: requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON_BOOTSTRAP) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	@touch $@

install: $(VENV)/.installed

migrate: install
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py tb_demo

run: demo
	PORT=$(PORT) $(PY) manage.py tb_run

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

clean-venv:
	rm -rf $(VENV)
