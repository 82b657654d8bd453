#!/usr/bin/env bash
# Run a command and say how long it took: scripts/timed.sh "<what>" <command...>
# With RUNTIME_SANDBOX_TIMES set (scripts/test.sh all), the time is also appended there for the closing table.
what=$1; shift
start=$(date +%s)
"$@"; status=$?
took=$(( $(date +%s) - start ))
failed=$([ $status -eq 0 ] || echo " (failed)")
echo "time: $what: $took s$failed"
[ -z "${RUNTIME_SANDBOX_TIMES:-}" ] || printf '%s\t%s\t%s\n' "$what" "$took" "$failed" >>"$RUNTIME_SANDBOX_TIMES"
exit $status
