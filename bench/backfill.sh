#!/usr/bin/env bash
# Backfill benchmark: resources/s of the migration procedure for batch sizes
# 100, 500 and 1000 over a ledger of ATTEMPTS attempts (default 1M, two per
# run, 1–3 sandbox resources each), with the first vs the last page time.
#   bench/backfill.sh "<psql command>"      e.g. "psql -X -h /tmp/dir -p 28815 -U postgres"
# Env: ATTEMPTS (default 1000000), SIZES (default "1000 500 100"),
#      FULL_SIZES: sizes that run the whole backfill (default: all); the
#      others run PAGES pages from the start and PAGES pages from 95 % in
#      (the checkpoint is set there, as a hand-over would), for a quicker run.
# About 3 minutes on the 2-core machine with the defaults.
set -euo pipefail
PSQL=${1:?usage: bench/backfill.sh "<psql command>"}
ATTEMPTS=${ATTEMPTS:-1000000}
SIZES=${SIZES:-"1000 500 100"}
FULL_SIZES=${FULL_SIZES:-$SIZES}
PAGES=${PAGES:-400}
DB=backfill_bench
q() { $PSQL -v ON_ERROR_STOP=1 -qAt -d $DB "$@"; }

$PSQL -v ON_ERROR_STOP=1 -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
echo "== generating $ATTEMPTS attempts ($((ATTEMPTS / 2)) runs, 1-3 sandbox resources each)"
start=$(date +%s.%N)
q <<SQL
CREATE EXTENSION runtime_sandbox;
SELECT runtime_sandbox.install_ledger();
INSERT INTO runtime_scheduler.runs (run_id, org_id)
SELECT 'run-' || lpad(g::text, 7, '0'), 'org-' || (g % 97) FROM generate_series(1, $ATTEMPTS / 2) AS g;
INSERT INTO runtime_scheduler.attempts (run_id, attempt, resource_json, updated_at)
SELECT 'run-' || lpad(((g + 1) / 2)::text, 7, '0'), 1 + g % 2,
       (SELECT jsonb_agg(jsonb_build_object(
            'kind', CASE WHEN (g + i) % 2 = 0 THEN 'daytona_sandbox' ELSE 'modal_sandbox' END,
            -- the last 10 % of attempts repeat earlier sandboxes (conflicts)
            'sandboxId', 'sb-' || (g % ($ATTEMPTS * 9 / 10)) || '-' || i,
            'daytonaOrganizationId', 'dorg-' || (g % ($ATTEMPTS * 9 / 10) % 13),
            'modalAppId', 'app-' || (g % ($ATTEMPTS * 9 / 10) % 7),
            'runtimeEnvironment', CASE WHEN g % 5 = 0 THEN 'staging' ELSE '' END))
        FROM generate_series(1, 1 + g % 3) AS i),
       -- every 3 attempts share an updated_at (ties)
       timestamptz '2026-01-01 00:00:00+00' + (g / 3) * interval '1.5 milliseconds'
FROM generate_series(1, $ATTEMPTS) AS g;
VACUUM ANALYZE runtime_scheduler.attempts;
VACUUM ANALYZE runtime_scheduler.runs;
SQL
resources=$(q -c "SELECT count(*) FROM runtime_scheduler.attempts a JOIN runtime_scheduler.runs USING (run_id), jsonb_array_elements(a.resource_json)")
printf "   %d attempts, %d resources, %.1f s\n" "$ATTEMPTS" "$resources" "$(echo "$(date +%s.%N) - $start" | bc)"

echo "== the applied page's attempts fetch half-way in (sql/backfill/page_attempts.sql; 576 attempts: about 1000 resources):"
q <<SQL | sed 's/^/   /'
SELECT updated_at AS u, run_id AS r, attempt AS a FROM runtime_scheduler.attempts
ORDER BY updated_at, run_id, attempt OFFSET $ATTEMPTS / 2 LIMIT 1 \gset
SET search_path = pg_catalog, pg_temp;
EXPLAIN (COSTS OFF)
SELECT attempt.updated_at, attempt.run_id, attempt.attempt, run.org_id, attempt.resource_json,
       run.run_id IS NOT NULL AS has_run
FROM (
    SELECT attempt.updated_at, attempt.run_id, attempt.attempt, attempt.resource_json
    FROM runtime_scheduler.attempts AS attempt
    WHERE attempt.resource_json IS NOT NULL
      AND (attempt.updated_at, attempt.run_id, attempt.attempt) >= (:'u', :'r', :a)
    ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt
    LIMIT 576
) AS attempt
LEFT JOIN runtime_scheduler.runs AS run ON run.run_id = attempt.run_id
ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt;
SQL

