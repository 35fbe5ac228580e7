#!/usr/bin/env bash
# Long fuzz campaigns on a machine with many cores (the GPU machine's host CPUs; issue 20 item 5,
# docs/reliability.md "Fuzzing"). The targets are built here by scripts/fuzz.sh (clang-14, ASan and
# UBSan); the other machine needs no compiler.
#   bash scripts/device-fuzz.sh pack [FUZZ_BUILD]
#       here: copies the targets, the seeds, the corpora so far and the non-system shared libraries
#       they link into build/fuzz-carry and packs that into build/fuzz-carry.tar.xz (about
#       10 MiB; carry that file: the tree itself, about 60 MiB, is near the carry limit)
#   bash scripts/device-fuzz.sh run OUTDIR SECONDS TARGET=WORKERS ...
#       there: runs every TARGET at once for SECONDS in libFuzzer's fork mode with WORKERS
#       processes (scripts/fuzz.sh with TQREF_FUZZ_PREBUILT=1, so the triage by replay with the
#       isolation on is the same as here), then copies each target's log, its fuzz.sh verdict
#       line, the findings and the grown corpus into OUTDIR and writes OUTDIR/summary.txt.
# Exit status: 0 no target has a finding; 1 a finding; 2 bad usage or a missing piece.
# TQREF_FUZZ_CARRY: the packed tree (default build/fuzz-carry, relative to the repository root).
set -uo pipefail
cd "$(dirname "$0")/.."
carry=${TQREF_FUZZ_CARRY:-build/fuzz-carry}  # relative to the repository root
. scripts/carry-libs.sh

pack() {
  local src=${1:-build/fuzz} t
  local targets=(fuzz_sweep_config fuzz_trace_reader fuzz_ex2_profile fuzz_golden_reader fuzz_isolated_reader)
  for t in "${targets[@]}"; do
    [[ -x $src/tests/fuzz/$t ]] || { echo "device-fuzz: $src/tests/fuzz/$t missing: run scripts/fuzz.sh first" >&2; exit 2; }
  done
  [[ -d $src/seeds ]] || { echo "device-fuzz: $src/seeds missing: run scripts/fuzz.sh first" >&2; exit 2; }
  rm -rf "$carry" && mkdir -p "$carry/tests/fuzz" "$carry/lib"
  for t in "${targets[@]}"; do objcopy --strip-debug "$src/tests/fuzz/$t" "$carry/tests/fuzz/$t"; done
  cp -r "$src/seeds" "$carry/seeds"
  [[ -d $src/corpus ]] && cp -r "$src/corpus" "$carry/corpus"
  carry_libs "$carry/lib" "$carry"/tests/fuzz/*
  tar -C "$(dirname "$carry")" -cJf "$carry.tar.xz" "$(basename "$carry")"
  du -sh "$carry" "$carry.tar.xz"
}

run() {
  local out=$1 secs=$2 spec t j
  shift 2
  (($#)) || { echo "device-fuzz: run OUTDIR SECONDS TARGET=WORKERS ..." >&2; exit 2; }
  [[ -d $carry/tests/fuzz || ! -f $carry.tar.xz ]] || tar -C "$(dirname "$carry")" -xJf "$carry.tar.xz"
  [[ -d $carry/tests/fuzz ]] || { echo "device-fuzz: $carry(.tar.xz) missing: carry it from 'pack'" >&2; exit 2; }
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$PWD/$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export TQREF_DATA_DIR="$PWD/data"
  # one thread per fuzz process (the golden target runs the OpenMP model on every accepted case;
  # a team of nproc threads per worker would oversubscribe the machine)
  export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
  { getconf _NPROCESSORS_ONLN; lscpu | grep -E 'Model name|^CPU\(s\)'; } > "$out/machine.txt"
  local pids=()
  for spec in "$@"; do
    t=${spec%=*} j=${spec#*=}
    TQREF_FUZZ_BUILD=$carry TQREF_FUZZ_PREBUILT=1 TQREF_FUZZ_FORK=$j \
      bash scripts/fuzz.sh "$secs" "$t" > "$out/$t.verdict" 2>&1 &
    pids+=($!)
  done
  # Watchdog: campaigns still running 60 s after their time (libFuzzer's fork mode waits for its
  # jobs) are stopped, so that fuzz.sh goes on to its triage and verdict. It matches the
  # campaigns' command lines (-max_total_time), not the triage's replays of single inputs.
  local pat="$carry/tests/fuzz/.*-max_total_time="
  (sleep $((secs + 60)); pkill -INT -f "$pat"; sleep 15; pkill -KILL -f "$pat") &
  local wd=$! status=0 p
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  kill "$wd" 2>/dev/null
  for spec in "$@"; do
    t=${spec%=*}
    cp "$carry/$t.log" "$out/" 2>/dev/null
    mkdir -p "$out/findings" "$out/corpus"
    cp -r "$carry/findings/$t" "$out/findings/" 2>/dev/null
    tar -C "$carry/corpus" -czf "$out/corpus/$t.tar.gz" "$t" 2>/dev/null
  done
  : > "$out/summary.txt"
  for spec in "$@"; do
    t=${spec%=*}
    if grep -q "^fuzz: $t" "$out/$t.verdict"; then
      grep "^fuzz: $t" "$out/$t.verdict" >> "$out/summary.txt"
    else
      echo "fuzz: $t: no verdict; last status: $(grep -E '^#[0-9]+' "$out/$t.log" | tail -1)" >> "$out/summary.txt"
      status=1
    fi
  done
  cat "$out/summary.txt"
  return $status
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run) shift; (($# >= 3)) || { echo "device-fuzz: run OUTDIR SECONDS TARGET=WORKERS ..." >&2; exit 2; }; run "$@" ;;
  *) echo "usage: scripts/device-fuzz.sh pack [FUZZ_BUILD] | run OUTDIR SECONDS TARGET=WORKERS ..." >&2; exit 2 ;;
esac
