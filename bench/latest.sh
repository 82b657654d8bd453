#!/usr/bin/env bash
# The scheduled call, reconcile_daytona_latest, at 100,000 and 1,000,000 sandboxes (LATEST_SIZES; BENCH_QUICK=1:
# 10,000 and 100,000): a ledger whose operations own every listed sandbox (bench/tick/ledger.sql: 1% to seed,
# 1% absent), two published snapshots of the listing (the newest confirms the one before), then the dry run and
# the apply, each the best of ROUNDS (default 3) calls rolled back, timed by the server's clock.
# Target (issue 45): linear, t(1M) / t(100k) <= 11 for the apply (the dry run is printed beside it).
# Prints BENCH lines (docs/design/benchmarks.md) for bench/table.sh:
#   latest.<n>.apply, latest.<n>.dry      milliseconds at each size
#   latest.growth.apply, latest.growth.dry  t(largest) / t(a tenth of it)
# Usage: bench/latest.sh "<psql command>"   (the demo cluster's: make bench, make bench-latest)
set -euo pipefail
PSQL=${1:?usage: bench/latest.sh "<psql command>"}
if [ -n "${LATEST_SIZES:-}" ]; then read -r -a SIZES <<<"$LATEST_SIZES"
elif [ -n "${BENCH_QUICK:-}" ]; then SIZES=(10000 100000)
else SIZES=(100000 1000000); fi
ROUNDS=${ROUNDS:-3}
DB=runtime_sandbox_bench_latest
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
label() { if [ $(($1 % 1000000)) -eq 0 ]; then echo "$(($1 / 1000000))m"; else echo "$(($1 / 1000))k"; fi; }

echo "reconcile_daytona_latest: best of $ROUNDS, milliseconds (target: apply t(1M)/t(100k) <= 11)"
declare -A dry apply
for n in "${SIZES[@]}"; do
    PGOPTIONS="-c client_min_messages=warning" $PSQL -q postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
    $PSQL -q -v ON_ERROR_STOP=1 --no-psqlrc $DB -c "CREATE EXTENSION runtime_sandbox" >/dev/null
    $PSQL -q -v ON_ERROR_STOP=1 --no-psqlrc -v n="$n" $DB -f bench/tick/ledger.sql >/dev/null
    # The listing the fake Daytona of bench/tick.sh serves (sb-0 .. sb-<n-1> in org-bench), recorded twice.
    $PSQL -q -v ON_ERROR_STOP=1 --no-psqlrc -v n="$n" $DB >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TEMP TABLE listing AS
SELECT jsonb_agg(jsonb_build_object('sandboxId', 'sb-' || i, 'routingDomain', 'org-bench') ORDER BY i) AS items
FROM generate_series(0, :n - 1) AS i;
SELECT runtime_sandbox.record_inventory_snapshot('daytona', items, now() - interval '10 minutes', ledger_schema => 'bench') FROM listing;
SELECT runtime_sandbox.record_inventory_snapshot('daytona', items, now() - interval '1 minute', ledger_schema => 'bench') FROM listing;
VACUUM ANALYZE;
SQL
    for mode in dry apply; do
        ms=$($PSQL -qtA -v ON_ERROR_STOP=1 --no-psqlrc $DB <<SQL
SET client_min_messages = warning;
CREATE FUNCTION pg_temp.best_ms(dry boolean, rounds int) RETURNS numeric LANGUAGE plpgsql AS \$\$
DECLARE started timestamptz; took numeric; best numeric;
BEGIN
    FOR round IN 1..rounds LOOP
        BEGIN
            started := clock_timestamp();
            PERFORM runtime_sandbox.reconcile_daytona_latest(dry, absent_confirmations => 1, max_absent_ratio => 1,
                                                             batch_size => 1000, ledger_schema => 'bench');
            took := extract(epoch FROM clock_timestamp() - started) * 1000;
            RAISE EXCEPTION 'roll back';
        EXCEPTION WHEN raise_exception THEN NULL;
        END;
        best := least(best, took);
    END LOOP;
    RETURN round(best, 1);
END \$\$;
SELECT pg_temp.best_ms($([ $mode = dry ] && echo true || echo false), $ROUNDS);
SQL
)
        if [ $mode = dry ]; then dry[$n]=$ms; else apply[$n]=$ms; fi
        echo "BENCH|latest.$(label "$n").$mode|$ms|ms|-|-|reconcile_daytona_latest, $n sandboxes, $([ $mode = dry ] && echo 'dry run' || echo applied)"
    done
done

# Growth: the largest size over a tenth of it, when both ran.
largest=$(printf '%s\n' "${SIZES[@]}" | sort -n | tail -1)
small=$((largest / 10))
if [ -n "${apply[$small]:-}" ]; then
    for mode in apply dry; do
        if [ $mode = apply ]; then big=${apply[$largest]} little=${apply[$small]}; else big=${dry[$largest]} little=${dry[$small]}; fi
        awk -v mode=$mode -v big="$big" -v little="$little" -v l="$(label "$largest")" -v s="$(label "$small")" 'BEGIN {
            r = sprintf("%.2f", big / little)
            if (mode == "apply") printf "BENCH|latest.growth.apply|%s|x time for 10x sandboxes|<= 11|%s|apply %.1f ms at %s, %.1f ms at %s\n", r, (r + 0 <= 11 ? "met" : "missed"), big, l, little, s
            else printf "BENCH|latest.growth.dry|%s|x time for 10x sandboxes|-|-|dry %.1f ms at %s, %.1f ms at %s\n", r, big, l, little, s
        }'
    done
fi
[ -n "${KEEP_DB:-}" ] || $PSQL -q postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
