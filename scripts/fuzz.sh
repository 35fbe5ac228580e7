#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang-14, ASan and UBSan, makes the seed corpora,
# and runs each target for a bounded time. Exit 0: no target found a crash, leak, sanitizer report
# or uncaught exception; 1: a finding (its input is in $BUILD/findings/<target>/, reproduce with
# `$BUILD/tests/fuzz/<target> FILE`). docs/reliability.md records the runs and what they found.
# Usage: bash scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET ...]
# Environment: TQREF_FUZZ_BUILD (default build/fuzz), TQREF_JOBS (build parallelism, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${1:-60}
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(fuzz_sweep_config fuzz_trace_reader fuzz_golden_reader)
BUILD=${TQREF_FUZZ_BUILD:-build/fuzz}

for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null ||
    { echo "fuzz: $tool missing (apt-get install clang-14 libclang-rt-14-dev libomp-14-dev)" >&2; exit 2; }
done
mkdir -p "$BUILD"
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTQREF_FUZZ=ON \
  -DTQREF_ENABLE_CUDA=OFF -DTQREF_BUILD_BENCHMARKS=OFF >"$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log" >&2; exit 2; }
cmake --build "$BUILD" -j"${TQREF_JOBS:-2}" --target tqref "${TARGETS[@]}" >"$BUILD/build.log" 2>&1 ||
  { tail -40 "$BUILD/build.log" >&2; exit 2; }

# Seeds: a trace written by h5py (another HDF5 writer), YAML sweeps, and golden files that the
# instrumented tqref generates from those sweeps (small: one or two specs each).
SEEDS="$BUILD/seeds"
rm -rf "$SEEDS" && mkdir -p "$SEEDS/golden"
/usr/bin/python3 tests/fuzz/make_seeds.py "$SEEDS"
for y in writer_small decode_small; do
  "$BUILD/harness/cli/tqref" generate --config "$SEEDS/sweep/$y.yaml" --out "$SEEDS/golden/$y.h5" \
    --threads 1 >/dev/null 2>&1
done
declare -A SEED_DIR=([fuzz_golden_reader]=golden [fuzz_trace_reader]=trace [fuzz_sweep_config]=sweep)
declare -A MAX_LEN=([fuzz_golden_reader]=262144 [fuzz_trace_reader]=65536 [fuzz_sweep_config]=4096)

status=0
for t in "${TARGETS[@]}"; do
  corpus="$BUILD/corpus/$t" findings="$BUILD/findings/$t"
  mkdir -p "$corpus" "$findings"
  log="$BUILD/$t.log"
  # -rss_limit_mb / -malloc_limit_mb: a reader that allocates from a corrupt size is a finding.
  set +e
  LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp" "$BUILD/tests/fuzz/$t" "$corpus" "$SEEDS/${SEED_DIR[$t]}" \
    -max_total_time="$SECS" -max_len="${MAX_LEN[$t]}" -timeout=10 -rss_limit_mb=3072 \
    -malloc_limit_mb=1024 -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  # A timeout whose stack reaches libhdf5 before any tqref frame is libhdf5 looping on a corrupt
  # file outside the isolated reads (hdf5_util.cpp reads variable-length strings in a child with a
  # deadline; findings 4 and 5): still a finding, labelled so that it is triaged as a library bug
  # to contain, not a tqref loop.
  hdf5_hang=0
  if ((rc != 0)) && grep -q 'ERROR: libFuzzer: timeout' "$log"; then
    first=$(grep -m1 -E '^ +#[0-9]+ .* in (tqref::|H5|.*libhdf5)' "$log" || true)
    [[ "$first" == *libhdf5* || "$first" == *" in H5"* ]] && hdf5_hang=1
  fi
  # Children that libhdf5 crashed or that timed out inside an isolated read (contained: the
  # fuzzed reader refused the input) are counted from their sanitizer reports.
  contained=$(grep -c '^==[0-9]*==ERROR: AddressSanitizer' "$log" || true)
  if ((rc == 0)); then
    echo "fuzz: $t: ${execs:-?} executions in ${SECS} s, $cov, no findings" \
         "($contained sanitizer reports from isolated libhdf5 reads, contained)"
  elif ((hdf5_hang)); then
    status=1
    echo "fuzz: $t: FINDING: a hang inside libhdf5 outside the isolated reads after ${execs:-?}" \
         "executions; input in $findings" >&2
  else
    status=1
    echo "fuzz: $t: FINDING after ${execs:-?} executions (exit $rc); inputs in $findings:" >&2
    ls "$findings" >&2
    grep -m1 -A12 'ERROR: \|==ERROR\|runtime error\|deadly signal\|uncaught' "$log" >&2 || tail -30 "$log" >&2
  fi
done
exit $status
