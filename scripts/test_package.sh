#!/usr/bin/env bash
# The package test: build postgresql-NN-runtime-sandbox (scripts/package.sh) and runtime-sandbox-recorder
# (scripts/package_recorder.sh), install both with dpkg into a system with a PostgreSQL that has never seen this
# source tree, run the pg_regress goldens there (all four databases) and the recorder, then remove them (the
# recorder purged) and check that nothing of them is left.
#   scripts/test_package.sh 15   into the system's PostgreSQL 15 (Debian 12), in a scratch cluster of its own;
#                                a development install (make install, make install-dev) is set aside first,
#                                so only the package's files are tested, and put back afterwards (installed
#                                packages are reinstalled from this build); a cluster then creates the extension
#   scripts/test_package.sh 17   into a Debian 13 root made with debootstrap from the system's mirror, with its own
#                                postgresql-17 and postgresql-17-cron installed by apt in it (cached under
#                                RUNTIME_SANDBOX_PG_ROOT/debian13): what a user on Debian 13 does
# (make test-package PG_MAJOR=NN; make test runs it on 15 and 17.)
set -euo pipefail
major=${1:?usage: scripts/test_package.sh 15|17}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
name=postgresql-$major-runtime-sandbox
pg_config=$("$here/pg_server.sh" "$major")   # the build's pg_config (and the client programs pg_regress uses)
deb=$("$here/package.sh" "$pg_config" | tail -1)
rdeb=$("$here/package_recorder.sh" | tail -1)
echo "test_package: $(basename "$deb") $(basename "$rdeb")"
port=${RUNTIME_SANDBOX_PKG_PORT:-$([ "$major" = 15 ] && echo 28817 || echo "29${major}7")}
dir=/tmp/runtime_sandbox-pkg-$major

# Every file the package installs is its own, and dpkg -r removes them all.
check_installed() {   # $1: a command prefix that runs dpkg-query in the target system
  local listed
  listed=$($1 dpkg-query -L "$name" | grep -E 'runtime_sandbox|runtime-sandbox' | sort)
  for want in "/usr/lib/postgresql/$major/lib/runtime_sandbox.so" \
              "/usr/share/postgresql/$major/extension/runtime_sandbox.control" \
              "/usr/share/postgresql/$major/extension/runtime_sandbox--0.4.0.sql" \
              "/usr/share/postgresql/$major/extension/runtime_sandbox--0.1.0--0.2.0.sql" \
              "/usr/share/postgresql/$major/extension/runtime_sandbox--0.2.0--0.3.0.sql" \
              "/usr/share/postgresql/$major/extension/runtime_sandbox--0.3.0--0.4.0.sql"; do
    grep -qx "$want" <<<"$listed" || { echo "test_package: the package does not install $want" >&2; exit 1; }
  done
  # The recorder's package: its program, units and settings (a conffile), and the user the service runs as.
  listed=$($1 dpkg-query -L runtime-sandbox-recorder)
  for want in /usr/bin/runtime-sandbox-recorder /usr/lib/systemd/system/runtime-sandbox-recorder.service \
              /usr/lib/systemd/system/runtime-sandbox-recorder.timer /etc/runtime-sandbox/recorder.env \
              /usr/share/doc/runtime-sandbox-recorder/examples/cronjob.yaml; do
    grep -qx "$want" <<<"$listed" || { echo "test_package: the recorder's package does not install $want" >&2; exit 1; }
  done
  $1 dpkg-query -W -f='${Conffiles}' runtime-sandbox-recorder | grep -q '/etc/runtime-sandbox/recorder.env' || {
    echo "test_package: recorder.env is not a conffile" >&2; exit 1; }
  $1 getent passwd runtime-sandbox >/dev/null || { echo "test_package: no user runtime-sandbox" >&2; exit 1; }
  # The recorder runs in the target system (its own libc), and says which version it is.
  $1 /usr/bin/runtime-sandbox-recorder --version | grep -qx "runtime-sandbox-recorder 0.4.0" || {
    echo "test_package: /usr/bin/runtime-sandbox-recorder does not run there" >&2; exit 1; }
}
check_gone() {   # $1: the target system's root ('' for this one)
  local left
  left=$(find "$1/usr/lib/postgresql/$major/lib" "$1/usr/share/postgresql/$major/extension" "$1/usr/share/doc" \
              "$1/usr/bin/runtime-sandbox-recorder" "$1/usr/lib/systemd/system" "$1/etc/runtime-sandbox" \
              \( -name 'runtime_sandbox.so' -o -name 'runtime_sandbox.control' -o -name 'runtime_sandbox--*.sql' \
                 -o -name 'runtime-sandbox-recorder*' -o -name 'recorder.env' -o -name "$name" \) 2>/dev/null || true)
  if [ -n "$left" ]; then echo "test_package: dpkg -r left behind: $left" >&2; exit 1; fi
  echo "test_package: dpkg -r left nothing behind"
}

