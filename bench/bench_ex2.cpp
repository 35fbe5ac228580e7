// Cost of one EX2 / EXPF evaluation on random arguments: the measured 32 MiB fraction table (the
// model before the closed form: a cache miss per call) against the sm_90 datapath, called one at a
// time (Ex2Profile::ex2 / expf, what the scalar decode model does) and in batches on SIMD lanes
// (ex2_many / expf_many, what the SIMD decode model does). Items = calls.
// Arguments: profile (0 datapath, 1 measured table), batch (0 one at a time, 1 ex2_many), fn (0
// EX2 on [-126, 0], 1 EXPF on [-87, 0]).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_context.h"
#include "tqref/model_path.h"
#include "tqref/numeric.h"

namespace {

using namespace tqref;

constexpr size_t kArgs = 1u << 20;  // 4 MiB of arguments, results written over them

// Uniform random floats in [lo, 0]: every fraction index is equally likely.
const std::vector<float>& arguments(float lo) {
  static std::vector<float> ex2_args, expf_args;
  std::vector<float>& a = lo < -100.0f ? ex2_args : expf_args;
  if (a.empty()) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(lo, 0.0f);
    a.resize(kArgs);
    for (float& x : a) x = u(rng);
  }
  return a;
}

void BM_ex2(benchmark::State& state) {
  const Ex2Profile& p = state.range(0) ? bench::sm90_measured_table() : bench::sm90_datapath();
  const bool batch = state.range(1) != 0, expf = state.range(2) != 0;
  const std::vector<float>& x = arguments(expf ? -87.0f : -126.0f);
  std::vector<float> y(x.size()), check(x.size());
  for (size_t i = 0; i < x.size(); ++i) check[i] = expf ? p.expf(x[i]) : p.ex2(x[i]);
  for (auto _ : state) {
    if (batch) {
      if (expf) p.expf_many(x.data(), y.data(), x.size());
      else p.ex2_many(x.data(), y.data(), x.size());
    } else {
      for (size_t i = 0; i < x.size(); ++i) y[i] = expf ? p.expf(x[i]) : p.ex2(x[i]);
    }
    benchmark::DoNotOptimize(y.data());
  }
  for (size_t i = 0; i < x.size(); ++i)
    if (f32_bits(y[i]) != f32_bits(check[i])) {
      std::fprintf(stderr, "bench_ex2: result %zu differs from Ex2Profile::%s\n", i, expf ? "expf" : "ex2");
      std::exit(1);
    }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(x.size()));
  state.SetLabel(std::string(state.range(0) ? "table" : "datapath") + (expf ? " expf" : " ex2") +
                 (batch ? " batch-" + simd_isa() : " scalar"));
}

BENCHMARK(BM_ex2)
    ->ArgNames({"table", "batch", "expf"})
    ->ArgsProduct({{1, 0}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(3)
    ->ReportAggregatesOnly(false);

}  // namespace

int main(int argc, char** argv) { return tqref::bench::run_benchmarks(argc, argv); }
