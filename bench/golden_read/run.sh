#!/usr/bin/env bash
# Times reading a golden file, in one sitting (docs/performance.md, "Reading golden files"):
# h5py's full read of every dataset, `tqref inspect` and `tqref check --backend model --no-explain`
# (each also with OMP_WAIT_POLICY=passive: on a machine shared with another job, libgomp's
# default spinning of idle threads takes cores), optionally the same commands of a second tqref
# (BEFORE, an older build), interleaved, RUNS times each; wall time and peak resident memory from
# GNU time, the load average before each run. Writes OUT (JSON lines, one per run) for
# analysis/plot_golden_read.py.
# Usage: bench/golden_read/run.sh TQREF FILE OUT [BEFORE_TQREF]   (RUNS=3 by default)
set -euo pipefail
tqref=$1 file=$2 out=$3 before=${4:-}
runs=${RUNS:-3}
here=$(cd "$(dirname "$0")" && pwd)
: >"$out"
measure() {  # LABEL COMMAND...
  local label=$1 load t
  shift
  load=$(cut -d' ' -f1 /proc/loadavg)
  t=$(mktemp)
  /usr/bin/time -f "%e %M" -o "$t" "$@" >/dev/null
  read -r secs kb <"$t"
  rm -f "$t"
  printf '{"what": "%s", "seconds": %s, "peak_kb": %s, "load": %s}\n' "$label" "$secs" "$kb" "$load" >>"$out"
  echo "$label: $secs s, $kb KB (load $load)"
}
for ((r = 0; r < runs; ++r)); do
  measure h5py /usr/bin/python3 "$here/h5py_read_all.py" "$file"
  measure inspect "$tqref" inspect "$file"
  measure check "$tqref" check "$file" --backend model --no-explain
  measure check-passive env OMP_WAIT_POLICY=passive "$tqref" check "$file" --backend model --no-explain
  if [[ -n "$before" ]]; then
    measure before-inspect "$before" inspect "$file"
    measure before-check "$before" check "$file" --backend model --no-explain
    measure before-check-passive env OMP_WAIT_POLICY=passive "$before" check "$file" --backend model --no-explain
  fi
done
