# Every target installs what it needs into .venv first, so a fresh clone needs only
# Python >= 3.11 and a reachable PyPI.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install test test-long check bench crash-test pg-variants clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "not long and not variants"

# What make test leaves out for time: mutants whose shrinking costs 7-40 CPU s each.
test-long: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "long or variants"

# The suite, then duespec stress against resonate-pg on a real PostgreSQL (exit 2, "NOT CHECKED",
# if PostgreSQL or resonate.sql is missing: see tools/stress_resonate_pg.py).
check: $(STAMP)
	$(BIN)/duespec suite
	$(BIN)/python tools/stress_resonate_pg.py

bench: $(STAMP)
	$(BIN)/duespec bench

# examples/resonate-pg/README.md's commands against ten single-bug variants of resonate.sql, each
# diffed with the unmodified server (tools/pg_variants/run.py; issue 40's Done-when; an hour or more).
pg-variants: $(STAMP)
	$(BIN)/python tools/pg_variants/run.py

# SIGKILL durability of the file-backed schedules store at 1,000 kill points (make test runs 100).
crash-test: $(STAMP)
	$(BIN)/python tests/store_crash.py --kills 1000

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis .duespec
