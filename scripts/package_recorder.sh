#!/usr/bin/env bash
# The recorder's own Debian package, independent of the PostgreSQL major (so the extension packages of two
# majors and the recorder install side by side): runtime-sandbox-recorder_<version>_<arch>.deb in
# target/package/, path printed last.
#   scripts/package_recorder.sh        (make package builds it beside the extension's)
# It holds /usr/bin/runtime-sandbox-recorder, the systemd service and timer (installed, not enabled), the
# settings file /etc/runtime-sandbox/recorder.env as a conffile (an edited one survives upgrades), the Kubernetes
# CronJob example and a copyright file; its postinst creates the system user runtime-sandbox the service runs as.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(grep -E '^version *=' "$root/recorder/Cargo.toml" | head -1 | sed -E 's/.*"(.*)".*/\1/')
arch=$(dpkg --print-architecture)
name=runtime-sandbox-recorder
cd "$root"

cargo build --release -p runtime-sandbox-recorder >&2
stage=target/package/$name
rm -rf "$stage" && mkdir -p "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/lib/systemd/system" \
  "$stage/etc/runtime-sandbox" "$stage/usr/share/doc/$name/examples"
install -m 0755 target/release/runtime-sandbox-recorder "$stage/usr/bin/runtime-sandbox-recorder"
strip --strip-unneeded "$stage/usr/bin/runtime-sandbox-recorder"
install -m 0644 recorder/deploy/runtime-sandbox-recorder.service recorder/deploy/runtime-sandbox-recorder.timer \
  "$stage/usr/lib/systemd/system/"
install -m 0640 recorder/deploy/recorder.env "$stage/etc/runtime-sandbox/recorder.env"
install -m 0644 recorder/deploy/cronjob.yaml "$stage/usr/share/doc/$name/examples/"
sed -n '/^Format:/,$p' "$root/scripts/copyright" > "$stage/usr/share/doc/$name/copyright"

echo "/etc/runtime-sandbox/recorder.env" > "$stage/DEBIAN/conffiles"
cat > "$stage/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
# The system user the service runs as (no home, no shell); the settings file readable by its group.
set -e
if [ "$1" = configure ]; then
  if ! getent passwd runtime-sandbox >/dev/null; then
    useradd --system --user-group --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin \
      --comment "runtime_sandbox recorder" runtime-sandbox
  fi
  chgrp runtime-sandbox /etc/runtime-sandbox/recorder.env
  if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
fi
exit 0
POSTINST
cat > "$stage/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
# The user stays (files it wrote may remain, as Debian's policy has it); systemd forgets the units.
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
exit 0
POSTRM
chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/postrm"

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: $arch
Maintainer: runtime_sandbox developers <runtime-sandbox@localhost>
Depends: libc6, passwd
Section: database
Priority: optional
Installed-Size: $size
Description: lists Daytona completely and records the listing for runtime_sandbox
 runtime-sandbox-recorder lists every sandbox of a Daytona organization in a label scope, completely or not at
 all, and records the listing in a PostgreSQL database with the runtime_sandbox extension, for its scheduled
 reconciliation. A systemd timer (installed disabled) runs it every 3 minutes: edit
 /etc/runtime-sandbox/recorder.env, put the API key in /etc/runtime-sandbox/daytona.key, then
 systemctl enable --now runtime-sandbox-recorder.timer.
CONTROL

deb=target/package/${name}_${version}_${arch}.deb
dpkg-deb --build --root-owner-group "$stage" "$deb" >&2
echo "$root/$deb"
