#!/usr/bin/env bash
# GPU evidence for issue 19 (docs/performance.md, "Writer at copy bandwidth", "Real-model decode
# shapes", "GB10 projection"), about 4 minutes on the H200 (TQREF_GPUSPEED_BUDGET, default 290 s):
#   1. tqref bench --set writers: the reference-order and the bandwidth writer at 65536 tokens for
#      every format (and 32/16384 tokens, real models' kv heads), each beside a cuMemcpyDtoD of
#      the same bytes; every pool copy checked against the CPU model before and after timing
#   2. tqref bench --set models: decode at real models' head counts (GQA 2/3/4/6/7/8, MQA), the
#      reference-order kernel checked against the CPU model, every GQA launch against it
#   3. the same two sets once more under Nsight Compute (one launch per result is enough: warp
#      instructions, DRAM bytes, cycles), joined to the results by scripts/ncu_join.py:
#      instructions per (q head, position) pair and per writer group, next to the timed medians
#   4. analysis/gb10_projection.py on the joined rows
# Writes to OUTDIR: summary.md (printed last), gpu.txt, writers.json, models.json, bench.log,
# ncu_writers.csv, ncu_models.csv, ncu_writers.json, ncu_models.json, per_launch.json,
# per_launch.md, gb10_projection.md, sass_writers_fast.txt (when cuobjdump is installed).
# Needs .device-carry from `bash scripts/device-carry.sh build/default` (bin/tqref and its
# libraries). Usage on the device: bash scripts/device-gpuspeed.sh OUTDIR
# Exit status: 0 every benchmarked launch equal (and the profile joined); 1 a mismatch;
# 2 no binary / bad usage; 3 a step failed or timed out (the summary names it).
set -uo pipefail
out=${1:-${OUT:-}}
[[ -n $out ]] || { echo "usage: scripts/device-gpuspeed.sh OUTDIR" >&2; exit 2; }
mkdir -p "$out"
here=$(pwd)
export LD_LIBRARY_PATH="$here/.device-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TQREF_DATA_DIR="$here/data"  # the EX2 profile of the reference-order-vs-model decode check
export PYTHONUNBUFFERED=1
bin="$here/.device-carry/bin/tqref"
if [[ ! -x $bin ]]; then
  echo "device-gpuspeed: $bin missing: run scripts/device-carry.sh build/default here and carry .device-carry" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv \
  > "$out/gpu.txt" 2>&1 || true

budget=${TQREF_GPUSPEED_BUDGET:-290}  # seconds for all steps; later steps get what is left
failed=()     # steps that failed or were skipped (not mismatches)
mismatch=0
log=$out/bench.log
step_min_left=15
. "$here/scripts/device-bench-steps.sh"   # step, to

step writers 90 "$bin" bench --set writers --no-decode --json "$out/writers.json"
step models 90 "$bin" bench --set models --no-writer --json "$out/models.json"

metrics=smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg,launch__grid_size
# One timed launch per result, two input copies (the fewest): the conformance launches of every
# copy still run and are profiled too, so this keeps the ncu pass short (ncu_join.py uses the
# launch counts the JSON records).
once=(--runs 1 --warmup 0 --model-seqs 0 --rotate-mib 1)
if command -v ncu > /dev/null; then
  step ncu-writers 60 "${to[@]}" "$out/ncu_writers.csv" ncu --clock-control none --metrics "$metrics" --csv --page raw \
    --print-units base --kernel-name 'regex:^reshape_and_cache_flash_bf16k_turbo[234]v(_fast)?$' \
    "$bin" bench --set writers --no-decode "${once[@]}" --json "$out/ncu_writers.json"
  step ncu-models 80 "${to[@]}" "$out/ncu_models.csv" ncu --clock-control none --metrics "$metrics" --csv --page raw \
    --print-units base --kernel-name 'regex:^paged_decode_attn_bf16k_turbo3v(_gqa)?$' \
    "$bin" bench --set models --no-writer "${once[@]}" --json "$out/ncu_models.json"
  join_args=()
  for s in writers models; do
    [[ -s $out/ncu_$s.json && -s $out/ncu_$s.csv ]] && join_args+=(--bench "$out/ncu_$s.json" --ncu "$out/ncu_$s.csv")
    [[ -s $out/$s.json ]] && join_args+=(--timed "$out/$s.json")
  done
  if step ncu-join 15 python3 scripts/ncu_join.py "${join_args[@]}" --json "$out/per_launch.json" --md "$out/per_launch.md"; then
    step gb10-projection 15 python3 analysis/gb10_projection.py "$out/per_launch.json" --md "$out/gb10_projection.md"
  fi
