#!/usr/bin/env bash
# Registers and spills of the GQA decoders per HT (docs/kernels.md, "Static checks"), without a
# GPU: builds kernels/testing/probes/gqa_ht_probe.cu (one entry point per HT 1..8, the module's
# nvcc flags and launch bounds) to PTX and runs ptxas -v on it for sm_90 and sm_121.
#   scripts/gqa-ht-registers.sh [HDIM] [FORMAT]        defaults: 128 turbo3v
# Prints one line per arch and HT: registers, stack frame, spill stores, spill loads (bytes).
# Needs nvcc (on PATH or in /usr/local/cuda/bin); about 3 minutes per HDIM on 2 cores.
set -euo pipefail
hdim=${1:-128}
fmt=${2:-turbo3v}
root=$(cd "$(dirname "$0")/.." && pwd)
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[[ -x $nvcc ]] || { echo "gqa-ht-registers: nvcc not found" >&2; exit 2; }
ptxas=$(dirname "$nvcc")/ptxas
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-7s %-5s %2s %9s %6s %12s %11s\n' arch hdim HT registers stack spill_stores spill_loads
for arch in 90 121; do
  # the flags of kernels/CMakeLists.txt (TQREF_NVCC_FLAGS, --fmad=false)
  "$nvcc" -std=c++20 -O3 -ftz=false -prec-div=true -prec-sqrt=true --fmad=false -I"$root/model" \
    -DHDIM="$hdim" -DTQREF_PROBE_FORMAT="$fmt" -arch=compute_$arch -ptx \
    "$root/kernels/testing/probes/gqa_ht_probe.cu" -o "$tmp/probe.ptx"
  "$ptxas" -arch=sm_$arch -v "$tmp/probe.ptx" -o /dev/null 2>&1 |
    awk -v arch=sm_$arch -v hdim="$hdim" '
      /Compiling entry function/ { match($0, /gqa_ht_probe_[0-9]+/); ht = substr($0, RSTART + 13, RLENGTH - 13); st = sp = ld = 0 }
      /bytes stack frame/ { st = $1; sp = $5; ld = $9 }
      /Used [0-9]+ registers/ { match($0, /Used [0-9]+/); r = substr($0, RSTART + 5, RLENGTH - 5); line[ht] = sprintf("%-7s %-5s %2s %9s %6s %12s %11s", arch, hdim, ht, r, st, sp, ld) }
      END { for (h = 1; h <= 8; ++h) if (h in line) print line[h] }'
done
