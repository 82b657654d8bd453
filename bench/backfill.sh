#!/usr/bin/env bash
# Backfill benchmark: resources/s of the migration procedure over a ledger of ATTEMPTS attempts (default 1M, two
# per run), with the first vs the last pages' times, on two data shapes:
#   clean  1-3 sandbox resources per attempt, the last 10 % repeating earlier sandboxes (bench/backfill/clean_shape.sql)
#   messy  the shape issue 11 was measured on: a fifth of the resources repeat an earlier identity, 3 % of the
#          identities exist already, malformed JSON of every kind the page skips (bench/backfill/messy_shape.sql)
#   bench/backfill.sh "<psql command>"      e.g. "psql -X -h /tmp/dir -p 28815 -U postgres"
# Env: ATTEMPTS (default 1000000), SHAPES (default "clean messy"), REUSE (set: reuse the databases of an earlier run
#      kept with KEEP_DB=1; without KEEP_DB the databases are dropped at the end),
#      SIZES (batch sizes on the clean shape, default "1000 500 100"), MESSY_SIZES (default "1000"),
#      FULL_SIZES: sizes that run the whole backfill (default: all); the
#      others run PAGES pages from the start and PAGES pages from 95 % in
#      (the checkpoint is set there, as a hand-over would), for a quicker run.
#      BENCH_QUICK=1: ATTEMPTS 50000 and batch 1000 only (checks the wiring).
# Prints BENCH lines (docs/design/benchmarks.md) for bench/table.sh: backfill.<shape>.b<size> (resources/s by the wall
# clock of the whole CALL, commits included; target >= 60000 at batch 1000) and backfill.<shape>.b1000.pages (mean
# page time of the last tenth of full pages / of the first tenth; target <= 1.2).
# About 6 minutes on the 2-core machine with the defaults.
set -euo pipefail
PSQL=${1:?usage: bench/backfill.sh "<psql command>"}
if [ -n "${BENCH_QUICK:-}" ]; then ATTEMPTS=${ATTEMPTS:-50000} SIZES=${SIZES:-1000}; fi
ATTEMPTS=${ATTEMPTS:-1000000}
SHAPES=${SHAPES:-"clean messy"}
SIZES=${SIZES:-"1000 500 100"}
MESSY_SIZES=${MESSY_SIZES:-"1000"}
PAGES=${PAGES:-400}
here=$(dirname "$0")
echo "== load before: $(uptime | sed 's/.*load/load/')"
for shape in $SHAPES; do
DB=backfill_bench_$shape
q() { $PSQL -v ON_ERROR_STOP=1 -qAt -d $DB "$@"; }
sizes=$SIZES; [ "$shape" = messy ] && sizes=$MESSY_SIZES
FULL=${FULL_SIZES:-$sizes}

if [ -n "${REUSE:-}" ] && [ "$($PSQL -qAt -d postgres -c "SELECT count(*) FROM pg_database WHERE datname = '$DB'")" = 1 ]; then
  echo "== $shape shape: reusing database $DB (REUSE set)"
else
  $PSQL -v ON_ERROR_STOP=1 -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
  echo "== $shape shape: generating $ATTEMPTS attempts ($((ATTEMPTS / 2)) runs)"
  start=$(date +%s.%N)
  q -v attempts="$ATTEMPTS" -f "$here/backfill/${shape}_shape.sql" | grep -v '^$' || true
  q <<SQL
VACUUM ANALYZE runtime_scheduler.attempts;
VACUUM ANALYZE runtime_scheduler.runs;
VACUUM ANALYZE runtime_scheduler.runtime_sandbox_operations;
-- The operations that exist before the backfill (messy shape), restored before every run.
CREATE TABLE existing_operations AS TABLE runtime_scheduler.runtime_sandbox_operations;
SQL
  printf "   generated in %.1f s\n" "$(echo "$(date +%s.%N) - $start" | bc)"
