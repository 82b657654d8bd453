#!/usr/bin/env bash
# Scale-out on Citus: LEDGERS ledgers of SANDBOXES sandboxes each (bench/reconcile/ledger.sql's steady mix),
# each in a distributed schema, spread over two workers and reconciled concurrently from the coordinator (one
# connection per ledger), against the same ledgers on one plain node (the demo cluster: the same PostgreSQL
# without Citus). All on this machine: the workers share its cores with the coordinator and the clients, so
# the figures measure what the coordinator adds, not what more machines would give.
# Usage: bench/citus.sh "<psql command for the plain node>"   (LEDGERS=4 SANDBOXES=10000 ROUNDS=3)
# Builds Citus when needed (scripts/citus.sh, cached) and runs its own coordinator and two workers on
# ports CITUS_BENCH_PORT..+2 (default 28850) under /tmp/runtime_sandbox-citus-bench, stopped at the end.
# Prints BENCH lines (docs/design/benchmarks.md), none with a target:
#   citus.throughput.citus / .plain  sandboxes reconciled per second, all ledgers at once (apply, rolled back)
#   citus.throughput.ratio           Citus / plain
#   citus.call.apply / .dry          one call alone on Citus minus the same on the plain node (ms)
#   citus.roundtrips.apply / .dry    commands the coordinator sends to the worker for one call
set -euo pipefail
PLAIN=${1:?usage: bench/citus.sh "<psql command for the plain node>"}
LEDGERS=${LEDGERS:-4}
SANDBOXES=${SANDBOXES:-10000}
ROUNDS=${ROUNDS:-3}
BASE=${CITUS_BENCH_PORT:-28850}
ROOT=/tmp/runtime_sandbox-citus-bench
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(/usr/lib/postgresql/15/bin/pg_config --bindir)
DB=runtime_sandbox_bench_citus
MIX=(-v reserved=1 -v unleased=2 -v absent=2 -v terminal=2 -v deleting=10)

"$HERE/../scripts/citus.sh"
as_pg() { (cd / && sudo -u postgres "$@"); }
node_psql() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $((BASE + $1)) -U postgres "${@:2}"; }
stop_nodes() { for n in 0 1 2; do as_pg "$BIN/pg_ctl" -D "$ROOT/node$n" -m fast -w stop >/dev/null 2>&1 || true; done; }
trap stop_nodes EXIT

# The cluster: made once, started each run.
mkdir -p "$ROOT" && chown postgres:postgres "$ROOT"
for n in 0 1 2; do
    if [ ! -f "$ROOT/node$n/PG_VERSION" ]; then
        as_pg "$BIN/initdb" -D "$ROOT/node$n" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
        cat >> "$ROOT/node$n/postgresql.conf" <<EOF
port = $((BASE + n))
listen_addresses = '127.0.0.1'
unix_socket_directories = '$ROOT'
shared_preload_libraries = 'citus'
citus.node_conninfo = 'sslmode=disable'
wal_level = logical
fsync = off
synchronous_commit = off
max_connections = 200
shared_buffers = 256MB
EOF
    fi
    as_pg "$BIN/pg_ctl" -D "$ROOT/node$n" -l "$ROOT/node$n.log" -w start >/dev/null
done
for n in 0 1 2; do
    node_psql $n postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" 2>/dev/null
    node_psql $n $DB -c "SET client_min_messages = warning" -c "CREATE EXTENSION citus"
done
node_psql 0 $DB -c "SELECT citus_set_coordinator_host('127.0.0.1', $BASE)" \
    -c "SELECT citus_add_node('127.0.0.1', $((BASE + 1)))" -c "SELECT citus_add_node('127.0.0.1', $((BASE + 2)))" >/dev/null
node_psql 0 $DB -c "CREATE EXTENSION runtime_sandbox"
PGOPTIONS="-c client_min_messages=warning" $PLAIN -q postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
$PLAIN -q $DB -c "CREATE EXTENSION runtime_sandbox"

# The ledgers: loaded on the coordinator (and on the plain node), then distributed, alternately on each worker.
citus() { node_psql 0 $DB "$@"; }
for i in $(seq 1 "$LEDGERS"); do
    for target in citus plain; do
        run() { if [ "$target" = citus ]; then citus "$@"; else $PLAIN -q -v ON_ERROR_STOP=1 $DB "$@"; fi; }
        run -v n="$SANDBOXES" "${MIX[@]}" -f "$HERE/reconcile/ledger.sql" >/dev/null
        run -c "SET client_min_messages = warning" -c "DROP SCHEMA IF EXISTS ledger_$i CASCADE" \
            -c "DROP TABLE IF EXISTS inventory_$i" -c "ALTER SCHEMA bench RENAME TO ledger_$i" \
            -c "ALTER TABLE bench_inventory RENAME TO inventory_$i"
    done
    citus -c "SELECT citus_schema_distribute('ledger_$i')" >/dev/null
    want=$((BASE + 1 + (i % 2)))
    at=$(citus -At -c "SELECT DISTINCT nodeport FROM citus_shards WHERE table_name::text LIKE 'ledger_$i.%'")
    if [ "$at" != "$want" ]; then
        citus -c "SELECT citus_schema_move('ledger_$i', '127.0.0.1', $want, shard_transfer_mode => 'block_writes')" >/dev/null
    fi
