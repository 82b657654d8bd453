# Sourced by bench/recorder.sh and bench/tick.sh (needs PSQL set, run from the repository's root): the release
# recorder and fake Daytona built, the psql command's host and port, and
#   start_fake N DELAY_MS   a fake Daytona of N sandboxes of org-bench (key bench-key) in the background: $url;
#                           it stops, and the scratch directory $tmp goes, when the script exits
#   run_recorder DB LOG     the recorder into ledger `bench` of database DB, its stderr in LOG; prints its wall
#                           time in seconds and its peak memory in KiB (the kernel's count for the child)
cargo build -q --release -p runtime-sandbox-recorder --bin runtime-sandbox-recorder --example fake_daytona
host=$(sed -nE 's/.*-h +([^ ]+).*/\1/p' <<<"$PSQL"); port=$(sed -nE 's/.*-p +([0-9]+).*/\1/p' <<<"$PSQL")
tmp=$(mktemp -d)

start_fake() {
    coproc FAKE { exec target/release/examples/fake_daytona "$1" org-bench bench-key "$2"; }
    read -r url <&"${FAKE[0]}"
    trap 'exec {FAKE[1]}>&- 2>/dev/null || true; wait "$FAKE_PID" 2>/dev/null || true; rm -rf "$tmp"' EXIT
}

run_recorder() {
    DAYTONA_API_URL=$url DAYTONA_API_KEY=bench-key DAYTONA_ORGANIZATION_ID=org-bench python3 - \
        target/release/runtime-sandbox-recorder "host=$host port=$port user=postgres dbname=$1" "$2" <<'PY'
import resource, subprocess, sys, time
started = time.monotonic()
with open(sys.argv[3], "w") as log:
    subprocess.run([sys.argv[1], "--labels", '{"app":"runtime-scheduler"}', "--operation-label", "runtime-op",
                    "--ledger-schema", "bench", "--keep-last", "2", "--database", sys.argv[2]], check=True, stderr=log)
print(f"{time.monotonic() - started:.3f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
PY
}
