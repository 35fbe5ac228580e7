#!/usr/bin/env bash
# The conformtime plan's runs: `tqref conform` over smoke, real and DIR/{standard,models,pools,
# flags}.h5, level I included, every decoder's HDIM stated, once per NAME in the order given (the
# folders DIR/NAME hold the staged modules). Appends one row per run to OUT/conformtime.tsv: name,
# modules, exit code, wall seconds (this script's clock around the command), the suite runs'
# seconds as tqref printed them, the seconds conform.json states, and the modules' launch times
# summed (launches, buffers to the device, kernels, buffers back; tqref's "GPU time" lines). Each run's output goes to
# OUT/conform-<name>-<i>.log; its report to DIR/report-<name>-<i> (not brought back: the logs
# hold the verdicts). Exit 1 when a run's exit code is not 0.
#   scripts/device/conform-time.sh DIR OUT NAME...
set -u
dir=$1 out=$2
shift 2
tsv=$out/conformtime.tsv
[[ -f $tsv ]] || printf 'name\tmodules\texit\twall_s\tsuite_runs_s\treported_s\tlaunches\tupload_s\tkernel_s\tdownload_s\n' > "$tsv"
status=0 i=0
for name in "$@"; do
  i=$((i + 1))
  hdim=() n=0
  for f in "$dir/$name"/*; do
    b=$(basename "$f")
    n=$((n + 1))
    [[ $b == *hdim128* ]] && hdim+=(--hdim "$b=128")
    [[ $b == *hdim256* ]] && hdim+=(--hdim "$b=256")
  done
  log=$out/conform-$name-$i.log report=$dir/report-$name-$i
  t0=$(date +%s.%N)
  "$TQ" conform --modules "$dir/$name" --suites "smoke,real,$dir/standard.h5,$dir/models.h5,$dir/pools.h5,$dir/flags.h5" \
    "${hdim[@]}" --out "$report" > "$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  # "  <suite>: ... (1.2 s)" lines: the time each module spent in each suite.
  runs=$(sed -n 's/^  .*invariant (\([0-9.]*\) s)$/\1/p' "$log" | awk '{ s += $1 } END { printf "%.1f", s }')
  reported=$(sed -n 's/.*"seconds": *\([0-9.]*\).*/\1/p' "$report/conform.json" 2>/dev/null | head -1)
  # "  GPU time: N launches; buffers to the device U s, kernels K s, buffers back D s"
  gpu=$(sed -n 's/^  GPU time: \([0-9]*\) launches; buffers to the device \([0-9.]*\) s, kernels \([0-9.]*\) s, buffers back \([0-9.]*\) s$/\1 \2 \3 \4/p' "$log" |
        awk '{ n += $1; u += $2; k += $3; d += $4 } END { printf "%d\t%.2f\t%.2f\t%.2f", n, u, k, d }')
  printf '%s\t%s\t%s\t%.1f\t%s\t%s\t%s\n' "$name" "$n" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
    "$runs" "${reported:--}" "$gpu" >> "$tsv"
  tail -n 3 "$log"
  ((rc == 0)) || status=1
done
cat "$tsv"
exit $status
