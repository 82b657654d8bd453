#!/usr/bin/env bash
# The 60-second tour, run against the demo cluster. Usage: scripts/demo.sh "<psql command>"
# Recreates the database runtime_sandbox_demo each time, so running it twice works.
set -euo pipefail
PSQL=${1:?usage: scripts/demo.sh "<psql command>"}
DB=runtime_sandbox_demo
here=$(cd "$(dirname "$0")" && pwd)

PGOPTIONS="-c client_min_messages=warning" $PSQL -q postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
for part in "$here"/tour/*.sql; do
  $PSQL -v ON_ERROR_STOP=1 -e --no-psqlrc $DB -f "$part"
done
echo "(the tour's database is $DB)"
