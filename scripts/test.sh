#!/usr/bin/env bash
# The test suite's composition (make test, make test-one, make test-light). Every part is timed; `all` ends with
# the table of every part's time against the budget (CONTRIBUTING.md).
#   scripts/test.sh all     PG_MAJOR whole, then ALSO_MAJORS whole, then LIGHT_MAJORS light
#   scripts/test.sh one     the whole suite on PG_MAJOR: pure core, #[pg_test]s and integration tests, pg_regress
#                           goldens, pgspot; on 15 Citus; on PACKAGE_MAJORS the package; on others pg_upgrade from 15
#   scripts/test.sh light   the #[pg_test]s, the upgrade test from 0.1.0 and the pg_regress goldens on PG_MAJOR
#   scripts/test.sh core | pg [FILTER] | it TEST [FILTER] | integration | pg-upgrade | citus   one part (make help)
# Run through make, which sets PG_MAJOR, PG_CONFIG, the clusters' places and the lists of majors.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
: "${PG_MAJOR:?run through make}"
# Over this, the table says so: the 90-minute CI limit with room, and the 30 minutes a 2-core machine should take.
BUDGET_SECONDS=${RUNTIME_SANDBOX_TEST_BUDGET:-1800}
make_() { make --no-print-directory "$@"; }
# The build's pgNN feature: the major of the server PG_CONFIG belongs to.
features() { echo "--no-default-features --features pg$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')"; }
# A fresh scratch cluster for cargo pgrx test, and the integration tests' own stopped (they restart it).
fresh_clusters() { "$here/cluster.sh" stop "$RUNTIME_SANDBOX_IT_DIR"; rm -rf "$(dirname "$RUNTIME_SANDBOX_TEST_PGDATA")"; }
timed() { "$here/timed.sh" "$@"; }

