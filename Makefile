# Every target installs what it needs into .venv first, so a fresh clone needs only
# Python >= 3.11 and a reachable PyPI.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install test test-long check mutation-floor bench crash-test clean

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
check: $(STAMP) mutation-floor
	$(BIN)/duespec suite
	$(BIN)/python tools/stress_resonate_pg.py

# The full mutation floor: a fixed sample of mutants of impl/ through the default campaigns,
# its killed count held to tools/mutation-floor.txt (exit 1, the survivors listed, below it;
# make test checks the quick sample). docs/mutation.md, "The floor".
mutation-floor: $(STAMP)
	$(BIN)/python tools/mutate_impl.py --floor full --workers 2 --out .duespec/mutation-floor.json

bench: $(STAMP)
	$(BIN)/duespec bench

# SIGKILL durability of the file-backed schedules store at 1,000 kill points (make test runs 100).
crash-test: $(STAMP)
	$(BIN)/python tests/store_crash.py --kills 1000

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis .duespec