else
  failed+=("ncu (not installed)")
fi
if command -v cuobjdump > /dev/null && [[ -f .device-carry/modules/writers_fast.fatbin ]]; then
  for arch in sm_90 sm_121; do
    cuobjdump -sass -arch "$arch" .device-carry/modules/writers_fast.fatbin 2>/dev/null | awk -v a="$arch" '
      /Function : / { fn = $3 }
      /^ +\/\*[0-9a-f]+\*\/ / { n[fn]++ }
      END { for (f in n) print a, f, n[f], "SASS instructions" }'
  done > "$out/sass_writers_fast.txt"
fi

# The summary: writer table with the 70 % goal, the decode table, the profile and projection.
python3 - "$out" "$mismatch" "${failed[@]}" > "$out/summary.md" <<'PY'
import json, os, sys
out, mismatch, failed = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
def load(name):
    p = os.path.join(out, name)
    return json.load(open(p)) if os.path.exists(p) and os.path.getsize(p) else None
print("# device-gpuspeed summary\n")
print(f"verdict: {'MISMATCH' if mismatch else 'every benchmarked launch equal'}; "
      f"failed steps: {', '.join(failed) if failed else 'none'}\n")
w = load("writers.json")
if w:
    print(f"device {w['device']['name']}; 1 GiB copy {w['copy']['gbps_read_write']:.0f} GB/s\n")
    print("| writer shape | kernel | median ms | GB/s | copy of the same bytes ms | % of copy | bits |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in w["writer"]:
        print(f"| {r['format']} hdim{r['hdim']} H{r['num_kv_heads']} tokens{r['tokens']} | "
              f"{'fast' if r['fast'] else 'ref-order'} | {r['timing']['median_ms']:.4f} | {r['gbps']:.0f} | "
              f"{r['copy_same_bytes']['median_ms']:.4f} | {100 * r['fraction_of_copy']:.1f} | "
              f"{'equal' if r['conformant'] else 'MISMATCH'} |")
    goal = [r for r in w["writer"] if r["fast"] and r["tokens"] == 65536 and r["num_kv_heads"] == 8 and r["hdim"] == 128]
    for r in goal:
        met = r["fraction_of_copy"] >= 0.70 and r["conformant"]
        print(f"\ngoal {r['format']} 65536 x 8 x 128: {100 * r['fraction_of_copy']:.1f} % of copy "
              f"({'met' if met else 'NOT met'}: >= 70 % and equal bits)", end="")
    print("\n")
m = load("models.json")
if m:
    print("| decode shape | kernel | HT | median ms | x ref-order | skip % | bits |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ref = {}
    for r in m["decode"]:
        lab = f"{r['model']} {r['format']} hdim{r['hdim']} {r['num_seqs']}x{r['num_q_heads']}/{r['num_kv_heads']} L{r['seq_len']}"
        if not r["heads_per_cta"]:
            ref[lab] = r["timing"]["median_ms"]
        x = ref.get(lab, 0) / r["timing"]["median_ms"] if r["timing"]["median_ms"] else 0
        print(f"| {lab} | {r.get('variant', 'gqa' if r['heads_per_cta'] else 'ref-order')} | {r['heads_per_cta'] or '-'} | "
              f"{r['timing']['median_ms']:.4f} | {x:.2f} | {100 * r['skip_rate']:.2f} | "
              f"{'equal' if r['conformant'] else 'MISMATCH'} |")
    print()
for name, title in (("per_launch.md", "Per launch (ncu)"), ("gb10_projection.md", "GB10 projection")):
    p = os.path.join(out, name)
    if os.path.exists(p):
        print(f"## {title}\n\n" + open(p).read())
PY
cat "$out/summary.md"
(( mismatch )) && exit 1
(( ${#failed[@]} )) && exit 3
exit 0