done
echo "citus scale-out: $LEDGERS ledgers x $SANDBOXES sandboxes; placement:"
citus -At -c "SELECT table_name::text, nodeport FROM citus_shards WHERE table_name::text LIKE 'ledger_%.runs' ORDER BY 1"

call() {  # ledger dry_run
    echo "SELECT status FROM inventory_$1, runtime_sandbox.reconcile_daytona(inventory, now(), $2, ledger_schema => 'ledger_$1');"
}
# One call alone, best of ROUNDS, in ms (apply rolled back).
alone() {  # psql-command dry_run
    local best="" sql t
    for _ in $(seq 1 "$ROUNDS"); do
        sql="\\timing on
BEGIN;
$(call 1 "$2")
ROLLBACK;"
        t=$(echo "$sql" | $1 | awk '/^Time:/ {n++; if (n == 2) print $2}')
        best=$(awk -v a="$best" -v b="$t" 'BEGIN {print (a == "" || b < a) ? b : a}')
    done
    echo "$best"
}
# Every ledger at once, one connection each: the best wall time of ROUNDS, in seconds.
together() {  # psql-command
    local best="" t0 t1 w
    for _ in $(seq 1 "$ROUNDS"); do
        t0=$(date +%s.%N)
        for i in $(seq 1 "$LEDGERS"); do
            printf 'BEGIN;\n%s\nROLLBACK;\n' "$(call "$i" false)" | $1 >/dev/null &
        done
        wait
        t1=$(date +%s.%N)
        w=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
        best=$(awk -v a="$best" -v b="$w" 'BEGIN {print (a == "" || b < a) ? b : a}')
    done
    echo "$best"
}
CITUS_PSQL="psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $BASE -U postgres $DB"
PLAIN_PSQL="$PLAIN -q -v ON_ERROR_STOP=1 $DB"
# Warm both (plans, caches, connections).
echo "$(call 1 true)" | $CITUS_PSQL >/dev/null; echo "$(call 1 true)" | $PLAIN_PSQL >/dev/null

apply_citus=$(alone "$CITUS_PSQL" false); apply_plain=$(alone "$PLAIN_PSQL" false)
dry_citus=$(alone "$CITUS_PSQL" true); dry_plain=$(alone "$PLAIN_PSQL" true)
wall_citus=$(together "$CITUS_PSQL"); wall_plain=$(together "$PLAIN_PSQL")
# Commands the coordinator sends to the workers for one call (citus.log_remote_commands).
roundtrips() {  # dry_run
    printf 'SET citus.log_remote_commands = on;\nSET client_min_messages = log;\nBEGIN;\n%s\nROLLBACK;\n' "$(call 1 "$1")" \
        | $CITUS_PSQL 2>&1 >/dev/null | grep -c "issuing" || true
}
trips_apply=$(roundtrips false); trips_dry=$(roundtrips true)

total=$((LEDGERS * SANDBOXES))
awk -v l="$LEDGERS" -v n="$SANDBOXES" -v total="$total" -v wc="$wall_citus" -v wp="$wall_plain" \
    -v ac="$apply_citus" -v ap="$apply_plain" -v dc="$dry_citus" -v dp="$dry_plain" -v ta="$trips_apply" -v td="$trips_dry" 'BEGIN {
    printf "all %d ledgers at once (apply, rolled back): Citus %.2f s, plain %.2f s\n", l, wc, wp
    printf "one call alone: apply %.1f ms on Citus, %.1f ms plain; dry run %.1f / %.1f ms\n", ac, ap, dc, dp
    printf "BENCH|citus.throughput.citus|%.0f|sandboxes/s|-|-|%d ledgers x %d sandboxes at once over two workers, %.2f s\n", total / wc, l, n, wc
    printf "BENCH|citus.throughput.plain|%.0f|sandboxes/s|-|-|the same ledgers on one plain node, %.2f s\n", total / wp, wp
    printf "BENCH|citus.throughput.ratio|%.2f|x plain throughput|-|-|Citus %.0f/s, plain %.0f/s (one machine)\n", (total / wc) / (total / wp), total / wc, total / wp
    printf "BENCH|citus.call.apply|%.1f|ms added per call|-|-|one apply alone: %.1f ms on Citus, %.1f ms plain\n", ac - ap, ac, ap
    printf "BENCH|citus.call.dry|%.1f|ms added per call|-|-|one dry run alone: %.1f ms on Citus, %.1f ms plain\n", dc - dp, dc, dp
    printf "BENCH|citus.roundtrips.apply|%d|commands to the worker|-|-|one apply of %d sandboxes\n", ta, n
    printf "BENCH|citus.roundtrips.dry|%d|commands to the worker|-|-|one dry run of %d sandboxes\n", td, n
}'
# Same answer on both (a check that the Citus ledgers hold their rows).
for target in "$CITUS_PSQL" "$PLAIN_PSQL"; do
    echo "SELECT matched_live_sandboxes, live_leases_to_seed, absent_ledger_rows, status FROM inventory_1, runtime_sandbox.reconcile_daytona(inventory, now(), true, ledger_schema => 'ledger_1');" | $target -At
done | uniq -c | awk '{print "dry run of ledger_1 (count of equal answers, answer):", $0} END {if (NR != 1) exit 1}'
node_psql 0 postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
$PLAIN -q postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null
