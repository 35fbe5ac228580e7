#!/usr/bin/env bash
# The main job: installs what is needed, builds (preset `default`, or `cpu-only` without nvcc) and
# runs tqref's pipeline. Usage: bash scripts/main.sh as root on a fresh Debian 12 (which has no
# sudo), or `sudo bash scripts/main.sh` as a normal user: only the package install needs root.
# Environment: TQREF_JOBS (build parallelism, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

export PATH="$PATH:/usr/local/cuda/bin"
if command -v nvcc >/dev/null; then PRESET=default; else PRESET=cpu-only; fi
echo "main: preset $PRESET"
cmake --preset "$PRESET"
cmake --build --preset "$PRESET" -j"${TQREF_JOBS:-2}"
TQREF="build/$PRESET/cli/tqref"
"$TQREF" version
TQREF_BUILD_DIR=build/$PRESET bash scripts/install-python.sh /usr/bin/python3   # .venv (docs/python.md)

# Step 1: the writer model on a random tensor, with error statistics per format.
"$TQREF" demo --tokens 4096 --heads 8 --head-dim 128 --block-size 16 --seed 1

# Step 2: golden data. Regenerate the smoke suite and compare its data with the committed file (a
# model or schema change that was not regenerated shows here; the build provenance, commit and
# version, is not compared: scripts/golden-diff.sh), then generate the standard suite and check
# both, and the committed real-trace suite, with the model backend.
work=${TQREF_WORK:-build/$PRESET/main-job}
mkdir -p "$work"
"$TQREF" generate --suite smoke --seed 1 --out "$work/smoke.h5"
if bash scripts/golden-diff.sh "$work/smoke.h5" data/golden/smoke.h5; then
  echo "main: regenerated smoke suite is identical in data to data/golden/smoke.h5"
else
  echo "main: regenerated smoke suite differs in data from data/golden/smoke.h5: a model or schema change was committed without regenerating it (tqref generate --suite smoke --seed 1)" >&2
  exit 1
fi
"$TQREF" generate --suite standard --seed 1 --out "$work/standard.h5"
for f in data/golden/smoke.h5 "$work/standard.h5" data/golden/real.h5; do
  "$TQREF" check "$f" --backend model --report "$work/$(basename "$f" .h5)-model.json"
done

# Step 2b: the Python API (docs/python.md): the pure-torch decoder example judged through
# tqref.testing at levels T and I on the committed smoke suite.
.venv/bin/python -W ignore::UserWarning examples/torch_turbo_decode.py smoke cpu

# Step 3: the same golden files on the GPU, only when a GPU is present (docs/gpu-harness.md).
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; then
  for f in data/golden/smoke.h5 "$work/standard.h5" data/golden/real.h5; do
    "$TQREF" check "$f" --backend gpu --report "$work/$(basename "$f" .h5)-gpu.json" \
        --junit "$work/$(basename "$f" .h5)-gpu.junit.xml"
  done
else
  echo "main: no GPU found (nvidia-smi lists none): GPU check skipped"
fi
echo "main: done; reports in $work"
