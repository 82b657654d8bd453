#!/usr/bin/env bash
# One whole tick at 1,000,000 sandboxes (TICK_SANDBOXES; BENCH_QUICK=1: 100,000): a fake Daytona on 127.0.0.1
# answering each page of 200 after TICK_DELAY_MS (100), the recorder with its defaults (8 walkers, 60 requests
# a second over all of them) recording into a ledger whose operations own every listed sandbox
# (bench/tick/ledger.sql), then the scheduled reconciliation's call (reconcile_daytona_latest, applied, one
# confirming snapshot). Each part against its floor, measured in the same run:
#   listing  the pages / concurrency x delay (and the pace: pages / requests per second, when slower)
#   record   a plain COPY of the same rows, from a client, into a table of the same columns
#   apply    the hash join of the snapshot's items with the operations
# Targets (issue 45): the whole tick within 120 s; the recorder's peak memory at most 400 MiB.
# Prints BENCH lines (docs/design/benchmarks.md) for bench/table.sh.
# Usage: bench/tick.sh "<psql command>"   (the demo cluster's: make bench, make bench-tick)
set -euo pipefail
PSQL=${1:?usage: bench/tick.sh "<psql command>"}
N=${TICK_SANDBOXES:-$([ -n "${BENCH_QUICK:-}" ] && echo 100000 || echo 1000000)}
DELAY=${TICK_DELAY_MS:-100}
CONCURRENCY=8 RATE=60 PAGE=200
DB=runtime_sandbox_bench_tick
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. bench/recorder_run.sh
PGOPTIONS="-c client_min_messages=warning" $PSQL -q postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
$PSQL -q -v ON_ERROR_STOP=1 --no-psqlrc $DB -c "CREATE EXTENSION runtime_sandbox" >/dev/null
$PSQL -q -v ON_ERROR_STOP=1 --no-psqlrc -v n="$N" $DB -f bench/tick/ledger.sql >/dev/null

start_fake "$N" "$DELAY"

# 1. The recorder: the whole run and its peak memory; the listing's and the recording's times from its log.
read -r wall rss < <(run_recorder "$DB" "$tmp/recorder.log")
listed=$(sed -nE 's/.*organization org-bench: [0-9]+ sandboxes in ([0-9]+) pages, ([0-9.]+) s.*/\1 \2/p' "$tmp/recorder.log" | tail -1)
recorded=$(sed -nE 's/.*recorded [0-9]+ sandboxes (streamed by COPY|as one JSON value) in ([0-9.]+) s.*/\2 \1/p' "$tmp/recorder.log" | tail -1)
read -r pages listing <<<"$listed"
read -r record how <<<"$recorded"

# 2. The reconciliation the pg_cron job runs, timed by the server's clock.
apply=$($PSQL -qtA -v ON_ERROR_STOP=1 --no-psqlrc $DB <<'SQL'
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT status, seeded_leases, marked_deleted FROM runtime_sandbox.reconcile_daytona_latest(false,
       absent_confirmations => 1, max_absent_ratio => 1, batch_size => 1000, ledger_schema => 'bench') \gset r_
SELECT round((extract(epoch FROM clock_timestamp()) - :t0)::numeric, 3) || ' ' || :'r_status' || ' ' || :r_seeded_leases || ' ' || :r_marked_deleted;
SQL
)
read -r apply_s status seeded marked <<<"$apply"

