# Every target installs what it needs into .venv first, so a fresh clone needs only
# Python >= 3.11 and a reachable PyPI.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

# Tests that check against real servers (PostgreSQL, redis-server, Chromium) get them from
# tools/services.py: found, or installed from Debian when run as root; what cannot be had is
# one "not run" line at the end, and fails the run only under CI=true.
SERVICES := $(BIN)/python tools/services.py run --

.PHONY: install test test-long check export-audit mutation-floor stress-resonate-pg resonate-pg ts-sdk-local pg-variants pg-mutation bench crash-test clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# setuptools' note on every editable install of a package-dir mapping ("be careful with
	# folders named like your package") says nothing about this project: silenced by module
	PYTHONWARNINGS=ignore::Warning:setuptools.command.editable_wheel $(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(SERVICES) $(BIN)/python -m pytest -q -n 2 -m "not long and not variants"

# What make test leaves out for time (each test over ~8 s: campaigns that shrink a mutant,
# every profile, shards and redis, crash and kill loops); make check runs them.
test-long: $(STAMP)
	$(SERVICES) $(BIN)/python -m pytest -q -n 2 -m "long or variants"

# Everything duespec checks of itself, on embedded defaults: exit 0 when all holds. The
# mutation floor first (docs/mutation.md, "The floor"), then the suite, then the long tests,
# then the SQL mutation benchmark on a real PostgreSQL (docs/mutation.md, section 3).
check: $(STAMP) mutation-floor
	$(BIN)/duespec suite
	$(MAKE) test-long
	$(MAKE) export-audit
	$(MAKE) pg-mutation

# Every history make test's suite writes, copied as it is written (tests/history_audit.py),
# keeps its duespec linearize verdict when exported to the Resonate valid/ format and read
# back (tools/export_audit.py; docs/linearize.md, "The export audit"). Issue 41.
AUDIT_DIR := $(CURDIR)/.duespec/export-audit
export-audit: $(STAMP)
	rm -rf $(AUDIT_DIR)
	DUESPEC_HISTORY_AUDIT=$(AUDIT_DIR) $(SERVICES) $(BIN)/python -m pytest -q -n 2 -m "not long and not variants" -p tests.history_audit
	$(BIN)/python tools/export_audit.py $(AUDIT_DIR)

# duespec stress against resonate-pg on a real PostgreSQL (CI runs it). Exit 2, "NOT CHECKED",
# without PostgreSQL or resonate.sql: see tools/stress_resonate_pg.py.
stress-resonate-pg: $(STAMP)
	$(SERVICES) $(BIN)/python tools/stress_resonate_pg.py

# resonate.sql for the resonate-pg tests, when no ../shared sits beside the clone: a git clone
# of resonatehq/resonate-pg at its pinned commit into .duespec/third_party/resonate-pg.
resonate-pg: $(STAMP)
	$(BIN)/python tools/services.py fetch-resonate-pg

# The TypeScript SDK's in-memory server for tests/test_catch_up.py: @resonatehq/sdk at the
# version examples/ts-sdk-local/package-lock.json pins, from npm (Node.js 20 or later).
ts-sdk-local:
	npm ci --prefix examples/ts-sdk-local --no-audit --no-fund

# The full mutation floor: a fixed sample of mutants of impl/ through the default campaigns,
# its killed count held to tools/mutation-floor.txt (exit 1, the survivors listed, below it;
# make test checks the quick sample). docs/mutation.md, "The floor".
mutation-floor: $(STAMP)
	$(BIN)/python tools/mutate_impl.py --floor full --workers 2 --out .duespec/mutation-floor.json

bench: $(STAMP)
	$(BIN)/duespec bench

# examples/resonate-pg/README.md's commands against ten single-bug variants of resonate.sql, each
# diffed with the unmodified server (tools/pg_variants/run.py; issue 40's Done-when; an hour or more).
pg-variants: $(STAMP)
	$(SERVICES) $(BIN)/python tools/pg_variants/run.py

# Mutants of resonate.sql (tools/pg_variants/sql_mutants.py) through the README's response-only
# --examples 20 and stress --declared commands, a sample stratified by operator: exit 0 when at
# least 80% of the non-equivalent ones are killed and every survivor is judged
# (tools/pg_variants/sql_survivors.py); without PostgreSQL or resonate.sql "not run", exit 0, and
# exit 2 under CI=true, as the resonate-pg tests (tests/needs.py). Issue 40, point 7.
PG_MUTATION_SAMPLE ?= 40
pg-mutation: $(STAMP)
	$(SERVICES) $(BIN)/python tools/pg_variants/mutate_sql.py --sample $(PG_MUTATION_SAMPLE) --seed 1 --workers 2 --floor --not-run-outside-ci

# SIGKILL durability of the file-backed schedules store at 1,000 kill points (make test-long runs 100).
crash-test: $(STAMP)
	$(BIN)/python tests/store_crash.py --kills 1000

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis .duespec
