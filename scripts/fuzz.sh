#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang-14, ASan and UBSan, makes the seed corpora,
# and runs each target. Exit 0: no target found a crash, leak, sanitizer report or uncaught
# exception; 1: a finding (its input is in $BUILD/findings/<target>/, reproduce with
# `$BUILD/tests/fuzz/<target> FILE`). docs/reliability.md records the runs and what they found.
# Usage: bash scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET ...]
# Environment: TQREF_FUZZ_BUILD (default build/fuzz), TQREF_JOBS (build parallelism, default 2),
#   TQREF_FUZZ_RUNS=N   stop a target after N executions (the time limit still applies),
#   TQREF_FUZZ_FORK=J   libFuzzer's fork mode with J workers: a crash, timeout or OOM is saved in
#                       findings/ and the run goes on (for long campaigns, where libhdf5's own
#                       crashes on malformed files would otherwise end it; docs/fuzzing.md),
#   TQREF_FUZZ_NICE=K   run the fuzzers under nice -n K (default 0),
#   TQREF_FUZZ_PREBUILT=1  use the targets and seeds already in $TQREF_FUZZ_BUILD (no clang, no
#                       build, no seed generation: a tree packed by scripts/device-carry.sh --fuzz),
#   TQREF_FUZZ_TRIAGE_SECS=S  start no triage replay after S seconds (the rest stay in findings/
#                       and make the verdict "FINDINGS": not triaged is not clean),
#   TQREF_FUZZ_TRIAGE_ONLY=1  no campaign: triage the inputs already in $BUILD/findings/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${1:-60}
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(fuzz_sweep_config fuzz_trace_reader fuzz_ex2_profile fuzz_golden_reader fuzz_isolated_reader
                               fuzz_chunk_decoder)
BUILD=${TQREF_FUZZ_BUILD:-build/fuzz}

