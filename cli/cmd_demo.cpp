// `tqref demo`: the writer model on a random tensor, then the V pool read back the way the decoder
// reads it, with error statistics per format. A quick look at what the format costs; the
// systematic study is `tqref study` (docs/studies.md).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <omp.h>

#include "command.h"
#include "options.h"
#include "io/memory_budget.h"
#include "tqref/format.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"
#include "tqref/writer.h"

namespace po = boost::program_options;

namespace {

using namespace tqref;
using namespace tqref::cli;

struct Options {
  uint32_t tokens = 4096, heads = 8, head_dim = 128, block_size = 16, seed = 1;
  int threads = 0;
};

// Lloyd-Max distortion per unit variance of a Gaussian (docs/spec.md section 2), for comparison.
double lloyd_max_distortion(uint32_t levels) {
  return levels == 4 ? 0.117482 : levels == 8 ? 0.034548 : 0.009501;
}

// Memory of a run, from the options alone: the K and V tensors, the slots (a whole pool's worth
// before the shuffle is cut), and one format's pools at a time (the V pool at 4 bits, the widest).
uint64_t demo_bytes(const Options& o) {
  const uint64_t n = uint64_t(o.heads) * o.head_dim, slots = ((uint64_t(o.tokens) + o.block_size - 1) / o.block_size) * o.block_size;
  const uint64_t tensors = mul_sat(mul_sat(o.tokens, n), 4), k_pool = mul_sat(mul_sat(slots, n), 2),
                 v_pool = mul_sat(slots, n / 2 + n / 16);
  return add_sat(add_sat(tensors, mul_sat(slots, 8)), add_sat(k_pool, v_pool));
}

// Returns false when the K pool does not hold the input bits.
bool run_format(const FormatTraits& t, const Options& o, const std::vector<uint16_t>& value,
                const std::vector<uint16_t>& key, const std::vector<int64_t>& slots) {
  const uint32_t n = o.heads * o.head_dim;
  const uint32_t blocks = (o.tokens + o.block_size - 1) / o.block_size;
  WriterParams p;
  p.num_kv_heads = o.heads;
  p.head_dim = o.head_dim;
  p.block_size = o.block_size;
  p.key_stride = n;
  p.value_stride = n;
  p.v_data_section_bytes = uint64_t(o.block_size) * n * t.bits / 8;
  p.v_block_stride_bytes = p.v_data_section_bytes + uint64_t(o.block_size) * n / 16;
  std::vector<uint8_t> k_cache(uint64_t(blocks) * o.block_size * n * 2);
  std::vector<uint8_t> v_cache(uint64_t(blocks) * p.v_block_stride_bytes);
  const auto t0 = std::chrono::steady_clock::now();
  reshape_and_cache_model(t.format, key, value, k_cache, v_cache, slots, p);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const CacheGeometry g{o.heads, o.head_dim, o.block_size, blocks, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  double err_sq = 0, in_sq = 0, max_abs = 0;
  uint64_t zero_scales = 0, saturated = 0, k_bad = 0;
  for (uint32_t tok = 0; tok < o.tokens; ++tok) {
    const int64_t s = slots[tok];
    const uint8_t* codes = v_cache.data() + g.v_code_row_offset(s, t.bits);
    const uint8_t* scales = v_cache.data() + g.v_scale_row_offset(s);
    const uint8_t* krow = k_cache.data() + g.k_row_offset(s);
    for (uint32_t e = 0; e < n; ++e) {
      const uint8_t sb = scales[e / kGroupSize];
      const uint32_t c = unpack_group_code(t.bits, codes + (e / kGroupSize) * t.group_code_bytes,
                                           e % kGroupSize);
      const double in = bf16_to_f32(value[uint64_t(tok) * n + e]);
      const double d = double(dequantize_code(t, c, sb)) - in;
      err_sq += d * d;
      in_sq += in * in;
      max_abs = std::max(max_abs, std::fabs(d));
      if (e % kGroupSize == 0) {
        zero_scales += (sb & 0x7F) == 0;
        saturated += (sb & 0x7F) == 0x7E;
      }
      const uint16_t k = uint16_t(krow[2 * e] | (krow[2 * e + 1] << 8));
      k_bad += k != key[uint64_t(tok) * n + e];
    }
  }
  const double elems = double(o.tokens) * n;
  std::printf("%-8s %10.4f %12.6f %10.6f %10.4f %9.2f %8llu %8llu %9.1f\n", t.name,
              std::sqrt(err_sq / in_sq), err_sq / in_sq, lloyd_max_distortion(t.levels), max_abs,
              10 * std::log10(in_sq / err_sq), (unsigned long long)zero_scales,
              (unsigned long long)saturated, elems / secs / 1e6);
  if (k_bad) std::printf("  K pool: %llu values differ from the input (the copy is broken)\n",
                         (unsigned long long)k_bad);
  return k_bad == 0;
}

int cmd_demo(const std::vector<std::string>& args) {
  po::options_description desc(
      "usage: tqref demo [options]\n"
      "  Writes a random bf16 K/V tensor (V ~ N(0,1) per element, every 16th channel x8 as an\n"
      "  outlier channel) into paged pools with the writer model, reads V back as the decoder\n"
      "  does (fp16 codebook x fp8 scale) and prints, per format, the relative L2 error, the\n"
      "  normalised MSE next to the Gaussian Lloyd-Max optimum, the largest error, the SNR, how\n"
      "  many group scales were fp8 zero or saturated, and the model's throughput. Options");
  Options o;
  desc.add_options()("help,h", "this text")
      ("tokens", po::value(&o.tokens), "tokens written (>= 1; default 4096)")
      ("heads", po::value(&o.heads), "num_kv_heads (>= 1; default 8)")
      ("head-dim", po::value(&o.head_dim), "head_dim (a positive multiple of 16; default 128)")
      ("block-size", po::value(&o.block_size), "block_size (>= 1; default 16)")
      ("seed", po::value(&o.seed), "random seed (default 1)")
      ("threads", po::value(&o.threads), "OpenMP threads (default: OpenMP's choice)");
  po::variables_map vm;
  if (const auto rc = parse_options("tqref demo", args, desc, vm)) return *rc;
  auto usage_error = [](const char* what) {
    std::fprintf(stderr, "tqref demo: %s\n", what);
    return kExitUsage;
  };
  if (o.tokens == 0 || o.tokens > (1u << 20)) return usage_error("--tokens: allowed 1 .. 1048576");
  if (o.heads == 0 || o.heads > 256) return usage_error("--heads: allowed 1 .. 256");
  if (o.head_dim == 0 || o.head_dim % 16 || o.head_dim > 1024)
    return usage_error("--head-dim: allowed a multiple of 16 in 16 .. 1024");
  if (o.block_size == 0 || o.block_size > 1024)
    return usage_error("--block-size: allowed 1 .. 1024");
  if (o.threads < 0 || o.threads > 1024) return usage_error("--threads: allowed 0 .. 1024");
  // Each option may be at its maximum, not all at once: their product against the budget.
  const std::string shape = "--tokens " + std::to_string(o.tokens) + " --heads " + std::to_string(o.heads) +
                            " --head-dim " + std::to_string(o.head_dim) + " --block-size " + std::to_string(o.block_size);
  if (const std::string why = over_budget(demo_bytes(o), shape + " (K and V tensors, pools, slots)"); !why.empty())
    return usage_error((why + "; choose fewer tokens, heads or dimensions").c_str());
  if (o.threads > 0) omp_set_num_threads(o.threads);

  const uint32_t n = o.heads * o.head_dim;
  std::mt19937 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> key(uint64_t(o.tokens) * n), value(uint64_t(o.tokens) * n);
  for (auto& k : key) k = f32_to_bf16(normal(rng));
  for (uint64_t i = 0; i < value.size(); ++i)
    value[i] = f32_to_bf16(normal(rng) * (i % n % 16 == 0 ? 8.0f : 1.0f));
  const uint32_t blocks = (o.tokens + o.block_size - 1) / o.block_size;
  std::vector<int64_t> slots(uint64_t(blocks) * o.block_size);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(o.tokens);

  std::printf("tqref demo: %u tokens x %u heads x %u dims, block size %u, seed %u, %d threads\n",
              o.tokens, o.heads, o.head_dim, o.block_size, o.seed, omp_get_max_threads());
  std::printf("%-8s %10s %12s %10s %10s %9s %8s %8s %9s\n", "format", "rel. L2", "MSE/var",
              "Lloyd-Max", "max |err|", "SNR dB", "s zero", "s sat.", "M elem/s");
  bool k_ok = true;
  for (const auto& t : kFormats) k_ok = run_format(t, o, value, key, slots) && k_ok;
  return k_ok ? kExitOk : kExitMismatch;
}

}  // namespace

TQREF_COMMAND("demo", "the writer model on a random tensor, with error statistics", cmd_demo);
