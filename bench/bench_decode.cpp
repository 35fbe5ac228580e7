// Throughput of the decode model (model/decode.cpp, scalar; model/decode_simd.cpp, SIMD) in
// (q head x position) pairs per second: every q head attends to every position of its sequence,
// so one CTA of length L counts L pairs. Scalar and SIMD run in the same process on the same
// inputs; before timing, each shape's SIMD output and diagnostics are compared with the scalar
// ones bit for bit and a difference aborts (a fast but wrong model is no result).
// Pools hold random bytes of the right shape (random bf16 K, random codes, fp8 scales in
// [2^-3, 2^1)); q has sigma 2, so a realistic share of positions is skipped. EX2: the committed
// sm_90 profile, as its datapath (the model's default) or as the measured table it replaced.
// Arguments: path (0 scalar, 1 SIMD), format (0..2), HDIM, threads, q heads per kv head,
// profile (0 datapath, 1 measured table). 4 sequences x 4096 positions x 8 q heads.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "bench_context.h"
#include "tqref/decode.h"
#include "tqref/model_path.h"
#include "tqref/numeric.h"

namespace {

using namespace tqref;

constexpr uint32_t kSeqs = 4, kLen = 4096, kBlock = 16, kQHeads = 8;

struct Shape {
  Format fmt;
  uint32_t hdim, gqa;
  DecodeParams p;
  std::vector<uint16_t> q, out;
  std::vector<uint8_t> k, v;
  std::vector<int32_t> tables, lens;

  Shape(Format f, uint32_t hd, uint32_t g) : fmt(f), hdim(hd), gqa(g) {
    const uint32_t nkv = kQHeads / g, n = nkv * hd, bits = traits(f).bits, mb = kLen / kBlock;
    const uint32_t blocks = kSeqs * mb;
    p.max_blocks_per_seq = mb;
    p.num_q_heads = kQHeads;
    p.num_kv_heads = nkv;
    p.head_dim = hd;
    p.block_size = kBlock;
    p.inv_sqrt_d = 1.0f / std::sqrt(float(hd));
    p.q_stride = kQHeads * hd;
    p.v_data_section_bytes = uint64_t(kBlock) * n * bits / 8;
    p.v_block_stride_bytes = p.v_data_section_bytes + uint64_t(kBlock) * n / 16;
    p.num_seqs = kSeqs;
    p.hdim = hd;
    std::mt19937_64 rng(2024);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    q.resize(uint64_t(kSeqs) * p.q_stride);
    for (auto& x : q) x = f32_to_bf16(2.0f * gauss(rng));
    k.resize(uint64_t(blocks) * kBlock * n * 2);
    for (size_t i = 0; i < k.size(); i += 2) {
      const uint16_t b = f32_to_bf16(gauss(rng));
      k[i] = uint8_t(b);
      k[i + 1] = uint8_t(b >> 8);
    }
    v.resize(uint64_t(blocks) * p.v_block_stride_bytes);
    for (uint32_t blk = 0; blk < blocks; ++blk) {
      uint8_t* base = v.data() + uint64_t(blk) * p.v_block_stride_bytes;
      for (uint64_t i = 0; i < p.v_data_section_bytes; ++i) base[i] = uint8_t(rng());
      for (uint64_t i = 0; i < uint64_t(kBlock) * n / 16; ++i)
        base[p.v_data_section_bytes + i] = uint8_t(0x28 + rng() % 32);  // 2^-3 .. < 2^1
    }
    tables.resize(uint64_t(kSeqs) * mb);
    lens.assign(kSeqs, int32_t(kLen));
    for (uint32_t i = 0; i < blocks; ++i) tables[i] = int32_t((i * 7919u) % blocks);
    out.resize(uint64_t(kSeqs) * kQHeads * hd);
  }

