#!/usr/bin/env bash
# Run the seed's own TypeScript beside the extension on random twin ledgers:
# bench/<capability>/parity.ts says what is generated and compared.
# Usage: bench/parity.sh reconcile|backfill PORT [rounds] [rng seed]
#   (reconcile: PARITY_CALM=1 for fewer fail-closed rounds)
# Needs node 20 and the npm registry once (pg, tsx into a scratch directory),
# the seed in ../shared/seeds, and the extension installed in the cluster on PORT.
set -euo pipefail
CAPABILITY=${1:?usage: parity.sh reconcile|backfill PORT [rounds] [rng seed]}
PORT=${2:?usage: parity.sh reconcile|backfill PORT [rounds] [rng seed]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
[ -f "$HERE/$CAPABILITY/parity.ts" ] || { echo "no $HERE/$CAPABILITY/parity.ts" >&2; exit 2; }
SEED=${SEED_FILE:-$HERE/../../shared/seeds/000_15d73b2eb1bba041.txt}
WORK=${PARITY_DIR:-/tmp/runtime_sandbox-parity}
mkdir -p "$WORK" && cd "$WORK"
[ -d node_modules/pg ] && [ -d node_modules/tsx ] || { npm init -y >/dev/null; npm install --silent pg@8 tsx@4; }
# The seed file is a diff: its added lines are the TypeScript module.
awk 'NR > 5 && /^\+/ { print substr($0, 2) }' "$SEED" > seed.ts
cat > postgres.ts <<'TS'
export type PostgresSchedulerOptions = { schema?: string };
export type PostgresSchedulerQueryClient = { query<R = any>(sql: string, params?: unknown[]): Promise<{ rows: R[] }> };
TS
cat > runtime-sandbox-operation.ts <<'TS'
export enum RuntimeSandboxOperationState { Reserved = 'reserved', Live = 'live', Deleting = 'deleting', Deleted = 'deleted' }
export enum RuntimeSandboxProvider { Daytona = 'daytona', Modal = 'modal' }
TS
cp "$HERE/$CAPABILITY/parity.ts" "$HERE/parity_common.ts" .
npx tsx parity.ts "$PORT" "${2:-300}" "${3:-1}"
