# Sourced by the device scripts (scripts/device-levelI.sh, scripts/device-launches.sh): the
# time budget and the step runner. The caller sets `budget` (seconds), `log` (the log file),
# `tmp` (a scratch folder), `summary=()` and `failed=0` first; each step appends
# "name|rc|expected|seconds|verdict" to `summary` and sets `failed=1` when its exit code is not
# the expected one.

left() { echo $((budget - SECONDS)); }

# step NAME EXPECTED LIMIT CMD... : runs CMD with a timeout (output in $tmp/step.out, its head
# in log.txt), records whether its exit code is EXPECTED; returns CMD's exit code.
step() {
  local name=$1 want=$2 limit=$3
  shift 3
  if (( $(left) < 5 )); then
    summary+=("$name|-|$want|0|NOT RUN (time budget)")
    failed=1
    return 99
  fi
  (( limit > $(left) )) && limit=$(left)
  echo "=== $name (expect $want): $*" | tee -a "$log"
  local t0=$SECONDS rc
  timeout --kill-after=5 "$limit" "$@" > "$tmp/step.out" 2>&1
  rc=$?
  head -c 60000 "$tmp/step.out" >> "$log"
  tail -n 3 "$tmp/step.out"
  local v=ok
  if [[ $rc != "$want" ]]; then v="UNEXPECTED (exit $rc)"; failed=1; fi
  summary+=("$name|$rc|$want|$((SECONDS - t0))|$v")
  return $rc
}
