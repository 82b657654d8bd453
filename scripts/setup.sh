#!/usr/bin/env bash
# Install what building and testing runtime_sandbox needs, and nothing twice.
# Safe to run on every `make`: each step checks before it acts.
#   scripts/setup.sh          everything `make test` and `make demo` need (Debian packages included)
#   scripts/setup.sh build    only what building into an existing server needs (`make install`): cargo-pgrx
#                             and `cargo pgrx init` for that server's pg_config; no PostgreSQL is installed
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}
PG_CONFIG="${PG_CONFIG:-/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config}"
here=$(cd "$(dirname "$0")" && pwd)
PGRX_VERSION=0.18.1
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# The server's major, from its pg_config (cargo pgrx init and the build's pgNN feature follow it).
server_major() { "$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/'; }

build_setup() {
  if ! command -v cargo >/dev/null; then
    echo "setup: building needs a Rust toolchain (https://rustup.rs)" >&2; exit 1
  fi
  if ! [ -x "$PG_CONFIG" ]; then
    echo "setup: no pg_config at $PG_CONFIG: pass PG_CONFIG=<the server's pg_config>" >&2; exit 1
  fi
  if ! ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 && ! ldconfig -p 2>/dev/null | grep -q libclang; then
    echo "setup: building needs libclang (Debian: apt-get install libclang-dev)" >&2; exit 1
  fi
  if ! cargo pgrx --version 2>/dev/null | grep -q "$PGRX_VERSION"; then
    echo "setup: installing cargo-pgrx $PGRX_VERSION (about 5 minutes)"
    cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
  fi
  local major
  major=$(server_major)
  if ! grep -qs "pg${major} *= *\"$PG_CONFIG\"" "${PGRX_HOME:-$HOME/.pgrx}/config.toml"; then
    echo "setup: cargo pgrx init --pg${major} $PG_CONFIG"
    cargo pgrx init --pg"${major}" "$PG_CONFIG"
  fi
}

# target/ in the build cache outside the clone, before anything builds (scripts/build_cache.sh).
"$here/build_cache.sh"

if [ "${1:-}" = build ]; then
  build_setup
  exit 0
fi

# Debian 12's PostgreSQL 15 always (its psql and pg_regress serve every major's tests); patchelf for the other
# majors' servers (scripts/pg_server.sh); debootstrap for the package test's Debian 13 root (test_package.sh).
packages=(postgresql-15 postgresql-server-dev-15 postgresql-15-cron libclang-dev sudo python3 patchelf debootstrap)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# prometheus-postgres-exporter and prometheus (for promtool): the monitoring files' test (tests/monitoring.rs).
monitoring=()
for p in prometheus-postgres-exporter prometheus; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || monitoring+=("$p")
done
if [ ${#monitoring[@]} -gt 0 ]; then
  echo "setup: installing ${monitoring[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${monitoring[@]}" >/dev/null
fi

if [ "$PG_MAJOR" != 15 ] && ! [ -x "$PG_CONFIG" ]; then
  "$here/pg_server.sh" "$PG_MAJOR" >/dev/null
fi

build_setup

# pgspot (make test runs it over the generated install script and the update scripts): a venv of its own.
PGSPOT_VERSION=0.9.4
tools="${RUNTIME_SANDBOX_TOOLS:-$HOME/.cache/runtime_sandbox}"
if ! "$tools/pgspot/bin/pgspot" --version 2>/dev/null | grep -q "$PGSPOT_VERSION"; then
  echo "setup: installing pgspot $PGSPOT_VERSION into $tools/pgspot"
  if ! python3 -m venv --help >/dev/null 2>&1; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
  fi
  rm -rf "$tools/pgspot"
  python3 -m venv "$tools/pgspot"
  "$tools/pgspot/bin/pip" install --quiet --disable-pip-version-check "pgspot==$PGSPOT_VERSION"
fi

# Migration tools the backfill's recipes are tested with (tests/migration_tools.rs), from the npm registry and
# PyPI, pinned: node-pg-migrate and dbmate (npm), alembic and yoyo (PyPI).
MIGRATE_TOOLS="node-pg-migrate@9.0.0 pg@8.16.3 dbmate@2.36.0 | alembic==1.20.1 psycopg[binary]==3.3.9 yoyo-migrations==9.0.0 psycopg2-binary==2.9.13"
migrate="$tools/migrate"
if [ "$(cat "$migrate/installed" 2>/dev/null)" != "$MIGRATE_TOOLS" ]; then
  echo "setup: installing migration tools into $migrate"
  if ! command -v npm >/dev/null; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
  fi
  rm -rf "$migrate"
  mkdir -p "$migrate"
  # shellcheck disable=SC2086
  npm install --silent --no-audit --no-fund --prefix "$migrate/node" ${MIGRATE_TOOLS%%|*}
  python3 -m venv "$migrate/py"
  # shellcheck disable=SC2086
  "$migrate/py/bin/pip" install --quiet --disable-pip-version-check ${MIGRATE_TOOLS#*|}
  echo "$MIGRATE_TOOLS" > "$migrate/installed"
fi
