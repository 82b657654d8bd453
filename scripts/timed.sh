#!/usr/bin/env bash
# Run a command and say how long it took: scripts/timed.sh "<what>" <command...>
what=$1; shift
start=$(date +%s)
"$@"; status=$?
echo "time: $what: $(( $(date +%s) - start )) s$([ $status -eq 0 ] || echo " (failed)")"
exit $status
