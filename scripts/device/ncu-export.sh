#!/usr/bin/env bash
# The text views of one Nsight Compute report (the profile plans), into OUTDIR:
#   profile_NAME.txt, profile_NAME.csv  the details page
#   stalls_NAME.txt                     warp-state, issue and pipe metrics
#   sass_hot_NAME.txt                   the 80 SASS instructions with the most stall samples
#   sass_NAME.csv.gz                    every instruction's samples (analysis/ncu_sass_hot.py)
#   scripts/device/ncu-export.sh NAME REPORT.ncu-rep OUTDIR
# Also on its own, for a report made earlier (e.g. of a kernel design no longer in the binary).
set -uo pipefail
name=$1 rep=$2 out=$3
root=$(dirname "$0")/../..
ncu --import "$rep" --page details >"$out/profile_$name.txt" 2>&1 || exit
ncu --import "$rep" --page details --csv >"$out/profile_$name.csv" 2>&1 || exit
ncu --import "$rep" --page raw --csv >"$out/raw_$name.csv" 2>&1 || exit
"${PY:-python3}" - "$out/raw_$name.csv" >"$out/stalls_$name.txt" <<'PY' || exit
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr, units, vals = rows[0], rows[1], rows[2]
keep = ("smsp__average_warp_latency_issue_stalled", "smsp__average_warps_issue_stalled",
        "sm__inst_executed_pipe", "smsp__inst_executed.sum", "sm__warps_active",
        "smsp__issue_active", "sm__pipe_", "launch__registers", "gpu__time_duration")
for h, u, v in zip(hdr, units, vals):
    if h.startswith(keep) and not h.endswith("_pct"):
        print(f"{h:90s} {v:>20s} {u}")
PY
rm -f "$out/raw_$name.csv"
ncu --import "$rep" --page source --csv --print-source sass >"$out/source_$name.csv" 2>&1 || exit
"${PY:-python3}" "$root/analysis/ncu_sass_hot.py" "$out/source_$name.csv" "$out/sass_$name.csv.gz" 80 \
  >"$out/sass_hot_$name.txt" 2>&1
rc=$?
rm -f "$out/source_$name.csv"
exit $rc
