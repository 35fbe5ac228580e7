#!/bin/sh
# Generates the flags suite and runs `tqref coverage --require-all` on it (docs/variants.md,
# "Coverage"). Catches a model, suite or search change that leaves a rounding step or variant of
# any kernel unseen (the suite sees all of them), and an entry dropped from the count (M must be
# TOTAL). Usage: test_coverage_flags.sh TQREF TOTAL
set -eu
tqref=$1 total=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$tqref" generate --suite flags --seed 1 --out "$dir/flags.h5" >/dev/null
status=0
"$tqref" coverage "$dir/flags.h5" --first --require-all >"$dir/coverage.txt" || status=$?
line=$(tail -n 1 "$dir/coverage.txt")
echo "$line"
grep BLIND "$dir/coverage.txt" | sort | uniq -c || true
set -- $line   # coverage: N of M observable
[ "$4" -eq "$total" ] || { echo "expected $total entries, got $4" >&2; exit 1; }
[ "$status" -eq 0 ] || { echo "blind spots: tqref coverage --require-all exited $status" >&2; exit 1; }