case ${1:-all} in
all)
  "$here/build_cache.sh"
  # A shared build cache serves one whole run at a time (another checkout's build in between would leave its
  # artifacts looking fresh here): hold its lock for the run, in flock's own process (-o: no server this run
  # starts inherits it).
  lock=${RUNTIME_SANDBOX_BUILD_CACHE:-/var/tmp/runtime_sandbox-build}/.lock
  if [ -z "${RUNTIME_SANDBOX_BUILD_CACHE_LOCKED:-}" ] && [ -L target ] && [ -e "$lock" ]; then
    exec env RUNTIME_SANDBOX_BUILD_CACHE_LOCKED=1 flock -o "$lock" "$0" all
  fi
  export RUNTIME_SANDBOX_TIMES=${RUNTIME_SANDBOX_TIMES:-$(mktemp)}
  : >"$RUNTIME_SANDBOX_TIMES"
  started=$(date +%s)
  status=0
  timed "PostgreSQL $PG_MAJOR: the whole suite" make --no-print-directory test-one || status=$?
  # The light majors run beside the other whole ones (their clusters, ports and cargo pgrx state are their own;
  # their build in a target directory of their own, so that neither waits for the other's cargo lock): the whole
  # suite spends minutes waiting for pg_cron's ticks. Their output is shown when they end. The other majors must
  # not inherit this major's PG_CONFIG and PGRX_HOME (their clusters would start with it).
  light_out=$(mktemp -d)
  light() {
    for m in ${LIGHT_MAJORS:-}; do
      [ "$m" != "$PG_MAJOR" ] && [[ " ${ALSO_MAJORS:-} " != *" $m "* ]] || continue
      env -u PG_CONFIG -u PGRX_HOME CARGO_TARGET_DIR="$PWD/target/light" \
        "$here/timed.sh" "PostgreSQL $m: #[pg_test]s, upgrade test, pg_regress goldens" \
        make --no-print-directory test-light PG_MAJOR="$m" >"$light_out/$m.log" 2>&1 || echo "$m" >>"$light_out/failed"
    done
  }
  light_pid=
  if [ $status -eq 0 ]; then
    # What each major needs is installed first, one major at a time (apt and the server downloads are not
    # meant to run twice at once); on a machine that has it, each is a no-op.
    for m in ${ALSO_MAJORS:-} ${LIGHT_MAJORS:-}; do
      [ "$m" = "$PG_MAJOR" ] || env -u PG_CONFIG -u PGRX_HOME make --no-print-directory setup PG_MAJOR="$m" || status=$?
    done
  fi
  if [ $status -eq 0 ]; then
    light &
    light_pid=$!
  fi
  for m in ${ALSO_MAJORS:-}; do
    [ $status -eq 0 ] && [ "$m" != "$PG_MAJOR" ] || continue
    env -u PG_CONFIG -u PGRX_HOME "$here/timed.sh" "PostgreSQL $m: the whole suite" \
      make --no-print-directory test-one PG_MAJOR="$m" ALSO_MAJORS= LIGHT_MAJORS= || status=$?
  done
  if [ -n "$light_pid" ]; then
    wait "$light_pid" || true
    for log in "$light_out"/*.log; do
      [ -e "$log" ] || continue
      echo "---- $(basename "$log" .log): the light part's output"
      cat "$log"
    done
    [ ! -e "$light_out/failed" ] || status=1
  fi
  rm -rf "$light_out"
  echo
  echo "times (budget ${BUDGET_SECONDS} s for the whole of make test):"
  awk -F'\t' '{printf "  %6d s  %s%s\n", $2, $1, $3}' "$RUNTIME_SANDBOX_TIMES"
  total=$(( $(date +%s) - started ))
  echo "  ------"
  echo "  $(printf %6d "$total") s  make test$([ "$total" -le "$BUDGET_SECONDS" ] || echo "  (over the budget of $BUDGET_SECONDS s)")"
  exit $status
  ;;
one)
  "$here/build_cache.sh"
  timed "PostgreSQL $PG_MAJOR: pure core" make --no-print-directory test-core
  timed "PostgreSQL $PG_MAJOR: #[pg_test]s and integration tests" make --no-print-directory test-pg
  timed "PostgreSQL $PG_MAJOR: pg_regress goldens" make --no-print-directory test-regress
  timed "PostgreSQL $PG_MAJOR: pgspot" make --no-print-directory test-pgspot
  [ "$PG_MAJOR" != 15 ] || timed "PostgreSQL 15: Citus" make --no-print-directory test-citus-installed
  [[ " ${PACKAGE_MAJORS:-} " != *" $PG_MAJOR "* ]] || timed "PostgreSQL $PG_MAJOR: the package" make --no-print-directory test-package
  [ "$PG_MAJOR" = 15 ] || timed "PostgreSQL $PG_MAJOR: pg_upgrade from 15" make --no-print-directory test-pg-upgrade
  ;;
light)
  "$here/build_cache.sh"
  fresh_clusters
  CARGO_PGRX_TEST_PGDATA=$RUNTIME_SANDBOX_TEST_PGDATA CARGO_PGRX_TEST_RUNAS=postgres PGRX_ALL_FEATURES=false \
    PGRX_BUILD_PROFILE=dev PGRX_FEATURES="pg$PG_MAJOR pg_test" PGRX_NO_DEFAULT_FEATURES=true PGRX_NO_SCHEMA=false \
    cargo test --no-default-features --features "pg$PG_MAJOR pg_test" --lib --test upgrade
  "$here/regress.sh" "$RUNTIME_SANDBOX_IT_DIR" "$RUNTIME_SANDBOX_IT_PORT"
  ;;
core)
  "$here/build_cache.sh"
  cargo test --lib --no-default-features --features "pg$PG_MAJOR"
  cargo test -p runtime-sandbox-recorder
  ;;
pg)
  "$here/build_cache.sh"
  fresh_clusters
  cargo pgrx test "pg$PG_MAJOR" ${2:-} --runas postgres --pgdata "$RUNTIME_SANDBOX_TEST_PGDATA"
  ;;
it)
  [ -n "${2:-}" ] || { echo "make test-it TEST=<a file of tests/, without .rs> [FILTER=<part of a test's name>]" >&2; exit 2; }
  cargo test $(features) --test "$2" -- ${3:-}
  ;;
integration)
  "$here/cluster.sh" stop "$RUNTIME_SANDBOX_IT_DIR"
  cargo test $(features) --test '*' -- --test-threads=1
  ;;
pg-upgrade)
  # The old major's build goes into the system's 15, the new one into PG_MAJOR's server.
  env -u PG_CONFIG -u PGRX_HOME make --no-print-directory install-dev PG_MAJOR=15 ALSO_MAJORS=
  make_ install-dev
  RUNTIME_SANDBOX_UPGRADE_FROM=/usr/lib/postgresql/15/bin/pg_config cargo test $(features) --test pg_upgrade -- --nocapture
  ;;
citus)
  # Citus built for the system's 15 (cached), then its tests and the chaos suite on a distributed ledger; the
  # coordinator and the two workers are stopped whatever happened.
  "$here/citus.sh"
  status=0
  RUNTIME_SANDBOX_CITUS=1 cargo test $(features) --test citus -- --test-threads=1 || status=$?
  [ $status -ne 0 ] || RUNTIME_SANDBOX_CHAOS_CITUS_PORT=$((RUNTIME_SANDBOX_IT_PORT + 20)) \
    cargo test $(features) --test fault_reconcile_chaos fault_reconcile_chaos_keeps || status=$?
  for n in 0 1 2; do "$here/cluster.sh" stop "/tmp/runtime_sandbox-citus-$RUNTIME_SANDBOX_IT_PORT/node$n"; done
  exit $status
  ;;
*)
  echo "usage: scripts/test.sh all|one|light|core|pg|it|integration|pg-upgrade|citus (through make; make help)" >&2
  exit 2
  ;;
esac
