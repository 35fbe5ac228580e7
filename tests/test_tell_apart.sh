#!/bin/sh
# `tqref tell-apart` (docs/variants.md, "Pinning"), end to end on the CPU model. Catches:
# a search that finds no case separating two variants that do differ (nvcc-fmad and
# fma:batch-o-cd on a decoder); a report that claims to separate two variants no case can
# (nvcc-fmad and fma:rsq on the writer differ only by fma:nsq, which changes no byte); cases
# that do not pin the build they were made for (check with the model of fma:batch-o-cd must fail
# and say "pinned ... alone"); bad arguments that are not refused with exit 2 or leave a file.
# Usage: test_tell_apart.sh TQREF
set -u
tqref=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$tqref" tell-apart --kernel decode:turbo3v:128 --rivals nvcc-fmad,fma:batch-o-cd \
  --out "$dir/apart.h5" --threads 1 >"$dir/apart.txt"
[ $? -eq 0 ] || { cat "$dir/apart.txt"; fail "decoder rivals not told apart"; }
grep -q "^tell-apart: 1 of 1 pairs" "$dir/apart.txt" || fail "no summary line"

"$tqref" check "$dir/apart.h5" --backend model --model-variant fma:batch-o-cd >"$dir/check.txt" 2>&1
[ $? -eq 1 ] || { cat "$dir/check.txt"; fail "the fma:batch-o-cd model passed the cases"; }
grep -q "pinned: reproduced bit for bit by variant:fma:batch-o-cd alone" "$dir/check.txt" ||
  { cat "$dir/check.txt"; fail "not pinned"; }

"$tqref" tell-apart --kernel writer:turbo3v --rivals fma:rsq,variant:nvcc-fmad --attempts 2 \
  --out "$dir/same.h5" >"$dir/same.txt"
[ $? -eq 1 ] || { cat "$dir/same.txt"; fail "equal variants reported as told apart"; }
grep -q "NOT told apart  fma:rsq|nvcc-fmad" "$dir/same.txt" || fail "no NOT line"

for bad in "--kernel decode:turbo3v:64 --rivals ftz,nvcc-fmad" "--kernel writer:turbo3v --rivals ftz" \
           "--kernel writer:turbo3v --rivals ftz,thresh-ge"; do
  # shellcheck disable=SC2086
  "$tqref" tell-apart $bad --out "$dir/bad.h5" 2>"$dir/bad.txt"
  [ $? -eq 2 ] || fail "$bad: not exit 2"
  [ ! -e "$dir/bad.h5" ] || fail "$bad: left a file"
  grep -q "allowed" "$dir/bad.txt" || fail "$bad: message names no allowed values"
done
echo "tell-apart: ok"
