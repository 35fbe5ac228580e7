# Sourced by the device benchmark scripts (scripts/device-gpuspeed.sh, scripts/device-floor.sh):
# their step runner. The caller sets `budget` (seconds for all steps), `log` (the file each
# step's output is appended to), `step_min_left` (a step that would start with fewer seconds
# left is skipped), `failed=()` and `mismatch=0` first.

# step NAME TIMEOUT CMD...: runs CMD within the time left, output appended to $log; rc 1 is a
# mismatch (mismatch=1), any other non-zero rc a failure (appended to `failed`).
step() {
  local name=$1 limit=$2 rc left=$((budget - SECONDS))
  shift 2
  if (( left < step_min_left )); then failed+=("$name (skipped: time budget)"); return 99; fi
  (( limit > left )) && limit=$left
  echo "=== $name (timeout ${limit}s, $(date -u +%T))" | tee -a "$log"
  timeout --kill-after=5 "$limit" "$@" >> "$log" 2>&1
  rc=$?
  echo "=== $name: rc=$rc" | tee -a "$log"
  if (( rc == 1 )); then mismatch=1; elif (( rc != 0 )); then failed+=("$name (rc $rc)"); fi
  return $rc
}
# "${to[@]}" FILE CMD...: CMD with its standard output in FILE (ncu prints its CSV there; the
# bench's own lines mixed in never start with a quote, which is how scripts/ncu_join.py tells them
# apart).
to=(sh -c 'f=$1; shift; exec "$@" > "$f"' to)
