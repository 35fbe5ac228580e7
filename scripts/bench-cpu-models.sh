#!/usr/bin/env bash
# The CPU-model benchmarks of docs/performance.md: bench_decode, bench_writer and bench_ex2 (scalar
# and SIMD in the same run), bench_machine (what the machine gives a second thread), their JSON,
# the machine and its load before and after, and the plot and tables of analysis/plot_cpu_bench.py.
# Run it on an otherwise idle machine (the load average is recorded; the ratios of one run are
# what counts).
# Usage: scripts/bench-cpu-models.sh [BUILD_DIR (build/cpu-only)] [OUTDIR (docs/performance-data/cpu)]
set -euo pipefail
build=${1:-build/cpu-only}
out=${2:-docs/performance-data/cpu}
mkdir -p "$out"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD || echo ' (with local changes)')"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|L2 cache|L3 cache|Flags)' | cut -c1-200
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/machine.txt"
for b in machine decode writer ex2; do
  # repetitions of all benchmarks in random order: a slow phase of a shared host falls on scalar
  # and SIMD, 1 and 2 threads alike instead of on whichever ran then
  "$build/bench/bench_$b" --benchmark_enable_random_interleaving=true \
    --benchmark_out="$out/bench_$b.json" --benchmark_out_format=json
  echo "load after bench_$b: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"
done
# The 2-thread check of issue 18 with more repetitions: three more runs of the SIMD decode path at
# GQA 4, pooled by plot_cpu_bench.py (15 interleaved repetitions per benchmark)
for r in 1 2 3; do
  "$build/bench/bench_decode" --benchmark_filter='simd:1/.*gqa:4/ex2_table:0' \
    --benchmark_enable_random_interleaving=true --benchmark_out="$out/bench_decode_simd_rep$r.json" \
    --benchmark_out_format=json > /dev/null
done
echo "load after the pooled runs: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"
/usr/bin/python3 analysis/plot_cpu_bench.py "$out" --out "$out/cpu_models.png" > "$out/tables.md"
cat "$out/machine.txt" "$out/tables.md"
