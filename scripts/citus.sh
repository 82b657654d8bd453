#!/usr/bin/env bash
# Citus 13.2.2 for the system's PostgreSQL 15, built from third_party/ and installed into that server's
# library and extension folders (a test dependency: the extension neither links nor ships it). Idempotent:
# nothing is rebuilt when that Citus is installed already. About a minute on 2 cores.
#   scripts/citus.sh            (the Citus tests run it first)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PG_CONFIG=${CITUS_PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
version=13.2.2
libdir=$("$PG_CONFIG" --pkglibdir)
control=$("$PG_CONFIG" --sharedir)/extension/citus.control
marker=${RUNTIME_SANDBOX_PG_ROOT:-/var/tmp/runtime_sandbox-pg}/citus-$("$PG_CONFIG" --version | sed -E "s/^PostgreSQL ([0-9]+).*/\1/").built
if [ -f "$libdir/citus.so" ] && [ -f "$control" ] && [ "$(cat "$marker" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
deps=(liblz4-dev libzstd-dev libcurl4-openssl-dev libkrb5-dev libssl-dev libselinux1-dev libxslt1-dev libpam0g-dev)
missing=()
for p in "${deps[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "citus: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
build=$(mktemp -d /var/tmp/runtime_sandbox-citus.XXXXXX)
trap 'rm -rf "$build"' EXIT
echo "citus: building Citus $version for $("$PG_CONFIG" --version)" >&2
tar -xzf "$here/../third_party/citus-$version.tar.gz" -C "$build"
cd "$build"/citus-*
# Debian's 15.20 headers export have_createdb_privilege(); the patch guards Citus's own copy by version.
patch -s -p1 < "$here/../third_party/citus-$version-pg15.20.patch"
./configure -q PG_CONFIG="$PG_CONFIG" >/dev/null
make -s -j"$(nproc)" >/dev/null 2>&1 || make -j1
$SUDO make -s install >/dev/null
mkdir -p "$(dirname "$marker")" && echo "$version" > "$marker"
echo "citus: installed into $libdir" >&2
