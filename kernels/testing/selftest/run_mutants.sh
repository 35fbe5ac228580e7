#!/usr/bin/env bash
# Runs tqref_kernels_selftest against every mutant fatbin and prints which ones it catches.
# Usage: kernels/testing/selftest/run_mutants.sh BUILD_DIR
#   (after `cmake --build BUILD_DIR --target tqref_kernels_selftest tqref_mutant_modules`)
# A mutant is "caught" when the selftest exits 1 (mismatch or fault); exit 2 (no GPU) aborts.
set -u
build=${1:?usage: run_mutants.sh BUILD_DIR}
selftest=$build/kernels/testing/tqref_kernels_selftest
mutants=$build/kernels/testing/mutants
manifest=$mutants/mutants.tsv
[[ -x $selftest && -f $manifest ]] || { echo "missing $selftest or $manifest" >&2; exit 2; }
caught=0 total=0
while IFS=$'\t' read -r id short module file what; do
  [[ $id == \#* ]] && continue
  total=$((total + 1))
  "$selftest" --module "$module=$mutants/$file" > "$mutants/$file.log" 2>&1
  rc=$?
  [[ $rc == 2 ]] && { echo "no GPU"; exit 2; }
  if [[ $rc == 1 ]]; then verdict=caught; caught=$((caught + 1)); else verdict=SURVIVED; fi
  printf '%-3s %-28s %-15s %s\n' "$id" "$short" "$module" "$verdict"
done < "$manifest"
echo "caught $caught of $total mutant builds"
