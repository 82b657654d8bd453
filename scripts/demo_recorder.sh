#!/usr/bin/env bash
# The recorder's part of the demo: the tests' fake Daytona on 127.0.0.1 (5 sandboxes of organization
# org-demo), one recorder run recording its listing into a ledger of the demo database, a second one, and
# the reconcile that follows from the snapshots. No real Daytona is contacted.
#   scripts/demo_recorder.sh "<psql command>" "<libpq connection string of the demo database>"
set -euo pipefail
PSQL=${1:?usage: scripts/demo_recorder.sh "<psql command>" "<conninfo>"}
CONNINFO=${2:?usage: scripts/demo_recorder.sh "<psql command>" "<conninfo>"}
DB=runtime_sandbox_demo
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build -q --release -p runtime-sandbox-recorder --bin runtime-sandbox-recorder --example fake_daytona

$PSQL -q -v ON_ERROR_STOP=1 --no-psqlrc $DB <<'SQL'
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS demo_recorder CASCADE;
SELECT runtime_sandbox.install_ledger('demo_recorder') \g /dev/null
-- Five live sandboxes the listing shows, and one it no longer does.
INSERT INTO demo_recorder.runtime_sandbox_operations
    (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain, state, provider_created_at)
SELECT 'op-' || i, 'daytona', 'run-' || i, 1, 'org', 'sb-' || i, 'org-demo', 'live', now() - interval '1 hour'
FROM generate_series(0, 5) AS i;
SQL

coproc FAKE { exec target/release/examples/fake_daytona 5 org-demo demo-key; }
read -r url <&"${FAKE[0]}"
stop_fake() { exec {FAKE[1]}>&-; wait "$FAKE_PID" 2>/dev/null || true; }
trap stop_fake EXIT
echo "-- a fake Daytona at $url; the recorder lists it twice (absence needs two listings):"
for run in 1 2; do
  echo "\$ runtime-sandbox-recorder --labels '{\"app\":\"runtime-scheduler\"}' --operation-label runtime-op --ledger-schema demo_recorder"
  DAYTONA_API_URL=$url DAYTONA_API_KEY=demo-key DAYTONA_ORGANIZATION_ID=org-demo \
    target/release/runtime-sandbox-recorder --labels '{"app":"runtime-scheduler"}' --operation-label runtime-op \
    --ledger-schema demo_recorder --database "$CONNINFO dbname=$DB"
done
$PSQL -v ON_ERROR_STOP=1 -e --no-psqlrc $DB <<'SQL'
SELECT snapshot_id, environment, item_count FROM demo_recorder.provider_inventory_snapshots ORDER BY snapshot_id;
-- What the pg_cron job (schedule_reconciliation) would run: sb-5 is gone from both listings.
SELECT status, matched_live_sandboxes, seeded_leases, marked_deleted, snapshot_id
FROM runtime_sandbox.reconcile_daytona_latest(ledger_schema => 'demo_recorder');
SQL