  void run(const Ex2Profile& ex2, DecodeDiagnostics* diag = nullptr) {
    paged_decode_model(fmt, q, k, v, out, tables, lens, p, ex2, diag);
  }
};

// One shape per (format, HDIM, GQA), built once.
Shape& shape(Format f, uint32_t hdim, uint32_t gqa) {
  static std::map<std::tuple<int, uint32_t, uint32_t>, std::unique_ptr<Shape>> cache;
  auto& s = cache[{int(f), hdim, gqa}];
  if (!s) s = std::make_unique<Shape>(f, hdim, gqa);
  return *s;
}

// Scalar and SIMD outputs and diagnostics bit for bit, once per shape; else abort.
double verify_and_skip_share(Shape& s) {
  static std::map<Shape*, double> done;
  if (auto it = done.find(&s); it != done.end()) return it->second;
  DecodeDiagnostics ds, df;
  set_model_path(ModelPath::scalar);
  s.run(bench::sm90_datapath(), &ds);
  const std::vector<uint16_t> scalar_out = s.out;
  set_model_path(ModelPath::simd);
  s.run(bench::sm90_datapath(), &df);
  bool same = s.out == scalar_out && ds.heads.size() == df.heads.size();
  uint64_t skipped = 0;
  for (size_t i = 0; same && i < ds.heads.size(); ++i) {
    const DecodeHeadDiag &a = ds.heads[i], &b = df.heads[i];
    same = a.skipped == b.skipped && f32_bits(a.m) == f32_bits(b.m) && f32_bits(a.l) == f32_bits(b.l);
    for (size_t d = 0; same && d < a.out_f32.size(); ++d) same = f32_bits(a.out_f32[d]) == f32_bits(b.out_f32[d]);
    skipped += a.skip_count;
  }
  if (!same) {
    std::fprintf(stderr, "bench_decode: SIMD and scalar models differ (%s, HDIM %u, GQA %u)\n",
                 traits(s.fmt).name, s.hdim, s.gqa);
    std::exit(1);
  }
  return done[&s] = double(skipped) / (double(kSeqs) * kLen * kQHeads);
}

void BM_paged_decode_model(benchmark::State& state) {
  const bool simd = state.range(0) != 0;
  const Format fmt = kFormats[state.range(1)].format;
  const uint32_t hdim = uint32_t(state.range(2)), gqa = uint32_t(state.range(4));
  const int threads = int(state.range(3));
  const Ex2Profile& ex2 = state.range(5) ? bench::sm90_measured_table() : bench::sm90_datapath();
  Shape& s = shape(fmt, hdim, gqa);
  const double skip_share = verify_and_skip_share(s);
  set_model_path(simd ? ModelPath::simd : ModelPath::scalar);
  omp_set_num_threads(threads);
  for (auto _ : state) {
    s.run(ex2);
    benchmark::DoNotOptimize(s.out.data());
  }
  set_model_path(ModelPath::simd);
  state.SetItemsProcessed(int64_t(state.iterations()) * kSeqs * kLen * kQHeads);
  state.counters["skip_share"] = skip_share;
  state.SetLabel(std::string(simd ? "simd-" + simd_isa() : "scalar") + " " + traits(fmt).name +
                 " hdim=" + std::to_string(hdim) + " gqa=" + std::to_string(gqa) + " threads=" +
                 std::to_string(threads) + (state.range(5) ? " ex2=table" : " ex2=datapath"));
}

// Repetitions with a "min" row: on a shared machine the fastest repetition is the one least
// disturbed (rate counters of that row are minima too: compute the rate as items / min time).
void repeated(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(5)->ComputeStatistics(
      "min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}

// Every format x HDIM x 1, 2 threads at GQA 4, scalar and SIMD, EX2 as the datapath.
BENCHMARK(BM_paged_decode_model)
    ->ArgNames({"simd", "format", "hdim", "threads", "gqa", "ex2_table"})
    ->ArgsProduct({{0, 1}, bench::format_indices(), {128, 256}, {1, 2}, {4}, {0}})
    ->Apply(repeated);
// Without sharing between q heads (MHA, GQA 1), one thread.
BENCHMARK(BM_paged_decode_model)
    ->ArgNames({"simd", "format", "hdim", "threads", "gqa", "ex2_table"})
    ->ArgsProduct({{0, 1}, {1}, {128, 256}, {1}, {1}, {0}})
    ->Apply(repeated);
// EX2 from the measured 32 MiB table instead of the datapath (the model before the closed form).
BENCHMARK(BM_paged_decode_model)
    ->ArgNames({"simd", "format", "hdim", "threads", "gqa", "ex2_table"})
    ->ArgsProduct({{0, 1}, {1}, {128}, {1}, {4}, {1}})
    ->Apply(repeated);

}  // namespace

int main(int argc, char** argv) { return tqref::bench::run_benchmarks(argc, argv); }
