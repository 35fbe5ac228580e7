#!/bin/sh
# Generates the flags suite and runs `tqref coverage` on it (docs/variants.md, "Coverage").
# Catches a model, suite or search change that leaves a rounding step or variant the suite used to
# see unseen: the count of observable entries must not fall below the floor measured when the
# suite was last extended (it is raised, never lowered, as the suite learns to see more), and
# every entry must still be counted (M). Usage: test_coverage_flags.sh TQREF FLOOR TOTAL
set -eu
tqref=$1 floor=$2 total=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$tqref" generate --suite flags --seed 1 --out "$dir/flags.h5" >/dev/null
"$tqref" coverage "$dir/flags.h5" --first >"$dir/coverage.txt"
line=$(tail -n 1 "$dir/coverage.txt")
echo "$line"
grep BLIND "$dir/coverage.txt" | sort | uniq -c || true
set -- $line   # coverage: N of M observable
[ "$4" -eq "$total" ] || { echo "expected $total entries, got $4" >&2; exit 1; }
[ "$2" -ge "$floor" ] || { echo "coverage fell below the floor $floor" >&2; exit 1; }
