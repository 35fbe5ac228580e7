#!/usr/bin/env bash
# The main job: installs what is needed, builds (preset `default`, or `cpu-only` without nvcc) and
# runs tqref's pipeline. Usage: sudo bash scripts/main.sh   (on a fresh Debian 12)
# Environment: TQREF_JOBS (build parallelism, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

export PATH="$PATH:/usr/local/cuda/bin"
if command -v nvcc >/dev/null; then PRESET=default; else PRESET=cpu-only; fi
echo "main: preset $PRESET"
cmake --preset "$PRESET"
cmake --build --preset "$PRESET" -j"${TQREF_JOBS:-2}"
TQREF="build/$PRESET/harness/tqref"
"$TQREF" version

# Step 1: the writer model on a random tensor, with error statistics per format.
"$TQREF" demo --tokens 4096 --heads 8 --head-dim 128 --block-size 16 --seed 1

# ---- Later steps are added here, in this order (one block each, with a comment like above) ----
#  - golden data: generate the suites with `tqref generate` and check them with the model backend
#  - GPU check: only when `nvidia-smi -L` lists a GPU, run the kernels against the golden data
