#!/usr/bin/env bash
# The build cache kept outside the clone, so that a fresh clone (CI's, every run) does not compile every
# dependency for every major again. Run by scripts/setup.sh and scripts/test.sh before any build; idempotent.
#
# - A clone without target/ gets target -> $RUNTIME_SANDBOX_BUILD_CACHE/<key> (default /var/tmp/runtime_sandbox-build).
#   The key hashes what makes dependency artifacts reusable: the toolchain (rustc -vV), Cargo.lock, the PostgreSQL
#   builds scripts/pg_server.sh fetches and Debian's PostgreSQL 15. A clone that has its own target/ keeps it.
# - Stale artifacts can never pass for this tree's: cargo trusts a source file older than its build, and a fresh
#   clone's files are older than a build another clone made after it was cloned. So when the cache was last used
#   by another checkout (its path) or another commit, this tree's own packages (runtime_sandbox,
#   runtime-sandbox-recorder) lose their fingerprints in every profile and are rebuilt; only the dependencies,
#   which cargo keys by version and features, are reused.
# - One cache per key: when the key changes, the caches of other keys are removed (each is about 12 GB).
# - One build at a time per cache (as one scratch cluster at a time): the check runs under a lock, and
#   scripts/test.sh holds it for a whole `make test`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache_root=${RUNTIME_SANDBOX_BUILD_CACHE:-/var/tmp/runtime_sandbox-build}
[ "$cache_root" = off ] && exit 0

key=$(
  {
    rustc -vV 2>/dev/null || echo no-rustc
    cat "$root/Cargo.lock"
    cat "$root/scripts/pg_server.sh"
    dpkg-query -W -f='${Version}' postgresql-15 2>/dev/null || true
  } | sha256sum | cut -c1-16
)
cache=$cache_root/$key

if [ ! -e "$root/target" ] && [ ! -L "$root/target" ]; then
  mkdir -p "$cache"
  ln -s "$cache" "$root/target"
  echo "build cache: target -> $cache"
fi
# A clone with a target/ of its own, or linked elsewhere, is left alone.
[ "$(readlink -f "$root/target")" = "$(readlink -f "$cache")" ] || exit 0

mkdir -p "$cache_root"
if [ -z "${RUNTIME_SANDBOX_BUILD_CACHE_LOCKED:-}" ]; then
  exec 9>"$cache_root/.lock"
  flock 9
fi
for other in "$cache_root"/*/; do
  [ "${other%/}" = "$cache" ] || { echo "build cache: removing ${other%/} (another toolchain or Cargo.lock)"; rm -rf "$other"; }
done
user="$root $(git -C "$root" rev-parse HEAD 2>/dev/null || echo no-git)"
if [ "$(cat "$cache/.last-checkout" 2>/dev/null || true)" != "$user" ]; then
  find "$cache" -mindepth 3 -maxdepth 4 -type d -path '*/.fingerprint/*' \
    \( -name 'runtime_sandbox-*' -o -name 'runtime-sandbox-recorder-*' \) -prune -exec rm -rf {} +
  echo "$user" >"$cache/.last-checkout"
fi