reset() {
  q -c "TRUNCATE runtime_scheduler.runtime_sandbox_operations" \
    -c "DELETE FROM runtime_scheduler.control" -c "CHECKPOINT"
}

# Runs the procedure; prints per-batch elapsed ms (from its NOTICEs) to $1.
call() {
  local out=$1; shift
  q -c "CALL runtime_sandbox.run_sandbox_operation_backfill($*)" 2>&1 \
    | sed -n 's/.*batch \([0-9]*\): scanned \([0-9]*\), inserted \([0-9]*\).*elapsed \([0-9:.]*\) (total.*/\1 \2 \3 \4/p' \
    | awk '{ split($4, t, ":"); printf "%s %s %s %.3f\n", $1, $2, $3, (t[1] * 3600 + t[2] * 60 + t[3]) * 1000 }' > "$out"
}

report() {  # file label
  awk -v label="$2" '
    { n++; scanned += $2; inserted += $3; ms += $4; t[n] = $4; s[n] = $2 }
    END {
      k = (n >= 20) ? int(n / 10) : 1
      for (i = 1; i <= k; i++) first += t[i]
      full = n; while (full > 1 && s[full] == 0) full--
      for (i = full - k + 1; i <= full; i++) last += t[i]
      printf "   %-34s %6d pages %9d resources %8.1f s  %8.0f resources/s  first page %.1f ms, last full page %.1f ms, first %d pages avg %.2f ms, last %d avg %.2f ms\n",
        label, n, scanned, ms / 1000, scanned / (ms / 1000), t[1], t[full], k, first / k, k, last / k
    }' "$1"
}

tmp=$(mktemp -d)
for size in $SIZES; do
  reset
  if [[ " $FULL_SIZES " == *" $size "* ]]; then
    echo "== batch_size $size: full backfill (CALL run_sandbox_operation_backfill($size))"
    start=$(date +%s.%N)
    call "$tmp/$size" "$size"
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    report "$tmp/$size" "full run"
    printf "   wall clock %.1f s (commit per page included): %.0f resources/s; operations inserted: %s\n" \
      "$wall" "$(echo "$resources / $wall" | bc)" "$(q -c 'SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations')"
  else
    echo "== batch_size $size: $PAGES pages from the start, then $PAGES pages from 95 % in"
    call "$tmp/$size-start" "$size, $PAGES"
    report "$tmp/$size-start" "from the start"
    # Hand the run over at the attempt 95 % in, in the application's checkpoint shape.
    q -c "INSERT INTO runtime_scheduler.control (key, value)
          SELECT 'runtime_sandbox_operation_backfill_v1',
                 jsonb_build_object('phase', 'pending', 'cursor', jsonb_build_object(
                   'updatedAt', updated_at::text, 'runId', run_id, 'attempt', attempt, 'resourceOrdinal', 1))
          FROM runtime_scheduler.attempts ORDER BY updated_at, run_id, attempt OFFSET $ATTEMPTS * 95 / 100 LIMIT 1
          ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value" >/dev/null
    call "$tmp/$size-end" "$size, $PAGES"
    report "$tmp/$size-end" "from 95 % in"
  fi
done
rm -rf "$tmp"

echo "== the floor: the same operation rows inserted by a bare INSERT (200k rows, into an empty table), with ON CONFLICT DO NOTHING and plain"
q <<'SQL'
CREATE TEMP TABLE sample AS
SELECT operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state, provider_created_at
FROM runtime_scheduler.runtime_sandbox_operations LIMIT 200000;
TRUNCATE runtime_scheduler.runtime_sandbox_operations;
CHECKPOINT;
SELECT clock_timestamp() AS t0 \gset
INSERT INTO runtime_scheduler.runtime_sandbox_operations
    (operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state, provider_created_at)
SELECT * FROM sample ON CONFLICT (provider, sandbox_id, routing_domain_key) DO NOTHING;
SELECT format('   ON CONFLICT DO NOTHING: %s rows/s (%s us per row)', round(200000 / extract(epoch FROM clock_timestamp() - :'t0')),
              round(extract(epoch FROM clock_timestamp() - :'t0') * 1e6 / 200000, 1));
TRUNCATE runtime_scheduler.runtime_sandbox_operations;
CHECKPOINT;
SELECT clock_timestamp() AS t0 \gset
INSERT INTO runtime_scheduler.runtime_sandbox_operations
    (operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state, provider_created_at)
SELECT * FROM sample;
SELECT format('   plain INSERT:           %s rows/s (%s us per row)', round(200000 / extract(epoch FROM clock_timestamp() - :'t0')),
              round(extract(epoch FROM clock_timestamp() - :'t0') * 1e6 / 200000, 1));
SQL
