#!/usr/bin/env bash
# GPU fault path on a real GPU (docs/reliability.md, "GPU faults"): `tqref check` of the smoke
# suite with each faulty decoder module (kernels/testing/faulty/faulty_decode.cu: turbo2v/turbo4v
# real, turbo3v traps, runs away or writes to an illegal address), then a normal run on the built-in
# kernels to show that the GPU is usable again. Asserts, per faulty module:
#   trap, illegal: exit 6 within 60 s; the faulting case and kernel named with the CUDA error; the
#     context reset after each fault: every turbo2v/turbo4v case (before and after) passes, every
#     turbo3v case is an error in the JSON report;
#   runaway: exit 6 within 15 s (--launch-timeout 2) with the watchdog message; the cases before
#     pass, the timed-out case is an error, every later case "not launched"; the process exits
#     without waiting for the kernel (time from the exit message to the reaped process printed);
#   all: JSON and JUnit reports written, no *.partial-* file left, no tqref process left on the GPU.
# Usage (repository root on the GPU machine, after scripts/device-carry.sh BUILD here, with the
# faulty modules built: cmake --build BUILD --target tqref_faulty_modules):
#   bash scripts/device-faults.sh OUT_DIR
# Writes OUT_DIR/summary.txt and, per run, <name>.{out,err.ts,json,junit.xml}. Exit 0 when every
# assertion holds.
set -u
out=${1:-${OUT:-}}
[[ -n $out ]] || { echo "usage: scripts/device-faults.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$out"
root=$PWD
carry=$root/.device-carry
tq=$carry/bin/tqref
export LD_LIBRARY_PATH=$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TQREF_DATA_DIR=$root/data
smoke=$root/data/golden/smoke.h5
summary=$out/summary.txt
: > "$summary"
failures=0
say() { echo "$*" | tee -a "$summary"; }
check() {  # check DESCRIPTION CONDITION-RESULT(0/1)
  if [[ $2 == 0 ]]; then say "  ok    $1"; else say "  FAIL  $1"; failures=$((failures + 1)); fi
}
for f in trap runaway illegal; do
  [[ -f $carry/faulty/faulty_$f.fatbin ]] ||
    { echo "missing $carry/faulty/faulty_$f.fatbin: cmake --build BUILD --target tqref_faulty_modules, then scripts/device-carry.sh BUILD" >&2; exit 2; }
done
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$summary"

# run NAME LIMIT ARGS...: tqref check with a hard wall-clock LIMIT (a hang at exit shows as rc 124),
# stderr lines time-stamped (stderr is unbuffered). Sets rc, wall, t_end.
run_check() {
  local name=$1 limit=$2
  shift 2
  local t0
  t0=$(date +%s.%N)
  timeout -k 5 "$limit" "$tq" check "$smoke" "$@" --report "$out/$name.json" --junit "$out/$name.junit.xml" \
      2>&1 1>"$out/$name.out" |
    while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done > "$out/$name.err.ts"
  rc=${PIPESTATUS[0]}
  t_end=$(date +%s.%N)
  wall=$(awk -v a="$t0" -v b="$t_end" 'BEGIN { printf "%.2f", b - a }')
  say "== $name: exit $rc, wall $wall s"
  sed 's/^/    stderr: /' "$out/$name.err.ts" | cut -c1-400 | tee -a "$summary" >/dev/null
}
# verdict NAME CASE: "pass", "error: <first line of the error>" or "absent" from the JSON report.
verdict() {
  python3 - "$out/$1.json" "$2" <<'PY' 2>/dev/null || echo absent
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["results"] if r["name"] == sys.argv[2]]
if not rows:
    print("absent")
elif rows[0]["pass"]:
    print("pass")
else:
    print("error: " + " | ".join(rows[0].get("error", "").splitlines()))
PY
}
# case_names NAME: the case names of the JSON report, in run order.
case_names() {
  python3 -c 'import json, sys; [print(r["name"]) for r in json.load(open(sys.argv[1]))["results"]]' \
    "$out/$1.json" 2>/dev/null
}
common_checks() {  # NAME
  check "$1: JSON report written" "$([[ -s $out/$1.json ]]; echo $?)"
  check "$1: JUnit report written" "$([[ -s $out/$1.junit.xml ]]; echo $?)"
  check "$1: no partial output left" "$(ls "$out" | grep -q 'partial-'; [[ $? != 0 ]]; echo $?)"
  if command -v nvidia-smi >/dev/null; then
    local left
    left=$(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | grep -c tqref)
    check "$1: no tqref process left on the GPU ($left)" "$([[ $left == 0 ]]; echo $?)"
  fi
}

