#!/usr/bin/env bash
# Long fuzz campaigns on a machine with many cores (the GPU machine's host CPUs: the fuzz plan;
# docs/fuzzing.md "Commands"), from the tree `scripts/device-carry.sh --fuzz` packed here (the
# targets built by scripts/fuzz.sh with clang-14, ASan and UBSan; the other machine needs no
# compiler).
#   scripts/device/fuzz-campaigns.sh OUTDIR SECONDS TARGET=WORKERS[xINSTANCES] ...
# Runs every TARGET at once for SECONDS in libFuzzer's fork mode, INSTANCES campaigns (default 1)
# of WORKERS processes each (scripts/fuzz.sh with TQREF_FUZZ_PREBUILT=1, so the triage by replay
# is the same as here; TQREF_FUZZ_TRIAGE_SECS bounds it), then copies each campaign's log, its
# fuzz.sh verdict line and its findings into OUTDIR, the grown corpus of each target (all its
# campaigns) as OUTDIR/corpus/TARGET.tar.gz, and writes OUTDIR/fuzz-summary.txt.
# TQREF_FUZZ_CARRY: the packed tree (default build/fuzz-carry, relative to the repository root;
# build/fuzz-carry.tar.xz is unpacked when the tree is not there).
# Exit: 0 no target has a finding; 1 a finding; 2 bad usage or a missing piece.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
carry=${TQREF_FUZZ_CARRY:-build/fuzz-carry}
usage() { echo "usage: scripts/device/fuzz-campaigns.sh OUTDIR SECONDS TARGET=WORKERS[xINSTANCES] ..." >&2; exit 2; }

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

(($# >= 3)) || usage
out=$1 secs=$2
shift 2
[[ $secs =~ ^[0-9]+$ ]] || usage
[[ -d $carry/tests/fuzz || ! -f $carry.tar.xz ]] || tar -C "$(dirname "$carry")" -xJf "$carry.tar.xz"
[[ -d $carry/tests/fuzz ]] || { echo "fuzz-campaigns: $carry(.tar.xz) missing: carry it from 'scripts/device-carry.sh --fuzz'" >&2; exit 2; }
mkdir -p "$out/findings" "$out/corpus"
export LD_LIBRARY_PATH="$PWD/$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TQREF_DATA_DIR="$PWD/data"
# one thread per fuzz process (the golden target runs the OpenMP model on every accepted case;
# a team of nproc threads per worker would oversubscribe the machine)
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
{ getconf _NPROCESSORS_ONLN; lscpu | grep -E 'Model name|^CPU\(s\)'; } >"$out/machine.txt"
pids=() runs=()
for spec in "$@"; do
  t=${spec%=*} j=${spec#*=} n=1
  [[ $j == *x* ]] && n=${j#*x} j=${j%x*}
  for ((i = 1; i <= n; i++)); do
    campaign "$t" "$j" "$i" "$secs" >"$out/$t.$i.verdict" 2>&1 &
    pids+=($!) runs+=("$t.$i")
  done
done
# Watchdog: campaigns still running 60 s after their time (libFuzzer's fork mode waits for its
# jobs) are stopped, so that fuzz.sh goes on to its triage and verdict. It matches the campaigns'
# command lines (-max_total_time), not the triage's replays of single inputs.
pat="$carry/.*tests/fuzz/.*-max_total_time="
(sleep $((secs + 60)); pkill -INT -f "$pat"; sleep 15; pkill -KILL -f "$pat") &
wd=$! status=0
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
: >"$out/fuzz-summary.txt"
for r in "${runs[@]}"; do
  t=${r%.*}
  if grep -q "^fuzz: $t" "$out/$r.verdict"; then
    echo "[$r] $(grep "^fuzz: $t" "$out/$r.verdict")" >>"$out/fuzz-summary.txt"
  else
    echo "[$r] fuzz: $t: no verdict; last status: $(grep -E '^#[0-9]+' "$out/$r.log" | tail -1)" >>"$out/fuzz-summary.txt"
    status=1
  fi
done
cat "$out/fuzz-summary.txt"
exit $status
