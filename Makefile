# runtime_sandbox. `make help` lists the targets; the logic is in scripts/ (CONTRIBUTING.md: the test suite).
# Every target installs what it needs first (scripts/setup.sh is idempotent).

# --- Which PostgreSQL: 15 is the system's (Debian 12); 16-18 are unpacked under PG_ROOT by scripts/pg_server.sh,
# each with its own cargo pgrx state, clusters and ports.
PG_MAJOR    ?= 15
PG_ROOT     ?= /var/tmp/runtime_sandbox-pg
ifeq ($(PG_MAJOR),15)
PG_CONFIG   ?= /usr/lib/postgresql/15/bin/pg_config
MAJOR_TAG   :=
else
PG_CONFIG   ?= $(PG_ROOT)/$(PG_MAJOR)/root/$(if $(filter 16,$(PG_MAJOR)),bin,usr/lib/postgresql/$(PG_MAJOR)/bin)/pg_config
MAJOR_TAG   := -$(PG_MAJOR)
export PGRX_HOME ?= $(HOME)/.pgrx$(MAJOR_TAG)
endif
SERVER_MAJOR = $(shell $(PG_CONFIG) --version 2>/dev/null | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
FEATURES     = --no-default-features --features pg$(SERVER_MAJOR)

# --- What `make test` runs besides PG_MAJOR (scripts/test.sh): whole on ALSO_MAJORS, light on LIGHT_MAJORS, the
# package test on PACKAGE_MAJORS.
ALSO_MAJORS    ?= $(if $(filter 15,$(PG_MAJOR)),17,)
LIGHT_MAJORS   ?= $(if $(filter 15,$(PG_MAJOR)),16 18,)
PACKAGE_MAJORS ?= 15 17

# --- Scratch clusters (under /tmp: the postgres user must enter them), filters, outputs.
TEST_PGDATA ?= /tmp/runtime_sandbox-pgrx$(MAJOR_TAG)/data
DEMO_DIR    ?= /tmp/runtime_sandbox-demo$(MAJOR_TAG)
DEMO_PORT   ?= $(if $(MAJOR_TAG),29$(PG_MAJOR)5,28815)
IT_DIR      ?= /tmp/runtime_sandbox-it$(MAJOR_TAG)
IT_PORT     ?= $(if $(MAJOR_TAG),29$(PG_MAJOR)6,28816)
PGTEST_FILTER  ?=
REGRESS_FILTER ?=
TEST        ?=
FILTER      ?=
BINDIR      ?= /usr/local/bin
BENCH_OUT   ?= target/bench
PSQL        := psql -X -h $(DEMO_DIR) -p $(DEMO_PORT) -U postgres
export PG_MAJOR PG_CONFIG ALSO_MAJORS LIGHT_MAJORS PACKAGE_MAJORS BINDIR
export RUNTIME_SANDBOX_PG_ROOT := $(PG_ROOT)
export RUNTIME_SANDBOX_IT_DIR := $(IT_DIR)
export RUNTIME_SANDBOX_IT_PORT := $(IT_PORT)
export RUNTIME_SANDBOX_TEST_PGDATA := $(TEST_PGDATA)

.PHONY: help setup setup-build build install install-dev package test test-one test-light test-core test-pg \
        test-it test-integration test-regress test-pgspot test-package test-pg-upgrade test-citus \
        test-citus-installed demo demo-stop bench bench-table bench-stock bench-managed bench-reconcile \
        bench-backfill bench-recorder bench-tick bench-latest bench-citus clean

## This list.
help:
	@awk '/^## /{doc = doc (doc ? " " : "") substr($$0, 4); next} /^[a-z0-9 -]+:/{split($$0, t, ":"); sub(/ .*/, " ...", t[1]); if (doc) printf "  %-22s %s\n", t[1], doc} {doc = ""}' $(MAKEFILE_LIST)

## Install what building and testing need (Debian packages, cargo-pgrx, the other majors' servers).
setup:
	@scripts/setup.sh

## Only what building into an existing server needs: cargo-pgrx and `cargo pgrx init` for PG_CONFIG.
setup-build:
	@scripts/setup.sh build

build: setup
	cargo build $(FEATURES)

## Build and install (release) into the server of PG_CONFIG, and the recorder into BINDIR.
install: setup-build
	@scripts/install.sh $(FEATURES)

## A debug build installed into the server of PG_CONFIG (what the integration tests run against).
install-dev: setup
	cargo pgrx install --pg-config $(PG_CONFIG) $(FEATURES)

## The .deb of the extension for PG_MAJOR and of the recorder, in target/package/.
package: setup
	@scripts/package.sh $(PG_CONFIG) && scripts/package_recorder.sh

## Everything: the whole suite on 15 and 17, the light part on 16 and 18, with a table of times at the end.
test:
	@scripts/test.sh all

## The whole suite on PG_MAJOR only.
test-one: setup
	@scripts/test.sh one

## The #[pg_test]s, the upgrade test and the pg_regress goldens on PG_MAJOR.
test-light: setup
	@scripts/test.sh light

## The pure Rust core and the recorder's tests: no PostgreSQL.
test-core:
	@scripts/test.sh core

## The #[pg_test]s, then every integration test, as `cargo pgrx test` runs them (PGTEST_FILTER=name_part).
test-pg:
	@scripts/test.sh pg $(PGTEST_FILTER)

## The inner loop: install a debug build, run one test binary (TEST=reconcile_cron FILTER=name_part).
test-it: install-dev
	@scripts/test.sh it $(TEST) $(FILTER)

## Every integration test, against a debug build.
test-integration: install-dev
	@scripts/test.sh integration

## The tour and the docs' examples in four databases (REGRESS_FILTER=docs_, REGRESS_ACCEPT=1 rewrites them).
test-regress:
	@scripts/regress.sh $(IT_DIR) $(IT_PORT) $(REGRESS_FILTER)

## pgspot over the install and update scripts.
test-pgspot: setup
	@scripts/pgspot.sh

## The package installed into a PostgreSQL that never saw this tree, its goldens run, then removed.
test-package: setup
	@scripts/test_package.sh $(PG_MAJOR)

## pg_upgrade from 15 to PG_MAJOR (both majors' debug builds installed first).
test-pg-upgrade:
	@scripts/test.sh pg-upgrade

## Citus: a coordinator and two workers, then the chaos suite on a distributed ledger (test-citus installs first).
test-citus: install-dev test-citus-installed
test-citus-installed:
	@scripts/test.sh citus

## A scratch cluster with the extension and the 60-second tour; demo-stop stops it.
demo: setup install
	@scripts/cluster.sh start $(DEMO_DIR) $(DEMO_PORT) && scripts/demo.sh "$(PSQL)" && scripts/demo_recorder.sh "$(PSQL)" "host=$(DEMO_DIR) port=$(DEMO_PORT) user=postgres"
	@printf '\nConnect to the demo cluster with:\n  %s runtime_sandbox_demo\nStop it with: make demo-stop\n' "$(PSQL)"
demo-stop:
	@scripts/cluster.sh stop $(DEMO_DIR)

## Every benchmark in the demo cluster, then one table of figures against targets (target/bench/table.txt).
bench: setup install
	@scripts/cluster.sh start $(DEMO_DIR) $(DEMO_PORT) && bench/run.sh "$(PSQL)" $(BENCH_OUT) stock managed reconcile backfill recorder tick latest

## The table of the last `make bench` again, from its logs.
bench-table:
	@bench/table.sh $(or $(wildcard $(BENCH_OUT)/*.log),/dev/null)

## One benchmark (bench-stock, -managed, -reconcile, -backfill, -recorder, -tick, -latest; -citus is not in `make bench`).
bench-stock bench-managed bench-reconcile bench-backfill bench-recorder bench-tick bench-latest bench-citus: setup install
	@scripts/cluster.sh start $(DEMO_DIR) $(DEMO_PORT) && bench/$(@:bench-%=%).sh "$(PSQL)"

clean:
	cargo clean
