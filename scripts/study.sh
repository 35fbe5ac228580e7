#!/usr/bin/env bash
# Regenerates the quantisation-error studies: builds `tqref`, runs `tqref study` (tidy CSV tables)
# and turns them into analysis/report/README.md + PNG plots (docs/studies.md).
#
#   scripts/study.sh            full run (a few minutes on 2 cores), rewrites analysis/report/
#   scripts/study.sh --quick    seconds-long smoke run; report goes to $BUILD_DIR/study-quick/report
#
# Environment: TQREF_BUILD_DIR (default build), THREADS (default: all cores), SEED (default
# 20240607), PYTHON (default /usr/bin/python3: Debian's numpy, matplotlib and h5py).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${TQREF_BUILD_DIR:-build}
THREADS=${THREADS:-$(nproc)}
SEED=${SEED:-20240607}
PYTHON=${PYTHON:-/usr/bin/python3}
QUICK=()
RESULTS=$BUILD_DIR/study-results
REPORT=analysis/report
if [[ "${1:-}" == "--quick" ]]; then
  QUICK=(--quick)
  RESULTS=$BUILD_DIR/study-quick/results
  REPORT=$BUILD_DIR/study-quick/report
elif [[ $# -gt 0 ]]; then
  echo "usage: scripts/study.sh [--quick]" >&2
  exit 2
fi

[[ -f $BUILD_DIR/CMakeCache.txt ]] || cmake -S . -B "$BUILD_DIR" >/dev/null
cmake --build "$BUILD_DIR" -j "$THREADS" --target tqref
rm -rf "$RESULTS"
"$BUILD_DIR/cli/tqref" study "${QUICK[@]}" --out "$RESULTS" --threads "$THREADS" --seed "$SEED" \
  --traces data/traces
"$PYTHON" analysis/make_report.py --results "$RESULTS" --out "$REPORT" \
  --command "scripts/study.sh ${QUICK[*]} (seed $SEED)"
