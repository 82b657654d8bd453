#!/usr/bin/env bash
# A Debian package of the extension for one PostgreSQL major, from `cargo pgrx package` with that major's
# pg_config:  postgresql-NN-runtime-sandbox_<version>_<arch>.deb  in target/package/, path printed last.
#   scripts/package.sh PG_CONFIG        (make package PG_MAJOR=NN)
# The package holds the library, the control file, the current install script, every update script and a
# copyright file, at Debian's paths for that major (/usr/lib/postgresql/NN/lib,
# /usr/share/postgresql/NN/extension) whatever prefix the pg_config it was built with has; it depends on
# postgresql-NN. The recorder has a package of its own (scripts/package_recorder.sh). The frozen 0.1.0 install
# script stays out: nobody installs 0.1.0 any more, and every update script from it is in.
set -euo pipefail
pg_config=${1:?usage: scripts/package.sh PG_CONFIG}
root=$(cd "$(dirname "$0")/.." && pwd)
major=$("$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
version=$(grep -E '^version *=' "$root/Cargo.toml" | head -1 | sed -E 's/.*"(.*)".*/\1/')
arch=$(dpkg --print-architecture)
name=postgresql-$major-runtime-sandbox
cd "$root"

cargo pgrx package --pg-config "$pg_config" --no-default-features --features "pg$major" >&2
built=target/release/runtime_sandbox-pg$major
so=$(find "$built" -type f -name runtime_sandbox.so)
ext=$(dirname "$(find "$built" -type f -name runtime_sandbox.control)")
[ -f "$so" ] && [ -f "$ext/runtime_sandbox--$version.sql" ] || {
  echo "package: cargo pgrx package left no library or no install script for $version in $built" >&2; exit 1; }

stage=target/package/$name
rm -rf "$stage" && mkdir -p "$stage/DEBIAN" "$stage/usr/lib/postgresql/$major/lib" \
  "$stage/usr/share/postgresql/$major/extension" "$stage/usr/share/doc/$name"
install -m 0644 "$so" "$stage/usr/lib/postgresql/$major/lib/runtime_sandbox.so"
strip --strip-unneeded "$stage/usr/lib/postgresql/$major/lib/runtime_sandbox.so"
install -m 0644 "$ext/runtime_sandbox.control" "$ext/runtime_sandbox--$version.sql" \
  "$stage/usr/share/postgresql/$major/extension/"
for update in sql/runtime_sandbox--*--*.sql; do
  install -m 0644 "$update" "$stage/usr/share/postgresql/$major/extension/"
done

sed -n '/^Format:/,$p' "$root/scripts/copyright" > "$stage/usr/share/doc/$name/copyright"

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: $arch
Maintainer: runtime_sandbox developers <runtime-sandbox@localhost>
Depends: postgresql-$major, libc6
Suggests: runtime-sandbox-recorder
Section: database
Priority: optional
Installed-Size: $size
Description: sandbox ledger reconciliation, backfill paging and stock hashes for PostgreSQL $major
 runtime_sandbox is a PostgreSQL extension: it reconciles a sandbox provider's inventory (Daytona) against
 a ledger kept in the database, pages the normalized operations backfill, and computes the stock hashes of
 managed environments. After installing: CREATE EXTENSION runtime_sandbox; (as a superuser).
 The package runtime-sandbox-recorder lists Daytona and records each listing for the scheduled
 reconciliation.
CONTROL

deb=target/package/${name}_${version}_${arch}.deb
dpkg-deb --build --root-owner-group "$stage" "$deb" >&2
echo "$root/$deb"