fi
resources=$(q -c "SELECT count(*) FROM runtime_scheduler.attempts a JOIN runtime_scheduler.runs USING (run_id),
  jsonb_array_elements(CASE WHEN jsonb_typeof(a.resource_json) = 'array' THEN a.resource_json ELSE jsonb_build_array(a.resource_json) END) r
  WHERE r ->> 'kind' IN ('daytona_sandbox', 'modal_sandbox') AND NULLIF(r ->> 'sandboxId', '') IS NOT NULL")
printf "   %d attempts, %d resources\n" "$(q -c 'SELECT count(*) FROM runtime_scheduler.attempts')" "$resources"

fetch_sql="$here/../sql/queries/backfill/attempts_from_cursor.sql"
if [ ! -f "$fetch_sql" ]; then
  echo "== (the attempts fetch's plan is not shown: $fetch_sql is not there)"
else
echo "== the applied page's attempts fetch half-way in (sql/queries/backfill/attempts_from_cursor.sql; 576 attempts: about 1000 resources):"
fetch=$(sed -e '/^--/d' -e 's/@ledger@/runtime_scheduler/g' -e 's/@fetch@/576/' \
            -e "s/(\$1, \$2, \$3)/(:'u', :'r', :a)/" \
            "$fetch_sql")
q <<SQL | sed 's/^/   /'
SELECT updated_at AS u, run_id AS r, attempt AS a FROM runtime_scheduler.attempts
ORDER BY updated_at, run_id, attempt OFFSET $ATTEMPTS / 2 LIMIT 1 \gset
SET search_path = pg_catalog, pg_temp;
EXPLAIN (COSTS OFF) $fetch;
SQL
fi

reset() {
  q -c "TRUNCATE runtime_scheduler.runtime_sandbox_operations" \
    -c "INSERT INTO runtime_scheduler.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id,
          environment, sandbox_id, routing_domain, state, provider_created_at)
        SELECT operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state,
               provider_created_at FROM existing_operations" \
    -c "DELETE FROM runtime_scheduler.control" -c "VACUUM ANALYZE runtime_scheduler.runtime_sandbox_operations" -c "CHECKPOINT"
}

# Runs the backfill page by page, as run_sandbox_operation_backfill does (one page, then COMMIT), but each page
# a statement of its own so that psql times it: per-page elapsed ms to $1 ("page scanned inserted ms"), and the
# CPU seconds its backend used (utime + stime from /proc: unlike the wall clock, hardly moved by other work on the
# machine) to $1.cpu0/$1.cpu1. $2: batch_size; $3: at most that many pages (default: until complete).
call() {
  local out=$1 size=$2 pages=${3:-$((resources / $2 + 3))}
  {
    echo "SELECT pg_backend_pid() AS pid \\gset"
    echo "\\setenv BENCH_PID :pid"
    echo "\\! awk '{ print \$14 + \$15 }' /proc/\$BENCH_PID/stat > $out.cpu0"
    echo "\\timing on"
    for ((i = 0; i < pages; i++)); do
      echo "SELECT batches, scanned_attempts, inserted_operations FROM runtime_sandbox.advance_sandbox_operation_backfill(false, $size, 1);"
    done
    echo "\\timing off"
    echo "\\! awk '{ print \$14 + \$15 }' /proc/\$BENCH_PID/stat > $out.cpu1"
  } > "$out.sql"
  q -f "$out.sql" 2>&1 \
    | awk -F'|' '/^Time: / { if (batches == 1) printf "%d %s %s %.3f\n", ++n, scanned, inserted, $0 ~ /ms/ ? substr($1, 7) + 0 : 0; next }
                 NF == 3 { batches = $1; scanned = $2; inserted = $3 }' > "$out"
}

report() {  # file label: prints the report line; "pages resources ms first_avg last_avg k" to file.fig
  awk -v label="$2" -v fig="$1.fig" '
    { n++; scanned += $2; inserted += $3; ms += $4; t[n] = $4; s[n] = $2; if ($2 > most) most = $2 }
    END {
      k = (n >= 20) ? int(n / 10) : 1
      for (i = 1; i <= k; i++) first += t[i]
      # The last full page: not the short (or empty) last one.
      full = n; while (full > 1 && s[full] < most / 2) full--
      for (i = full - k + 1; i <= full; i++) last += t[i]
      printf "   %-34s %6d pages %9d resources %8.1f s  %8.0f resources/s  first page %.1f ms, last full page %.1f ms, first %d pages avg %.2f ms, last %d avg %.2f ms\n",
        label, n, scanned, ms / 1000, scanned / (ms / 1000), t[1], t[full], k, first / k, k, last / k
      printf "%d %d %.3f %.3f %.3f %d\n", n, scanned, ms, first / k, last / k, k > fig
    }' "$1"
}

# BENCH lines of one batch size: shape size first.fig last.fig [resources wall cpu] (the wall clock of a whole
# backfill; without it, of PAGES pages from the start and from 95 % in: the page times only).
bench_lines() {
  local value detail
  if [ -n "${6:-}" ]; then
    value=$(echo "$5 / $6" | bc)
    detail=$(awk -v r="$5" -v w="$6" -v c="$7" '{ printf "whole backfill, %d resources in %.1f s wall clock with the commits; page time %.0f/s, backend CPU %.0f/s", r, w, r / ($3 / 1000), r / c }' "$3")
  else
    value=$(cat "$3" "$4" | awk '{ r += $2; ms += $3 } END { printf "%.0f", r / (ms / 1000) }')
    detail="page time of $PAGES pages from the start and $PAGES from 95 % in (not a whole backfill)"
  fi
  if [ "$2" = 1000 ]; then
    echo "BENCH|backfill.$1.b$2|$value|resources/s|>= 60000|$([ "$value" -ge 60000 ] && echo met || echo missed)|$detail"
    # The first tenth of the pages against the last tenth of the full pages.
    paste -d' ' "$3" "$4" | awk '{
      r = sprintf("%.2f", $11 / $4)
      printf "BENCH|backfill.%s.b1000.pages|%s|x first pages time|<= 1.2|%s|first %d pages %.2f ms, last %d full pages %.2f ms\n",
        shape, r, (r + 0 <= 1.2 ? "met" : "missed"), $6, $4, $12, $11 }' shape="$1"
  else
    echo "BENCH|backfill.$1.b$2|$value|resources/s|-|-|$detail"
  fi
}

