#!/usr/bin/env bash
# Host-side test of the launches plan (scripts/device/plans.tsv; no GPU): runs it through
# scripts/device-run.sh with a fake tqref
# (tests/device_launches_fake_tqref.py: the real CPU build for generate, `tqref check --backend
# model` in place of conform) over a fake carry folder (empty module files, the mutant manifest
# expanded from kernels/testing/mutants/mutants.tsv as kernels/testing/CMakeLists.txt does).
# Would catch: a plan that does not run every step, misreads the reports (a failing control,
# a passing build-flag mutant or a launch outside the contract that is not reported), or exits 0
# when an expectation fails. About 30 s on 2 cores (shard 4/8 of the models and flags suites).
# Usage (repository root): bash tests/device_launches_host.sh [TQREF]   (default
# build/cpu-only/cli/tqref); CTest runs it as device_launches_script.
set -u
root=$PWD
export REAL_TQREF=${1:-$root/build/cpu-only/cli/tqref}
[[ -x $REAL_TQREF ]] || { echo "missing $REAL_TQREF: build target tqref" >&2; exit 2; }
tmp=$(mktemp -d /tmp/tqref-launches-host.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
carry=$tmp/carry
mkdir -p "$carry/modules" "$carry/mutants"
for m in writers decode_hdim128 decode_hdim256; do : > "$carry/modules/$m.fatbin"; done
awk -F'\t' '/^[0-9]/ {
  n = split($3, kinds, ",")
  for (i = 1; i <= n; ++i) {
    if (kinds[i] == "writers") mods = "writers"
    else if (kinds[i] == "decode") mods = "decode_hdim128 decode_hdim256"
    else mods = "decode_hdim128"
    m = split(mods, list, " ")
    for (k = 1; k <= m; ++k) printf "%s\t%s\t%s\tmutant_%s_%s.%s.fatbin\t%s\n", $1, $2, list[k], $1, $2, list[k], $5
  }
}' kernels/testing/mutants/mutants.tsv > "$carry/mutants/mutants.tsv"
cut -f4 "$carry/mutants/mutants.tsv" | while read -r f; do : > "$carry/mutants/$f"; done
# Shard 4/8 of the models suite: one launch outside the contract per decoder build, in seconds.
mkdir -p "$tmp/cache"
run() {  # run OUT: the launches plan into OUT/launches, its files unpacked there
  FAKE_CACHE=$tmp/cache TQREF_PYTHON=/usr/bin/python3 TQREF_BIN=$root/tests/device_launches_fake_tqref.py TQREF_CARRY=$carry TQREF_LAUNCHES_SHARD=4/8 \
      OUT=$1 bash scripts/device-run.sh launches
  local rc=$?
  [[ -f $1/launches/launches.tar.xz ]] && tar -C "$1/launches" -xJf "$1/launches/launches.tar.xz"
  return $rc
}
fail=0
run "$tmp/ok" > "$tmp/ok.log" 2>&1
rc=$?
ok=$tmp/ok/launches
if [[ $rc != 0 ]]; then echo "FAIL: the launches plan: exit $rc on fake results that hold"; cat "$ok/summary.txt"; fail=1; fi
grep -q "launches outside the contract, all within level T" "$ok/verdicts.log" ||
  { echo "FAIL: the verdicts do not report the launches outside the contract"; fail=1; }
grep -q "RESULT: every step gave its expected exit code" "$ok/summary.txt" || { echo "FAIL: no RESULT line"; fail=1; }
for f in summary.txt launches.tsv verdicts.log conform-own.md; do [[ -s $ok/$f ]] || { echo "FAIL: $f missing"; fail=1; }; done
FAKE_BREAK=control run "$tmp/bad" > "$tmp/bad.log" 2>&1
rc=$?
if [[ $rc != 1 ]]; then echo "FAIL: the launches plan: exit $rc when the control fails (expected 1)"; fail=1; fi
grep -q "PROBLEM: m27_plain_ieee: the control fails" "$tmp/bad/launches/verdicts.log" ||
  { echo "FAIL: the verdicts do not name the failing control"; fail=1; }
(( fail )) || { echo "launches plan host test: ok ($SECONDS s)"; sed -n '1,40p' "$ok/summary.txt"; cat "$ok/verdicts.log"; }
exit $fail
