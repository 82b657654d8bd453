#!/usr/bin/env bash
# pg_regress golden tests (tests/pg_regress/{sql,expected}: the tour and the docs' examples) against the
# installed extension, on the scratch cluster, in four databases that must all give the expected output:
#   plain               a new database
#   empty_search_path   ALTER DATABASE ... SET search_path = ''
#   hostile             look-alike functions, operators, aggregates, tables and types in public
#                       (tests/pg_regress/hostile.sql), public writable as before PostgreSQL 15
#   updated             CREATE EXTENSION ... VERSION '0.1.0' (the frozen script), then ALTER EXTENSION UPDATE
#   scripts/regress.sh DIR PORT [FILTER]     (make test-regress [REGRESS_FILTER=docs_])
#   REGRESS_ACCEPT=1 scripts/regress.sh ...  copies the plain run's output over expected/ (review the diff)
# `cargo pgrx regress` reads the same folders, but cannot run as root (it runs initdb and pg_ctl as the
# caller, and its --runas/--pgdata apply only to createdb), which CI is; hence pg_regress itself, with the
# settings cargo pgrx regress uses (client_min_messages = warning, VERBOSITY terse).
set -euo pipefail
dir=${1:?usage: scripts/regress.sh DIR PORT [FILTER]} port=${2:?port} filter=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
BIN=$("$PG_CONFIG" --bindir)
PG_REGRESS=$("$PG_CONFIG" --pkglibdir)/pgxs/src/test/regress/pg_regress
inputdir=$root/tests/pg_regress
outroot=${CARGO_TARGET_DIR:-$root/target}/pg_regress

# RUNTIME_SANDBOX_REGRESS_SERVER=running: a server already listens on 127.0.0.1:PORT (scripts/test_package.sh).
[ "${RUNTIME_SANDBOX_REGRESS_SERVER:-}" = running ] || "$root/scripts/cluster.sh" start "$dir" "$port"
psql() { "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres "$@"; }

want=$(grep -E "^version *=" "$root/Cargo.toml" | head -1 | sed -E 's/.*"(.*)".*/\1/')
have=$(psql -At postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'runtime_sandbox'")
if [ "$have" != "$want" ]; then
  echo "regress: the installed runtime_sandbox is '${have:-none}', not $want: install it first (make install-dev)" >&2
  exit 1
fi

tests=()
for f in "$inputdir"/sql/*.sql; do
  name=$(basename "$f" .sql)
  [ -n "$filter" ] && [[ "$name" != *"$filter"* ]] && continue
  [ -f "$inputdir/expected/$name.out" ] || { echo "regress: tests/pg_regress/expected/$name.out is missing" >&2; exit 1; }
  tests+=("$name")
done
[ ${#tests[@]} -gt 0 ] || { echo "regress: no test matches '$filter'" >&2; exit 1; }

launcher=$(mktemp)
trap 'rm -f "$launcher"' EXIT
printf '#!/bin/bash\nexec $* -v VERBOSITY=terse\n' > "$launcher"
chmod 700 "$launcher"
export PGOPTIONS="-c client_min_messages=warning"

# The frozen 0.1.0 script, for the updated database (make install and the package ship only the update
# scripts); taken out again at the end when this run put it there. RUNTIME_SANDBOX_REGRESS_EXTDIR: the server's
# extension folder when it is not PG_CONFIG's.
extdir=${RUNTIME_SANDBOX_REGRESS_EXTDIR:-$("$PG_CONFIG" --sharedir)/extension}
frozen=$extdir/runtime_sandbox--0.1.0.sql
if [ ! -f "$frozen" ]; then
  cp "$root/sql/runtime_sandbox--0.1.0.sql" "$frozen"
  trap 'rm -f "$launcher" "$frozen"' EXIT
fi

failed=()
variants=(plain empty_search_path hostile updated)
for variant in "${variants[@]}"; do
  db=runtime_sandbox_regress_$variant
  psql postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
  case $variant in
    empty_search_path) psql postgres -c "ALTER DATABASE $db SET search_path = ''" ;;
    hostile) psql "$db" -f "$inputdir/hostile.sql" ;;
    updated) psql "$db" -c "CREATE EXTENSION runtime_sandbox VERSION '0.1.0'" -c "ALTER EXTENSION runtime_sandbox UPDATE" ;;
  esac
  out=$outroot/$variant
  rm -rf "$out" && mkdir -p "$out"
  echo "regress: ${#tests[@]} tests in $db"
  if ! (cd "$inputdir" && "$PG_REGRESS" --use-existing --bindir="$BIN" --host=127.0.0.1 --port="$port" \
        --user=postgres --dbname="$db" --inputdir="$inputdir" --outputdir="$out" --launcher="$launcher" \
        "${tests[@]}"); then
    failed+=("$variant")
    [ -f "$out/regression.diffs" ] && cat "$out/regression.diffs"
  fi
  if [ "$variant" = plain ] && [ -n "${REGRESS_ACCEPT:-}" ]; then
    for t in "${tests[@]}"; do cp "$out/results/$t.out" "$inputdir/expected/$t.out"; done
    echo "regress: copied the plain run's output to tests/pg_regress/expected/ (review it with git diff)"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "regress: FAILED in ${failed[*]} (diffs above; outputs in target/pg_regress/<variant>/results)" >&2
  exit 1
fi
echo "regress: ${#tests[@]} tests passed in ${#variants[@]} databases (${variants[*]})"
