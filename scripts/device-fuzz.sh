#!/usr/bin/env bash
# Long fuzz campaigns on a machine with many cores (the GPU machine's host CPUs; issue 20 item 5,
# docs/reliability.md "Fuzzing"). The targets are built here by scripts/fuzz.sh (clang-14, ASan and
# UBSan); the other machine needs no compiler.
#   bash scripts/device-fuzz.sh pack [FUZZ_BUILD]
#       here: copies the targets, the seeds, the corpora so far and the non-system shared libraries
#       they link into build/fuzz-carry and packs that into build/fuzz-carry.tar.xz (about
#       10 MiB; carry that file: the tree itself, about 60 MiB, is near the carry limit)
#   bash scripts/device-fuzz.sh run OUTDIR SECONDS TARGET=WORKERS[xINSTANCES] ...
#       there: runs every TARGET at once for SECONDS in libFuzzer's fork mode, INSTANCES
#       campaigns (default 1) of WORKERS processes each (scripts/fuzz.sh with
#       TQREF_FUZZ_PREBUILT=1, so the triage by replay is the same as here; TQREF_FUZZ_TRIAGE_SECS
#       bounds it), then copies each campaign's log, its fuzz.sh verdict line and its findings
#       into OUTDIR, the grown corpus of each target (all its campaigns) as
#       OUTDIR/corpus/TARGET.tar.gz, and writes OUTDIR/summary.txt.
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

# One campaign: instance $3 of target $1 with $2 workers, in its own tree under $carry/inst (the
# targets and seeds linked, a copy of the corpus, its own findings and log). Several instances of
# one target share the machine better than one with more workers: libFuzzer's fork mode merges
# each finished job in its one parent process, and that capped a campaign at about one job (a
# libhdf5 crash ends one every few hundred inputs) per second, whatever the worker count.
campaign() {
  local t=$1 j=$2 i=$3 secs=$4 inst=$carry/inst/$1.$3
  rm -rf "$inst" && mkdir -p "$inst/corpus"
  ln -s "$PWD/$carry/tests" "$inst/tests" && ln -s "$PWD/$carry/seeds" "$inst/seeds"
  cp -r "$carry/corpus/$t" "$inst/corpus/$t" 2>/dev/null || mkdir -p "$inst/corpus/$t"
  TQREF_FUZZ_BUILD=$inst TQREF_FUZZ_PREBUILT=1 TQREF_FUZZ_FORK=$j bash scripts/fuzz.sh "$secs" "$t"
}

run() {
  local out=$1 secs=$2 spec t j n i
  shift 2
  (($#)) || { echo "device-fuzz: run OUTDIR SECONDS TARGET=WORKERS[xINSTANCES] ..." >&2; exit 2; }
  [[ -d $carry/tests/fuzz || ! -f $carry.tar.xz ]] || tar -C "$(dirname "$carry")" -xJf "$carry.tar.xz"
  [[ -d $carry/tests/fuzz ]] || { echo "device-fuzz: $carry(.tar.xz) missing: carry it from 'pack'" >&2; exit 2; }
  mkdir -p "$out/findings" "$out/corpus"
  export LD_LIBRARY_PATH="$PWD/$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export TQREF_DATA_DIR="$PWD/data"
  # one thread per fuzz process (the golden target runs the OpenMP model on every accepted case;
  # a team of nproc threads per worker would oversubscribe the machine)
  export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
  { getconf _NPROCESSORS_ONLN; lscpu | grep -E 'Model name|^CPU\(s\)'; } > "$out/machine.txt"
  local pids=() runs=()
  for spec in "$@"; do
    t=${spec%=*} j=${spec#*=} n=1
    [[ $j == *x* ]] && n=${j#*x} j=${j%x*}
    for ((i = 1; i <= n; i++)); do
      campaign "$t" "$j" "$i" "$secs" > "$out/$t.$i.verdict" 2>&1 &
      pids+=($!) runs+=("$t.$i")
    done
  done
  # Watchdog: campaigns still running 60 s after their time (libFuzzer's fork mode waits for its
  # jobs) are stopped, so that fuzz.sh goes on to its triage and verdict. It matches the
  # campaigns' command lines (-max_total_time), not the triage's replays of single inputs.
  local pat="$carry/.*tests/fuzz/.*-max_total_time="
  (sleep $((secs + 60)); pkill -INT -f "$pat"; sleep 15; pkill -KILL -f "$pat") &
  local wd=$! status=0 p r
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  kill "$wd" 2>/dev/null
  for r in "${runs[@]}"; do
    t=${r%.*}
    cp "$carry/inst/$r/$t.log" "$out/$r.log" 2>/dev/null
    cp -r "$carry/inst/$r/findings/$t" "$out/findings/$r" 2>/dev/null
    mkdir -p "$carry/corpus/$t" && cp -n "$carry/inst/$r/corpus/$t"/* "$carry/corpus/$t/" 2>/dev/null
  done
  for spec in "$@"; do
    t=${spec%=*}
    tar -C "$carry/corpus" -czf "$out/corpus/$t.tar.gz" "$t" 2>/dev/null
  done
  : > "$out/summary.txt"
  for r in "${runs[@]}"; do
    t=${r%.*}
    if grep -q "^fuzz: $t" "$out/$r.verdict"; then
      echo "[$r] $(grep "^fuzz: $t" "$out/$r.verdict")" >> "$out/summary.txt"
    else
      echo "[$r] fuzz: $t: no verdict; last status: $(grep -E '^#[0-9]+' "$out/$r.log" | tail -1)" >> "$out/summary.txt"
      status=1
    fi
  done
  cat "$out/summary.txt"
  return $status
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run) shift; (($# >= 3)) || { echo "device-fuzz: run OUTDIR SECONDS TARGET=WORKERS[xINSTANCES] ..." >&2; exit 2; }; run "$@" ;;
  *) echo "usage: scripts/device-fuzz.sh pack [FUZZ_BUILD] | run OUTDIR SECONDS TARGET=WORKERS ..." >&2; exit 2 ;;
esac
