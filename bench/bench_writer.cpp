// Throughput of the writer model reshape_and_cache_model in V elements per second, scalar
// (model/writer.cpp) and SIMD (model/writer_simd_impl.h) in the same run, on 1 and 2 OpenMP
// threads, for a realistic prefill: 8 kv heads x 128 dims, 4096 tokens, block size 16. Before
// timing, each format's pools from scalar and SIMD, 1 and 2 threads are compared byte for byte;
// a difference aborts the benchmark (a fast but wrong model is no result).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "bench_context.h"
#include "tqref/model_path.h"
#include "tqref/numeric.h"
#include "tqref/writer.h"

namespace {

using namespace tqref;

constexpr uint32_t kHeads = 8, kHeadDim = 128, kBlockSize = 16, kTokens = 4096;
constexpr uint32_t kN = kHeads * kHeadDim;

struct Workload {
  WriterParams p;
  std::vector<uint16_t> key, value;
  std::vector<int64_t> slots;
  std::vector<uint8_t> k_cache, v_cache;

  explicit Workload(Format f) {
    const uint32_t bits = traits(f).bits;
    p.num_kv_heads = kHeads;
    p.head_dim = kHeadDim;
    p.block_size = kBlockSize;
    p.key_stride = kN;
    p.value_stride = kN;
    p.v_data_section_bytes = uint64_t(kBlockSize) * kN * bits / 8;
    p.v_block_stride_bytes = p.v_data_section_bytes + kBlockSize * kN / 16;
    const uint32_t blocks = kTokens / kBlockSize;
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    key.resize(size_t(kTokens) * kN);
    value.resize(size_t(kTokens) * kN);
    for (auto& k : key) k = f32_to_bf16(normal(rng));
    for (auto& v : value) v = f32_to_bf16(normal(rng));
    slots.resize(kTokens);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng);
    k_cache.assign(size_t(blocks) * kBlockSize * kN * 2, 0);
    v_cache.assign(size_t(blocks) * p.v_block_stride_bytes, 0);
  }
  void run(Format f) { reshape_and_cache_model(f, key, value, k_cache, v_cache, slots, p); }
};

// Same bytes from scalar and SIMD, on 1 and 2 threads, else abort with a message.
void verify(Format f) {
  Workload ref(f);
  set_model_path(ModelPath::scalar);
  omp_set_num_threads(1);
  ref.run(f);
  for (ModelPath path : {ModelPath::scalar, ModelPath::simd})
    for (int threads : {1, 2}) {
      Workload w(f);
      set_model_path(path);
      omp_set_num_threads(threads);
      w.run(f);
      if (w.k_cache != ref.k_cache || w.v_cache != ref.v_cache) {
        std::fprintf(stderr, "bench_writer: %s pools of the %s model on %d threads differ from "
                     "the scalar model on 1\n", traits(f).name, model_path_name(path), threads);
        std::exit(1);
      }
    }
}

// Args: simd (0 scalar, 1 SIMD), format index, thread count.
void BM_reshape_and_cache_model(benchmark::State& state) {
  const bool simd = state.range(0) != 0;
  const Format f = kFormats[state.range(1)].format;
  const int threads = int(state.range(2));
  static bool verified[kNumFormats] = {};
  if (!verified[state.range(1)]) {
    verify(f);
    verified[state.range(1)] = true;
  }
  Workload w(f);
  set_model_path(simd ? ModelPath::simd : ModelPath::scalar);
  omp_set_num_threads(threads);
  for (auto _ : state) {
    w.run(f);
    benchmark::ClobberMemory();
  }
  set_model_path(ModelPath::simd);
  state.SetItemsProcessed(int64_t(state.iterations()) * kTokens * kN);
  state.SetLabel(std::string(simd ? "simd-" + simd_isa() : "scalar") + " " + traits(f).name +
                 " H8 D128 T4096 B16 threads=" + std::to_string(threads));
}

// Repetitions with a "min" row, as bench_decode.
BENCHMARK(BM_reshape_and_cache_model)
    ->ArgNames({"simd", "format", "threads"})
    ->ArgsProduct({{0, 1}, bench::format_indices(), {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ComputeStatistics("min", [](const std::vector<double>& v) {
      return *std::min_element(v.begin(), v.end());
    });

}  // namespace

int main(int argc, char** argv) { return tqref::bench::run_benchmarks(argc, argv); }