tmp=$(mktemp -d)
for size in $sizes; do
  reset
  if [[ " $FULL " == *" $size "* ]]; then
    echo "== $shape shape, batch_size $size: full backfill (advance_sandbox_operation_backfill(false, $size, 1) until complete, each page committed)"
    start=$(date +%s.%N)
    call "$tmp/$size" "$size"
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    report "$tmp/$size" "full run"
    cpu=$(echo "($(cat "$tmp/$size.cpu1") - $(cat "$tmp/$size.cpu0")) / $(getconf CLK_TCK)" | bc -l)
    printf "   wall clock %.1f s (commit per page included): %.0f resources/s; backend CPU %.1f s: %.0f resources per CPU second; operations inserted: %s\n" \
      "$wall" "$(echo "$resources / $wall" | bc)" "$cpu" "$(echo "$resources / $cpu" | bc)" \
      "$(q -c 'SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations' -c 'SELECT count(*) FROM existing_operations' | paste -sd- | bc)"
    bench_lines "$shape" "$size" "$tmp/$size.fig" "$tmp/$size.fig" "$resources" "$wall" "$cpu"
  else
    echo "== $shape shape, batch_size $size: $PAGES pages from the start, then $PAGES pages from 95 % in"
    call "$tmp/$size-start" "$size" "$PAGES"
    report "$tmp/$size-start" "from the start"
    # Hand the run over at the attempt 95 % in, in the application's checkpoint shape.
    q -c "INSERT INTO runtime_scheduler.control (key, value)
          SELECT 'runtime_sandbox_operation_backfill_v1',
                 jsonb_build_object('phase', 'pending', 'cursor', jsonb_build_object(
                   'updatedAt', updated_at::text, 'runId', run_id, 'attempt', attempt, 'resourceOrdinal', 1))
          FROM runtime_scheduler.attempts ORDER BY updated_at, run_id, attempt OFFSET $ATTEMPTS * 95 / 100 LIMIT 1
          ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value" >/dev/null
    call "$tmp/$size-end" "$size" "$PAGES"
    report "$tmp/$size-end" "from 95 % in"
    bench_lines "$shape" "$size" "$tmp/$size-start.fig" "$tmp/$size-end.fig"
  fi
done
rm -rf "$tmp"
done

DB=backfill_bench_${SHAPES%% *}
echo "== the floor: the same operation rows inserted by a bare INSERT (up to 200k rows, into an empty table), with ON CONFLICT DO NOTHING and plain"
q <<'SQL'
CREATE TEMP TABLE sample AS
SELECT operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state, provider_created_at
FROM runtime_scheduler.runtime_sandbox_operations WHERE operation_key LIKE 'backfill:%' LIMIT 200000;
SELECT count(*) AS n FROM sample \gset
TRUNCATE runtime_scheduler.runtime_sandbox_operations;
CHECKPOINT;
SELECT clock_timestamp() AS t0 \gset
INSERT INTO runtime_scheduler.runtime_sandbox_operations
    (operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state, provider_created_at)
SELECT * FROM sample ON CONFLICT (provider, sandbox_id, routing_domain_key) DO NOTHING;
SELECT format('   ON CONFLICT DO NOTHING: %s rows/s (%s us per row)', round(:n / extract(epoch FROM clock_timestamp() - :'t0')),
              round(extract(epoch FROM clock_timestamp() - :'t0') * 1e6 / :n, 1));
TRUNCATE runtime_scheduler.runtime_sandbox_operations;
CHECKPOINT;
SELECT clock_timestamp() AS t0 \gset
INSERT INTO runtime_scheduler.runtime_sandbox_operations
    (operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state, provider_created_at)
SELECT * FROM sample;
SELECT format('   plain INSERT:           %s rows/s (%s us per row)', round(:n / extract(epoch FROM clock_timestamp() - :'t0')),
              round(extract(epoch FROM clock_timestamp() - :'t0') * 1e6 / :n, 1));
SQL
echo "== load after: $(uptime | sed 's/.*load/load/')"
if [ -z "${KEEP_DB:-}" ]; then
  for shape in $SHAPES; do $PSQL -q -d postgres -c "DROP DATABASE IF EXISTS backfill_bench_$shape WITH (FORCE)"; done
fi
