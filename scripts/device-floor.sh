#!/usr/bin/env bash
# GPU evidence for the floor decoders (issue 19 item 1; docs/performance.md, "Floor decoder"),
# under 2 minutes on the H200 (TQREF_FLOOR_BUDGET seconds, default 115; later steps get what is
# left and are listed as skipped when nothing is):
#   1. tqref check --backend gpu --variant floor (and --variant gqa) on the smoke suite, exact
#      level: every decode case through paged_decode_attn_bf16k_turbo{2,3,4}v_floor at the widest
#      valid heads-per-CTA, compared bit for bit with the golden expectations
#   2. tqref bench --set floor: the goal shapes (GQA 4 at 4k/16k for every format at HDIM 128,
#      HDIM 256, GQA 1/7/8 and MQA at 16k), the reference-order kernel checked against the CPU
#      model, the GQA and floor kernels at every valid HT against it, each on a launch before
#      timing and on its last timed launch
#   3. torch SDPA (bf16, enable_gqa) on the same head counts and lengths
#   4. Nsight Compute on --set floor-profile (32 x 32/8 x 128 x 16k, turbo3v): warp instructions
#      per (q head, position) pair of every kernel, joined by scripts/ncu_join.py
#   5. the standard suite through --variant floor (.device-carry/standard.h5 when carried, else
#      generated here if the budget allows)
# Writes to OUTDIR: summary.md (printed last), gpu.txt, log.txt, smoke-floor.json,
# smoke-gqa.json, standard-floor.json, floor.json, torch_sdpa.json, ncu_floor.csv,
# ncu_floor.json, per_launch.json, per_launch.md.
# Needs .device-carry from `bash scripts/device-carry.sh build/default` (target tqref; the modules
# decode_floor_hdim128/256 are embedded in it). Usage: bash scripts/device-floor.sh OUTDIR
# Exit status: 0 every launch equal; 1 a mismatch; 2 no binary / bad usage; 3 a step failed or
# was skipped (the summary names it).
set -uo pipefail
out=${1:-${OUT:-}}
[[ -n $out ]] || { echo "usage: scripts/device-floor.sh OUTDIR" >&2; exit 2; }
mkdir -p "$out"
here=$(pwd)
carry=$here/.device-carry
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TQREF_DATA_DIR="$here/data"  # EX2 profile of the model checks
export PYTHONUNBUFFERED=1
bin=$carry/bin/tqref
if [[ ! -x $bin ]]; then
  echo "device-floor: $bin missing: run scripts/device-carry.sh build/default here and carry .device-carry" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv \
  > "$out/gpu.txt" 2>&1 || true

budget=${TQREF_FLOOR_BUDGET:-115}
log=$out/log.txt
: > "$log"
failed=()   # steps that failed or were skipped (not mismatches)
mismatch=0
tmp=$(mktemp -d /tmp/tqref-floor.XXXXXX)
step_min_left=8
. "$here/scripts/device-bench-steps.sh"   # step, to

smoke=$here/data/golden/smoke.h5
chk=(check --backend gpu --kind decode --show 4)
step smoke-floor 25 "$bin" "${chk[@]}" --variant floor "$smoke" --report "$out/smoke-floor.json"
step smoke-gqa 20 "$bin" "${chk[@]}" --variant gqa "$smoke" --report "$out/smoke-gqa.json"
step bench-floor 50 "$bin" bench --set floor --no-writer --json "$out/floor.json"
metrics=smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg,launch__grid_size
if command -v ncu > /dev/null; then
  # one timed launch per result, the fewest pool copies; ncu_join.py uses the launch counts
  step ncu-floor 30 "${to[@]}" "$out/ncu_floor.csv" ncu --clock-control none --metrics "$metrics" --csv \
    --page raw --print-units base --kernel-name 'regex:^paged_decode_attn_bf16k_turbo3v(_gqa|_floor)?$' \
    "$bin" bench --set floor-profile --no-writer --runs 1 --warmup 0 --model-seqs 0 --rotate-mib 1 \
    --json "$out/ncu_floor.json"
  if [[ -s $out/ncu_floor.csv && -s $out/ncu_floor.json ]]; then
    timed=()
    [[ -s $out/floor.json ]] && timed=(--timed "$out/floor.json")
    step ncu-join 10 python3 scripts/ncu_join.py --bench "$out/ncu_floor.json" --ncu "$out/ncu_floor.csv" \
      "${timed[@]}" --json "$out/per_launch.json" --md "$out/per_launch.md"
  fi
