#!/usr/bin/env bash
# Runs one plan of scripts/device/plans.tsv: its steps in table order, each under its timeout,
# each judged by its exit code against the one the table expects. Every GPU run of the project
# is one of these plans (docs/gpu-harness.md); the machine needs .device-carry/ from
# scripts/device-carry.sh.
#
#   bash scripts/device-run.sh PLAN [STEP...]            the plan, or only the named steps
#   bash scripts/device-run.sh --list [PLAN [STEP...]]    the plans, or what the plan would run;
#                                                         runs nothing (--dry-run is the same)
#   --plans FILE                                          another table of the same form
#
# The table: one row per step, fields separated by tabs (several tabs count as one):
#   PLAN  STEP  EXPECTED-EXIT  TIMEOUT-SECONDS  COMMAND
# `#` starts a comment line; `## PLAN: text` is the plan's description for --list. Plan and step
# names are letters, digits, '.', '_' and '-' (a step's log is named after it). COMMAND runs with
# `bash -o pipefail -c` in the repository root, stdin from /dev/null. Exit 77 means the step
# skipped itself (a tool that is not installed, an option not asked for): it passes, and the
# summary shows its last line. A step named require* always runs with its plan, and when its
# exit differs the plan's later steps are not run.
#
# What a step sees: ROOT (the repository root, its working directory); OUT (this plan's output
# folder); SCRATCH (a folder the plan's steps share, removed at the end); CARRY (TQREF_CARRY, else
# ROOT/.device-carry); TQ (TQREF_BIN, else CARRY/bin/tqref); PY (TQREF_PYTHON, else python3);
# SMOKE and REAL (the committed golden files); SUMMARY (summary.tsv as far as it is written);
# TQREF_DEVICE_DEADLINE (epoch second at which the budget ends); LD_LIBRARY_PATH with CARRY/lib
# first, TQREF_DATA_DIR=ROOT/data, PYTHONUNBUFFERED=1.
#
# Output, in OUT/PLAN (OUT is the device tool's folder; TQREF_DEVICE_OUT where OUT is unset),
# made afresh:
#   STEP.log     the step's output (its first and last 100 kB when it is longer)
#   summary.tsv  step, expected, got, seconds, verdict: a row as each step ends
#   summary.txt  plan, date, GPU, tqref version, the table and the result; printed last
# and whatever the steps write there. The device tool brings back at most 8 files: a folder
# holding more is packed into PLAN.tar.xz, beside summary.txt and summary.tsv.
#
# Budget: TQREF_DEVICE_BUDGET seconds for the plan (default 570: a device call lasts at most
# 600 s). A step's timeout is cut to what is left; with less than 5 s left a step is not run.
# Exit: 0 every step gave its expected exit code (or skipped itself); 1 a step gave another,
# timed out or was not run; 2 usage, an unknown plan or step, or a malformed table.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
plans=$ROOT/scripts/device/plans.tsv
readonly MIN_LEFT=5 LOG_KEEP=100000 MAX_FILES=8

die() { echo "device-run: $*" >&2; exit 2; }
usage() {
  echo "usage: scripts/device-run.sh [--plans FILE] PLAN [STEP...]" >&2
  echo "       scripts/device-run.sh [--plans FILE] --list [PLAN [STEP...]]" >&2
  exit 2
}

