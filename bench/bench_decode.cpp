// Throughput of the decode model (model/decode.cpp) in (position x q head) per second: every
// q head attends to every position of its sequence, so one CTA of length L counts L items.
// Pools hold random bytes of the right shape (random bf16 K, random codes, fp8 scales in
// [2^-3, 2^1)); q has sigma 2, so a realistic share of positions is skipped. The EX2 profile
// is synthetic (same table lookup as the measured one, so the same cost).
// Arguments: format (0..2), HDIM, threads. 131072 items per iteration (4 x 4096 x 8).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tqref/decode.h"
#include "tqref/numeric.h"

namespace {

using namespace tqref;

const Ex2Profile& profile() {
  static const Ex2Profile p = [] {
    std::vector<uint32_t> f(kEx2FractionEntries);
    for (uint32_t k = 0; k < kEx2FractionEntries; ++k)
      f[k] = f32_bits(float(std::exp2(-double(k) * 0x1p-23)));
    return Ex2Profile::from_table("synthetic-exp2", "none", std::move(f));
  }();
  return p;
}

void BM_paged_decode_model(benchmark::State& state) {
  const Format fmt = Format(state.range(0));
  const uint32_t hdim = uint32_t(state.range(1));
  const int threads = int(state.range(2));
  const uint32_t S = 4, L = 4096, B = 16, nq = 8, nkv = 2, n = nkv * hdim;
  const uint32_t bits = traits(fmt).bits, mb = L / B, blocks = S * mb;
  DecodeParams p;
  p.max_blocks_per_seq = mb;
  p.num_q_heads = nq;
  p.num_kv_heads = nkv;
  p.head_dim = hdim;
  p.block_size = B;
  p.inv_sqrt_d = 1.0f / std::sqrt(float(hdim));
  p.q_stride = nq * hdim;
  p.v_data_section_bytes = uint64_t(B) * n * bits / 8;
  p.v_block_stride_bytes = p.v_data_section_bytes + uint64_t(B) * n / 16;
  p.num_seqs = S;
  p.hdim = hdim;

  std::mt19937_64 rng(2024);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<uint16_t> q(uint64_t(S) * p.q_stride);
  for (auto& x : q) x = f32_to_bf16(2.0f * gauss(rng));
  std::vector<uint8_t> k(uint64_t(blocks) * B * n * 2);
  for (size_t i = 0; i < k.size(); i += 2) {
    const uint16_t b = f32_to_bf16(gauss(rng));
    k[i] = uint8_t(b);
    k[i + 1] = uint8_t(b >> 8);
  }
  std::vector<uint8_t> v(uint64_t(blocks) * p.v_block_stride_bytes);
  for (uint32_t blk = 0; blk < blocks; ++blk) {
    uint8_t* base = v.data() + uint64_t(blk) * p.v_block_stride_bytes;
    for (uint64_t i = 0; i < p.v_data_section_bytes; ++i) base[i] = uint8_t(rng());
    for (uint64_t i = 0; i < uint64_t(B) * n / 16; ++i)
      base[p.v_data_section_bytes + i] = uint8_t(0x28 + rng() % 32);  // 2^-3 .. < 2^1
  }
  std::vector<int32_t> tables(uint64_t(S) * mb), lens(S, int32_t(L));
  for (uint32_t i = 0; i < blocks; ++i) tables[i] = int32_t((i * 7919u) % blocks);
  std::vector<uint16_t> out(uint64_t(S) * nq * hdim);

  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  DecodeDiagnostics diag;
  paged_decode_model(fmt, q, k, v, out, tables, lens, p, profile(), &diag);
  uint64_t skipped = 0;
  for (const auto& h : diag.heads) skipped += h.skip_count;
  for (auto _ : state) {
    paged_decode_model(fmt, q, k, v, out, tables, lens, p, profile());
    benchmark::DoNotOptimize(out.data());
  }
  omp_set_num_threads(saved);
  state.SetItemsProcessed(int64_t(state.iterations()) * S * L * nq);
  state.counters["skip_share"] = double(skipped) / (double(S) * L * nq);
  state.SetLabel(std::string(traits(fmt).name) + " hdim=" + std::to_string(hdim) +
                 " threads=" + std::to_string(threads));
}

// Five repetitions with a "min" row: on a shared machine the fastest repetition is the one
// least disturbed. Read the time column of the _min row (its rate counters are minima too, i.e.
// the slowest repetition's; compute the rate as items / min time).
BENCHMARK(BM_paged_decode_model)
    ->ArgsProduct({{0, 1, 2}, {128, 256}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ComputeStatistics("min", [](const std::vector<double>& v) {
      return *std::min_element(v.begin(), v.end());
    });

}  // namespace

BENCHMARK_MAIN();