SEEDS="$BUILD/seeds"
if [[ -z "${TQREF_FUZZ_PREBUILT:-}" ]]; then
  for tool in clang-14 clang++-14 h5repack; do
    command -v "$tool" >/dev/null ||
      { echo "fuzz: $tool missing (TQREF_FUZZ_DEPS=1 bash scripts/setup.sh installs it)" >&2; exit 2; }
  done
  mkdir -p "$BUILD"
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTQREF_FUZZ=ON \
    -DTQREF_ENABLE_CUDA=OFF -DTQREF_BUILD_BENCHMARKS=OFF >"$BUILD/configure.log" 2>&1 ||
    { cat "$BUILD/configure.log" >&2; exit 2; }
  cmake --build "$BUILD" -j"${TQREF_JOBS:-2}" --target tqref "${TARGETS[@]}" >"$BUILD/build.log" 2>&1 ||
    { tail -40 "$BUILD/build.log" >&2; exit 2; }

  # Seeds, all structurally valid HDF5 files (or YAML): a trace written by h5py (another HDF5
  # writer), golden files that the instrumented tqref generates from small sweeps, the same golden
  # files repacked by h5repack without filters and in the 1.8 format (no checksums: mutations then
  # reach the parsing logic behind them), and the committed EX2 profile.
  rm -rf "$SEEDS" && mkdir -p "$SEEDS/golden" "$SEEDS/ex2"
  /usr/bin/python3 tests/fuzz/make_seeds.py "$SEEDS"
  for y in writer_small decode_small; do
    "$BUILD/cli/tqref" generate --config "$SEEDS/sweep/$y.yaml" --out "$SEEDS/golden/$y.h5" \
      --threads 1 >/dev/null 2>&1
    h5repack -f NONE -l CONTI "$SEEDS/golden/$y.h5" "$SEEDS/golden/${y}_plain.h5"
  done
  cp data/hw/sm_90/ex2.h5 "$SEEDS/ex2/sm_90.h5"
  # The chunk decoder's seeds: its regressions (a round trip, damaged streams and checksums) and
  # real chunks of the committed smoke file with their pipeline (make_seeds.py, h5py).
  mkdir -p "$SEEDS/chunk" && cp tests/fuzz/regressions/fuzz_chunk_decoder/* "$SEEDS/chunk/"
  /usr/bin/python3 tests/fuzz/make_seeds.py --chunks data/golden/smoke.h5 "$SEEDS/chunk"
else
  for t in "${TARGETS[@]}"; do
    [[ -x "$BUILD/tests/fuzz/$t" ]] || { echo "fuzz: $BUILD/tests/fuzz/$t missing (TQREF_FUZZ_PREBUILT)" >&2; exit 2; }
  done
  [[ -d "$SEEDS" ]] || { echo "fuzz: $SEEDS missing (TQREF_FUZZ_PREBUILT)" >&2; exit 2; }
fi
declare -A SEED_DIR=([fuzz_golden_reader]=golden [fuzz_isolated_reader]=golden [fuzz_trace_reader]=trace
                     [fuzz_ex2_profile]=ex2 [fuzz_sweep_config]=sweep [fuzz_chunk_decoder]=chunk)
declare -A MAX_LEN=([fuzz_golden_reader]=262144 [fuzz_isolated_reader]=262144 [fuzz_trace_reader]=65536
                    [fuzz_ex2_profile]=262144 [fuzz_sweep_config]=4096 [fuzz_chunk_decoder]=1048576)
# Seconds per input before libFuzzer saves it as a timeout. The golden and trace readers take a
# few milliseconds per input under ASan; their timeouts are libhdf5's endless loops on malformed
# metadata, each of which costs a fork-mode worker this long, so they get 2 and 3 s. A valid EX2
# profile expands its 2^23-entry table (about 1 s); the isolated reader's child has a 10 s
# deadline of its own.
declare -A TIMEOUT=([fuzz_golden_reader]=3 [fuzz_isolated_reader]=30 [fuzz_trace_reader]=2
                    [fuzz_ex2_profile]=10 [fuzz_sweep_config]=10 [fuzz_chunk_decoder]=2)
# The limits of a campaign, for target $1; the triage replays an input alone with the same ones.
# -rss_limit_mb / -malloc_limit_mb: a reader that allocates from a corrupt size is a finding.
limits() { echo "-timeout=${TIMEOUT[$1]} -rss_limit_mb=3072 -malloc_limit_mb=1024"; }
export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp"

# Replays one saved input of target $1 (see "Triage" below) and files it: findings/<t>/contained
# when the isolated replay exits 0 and the target printed that the isolated pass refused the file
# because libhdf5 failed in the child (hdf5_validate.cpp's "libhdf5 failed while reading this
# object"); findings/<t>/alone when the isolated replay exits 0 without that and a fresh replay in
# process, with the campaign's limits, passes too (the input failed only after earlier inputs of
# the same fuzzing process: state that libhdf5 kept from them); else it stays in findings/<t>/.
triage_one() {
  local t=$1 f=$2 findings=$3
  # The child's idle deadline is the campaign's per-input timeout (TQREF_FUZZ_IDLE_S; tqref's
  # own is 10 s): what ran longer in the campaign was saved as a timeout anyway.
  if TQREF_FUZZ_ISOLATE=1 TQREF_FUZZ_IDLE_S="${TIMEOUT[$t]}" timeout 120 "$BUILD/tests/fuzz/$t" "$f" \
       >"$f.replay.log" 2>&1; then
    if grep -q '^fuzz: input refused: .*libhdf5 failed while reading this object' "$f.replay.log"; then
      mv "$f" "$f.replay.log" "$findings/contained/"
    elif timeout 120 "$BUILD/tests/fuzz/$t" $(limits "$t") "$f" >>"$f.replay.log" 2>&1; then
      mv "$f" "$f.replay.log" "$findings/alone/"
    fi
  fi
}

# Triage of target $1's saved inputs, side by side, one replay per CPU (a long campaign saves
# hundreds, and each libhdf5 hang takes a replay the campaign's timeout to refuse); no replay
# starts after TQREF_FUZZ_TRIAGE_SECS seconds. Prints "contained alone left".
triage() {
  local t=$1 findings=$BUILD/findings/$1 f
  local deadline=$(($(date +%s) + ${TQREF_FUZZ_TRIAGE_SECS:-1000000}))
  mkdir -p "$findings/contained" "$findings/alone"
  local c0 a0
  c0=$(count_inputs "$findings/contained") a0=$(count_inputs "$findings/alone")
  for f in "$findings"/*; do
    [[ -f "$f" && "$f" != *.replay.log ]] || continue
    (($(date +%s) < deadline)) || break
    while (($(jobs -rp | wc -l) >= $(getconf _NPROCESSORS_ONLN))); do wait -n; done
    triage_one "$t" "$f" "$findings" &
  done
  wait
  echo "$(($(count_inputs "$findings/contained") - c0)) $(($(count_inputs "$findings/alone") - a0)) $(count_inputs "$findings")"
}

count_inputs() { find "$1" -maxdepth 1 -type f ! -name '*.replay.log' | wc -l; }

status=0
for t in "${TARGETS[@]}"; do
  corpus="$BUILD/corpus/$t" findings="$BUILD/findings/$t"
  mkdir -p "$corpus" "$findings"
  log="$BUILD/$t.log"
  extra=()
  [[ -n "${TQREF_FUZZ_RUNS:-}" ]] && extra+=(-runs="$TQREF_FUZZ_RUNS")
  [[ -n "${TQREF_FUZZ_FORK:-}" ]] &&
    extra+=(-fork="$TQREF_FUZZ_FORK" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  start=$(date +%s)
  rc=0
  if [[ -z "${TQREF_FUZZ_TRIAGE_ONLY:-}" ]]; then
    set +e
    # shellcheck disable=SC2046  # limits prints separate flags
    nice -n "${TQREF_FUZZ_NICE:-0}" "$BUILD/tests/fuzz/$t" "$corpus" "$SEEDS/${SEED_DIR[$t]}" \
      -max_total_time="$SECS" -max_len="${MAX_LEN[$t]}" $(limits "$t") \
      -artifact_prefix="$findings/" -print_final_stats=1 "${extra[@]}" >"$log" 2>&1
    rc=$?
    set -e
  fi
  secs=$(($(date +%s) - start))
  # Executions: the final stats (one process), or the last fork-mode status line.
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" 2>/dev/null | tail -1)
  [[ -z "$execs" ]] && execs=$(grep -oE '^#[0-9]+' "$log" 2>/dev/null | tail -1 | tr -d '#')
  cov=$(grep -o 'cov: [0-9]*' "$log" 2>/dev/null | tail -1 || true)
  saved=$(count_inputs "$findings")
  # Triage: the HDF5 targets validate in this process, so libhdf5's own crashes on malformed files
  # are saved too. Each saved input is replayed (triage_one): with the isolation on
  # (TQREF_FUZZ_ISOLATE=1, as test_reliability replays tests/fuzz/regressions), then alone.
  contained=0 alone=0
  if [[ "$t" != fuzz_sweep_config && "$t" != fuzz_chunk_decoder ]]; then  # no libhdf5 to contain
    read -r contained alone saved < <(triage "$t")
  fi
  # With -fork, libFuzzer exits non-zero when it saved anything; the triage above decides.
  if ((saved == 0 && (rc == 0 || contained + alone > 0))); then
    note=""
    ((contained)) && note=" ($contained libhdf5 failures found in-process, each refused by the isolated pass: $findings/contained)"
    ((alone)) && note+=" ($alone inputs that failed only after earlier inputs of the same process and pass alone, in process and isolated: $findings/alone)"
    echo "fuzz: $t: ${execs:-?} executions in ${secs} s, $cov, no findings$note"
  else
    status=1
    echo "fuzz: $t: FINDINGS after ${execs:-?} executions in ${secs} s (exit $rc, $saved inputs saved in $findings, not refused by the isolated pass or not triaged):" >&2
    find "$findings" -maxdepth 1 -type f ! -name '*.replay.log' | head -20 >&2
    grep -m1 -A12 'ERROR: \|==ERROR\|runtime error\|deadly signal\|uncaught' "$log" >&2 || tail -30 "$log" >&2
  fi
done
exit $status