list=0
while (($#)); do
  case $1 in
    --list | --dry-run) list=1; shift ;;
    --plans) (($# >= 2)) || usage; plans=$(realpath "$2") || exit 2; shift 2 ;;
    -h | --help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) break ;;
  esac
done
plan=${1:-}
(($#)) && shift
wanted=("$@")
((list)) || [[ -n $plan ]] || usage

# --- the table ----------------------------------------------------------------------------------
# T_PLAN[i] T_STEP[i] T_WANT[i] T_LIMIT[i] T_CMD[i]: every row of the table, in order.
T_PLAN=() T_STEP=() T_WANT=() T_LIMIT=() T_CMD=()
declare -A DESC=() SEEN=()
load_table() {
  [[ -r $plans ]] || die "$plans: cannot read the table"
  local line n=0 p s w l c name='^[A-Za-z0-9._-]+$'
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    if [[ $line =~ ^##[[:space:]]+([A-Za-z0-9._-]+):[[:space:]]*(.*)$ ]]; then
      DESC[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
      continue
    fi
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    IFS=$'\t' read -r p s w l c <<<"$line"
    local at="$plans:$n"
    [[ -n $c ]] || die "$at: need 5 tab-separated fields (plan, step, expected exit, timeout, command)"
    [[ $p =~ $name && $s =~ $name ]] || die "$at: plan '$p', step '$s': names are letters, digits, '.', '_', '-'"
    [[ $w =~ ^[0-9]+$ ]] && ((w <= 255)) || die "$at: expected exit '$w' is not 0..255"
    [[ $l =~ ^[1-9][0-9]*$ ]] || die "$at: timeout '$l' is not a number of seconds (1 or more)"
    [[ -z ${SEEN[$p/$s]:-} ]] || die "$at: step $p/$s is also on line ${SEEN[$p/$s]}"
    bash -n -c "$c" 2>/dev/null || die "$at: step $p/$s: the command does not parse as bash"
    SEEN[$p/$s]=$n
    T_PLAN+=("$p") T_STEP+=("$s") T_WANT+=("$w") T_LIMIT+=("$l") T_CMD+=("$c")
  done <"$plans"
}
load_table

# The rows to run: the plan's steps that were named (all when none were) and its require* steps.
select_rows() {
  local i s found
  ROWS=()
  for i in "${!T_PLAN[@]}"; do [[ ${T_PLAN[$i]} == "$plan" ]] && found=1; done
  [[ -n ${found:-} ]] || die "no plan '$plan' in $plans (--list shows them)"
  for s in "${wanted[@]}"; do
    [[ -n ${SEEN[$plan/$s]:-} ]] || die "plan $plan has no step '$s' (--list $plan shows them)"
  done
  for i in "${!T_PLAN[@]}"; do
    [[ ${T_PLAN[$i]} == "$plan" ]] || continue
    if ((${#wanted[@]} == 0)) || [[ ${T_STEP[$i]} == require* || " ${wanted[*]} " == *" ${T_STEP[$i]} "* ]]; then
      ROWS+=("$i")
    fi
  done
}

if ((list)); then
  if [[ -z $plan ]]; then
    declare -A count=()
    order=()
    for p in "${T_PLAN[@]}"; do
      [[ -n ${count[$p]:-} ]] || order+=("$p")
      count[$p]=$((${count[$p]:-0} + 1))
    done
    for p in "${order[@]}"; do printf '%-12s %3d steps  %s\n' "$p" "${count[$p]}" "${DESC[$p]:-}"; done
    exit 0
  fi
  select_rows
  echo "plan $plan: ${DESC[$plan]:-}"
  printf '  %-28s %4s %7s  %s\n' step exit timeout command
  for i in "${ROWS[@]}"; do
    printf '  %-28s %4s %6ss  %s\n' "${T_STEP[$i]}" "${T_WANT[$i]}" "${T_LIMIT[$i]}" "${T_CMD[$i]}"
  done
  exit 0
fi
select_rows

# --- the run ------------------------------------------------------------------------------------
out_root=${OUT:-${TQREF_DEVICE_OUT:-}}
[[ -n $out_root ]] || die "set OUT (the device tool does) or TQREF_DEVICE_OUT to the output folder"
budget=${TQREF_DEVICE_BUDGET:-570}
[[ $budget =~ ^[0-9]+$ ]] || die "TQREF_DEVICE_BUDGET='$budget' is not a number of seconds"
dir=$out_root/$plan
rm -rf "$dir" && mkdir -p "$dir" && dir=$(cd "$dir" && pwd) || die "cannot make $out_root/$plan"
work=$(mktemp -d "${TMPDIR:-/tmp}/device-run.XXXXXX") || die "cannot make a scratch folder"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/scratch"

export ROOT OUT=$dir SCRATCH=$work/scratch SUMMARY=$dir/summary.tsv
export CARRY=${TQREF_CARRY:-$ROOT/.device-carry}
export TQ=${TQREF_BIN:-$CARRY/bin/tqref} PY=${TQREF_PYTHON:-python3}
export SMOKE=$ROOT/data/golden/smoke.h5 REAL=$ROOT/data/golden/real.h5
export TQREF_DEVICE_DEADLINE=$((EPOCHSECONDS + budget))
export LD_LIBRARY_PATH=$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TQREF_DATA_DIR=$ROOT/data PYTHONUNBUFFERED=1

now_us() { echo "${EPOCHREALTIME//[!0-9]/}"; }
t_start=$(now_us)
printf 'step\texpected\tgot\tseconds\tverdict\n' >"$SUMMARY"
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$SUMMARY"; }

# keep_log FROM TO: the output, or its first and last LOG_KEEP bytes with the size between.
keep_log() {
  local size
  size=$(stat -c %s "$1")
  if ((size <= 2 * LOG_KEEP)); then
    cp "$1" "$2"
  else
    { head -c "$LOG_KEEP" "$1"
      printf '\n[device-run: %d bytes left out]\n' $((size - 2 * LOG_KEEP))
      tail -c "$LOG_KEEP" "$1"; } >"$2"
  fi
}

bad=() gate=""
for i in "${ROWS[@]}"; do
  step=${T_STEP[$i]} want=${T_WANT[$i]} limit=${T_LIMIT[$i]} cmd=${T_CMD[$i]}
  left=$((TQREF_DEVICE_DEADLINE - EPOCHSECONDS))
  if [[ -n $gate ]]; then
    verdict="NOT RUN (requirement $gate failed)"
  elif ((left < MIN_LEFT)); then
    verdict="NOT RUN (time budget)"
  fi
  if [[ -n $gate ]] || ((left < MIN_LEFT)); then
    echo "=== $step: $verdict"
    record "$step" "$want" - - "$verdict"
    bad+=("$step")
    continue
  fi
  cut=""
  ((limit > left)) && limit=$left cut=", cut to the budget"
  echo "=== $step (expect exit $want, timeout ${limit}s$cut): $cmd"
  t0=$(now_us)
  timeout --kill-after=5 "$limit" bash -o pipefail -c "$cmd" >"$work/step.out" 2>&1 </dev/null
  rc=$?
  us=$(($(now_us) - t0))
  secs=$((us / 1000000)).$((us / 100000 % 10))
  keep_log "$work/step.out" "$dir/$step.log"
  tail -n 4 "$work/step.out" | cut -c1-300 | sed 's/^/    /'
  if ((rc == want)); then
    verdict=ok
  elif ((rc == 124 || rc == 137)); then
    verdict="TIMEOUT (${limit} s$cut)"
  elif ((rc == 77)); then
    verdict="skipped: $(grep -v '^[[:space:]]*$' "$work/step.out" | tail -n 1 | cut -c1-100)"
  else
    verdict="UNEXPECTED (exit $rc)"
  fi
  record "$step" "$want" "$rc" "$secs" "$verdict"
  echo "--- $step: exit $rc, $secs s, $verdict"
  if [[ $verdict != ok && $verdict != skipped* ]]; then
    bad+=("$step")
    [[ $step == require* ]] && gate=$step
  fi
done

# --- the summary --------------------------------------------------------------------------------
total=$((($(now_us) - t_start) / 1000000))
{
  echo "device plan $plan ($(realpath --relative-to="$ROOT" "$plans")), $(date -u +%Y-%m-%dT%H:%M:%SZ), ${total} s$(
    c=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null) && echo ", commit $c")"
  command -v nvidia-smi >/dev/null &&
    timeout 10 nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /'
  [[ -x $TQ ]] && timeout 10 "$TQ" version 2>/dev/null </dev/null | head -n 2
  echo
  printf '%-28s %8s %4s %7s  %s\n' step expected got seconds verdict
  tail -n +2 "$SUMMARY" | while IFS=$'\t' read -r s w g t v; do
    printf '%-28s %8s %4s %7s  %s\n' "$s" "$w" "$g" "$t" "$v"
  done
  echo
  if ((${#bad[@]})); then
    echo "RESULT: ${#bad[@]} of ${#ROWS[@]} steps did not give their expected exit code: ${bad[*]}"
  else
    echo "RESULT: every step gave its expected exit code (${#ROWS[@]} steps)"
  fi
} >"$work/summary.txt"
nfiles=$(find "$dir" -type f | wc -l)
if ((nfiles + 1 > MAX_FILES)); then
  if XZ_OPT=${XZ_OPT:--T0} tar -C "$dir" --exclude=./summary.tsv -cJf "$work/$plan.tar.xz" . 2>"$work/tar.err"; then
    find "$dir" -mindepth 1 -maxdepth 1 ! -name summary.tsv -exec rm -rf {} +
    mv "$work/$plan.tar.xz" "$dir/"
    echo "files: $plan.tar.xz holds the $((nfiles - 1)) files of the steps (tar -xJf $plan.tar.xz)" >>"$work/summary.txt"
  else
    echo "files: packing them failed ($(head -n 1 "$work/tar.err")); the device tool brings back 8" >>"$work/summary.txt"
  fi
fi
cp "$work/summary.txt" "$dir/summary.txt"
echo
cat "$dir/summary.txt"
((${#bad[@]} == 0))