for f in trap illegal; do
  run_check "$f" 60 --backend gpu --module "$carry/faulty/faulty_$f.fatbin" --hdim 128 --launch-timeout 2
  check "$f: exit 6" "$([[ $rc == 6 ]]; echo $?)"
  check "$f: stderr names the faulting case" "$(grep -q 'faulted the GPU: 0006_decode_turbo3v' "$out/$f.err.ts"; echo $?)"
  check "$f: stdout names case, kernel and CUDA error" \
    "$(grep -q 'case 0006_decode_turbo3v.*kernel paged_decode_attn_bf16k_turbo3v.*CUDA_ERROR_' "$out/$f.out"; echo $?)"
  # Every case in the report, in order. The CUDA driver keeps a sticky error (trap, illegal
  # address) for the whole process (measured on the H200, driver 580.159.04: after
  # cuDevicePrimaryCtxReset, cuDevicePrimaryCtxRetain returns the same error), so after the
  # first fault either the reset worked (turbo3v faults, every other case passes) or tqref stops
  # cleanly: the faulting case names the failed reset, every later case is "not launched".
  n3=0
  phase=before
  for c in $(case_names "$f"); do
    v=$(verdict "$f" "$c")
    say "    report $c: ${v:0:300}"
    if [[ $phase == stopped ]]; then
      check "$f: $c not launched after the clean stop" "$([[ $v == "error: not launched"* ]]; echo $?)"
      continue
    fi
    if [[ $c == *decode_turbo3v* && $c != *__writer ]]; then  # the faulty decoder
        n3=$((n3 + 1))
        check "$f: $c is a fault naming a CUDA error" "$([[ $v == error:*CUDA_ERROR_* ]]; echo $?)"
        [[ $v == *"context reset failed"* ]] && phase=stopped
    else
      check "$f: $c passes" "$([[ $v == pass ]]; echo $?)"
    fi
  done
  if [[ $phase == stopped ]]; then
    say "  note  $f: the context reset failed (sticky error); tqref stopped cleanly after the fault"
  else
    check "$f: at least two turbo3v faults (a reset in between) ($n3)" "$([[ $n3 -ge 2 ]]; echo $?)"
  fi
  common_checks "$f"
done

run_check runaway 120 --backend gpu --module "$carry/faulty/faulty_runaway.fatbin" --hdim 128 --launch-timeout 2
check "runaway: exit 6" "$([[ $rc == 6 ]]; echo $?)"
check "runaway: exit within 15 s (wall $wall s)" "$(awk -v w="$wall" 'BEGIN { exit !(w < 15) }'; echo $?)"
check "runaway: watchdog message" "$(grep -q 'did not finish within 2.0 s (launch watchdog' "$out/runaway.out"; echo $?)"
check "runaway: exit without CUDA teardown announced" "$(grep -q 'exiting without CUDA teardown' "$out/runaway.err.ts"; echo $?)"
t_msg=$(grep -m1 'exiting without CUDA teardown' "$out/runaway.err.ts" | cut -d' ' -f1)
[[ -n $t_msg ]] &&
  say "    time from the exit message to the reaped process: $(awk -v a="$t_msg" -v b="$t_end" 'BEGIN { printf "%.3f", b - a }') s"
# In order: the cases before the first turbo3v pass, it times out, every later one is not launched.
phase=before
for c in $(case_names runaway); do
  v=$(verdict runaway "$c")
  say "    report $c: ${v:0:300}"
  if [[ $phase == before && $c == *turbo3v* ]]; then
    check "runaway: $c (hung) is an error naming the watchdog" "$([[ $v == *'did not finish within'* ]]; echo $?)"
    phase=after
  elif [[ $phase == before ]]; then
    check "runaway: $c (before the hang) passes" "$([[ $v == pass ]]; echo $?)"
  else
    check "runaway: $c not launched" "$([[ $v == 'error: not launched'* ]]; echo $?)"
  fi
done
check "runaway: a hung case was found in the report" "$([[ $phase == after ]]; echo $?)"
common_checks runaway

# The GPU after the faults: the built-in kernels on the whole smoke suite must pass.
run_check after 300 --backend gpu
check "after: normal run passes (exit 0)" "$([[ $rc == 0 ]]; echo $?)"
grep -E '^[0-9]+ cases' "$out/after.out" | sed 's/^/    /' | tee -a "$summary"
common_checks after

say "device-faults: $failures failed check(s)"
exit $((failures > 0))
