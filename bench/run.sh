#!/usr/bin/env bash
# `make bench`: runs each named benchmark (bench/<name>.sh "<psql command>"),
# keeps its whole output in OUT/<name>.log, then prints the one table of every
# figure (bench/table.sh over those logs). A benchmark that fails does not stop
# the others; its rows read "not run" and the exit status is 1.
# Usage: bench/run.sh "<psql command>" OUT name...
set -uo pipefail
PSQL=${1:?usage: bench/run.sh "<psql command>" OUT name...}
OUT=${2:?usage: bench/run.sh "<psql command>" OUT name...}
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
load() { uptime | sed 's/.*load average: //'; }
started="$(date -u '+%Y-%m-%d %H:%M UTC'), load $(load)"
failed=() logs=()
for name in "$@"; do
  echo "== bench/$name.sh ($(date -u +%H:%M:%S), load $(load))"
  if ! "$HERE/$name.sh" "$PSQL" 2>&1 | tee "$OUT/$name.log"; then
    failed+=("$name")
  fi
  logs+=("$OUT/$name.log")
  echo
done
echo "== every benchmark: started $started, ended $(date -u +%H:%M) UTC, load $(load)"
echo "   commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$HERE" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)'), $(nproc) cores; logs in $OUT"
echo
"$HERE/table.sh" "${logs[@]}" | tee "$OUT/table.txt"
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed: ${failed[*]} (see $OUT/<name>.log)" >&2
  exit 1
fi
