#!/usr/bin/env bash
# Runs COMMAND with its standard output in PREFIX.out and each line of its standard error stamped
# with the time it arrived (epoch seconds, stderr is unbuffered) in PREFIX.err.ts, and writes
# "START END EXIT" to PREFIX.wall; the faults plan reads them (scripts/device/faults_checks.py).
#   scripts/device/stamp-stderr.sh PREFIX COMMAND...
# Exit: COMMAND's.
set -u
LC_NUMERIC=C  # a decimal point in EPOCHREALTIME
prefix=$1
shift
t0=$EPOCHREALTIME
"$@" 2>&1 1>"$prefix.out" | while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done >"$prefix.err.ts"
rc=${PIPESTATUS[0]}
echo "$t0 $EPOCHREALTIME $rc" >"$prefix.wall"
sed 's/^/stderr: /' "$prefix.err.ts" | cut -c1-400
exit "$rc"
