#!/usr/bin/env bash
# Nsight Compute profile of the decode kernels at the main shape (turbo3v, HDIM 128, GQA 4,
# 32 seqs x 16384 positions) on the H200 (docs/performance.md, "Profile"). About 2 minutes.
#   1. one launch each of the seed kernel and the GQA kernel at HT 4, --set full
#      -> $OUT/profile.txt (details page), profile.csv, stalls.csv (warp-state and pipe metrics)
#   2. per-instruction stall samples -> $OUT/sass_hot_<kernel>.txt (hottest 80) and sass_<kernel>.csv.gz
#   3. SASS instruction histogram of both kernels -> $OUT/sass_histogram.txt
# ncu runs with --clock-control none (the device VM does not allow clock locking).
# TQREF_PROFILE_KERNELS (default "seed gqa") picks the kernels, among seed, gqa and floor (the floor
# decoder of docs/performance.md "Floor decoder" at HT 4); with floor the shape comes from
# `tqref bench --set floor-profile` (the same 32 x 32/8 x 128 x 16k turbo3v shape, whose launch
# order is the seed kernel, the GQA kernels at HT 4, 2, 1, then the floor kernels at HT 4, 2, 1).
# TQREF_PROFILE_KERNELS="" with TQREF_PROFILE_IMPORT="NAME=REPORT.ncu-rep ..." only exports reports
# made earlier (e.g. of a kernel design no longer in the binary) to the same text files.
# Needs .device-carry from scripts/device-carry.sh. Usage on the device: bash scripts/device-profile.sh
set -uo pipefail
out=${OUT:-profile-out}
mkdir -p "$out"
here=$(pwd)
export LD_LIBRARY_PATH="$here/.device-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TQREF_DATA_DIR="$here/data"
bin="$here/.device-carry/bin/tqref"
[ -x "$bin" ] || { echo "device-profile: $bin missing (scripts/device-carry.sh)" >&2; exit 2; }
kernels=${TQREF_PROFILE_KERNELS-seed gqa}
bench=("$bin" bench --quick --len 16384 --runs 1 --warmup 0 --model-seqs 0 --no-writer)
[[ $kernels == *floor* ]] &&
  bench=("$bin" bench --set floor-profile --runs 1 --warmup 0 --model-seqs 0 --no-writer --rotate-mib 1)
declare -A regex=([seed]='paged_decode_attn_bf16k_turbo3v$' [gqa]='paged_decode_attn_bf16k_turbo3v_gqa$'
                  [floor]='paged_decode_attn_bf16k_turbo3v_floor$')
# Launch order of one shape: the seed kernel (reference output), then the GQA kernels at
# HT 4, 2, 1 and the _stats kernel: the first match of each regex is the HT 4 / seed launch.
# The text views of one report: details page, stall and pipe metrics, hottest SASS instructions.
export_report() {
  local name=$1 rep=$2
  ncu --import "$rep" --page details > "$out/profile_$name.txt" 2>&1
  ncu --import "$rep" --page details --csv > "$out/profile_$name.csv" 2>&1
  ncu --import "$rep" --page raw --csv > "$out/raw_$name.csv" 2>&1
  python3 - "$out/raw_$name.csv" > "$out/stalls_$name.txt" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr, units, vals = rows[0], rows[1], rows[2]
keep = ("smsp__average_warp_latency_issue_stalled", "smsp__average_warps_issue_stalled",
        "sm__inst_executed_pipe", "smsp__inst_executed.sum", "sm__warps_active",
        "smsp__issue_active", "sm__pipe_", "launch__registers", "gpu__time_duration")
for h, u, v in zip(hdr, units, vals):
    if h.startswith(keep) and not h.endswith("_pct") :
        print(f"{h:90s} {v:>20s} {u}")
PY
  rm -f "$out/raw_$name.csv"
  ncu --import "$rep" --page source --csv --print-source sass > "$out/source_$name.csv" 2>&1
  python3 scripts/ncu_sass_hot.py "$out/source_$name.csv" "$out/sass_$name.csv.gz" 80 \
    > "$out/sass_hot_$name.txt" 2>&1
  rm -f "$out/source_$name.csv"
}
for name in $kernels; do
  [[ -n ${regex[$name]:-} ]] || { echo "device-profile: unknown kernel '$name' (seed, gqa, floor)" >&2; exit 2; }
  timeout 240 ncu --clock-control none --kernel-name "regex:${regex[$name]}" --launch-count 1 --set full \
    -o "$out/$name" "${bench[@]}" > "$out/ncu_$name.log" 2>&1
  echo "ncu $name: rc=$?"
  export_report "$name" "$out/$name.ncu-rep"
done
# Reports made earlier (TQREF_PROFILE_IMPORT="NAME=PATH ..."): the same text views, no new run.
for spec in ${TQREF_PROFILE_IMPORT:-}; do
  export_report "${spec%%=*}" "${spec#*=}"
done
mods="$here/.device-carry/modules"
if command -v cuobjdump >/dev/null; then
  for f in decode_hdim128.fatbin decode_fast_hdim128.fatbin decode_floor_hdim128.fatbin; do
    [ -f "$mods/$f" ] || continue
    echo "== $f (sm_90)" >> "$out/sass_histogram.txt"
    cuobjdump -sass -arch sm_90 "$mods/$f" | awk '
      /Function : / { fn = $3 }
      fn ~ /^paged_decode_attn_bf16k_turbo3v(_gqa|_floor)?$/ && /^ +\/\*[0-9a-f]+\*\/ / {
        op = $2; if (op ~ /^@/) op = $3; sub(/\..*/, "", op); sub(/;$/, "", op); n[fn " " op]++; t[fn]++ }
      END { for (k in n) print n[k], k; for (f in t) print t[f], f, "TOTAL" }' | sort -k2,2 -k1,1nr >> "$out/sass_histogram.txt"
  done
fi
ls -la "$out"