case "$major" in
15)
  libdir=$("$pg_config" --pkglibdir) extdir=$("$pg_config" --sharedir)/extension
  # What this system had is put back afterwards: the packages (reinstalled from this build) or the files a
  # make install / make install-dev left (kept aside meanwhile), so a demo cluster still has its extension.
  installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
  had_package=$(installed "$name" && echo yes || true)
  had_recorder=$(installed runtime-sandbox-recorder && echo yes || true)
  kept=$(mktemp -d)
  if [ -z "$had_package" ]; then
    for f in "$libdir/runtime_sandbox.so" "$extdir"/runtime_sandbox.control "$extdir"/runtime_sandbox--*.sql; do
      if [ -e "$f" ]; then cp -p "$f" "$kept/"; fi
    done
  fi
  if [ -n "$had_package" ]; then dpkg -r "$name" >/dev/null; fi
  if [ -n "$had_recorder" ]; then dpkg -P runtime-sandbox-recorder >/dev/null; fi
  rm -f "$libdir/runtime_sandbox.so" "$extdir"/runtime_sandbox.control "$extdir"/runtime_sandbox--*.sql
  dpkg -i "$deb" "$rdeb" >/dev/null
  check_installed ""
  "$here/cluster.sh" stop "$dir"; rm -rf "$dir"
  PG_CONFIG=$pg_config "$here/cluster.sh" start "$dir" "$port"
  status=0
  PG_CONFIG=$pg_config "$here/regress.sh" "$dir" "$port" || status=$?
  "$here/cluster.sh" stop "$dir"; rm -rf "$dir"
  dpkg -r "$name" >/dev/null
  dpkg -P runtime-sandbox-recorder >/dev/null
  check_gone ""
  # Put back what was there, and check that a cluster can still create the extension.
  if [ -n "$had_package" ]; then dpkg -i "$deb" >/dev/null; fi
  if [ -n "$had_recorder" ]; then dpkg -i "$rdeb" >/dev/null; fi
  if [ -e "$kept/runtime_sandbox.so" ]; then
    install -m 0644 "$kept/runtime_sandbox.so" "$libdir/"
    install -m 0644 "$kept"/runtime_sandbox.control "$kept"/runtime_sandbox--*.sql "$extdir/"
  fi
  rm -rf "$kept"
  if [ -n "$had_package" ] || [ -e "$libdir/runtime_sandbox.so" ]; then
    PG_CONFIG=$pg_config "$here/cluster.sh" start "$dir" "$port"
    { psql -X -q -h "$dir" -p "$port" -U postgres -d postgres -c "CREATE DATABASE runtime_sandbox_put_back" &&
      psql -X -q -h "$dir" -p "$port" -U postgres -d runtime_sandbox_put_back -v ON_ERROR_STOP=1 \
        -c "CREATE EXTENSION runtime_sandbox"; } >/dev/null ||
      { echo "test_package: CREATE EXTENSION fails after the package test put back the install" >&2; status=1; }
    "$here/cluster.sh" stop "$dir"; rm -rf "$dir"
    echo "test_package: put back what was installed; CREATE EXTENSION works"
  fi
  exit $status
  ;;
17) ;;
*) echo "test_package: no recipe for PostgreSQL $major (15, 17)" >&2; exit 2 ;;
esac