# 3. The floors: a client's COPY of the snapshot's rows into a table of its columns, and the hash join.
$PSQL -q -v ON_ERROR_STOP=1 --no-psqlrc $DB >/dev/null <<SQL
\copy (SELECT sandbox_id, routing_domain, operation_key FROM bench.provider_inventory_items WHERE snapshot_id = (SELECT max(snapshot_id) FROM bench.provider_inventory_snapshots) ORDER BY item_index) TO '$tmp/rows.tsv'
CREATE TABLE copy_floor (sandbox_id text, routing_domain text, operation_key text);
SQL
copy_s=$(python3 - "$PSQL" "$DB" "$tmp/rows.tsv" <<'PY'
import shlex, subprocess, sys, time
psql = shlex.split(sys.argv[1]) + ["-q", "-v", "ON_ERROR_STOP=1", "--no-psqlrc", sys.argv[2]]
def timed(args):
    started = time.monotonic()
    subprocess.run(psql + args, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - started
base = min(timed(["-c", "SELECT 1"]) for _ in range(3))
best = min(timed(["-c", "TRUNCATE copy_floor", "-c", f"\\copy copy_floor FROM '{sys.argv[3]}'"]) for _ in range(3))
print(f"{best - base:.3f}")
PY
)
join_s=$($PSQL -qtA -v ON_ERROR_STOP=1 --no-psqlrc $DB <<'SQL'
SET jit = off;
CREATE TEMP TABLE best (s float8);
DO $$
DECLARE started timestamptz; n bigint; snapshot bigint := (SELECT max(snapshot_id) FROM bench.provider_inventory_snapshots);
BEGIN
  FOR round IN 1..3 LOOP
    started := clock_timestamp();
    SELECT count(*) INTO n FROM bench.provider_inventory_items AS i
      JOIN bench.runtime_sandbox_operations AS o ON o.sandbox_id = i.sandbox_id AND o.routing_domain_key = coalesce(i.routing_domain, '')
     WHERE i.snapshot_id = snapshot;
    INSERT INTO best VALUES (extract(epoch FROM clock_timestamp() - started));
  END LOOP;
END $$;
SELECT round(min(s)::numeric, 3) FROM best;
SQL
)
[ -n "${KEEP_DB:-}" ] || $PSQL -q postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null

awk -v n="$N" -v delay="$DELAY" -v c="$CONCURRENCY" -v rate="$RATE" -v page="$PAGE" -v wall="$wall" -v rss="$rss" \
    -v pages="$pages" -v listing="$listing" -v record="$record" -v how="$how" -v copy="$copy_s" \
    -v apply="$apply_s" -v join="$join_s" -v status="$status" -v seeded="$seeded" -v marked="$marked" 'BEGIN {
  label = (n % 1000000 == 0) ? (n / 1000000) "m" : (n / 1000) "k"
  floor_listing = pages / c * delay / 1000
  pace = pages / rate
  if (pace > floor_listing) floor_listing = pace
  total = wall + apply
  printf "tick at %d sandboxes, %d ms a page: listing %.1f s (%d pages; floor %.1f s: %d walkers x %d ms, %d requests/s), record %.1f s %s (COPY %.1f s), apply %.1f s (%s, seeded %d, marked %d; join %.2f s); the whole tick %.1f s; recorder peak %.0f MiB\n",
         n, delay, listing, pages, floor_listing, c, delay, rate, record, how, copy, apply, status, seeded, marked, join, total, rss / 1024
  printf "BENCH|tick.%s.total|%.1f|s (recorder run + apply)|<= 120|%s|recorder %.1f s, apply %.1f s, %d sandboxes at %d ms a page\n", label, total, (total <= 120 ? "met" : "missed"), wall, apply, n, delay
  printf "BENCH|tick.%s.listing|%.2f|x floor|-|-|%.1f s for %d pages; floor %.1f s (pages / %d walkers x %d ms, or / %d requests a second)\n", label, listing / floor_listing, listing, pages, floor_listing, c, delay, rate
  printf "BENCH|tick.%s.record|%.2f|x COPY|-|-|%.1f s %s; a plain COPY of the rows %.2f s\n", label, record / copy, record, how, copy
  printf "BENCH|tick.%s.apply|%.2f|x join|-|-|reconcile_daytona_latest %.2f s (%s); hash join %.2f s\n", label, apply / join, apply, status, join
  printf "BENCH|tick.%s.memory|%.0f|MiB peak (recorder)|<= 400|%s|the recorder process, %d sandboxes\n", label, rss / 1024, (rss / 1024 <= 400 ? "met" : "missed"), n
}'
