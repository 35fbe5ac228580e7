#!/usr/bin/env bash
# The one GPU run: device facts, EX2 calibration check, every golden case on the GPU (smoke and
# standard suites, exact level; smoke decoders at level T), the external-module paths,
# compute-sanitizer memcheck/racecheck on a subset, and every mutant module against the suites.
# Every step's failure is shown and the script goes on; a compact summary table comes last.
#
# Usage (repository root on the GPU machine, after scripts/device-carry.sh BUILD here):
#   bash scripts/device-suite.sh OUT_DIR
# Needs .device-carry/{bin/tqref,lib,modules,mutants}; .device-carry/standard.h5 is used when
# present (else the standard suite is generated here with 16 threads). The THRESH = 2^-10 cases
# (data/golden/configs/thresh-pow2m10.yaml) are generated here and check the
# decode_hdim<H>_thr_pow2m10 builds, normal and mutant 5. Writes at most 8 files to OUT_DIR:
#   summary.txt log.txt smoke.json smoke.junit.xml standard.json standard.junit.xml
#   smoke-levelT.json mutants.tsv
# TQREF_MUTANT_IDS="13 14 ..." runs only those mutants (default: all); TQREF_SUITE_MUTANTS_ONLY=1
# skips steps 2 and 4-6 (calibration, the suites on our kernels, modules, sanitizers), for a second
# call that finishes the mutants a first call's budget left.
# Budget: about 8 minutes (TQREF_SUITE_BUDGET seconds, default 470); steps that would start
# after it are listed as skipped.
set -u
out=${1:-${OUT:-}}
[[ -n $out ]] || { echo "usage: scripts/device-suite.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$out"
root=$PWD
carry=$root/.device-carry
tq=$carry/bin/tqref
export LD_LIBRARY_PATH=$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TQREF_DATA_DIR=$root/data   # EX2 profiles: data/hw/<arch>/ex2.h5 of this checkout
budget=${TQREF_SUITE_BUDGET:-470}
tmp=$(mktemp -d /tmp/tqref-suite.XXXXXX)
log=$out/log.txt
: > "$log"
summary=()   # "step|rc|seconds|verdict"

note() { echo "$*" | tee -a "$log"; }
left() { echo $((budget - SECONDS)); }

# run NAME TIMEOUT OKCODES CMD... : runs CMD with a timeout, output to the log (and the last
# lines to the terminal), records rc, time and "ok"/"FAIL" (rc in OKCODES, space-separated).
run() {
  local name=$1 limit=$2 okcodes=$3
  shift 3
  if (( $(left) < 10 )); then
    summary+=("$name|-|0|SKIPPED (time budget)")
    note "=== $name: skipped, time budget spent"
    return 99
  fi
  (( limit > $(left) )) && limit=$(left)
  note "=== $name (timeout ${limit}s): $*"
  local t0=$SECONDS rc
  timeout --kill-after=5 "$limit" "$@" > "$tmp/step.out" 2>&1
  rc=$?
  head -c 200000 "$tmp/step.out" >> "$log"
  tail -n 6 "$tmp/step.out"
  local verdict=FAIL
  for c in $okcodes; do [[ $rc == "$c" ]] && verdict=ok; done
  (( rc == 124 || rc == 137 )) && verdict="FAIL (timeout)"
  summary+=("$name|$rc|$((SECONDS - t0))|$verdict")
  note "--- $name: rc $rc, $((SECONDS - t0)) s, $verdict"
  return $rc
}

# 1. Device and binary
if [[ ! -x $tq ]]; then
  note "missing $tq: run scripts/device-carry.sh BUILD_DIR on the build machine and carry .device-carry"
  exit 2
fi
run "nvidia-smi" 20 "0" nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm --format=csv
run "tqref version" 10 "0" "$tq" version

only_mutants=${TQREF_SUITE_MUTANTS_ONLY:-0}
# 2. EX2 calibration against the committed profile of this architecture
[[ $only_mutants == 1 ]] || run "calibrate ex2" 150 "0" "$tq" calibrate ex2 --out "$tmp/ex2.h5"
cal_ids=$(grep -o 'sm_[0-9]*-ex2-v1-[0-9a-f]*' "$tmp/step.out" | sort -u | tr '\n' ' ')
if [[ $only_mutants == 1 ]]; then ex2_verdict="not run (TQREF_SUITE_MUTANTS_ONLY)"
elif grep -q "identical fraction table" "$tmp/step.out"; then ex2_verdict="identical to the committed profile ($cal_ids)"
else ex2_verdict="NOT identical or not compared: ids seen: ${cal_ids:-none}"; fi
note "EX2: $ex2_verdict"

# 3. Golden files: committed smoke (or generated), standard generated here (16 threads)
smoke=$root/data/golden/smoke.h5
if [[ ! -f $smoke ]]; then
  smoke=$tmp/smoke.h5
  run "generate smoke" 60 "0" "$tq" generate --suite smoke --threads 16 --out "$smoke"
fi
standard=$carry/standard.h5   # carried when it was generated on the build machine
if [[ ! -f $standard ]]; then
  standard=$tmp/standard.h5
  run "generate standard" 150 "0" "$tq" generate --suite standard --threads 16 --out "$standard"
fi
# Decode cases for THRESH = 2^-10, a reachable factor: a probe exactly at THRESH (mutant 5)
thr_value=0.0009765625
thrfile=$tmp/thresh-pow2m10.h5
run "generate thresh-pow2m10" 60 "0" "$tq" generate --config "$root/data/golden/configs/thresh-pow2m10.yaml" \
    --threads 16 --out "$thrfile"

# 4. Every case on the GPU, exact (W for writers, D for decoders), then level T on smoke
gpu=(check --backend gpu --show 4)
if [[ $only_mutants != 1 ]]; then
run "check smoke (gpu, exact)" 90 "0" "$tq" "${gpu[@]}" "$smoke" \
    --report "$out/smoke.json" --junit "$out/smoke.junit.xml"
if [[ -f $standard ]]; then
  run "check standard (gpu, exact)" 180 "0" "$tq" "${gpu[@]}" "$standard" \
      --report "$out/standard.json" --junit "$out/standard.junit.xml"
else
  summary+=("check standard (gpu, exact)|-|0|SKIPPED (no standard file)")
fi
run "check smoke (gpu, level T)" 60 "0" "$tq" "${gpu[@]}" "$smoke" --level T --kind decode \
    --report "$out/smoke-levelT.json"

# 5. External modules: our own builds as cubin and PTX, and a cubin for another GPU (must be
#    refused with exit 3 and a message naming the architectures)
mods=$carry/modules
run "module writers.sm_90.cubin" 60 "0" "$tq" "${gpu[@]}" "$smoke" --kind writer --module "$mods/writers.sm_90.cubin"
run "module decode_hdim128 PTX" 60 "0" "$tq" "${gpu[@]}" "$smoke" --kind decode \
    --module "$mods/decode_hdim128.compute_90.ptx" --hdim 128
run "module decode_hdim256.sm_90.cubin" 60 "0" "$tq" "${gpu[@]}" "$smoke" --kind decode \
    --module "$mods/decode_hdim256.sm_90.cubin" --hdim 256
run "module sm_121 cubin refused" 30 "3" "$tq" "${gpu[@]}" "$smoke" --kind writer --module "$mods/writers.sm_121.cubin"
for h in 128 256; do
  if [[ -f $thrfile ]]; then
    run "module decode_hdim${h}_thr_pow2m10" 60 "0" "$tq" "${gpu[@]}" "$thrfile" --kind decode \
        --module "$mods/decode_hdim${h}_thr_pow2m10.fatbin" --hdim "$h" --threshold "$thr_value"
  else
    summary+=("module decode_hdim${h}_thr_pow2m10|-|0|SKIPPED (no thresh-pow2m10 file)")
  fi
done

# 6. compute-sanitizer on a subset (turbo3v cases of smoke)
if command -v compute-sanitizer > /dev/null; then
  for tool in memcheck racecheck; do
    run "compute-sanitizer $tool" 90 "0" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        "$tq" check "$smoke" --backend gpu --filter turbo3v
  done
else
  summary+=("compute-sanitizer|-|0|SKIPPED (not on PATH)")
fi
fi  # only_mutants

# 7. Mutants: smoke first; survivors against standard (the THRESH = 2^-10 builds: the
#    thresh-pow2m10 file instead of both), then at level I on the first file. Exit 1 (mismatch)
#    or 6 (GPU fault) = caught; 0 = survived; 3 = no case for that module. Mutant 5 (factor >= THRESH) at the default THRESH is
#    equivalent on sm_90: no EXPF output equals 1e-3f there (docs/decode-model.md item 8), so
#    > and >= agree on every input; those two builds are listed but not counted.
mt=$out/mutants.tsv
printf 'id\tshort\tmodule\tsmoke_rc\tstandard_rc\tverdict\n' > "$mt"
caught=0 total=0 equivalent=0 notrun=0
wanted=" ${TQREF_MUTANT_IDS:-} "
if [[ -f $carry/mutants/mutants.tsv ]]; then
  while IFS=$'\t' read -r id short module file what; do
    [[ $id == \#* || -z $id ]] && continue
    [[ $wanted == "  " || $wanted == *" $id "* ]] || continue
    # The offset and build-flag mutants (21-27) need the pools and flags suites and the control
    # must pass: scripts/device-launches.sh judges them.
    if [[ $short == offset32 || $short == plain_* ]]; then
      printf '%s\t%s\t%s\t-\t-\tnot run here (scripts/device-launches.sh)\n' "$id" "$short" "$module" >> "$mt"; continue
    fi
    args=(--module "$carry/mutants/$file")
    first=$smoke second=$standard firstname=smoke secondname=standard
    case $module in
      writers) args+=(--kind writer) ;;
      decode_hdim128 | decode_hdim256) args+=(--kind decode --hdim "${module#decode_hdim}") ;;
      decode_hdim*_thr_pow2m10)
        h=${module#decode_hdim}; args+=(--kind decode --hdim "${h%%_*}" --threshold "$thr_value")
        first=$thrfile second="" firstname=thresh-pow2m10 ;;
    esac
    if (( $(left) < 15 )); then printf '%s\t%s\t%s\t-\t-\tnot run (time)\n' "$id" "$short" "$module" >> "$mt"; notrun=$((notrun + 1)); continue; fi
    if [[ ! -f $first ]]; then printf '%s\t%s\t%s\t-\t-\tnot run (no %s file)\n' "$id" "$short" "$module" "$firstname" >> "$mt"; continue; fi
    total=$((total + 1))
    note "=== mutant $id $short $module"
    timeout --kill-after=5 60 "$tq" check "$first" --backend gpu --show 1 "${args[@]}" > "$tmp/m.out" 2>&1
    rs=$?; rt=-
    head -c 4000 "$tmp/m.out" >> "$log"; tail -n 1 "$tmp/m.out" | tee -a "$log"
    if [[ $rs == 0 && -n $second && -f $second ]] && (( $(left) > 30 )); then
      timeout --kill-after=5 90 "$tq" check "$second" --backend gpu --show 1 "${args[@]}" > "$tmp/m.out" 2>&1
      rt=$?
      head -c 4000 "$tmp/m.out" >> "$log"; tail -n 1 "$tmp/m.out" | tee -a "$log"
    fi
    # Survivors of W/D get level I on the same file (the invariance mutants 18-20 are made to
    # pass W/D and fail only there).
    ri=-
    if [[ $rs == 0 && ( $rt == 0 || $rt == - ) ]] && (( $(left) > 20 )); then
      timeout --kill-after=5 60 "$tq" check "$first" --backend gpu --level I "${args[@]}" > "$tmp/m.out" 2>&1
      ri=$?
      grep -m 2 "anatomy:" "$tmp/m.out" >> "$log"; tail -n 1 "$tmp/m.out" | tee -a "$log"
    fi
    if [[ $rs == 1 || $rs == 6 ]]; then v="caught ($firstname)"
    elif [[ $rt == 1 || $rt == 6 ]]; then v="caught ($secondname)"
    elif [[ $ri == 1 || $ri == 6 ]]; then v="caught (level I, $firstname)"
    elif [[ $rs == 3 && ( $rt == - || $rt == 3 ) ]]; then v="n/a (no case for this build)"; total=$((total - 1))
    elif [[ $rs == 0 && ( $rt == 0 || $rt == - ) && $short == thresh_ge && $module == decode_hdim[0-9]* && $module != *_thr_* ]]; then
      v="equivalent at the default THRESH on sm_90 (not counted)"; total=$((total - 1)); equivalent=$((equivalent + 1))
    elif [[ $rs == 0 && ( $rt == 0 || $rt == - ) ]]; then v=SURVIVED
    else v="error (rc $rs/$rt)"; fi
    [[ $v == caught* ]] && caught=$((caught + 1))
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$short" "$module" "$rs" "$rt" "$v" >> "$mt"
  done < "$carry/mutants/mutants.tsv"
  summary+=("mutants|-|-|caught $caught of $total applicable builds run ($equivalent equivalent, not counted; $notrun not run: time)")
else
  summary+=("mutants|-|0|SKIPPED (no .device-carry/mutants)")
fi

# 8. Summary (last)
{
  echo "tqref device suite, $(date -u +%Y-%m-%dT%H:%M:%SZ), ${SECONDS}s"
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /'
  "$tq" version 2>/dev/null | head -n 3
  echo "EX2: $ex2_verdict"
  echo
  printf '%-36s %5s %6s  %s\n' step rc sec verdict
  for row in "${summary[@]}"; do
    IFS='|' read -r n rc sec v <<< "$row"
    printf '%-36s %5s %6s  %s\n' "$n" "$rc" "$sec" "$v"
  done
  echo
  echo "check summaries:"; grep -E "^[0-9]+ cases, " "$log" | head -n 12 | sed 's/^/  /'
  echo
  echo "mutants:"; column -t -s $'\t' "$mt" 2>/dev/null || cat "$mt"
} > "$out/summary.txt"
cat "$out/summary.txt"
rm -rf "$tmp"