# A Debian 13 root of its own, prepared once: debootstrap minbase, then apt inside it installs postgresql-17
# and postgresql-17-cron (no service is started: policy-rc.d says no).
droot=${RUNTIME_SANDBOX_PG_ROOT:-/var/tmp/runtime_sandbox-pg}/debian13
mounted=()
mount_in() {   # /proc, /dev and /dev/shm of this machine inside the root (the server needs them)
  for m in proc dev dev/shm; do
    mountpoint -q "$droot/$m" && continue
    mkdir -p "$droot/$m"
    if [ "$m" = proc ]; then mount -t proc proc "$droot/proc"; else mount --bind "/$m" "$droot/$m"; fi
    mounted=("$droot/$m" "${mounted[@]}")
  done
}
unmount_all() { for m in "${mounted[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" || true; done; }
trap unmount_all EXIT
in_root() { chroot "$droot" "$@"; }
recipe=1
if [ "$(cat "$droot/.runtime_sandbox_ready" 2>/dev/null)" != "$recipe" ]; then
  command -v debootstrap >/dev/null || { echo "test_package: needs debootstrap (scripts/setup.sh installs it)" >&2; exit 1; }
  mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v -- '-security' | head -1 || true)
  [ -n "$mirror" ] || mirror=$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | grep -v -- '-security' | head -1 || true)
  [ -n "$mirror" ] || { echo "test_package: no Debian mirror in the system's apt sources" >&2; exit 1; }
  echo "test_package: a Debian 13 root with postgresql-17 in $droot ($mirror)" >&2
  for m in dev/shm dev proc; do mountpoint -q "$droot/$m" 2>/dev/null && umount -l "$droot/$m"; done
  rm -rf "$droot"
  debootstrap --variant=minbase trixie "$droot" "$mirror" >/dev/null
  printf '#!/bin/sh\nexit 101\n' > "$droot/usr/sbin/policy-rc.d"; chmod 755 "$droot/usr/sbin/policy-rc.d"
  mount_in
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    postgresql-17 postgresql-17-cron >/dev/null
  in_root apt-get clean
  echo "$recipe" > "$droot/.runtime_sandbox_ready"
fi
mount_in

cp "$deb" "$rdeb" "$droot/tmp/"
if in_root dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q 'ok installed'; then in_root dpkg -r "$name" >/dev/null; fi
if in_root dpkg-query -W -f='${Status}' runtime-sandbox-recorder 2>/dev/null | grep -q 'ok installed'; then
  in_root dpkg -P runtime-sandbox-recorder >/dev/null
fi
in_root dpkg -i "/tmp/$(basename "$deb")" "/tmp/$(basename "$rdeb")" >/dev/null
rm -f "$droot/tmp/$(basename "$deb")" "$droot/tmp/$(basename "$rdeb")"
check_installed in_root

# A cluster inside the root, run by the root's own postgres user and server binaries.
bin=/usr/lib/postgresql/17/bin
data=/var/tmp/runtime_sandbox-pkg
as_pg() { in_root su postgres -s /bin/sh -c "$*"; }
stop_server() { as_pg "$bin/pg_ctl -D $data -m fast -w stop" >/dev/null 2>&1 || true; }
stop_server
rm -rf "$droot$data"
as_pg "$bin/initdb -D $data -U postgres --auth=trust -E UTF8 --locale=C.UTF-8" >/dev/null
cat >> "$droot$data/postgresql.conf" <<CONF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '/tmp'
shared_preload_libraries = 'pg_cron'
cron.database_name = 'postgres'
fsync = off
CONF
as_pg "$bin/pg_ctl -D $data -l $data/server.log -w start" >/dev/null
status=0
# pg_regress and psql from the build's server (same major) reach the root's server over TCP; the frozen 0.1.0
# script goes into the root's extension folder for the updated database, and out again.
PG_CONFIG=$pg_config RUNTIME_SANDBOX_REGRESS_SERVER=running \
  RUNTIME_SANDBOX_REGRESS_EXTDIR=$droot/usr/share/postgresql/17/extension \
  "$here/regress.sh" "$dir" "$port" || status=$?
stop_server
rm -rf "$droot$data"
in_root dpkg -r "$name" >/dev/null
in_root dpkg -P runtime-sandbox-recorder >/dev/null
check_gone "$droot"
exit $status
