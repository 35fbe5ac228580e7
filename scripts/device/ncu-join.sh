#!/usr/bin/env bash
# Joins the ncu counts of each SET to its bench results (analysis/ncu_join.py): for SET, the
# profiled run OUTDIR/ncu_SET.{json,csv} and, when present, the timed run OUTDIR/SET.json.
#   scripts/device/ncu-join.sh OUTDIR SET...      -> OUTDIR/per_launch.{json,md}
# Exit 77 (skipped) when no SET was profiled; else ncu_join.py's.
set -u
out=$1
shift
args=()
for s in "$@"; do
  [[ -s $out/ncu_$s.json && -s $out/ncu_$s.csv ]] && args+=(--bench "$out/ncu_$s.json" --ncu "$out/ncu_$s.csv")
  [[ -s $out/$s.json ]] && args+=(--timed "$out/$s.json")
done
[[ " ${args[*]} " == *" --bench "* ]] || { echo "no profiled set among: $*"; exit 77; }
exec "${PY:-python3}" "$(dirname "$0")/../../analysis/ncu_join.py" "${args[@]}" \
  --json "$out/per_launch.json" --md "$out/per_launch.md"
