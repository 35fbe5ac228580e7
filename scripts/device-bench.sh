#!/usr/bin/env bash
# GPU benchmark run for the H200 device machine (docs/performance.md), about 3 minutes:
#   1. tqref bench --quick (reference-order + GQA decoders on the main shapes, writer; every timed
#      kernel checked bit for bit in the same run) -> $OUT/bench.json, bench.log
#   2. torch SDPA (bf16, enable_gqa, one query token) on the same shapes -> $OUT/torch_sdpa.json
#   3. plot -> $OUT/bench.png, and a compact table printed last.
# Needs the binary and its libraries packed here by scripts/device-carry.sh (.device-carry/).
# Usage on the device: bash scripts/device-bench.sh [extra tqref bench options, e.g. --runs 50]
# Exit status: that of tqref bench (0 all conformant, 1 mismatch, 4 no GPU, 6 GPU fault).
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out"
here=$(pwd)
export LD_LIBRARY_PATH="$here/.device-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TQREF_DATA_DIR="$here/data"  # the sm_90 EX2 profile for the reference-order-vs-model check
export PYTHONUNBUFFERED=1
bin="$here/.device-carry/bin/tqref"
if [ ! -x "$bin" ]; then
  echo "device-bench: $bin missing: run scripts/device-carry.sh <build dir> first and carry .device-carry" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv \
  > "$out/gpu.txt" 2>&1 || true

timeout 170 "$bin" bench --quick --json "$out/bench.json" "$@" 2>&1 | tee "$out/bench.log"
rc=${PIPESTATUS[0]}

timeout 90 python3 analysis/bench_torch_sdpa.py --quick --json "$out/torch_sdpa.json" 2>&1 | tee "$out/torch.log"

torch_arg=()
[ -s "$out/torch_sdpa.json" ] && torch_arg=(--torch "$out/torch_sdpa.json")
if [ -s "$out/bench.json" ]; then
  echo
  echo "== device-bench summary (tqref bench rc=$rc) =="
  python3 analysis/plot_bench.py "$out/bench.json" "${torch_arg[@]}" --out "$out/bench.png" --table
fi
exit "$rc"
