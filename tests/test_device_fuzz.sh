#!/usr/bin/env bash
# Host-side checks of the fuzz plan's pieces (no fuzz build needed): scripts/device/fuzz-campaigns.sh
# and scripts/device-carry.sh --fuzz. Catches: a usage error or a missing packed tree that starts
# fuzzers or exits 0 instead of exit 2 with a message; a pack from a tree without the targets that
# writes a partial carry instead of refusing.
set -u
root=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect CODE PATTERN -- command...
  local code=$1 pat=$2 out rc
  shift 3
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc != "$code" ]] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: '$*' gave exit $rc, wanted $code and '$pat'; output: $out"
    fail=1
  fi
}
export TQREF_FUZZ_CARRY=$tmp/none
campaigns=$root/scripts/device/fuzz-campaigns.sh
expect 2 "usage" -- bash "$campaigns"
expect 2 "usage" -- bash "$campaigns" "$tmp/out" ten fuzz_trace_reader=1
expect 2 "TARGET=WORKERS" -- bash "$campaigns" "$tmp/out" 10
expect 2 "missing" -- bash "$campaigns" "$tmp/out" 10 fuzz_trace_reader=1
[[ -e $tmp/out ]] && { echo "FAIL: run without a carry created its output directory"; fail=1; }
mkdir -p "$tmp/empty-build"
expect 2 "usage" -- bash "$root/scripts/device-carry.sh" --fly
expect 2 "missing: run scripts/fuzz.sh first" -- bash "$root/scripts/device-carry.sh" --fuzz "$tmp/empty-build"
[[ -e $tmp/none || -e $tmp/none.tar.xz ]] && { echo "FAIL: a refused pack left a tree or an archive"; fail=1; }
((fail == 0)) && echo "fuzz-campaigns.sh, device-carry.sh --fuzz: usage and missing-input checks hold"
exit $fail
