#!/usr/bin/env bash
# The recorder on 100,000 sandboxes (RECORDER_SANDBOXES) of a fake Daytona on 127.0.0.1 (the tests' own, as a
# program: recorder/examples/fake_daytona.rs) in pages of 200, each page answered after a fixed delay
# (RECORDER_DELAY_MS, 5 ms), recorded into a ledger of the bench database. Reports the whole run against the
# listing's floor (pages / 8 walkers x delay, or the pace of 60 requests a second when that is slower: the
# recorder's defaults, as bench/tick.sh counts them) plus the snapshot insert alone (record_inventory_snapshot of
# the same 100,000 items sent by a client as text), and the recorder's peak memory. Target: within 10% of that sum.
# Prints BENCH lines (docs/design/benchmarks.md) for bench/table.sh.
# Usage: bench/recorder.sh "<psql command>"   (the demo cluster's: make bench, make bench-recorder)
set -euo pipefail
PSQL=${1:?usage: bench/recorder.sh "<psql command>"}
N=${RECORDER_SANDBOXES:-$([ -n "${BENCH_QUICK:-}" ] && echo 10000 || echo 100000)}
DELAY=${RECORDER_DELAY_MS:-5}
PAGE=200 CONCURRENCY=8 RATE=60
DB=runtime_sandbox_bench_recorder
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. bench/recorder_run.sh
PGOPTIONS="-c client_min_messages=warning" $PSQL -q postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
$PSQL -q -v ON_ERROR_STOP=1 --no-psqlrc $DB >/dev/null <<SQL
CREATE EXTENSION runtime_sandbox;
SELECT runtime_sandbox.install_ledger('bench');
INSERT INTO bench.runtime_sandbox_operations
    (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain, state, provider_created_at)
SELECT 'op-' || i, 'daytona', 'run-' || i, 1, 'org', 'sb-' || i, 'org-bench', 'live', now() - interval '1 hour'
FROM generate_series(0, $N - 1) AS i;
ANALYZE;
SQL

start_fake "$N" "$DELAY"

# The whole run, timed, with the peak memory of the recorder.
read -r wall rss < <(run_recorder "$DB" "$tmp/recorder.log")
wall=$(awk -v s="$wall" 'BEGIN {printf "%.1f", s * 1000}')
# The snapshot insert alone: the same inventory (the listing the recorder recorded, read back in its order) sent
# by a client as the recorder sends it (text, parsed by the server) in one record_inventory_snapshot call;
# the client's wall clock, less that of an empty statement.
$PSQL -qtA -v ON_ERROR_STOP=1 --no-psqlrc $DB >"$tmp/items.json" <<'SQL'
SELECT jsonb_agg(jsonb_build_object('sandboxId', sandbox_id, 'operationKey', operation_key, 'routingDomain', routing_domain)
                 ORDER BY item_index)
FROM bench.provider_inventory_items
WHERE snapshot_id = (SELECT max(snapshot_id) FROM bench.provider_inventory_snapshots);
SQL
{ printf "SELECT runtime_sandbox.record_inventory_snapshot('daytona', '"; tr -d '\n' <"$tmp/items.json"; printf "'::text::jsonb, now(), 2, 'bench');\n"; } >"$tmp/insert.sql"
insert=$(python3 - "$PSQL" "$DB" "$tmp/insert.sql" <<'PY'
import shlex, subprocess, sys, time
psql = shlex.split(sys.argv[1]) + ["-q", "-v", "ON_ERROR_STOP=1", "--no-psqlrc", sys.argv[2]]
def timed(args):
    started = time.monotonic()
    subprocess.run(psql + args, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - started
base = min(timed(["-c", "SELECT 1"]) for _ in range(3))
print(f"{(timed(['-f', sys.argv[3]]) - base) * 1000:.1f}")
PY
)
pages=$(( (N + PAGE - 1) / PAGE ))
awk -v wall="$wall" -v rss="$rss" -v insert="$insert" -v pages="$pages" -v delay="$DELAY" -v n="$N" -v c="$CONCURRENCY" -v rate="$RATE" 'BEGIN {
  listing = pages / c * delay
  pace = pages / rate * 1000
  if (pace > listing) listing = pace
  floor = listing + insert
  r = wall / floor
  printf "recorder: %d sandboxes, %d pages: listing floor %.0f ms (%d walkers x %d ms, %d requests/s), snapshot insert %.1f ms; the run %.1f ms (%.2fx), peak memory %.1f MiB\n", n, pages, listing, c, delay, rate, insert, wall, r, rss / 1024
  printf "BENCH|recorder.100k|%.2f|x listing floor + insert|<= 1.1|%s|run %.1f ms, listing floor %.0f ms (%d pages, %d walkers x %d ms or %d requests/s) + insert %.1f ms, %d sandboxes\n", r, (r <= 1.1 ? "met" : "missed"), wall, listing, pages, c, delay, rate, insert, n
  printf "BENCH|recorder.100k.memory|%.1f|MiB peak|-|-|the recorder process, %d sandboxes\n", rss / 1024, n
}'