else
  failed+=("ncu (not installed)")
fi
step torch-sdpa 25 python3 analysis/bench_torch_sdpa.py --floor --json "$out/torch_sdpa.json"
standard=$carry/standard.h5
if [[ ! -f $standard ]]; then
  standard=$tmp/standard.h5
  step generate-standard 40 "$bin" generate --suite standard --threads 16 --out "$standard"
fi
if [[ -f $standard ]]; then
  step standard-floor 40 "$bin" "${chk[@]}" --variant floor "$standard" --report "$out/standard-floor.json"
else
  failed+=("standard-floor (no standard file)")
fi
rm -rf "$tmp"

python3 - "$out" "$mismatch" "${failed[@]}" > "$out/summary.md" <<'PY'
import json, os, sys
out, mismatch, failed = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
def load(name):
    p = os.path.join(out, name)
    try:
        return json.load(open(p)) if os.path.exists(p) and os.path.getsize(p) else None
    except ValueError:
        return None
print("# device-floor summary\n")
print(f"verdict: {'MISMATCH' if mismatch else 'every checked launch equal'}; "
      f"failed or skipped steps: {', '.join(failed) if failed else 'none'}\n")
for name in ("smoke-floor.json", "smoke-gqa.json", "standard-floor.json"):
    r = load(name)
    if r:
        print(f"- {name}: backend {r['backend']}: {r['cases']} cases, {r['failed']} failed")
print()
torch = {}
t = load("torch_sdpa.json")
if t:
    for r in t["results"]:
        torch[(r["num_q_heads"], r["num_kv_heads"], r["hdim"], r["seq_len"])] = r["median_ms"]
f = load("floor.json")
goal = None
if f:
    print("| decode shape | kernel | HT | median ms | x ref-order | x torch SDPA | skip % | bits |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    ref = {}
    for r in f["decode"]:
        lab = f"{r['format']} hdim{r['hdim']} {r['num_seqs']}x{r['num_q_heads']}/{r['num_kv_heads']} L{r['seq_len']}"
        ms = r["timing"]["median_ms"]
        if not r["heads_per_cta"]:
            ref[lab] = ms
        tq = torch.get((r["num_q_heads"], r["num_kv_heads"], r["hdim"], r["seq_len"]))
        print(f"| {lab} | {r.get('variant', 'gqa' if r['heads_per_cta'] else 'ref-order')} | "
              f"{r['heads_per_cta'] or '-'} | {ms:.4f} | {ref.get(lab, 0) / ms if ms else 0:.2f} | "
              f"{tq / ms if (tq and ms) else float('nan'):.2f} | {100 * r['skip_rate']:.2f} | "
              f"{'equal' if r['conformant'] else 'MISMATCH'} |")
        if (r.get("variant") == "floor" and r["format"] == "turbo3v" and r["hdim"] == 128 and r["seq_len"] == 16384
                and r["num_q_heads"] == 32 and r["num_kv_heads"] == 8):
            goal = min(goal or ms, ms)
    print()
if t:
    print("torch SDPA (bf16): " + ", ".join(f"{k[0]}/{k[1]} d{k[2]} L{k[3]} {v:.4f} ms" for k, v in torch.items()) + "\n")
ipp = None
pl = load("per_launch.json")
if pl:
    rows = pl if isinstance(pl, list) else pl.get("rows", [])
    fl = [r for r in rows if r["kernel"].endswith("_floor")]
    if fl:
        ipp = min(r["inst_per_unit"] for r in fl)
if goal is not None:
    print(f"goal time (16k GQA 4 turbo3v HDIM 128, best HT): {goal:.4f} ms, {'met' if goal <= 0.48 else 'NOT met'} (<= 0.48 ms)")
if ipp is not None:
    print(f"goal instructions: {ipp:.2f} warp instructions per (q head, position) pair, "
          f"{'met' if ipp <= 25 else 'NOT met'} (<= 25)")
print()
p = os.path.join(out, "per_launch.md")
if os.path.exists(p):
    print("## Per launch (ncu, 32 x 32/8 x 128 x 16k turbo3v)\n\n" + open(p).read())
PY
cat "$out/summary.md"
(( mismatch )) && exit 1
(( ${#failed[@]} )) && exit 3
exit 0
