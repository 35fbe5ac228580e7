// What the machine itself gives a second thread, measured the way the models use threads (an
// OpenMP team per iteration, each thread with its own work): the baseline against which the
// models' 2-thread speed-ups of docs/performance.md are read (issue 18's ">= 1.8x on 2 threads").
// Two loops per thread, both free of memory traffic (registers only):
// - dep_chain: one chain of dependent 64-bit integer adds (one per cycle on any x86-64 or Arm
//   core): its rate per thread is the core clock, so a lower rate with 2 threads means the
//   vCPUs run at a lower clock together (turbo budget, host scheduling, steal);
// - vec_mul: 8 independent chains of 16-float vector multiplies (the models' arithmetic without
//   FMA): bounded by the vector ports; it falls further than dep_chain when two vCPUs share one
//   physical core's ports (hyper-threads of the host).
// Items per second are totals over the team, so the 2-thread row divided by the 1-thread row is
// the speed-up the machine offers to perfectly parallel work.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>
#include <string>

#include "bench_context.h"

namespace {

constexpr int64_t kOpsPerThread = int64_t(1) << 26;

// One dependent add per step; the asm barrier keeps the compiler from folding the chain.
uint64_t dep_chain(uint64_t x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    x += static_cast<uint64_t>(i) | 1u;
    asm volatile("" : "+r"(x));
  }
  return x;
}

// 8 independent chains of W-float vector multiplies by a factor near 1 (no overflow, no
// denormals), compiled for the widest vectors the SIMD models use here (AVX-512, else AVX2;
// 4 lanes elsewhere). Always inlined, so the body is compiled for its caller's target.
template <int W> struct Vec {
  typedef float type __attribute__((vector_size(4 * W)));
};
template <int W> [[gnu::always_inline]] inline float vec_mul_body(float seed, int64_t n) {
  typedef typename Vec<W>::type V;
  V acc[8];
  for (int k = 0; k < 8; ++k) acc[k] = V{} + (seed + float(k));
  const V f = V{} + 0.99999994f;
  for (int64_t i = 0; i < n; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] *= f;  // IEEE: not reassociated or folded
  }
  float s = 0.0f;
  for (int k = 0; k < 8; ++k) s += acc[k][0];
  return s;
}
#if defined(__x86_64__)
__attribute__((target("avx512f"))) float vec_mul_avx512(float seed, int64_t n) {
  return vec_mul_body<16>(seed, n);
}
__attribute__((target("avx2"))) float vec_mul_avx2(float seed, int64_t n) {
  return vec_mul_body<8>(seed, n);
}
const char* vec_isa() { return __builtin_cpu_supports("avx512f") ? "avx512" : "avx2"; }
float vec_mul(float seed, int64_t n) {
  return __builtin_cpu_supports("avx512f") ? vec_mul_avx512(seed, n) : vec_mul_avx2(seed, n);
}
#else
const char* vec_isa() { return "4 lanes"; }
float vec_mul(float seed, int64_t n) { return vec_mul_body<4>(seed, n); }
#endif

template <class F> void team(benchmark::State& state, const std::string& what, F&& body) {
  const int threads = int(state.range(0));
  omp_set_num_threads(threads);
  for (auto _ : state) {
#pragma omp parallel num_threads(threads)
    body(omp_get_thread_num());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * threads * kOpsPerThread);
  state.SetLabel(what + " threads=" + std::to_string(threads));
}

void BM_dep_chain(benchmark::State& state) {
  team(state, "int64 add chain",
       [](int t) { benchmark::DoNotOptimize(dep_chain(uint64_t(t), kOpsPerThread)); });
}

void BM_vec_mul(benchmark::State& state) {
  // kOpsPerThread vector multiplies of 16 lanes per thread
  team(state, std::string("vector multiplies ") + vec_isa(),
       [](int t) { benchmark::DoNotOptimize(vec_mul(1.0f + float(t), kOpsPerThread)); });
}

void repeated(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
  b->Repetitions(5);
}
BENCHMARK(BM_dep_chain)->Apply(repeated);
BENCHMARK(BM_vec_mul)->Apply(repeated);

}  // namespace

int main(int argc, char** argv) { return tqref::bench::run_benchmarks(argc, argv); }
