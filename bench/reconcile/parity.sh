#!/usr/bin/env bash
# Run the seed's TypeScript beside the extension on random twin ledgers.
# Usage: bench/reconcile/parity.sh PORT [rounds] [rng seed]   (PARITY_CALM=1: fewer fail-closed rounds)
# Needs node 20 and the npm registry once (pg, tsx into a scratch directory),
# the seed in ../shared/seeds, and the extension installed in the cluster on PORT.
set -euo pipefail
PORT=${1:?usage: parity.sh PORT [rounds] [rng seed]}
HERE=$(cd "$(dirname "$0")" && pwd)
SEED=${SEED_FILE:-$HERE/../../../shared/seeds/000_15d73b2eb1bba041.txt}
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
cp "$HERE/parity.ts" parity.ts
npx tsx parity.ts "$PORT" "${2:-300}" "${3:-1}"
