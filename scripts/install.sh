#!/usr/bin/env bash
# make install: the extension, built for release, into the server of PG_CONFIG; the recorder into
# $DESTDIR$BINDIR (default /usr/local/bin). Arguments: the build's cargo feature flags (from make).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo pgrx install --release --pg-config "$PG_CONFIG" "$@"
cargo build --release -p runtime-sandbox-recorder
install -D -m 0755 target/release/runtime-sandbox-recorder "${DESTDIR:-}${BINDIR:-/usr/local/bin}/runtime-sandbox-recorder"
