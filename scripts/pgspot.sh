#!/usr/bin/env bash
# pgspot (PyPI, installed by scripts/setup.sh) over the install script `cargo pgrx schema` generates and over
# every update script. A finding passes only when tests/pgspot.allow lists it with its reason; an entry that
# no finding matches fails too, so the list stays true.
#   scripts/pgspot.sh            (make test-pgspot)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PGSPOT=${PGSPOT:-${RUNTIME_SANDBOX_TOOLS:-$HOME/.cache/runtime_sandbox}/pgspot/bin/pgspot}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
schema=$root/target/schema/runtime_sandbox.sql
mkdir -p "$(dirname "$schema")"
(cd "$root" && cargo pgrx schema "pg${PG_MAJOR:-15}" --pg-config "$PG_CONFIG" --out "$schema" >/dev/null)

scripts=("$schema")
for f in "$root"/sql/runtime_sandbox--*--*.sql; do scripts+=("$f"); done

findings=$(mktemp)
trap 'rm -f "$findings"' EXIT
for f in "${scripts[@]}"; do
  # "PS005: Function without explicit search_path: extschema.f(...) at line 336" -> without the line
  "$PGSPOT" "$f" | grep -E '^PS[0-9]+:' | sed -E 's/ at line [0-9]+$//' >> "$findings" || true
  echo "pgspot: $(basename "$f"): $("$PGSPOT" --summary-only "$f" | tr -s ' ' | sed 's/^ //')"
done

allowed=$(grep -Ev '^(#|[[:space:]]|$)' "$root/tests/pgspot.allow" || true)
status=0
while IFS= read -r finding; do
  [ -z "$finding" ] && continue
  if ! grep -qxF -- "$finding" <<<"$allowed"; then
    echo "pgspot: not allowed (fix it, or add it to tests/pgspot.allow with its reason): $finding" >&2
    status=1
  fi
done < "$findings"
while IFS= read -r entry; do
  [ -z "$entry" ] && continue
  if ! grep -qxF -- "$entry" "$findings"; then
    echo "pgspot: tests/pgspot.allow lists a finding pgspot no longer reports (remove it): $entry" >&2
    status=1
  fi
done <<<"$allowed"
[ $status -eq 0 ] && echo "pgspot: $(grep -c . "$findings" || true) finding(s), each explained in tests/pgspot.allow"
exit $status
