// tqref bench: GPU timing of the writer and decoder kernels (the reference-order kernels, the
// GQA decoders and the fast writers) with a bit-for-bit conformance check of every timed kernel in the same run
// (bench/gpu/gpu_bench.h, docs/gpu-performance.md).
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "bench/gpu/bench_report.h"
#include "bench/gpu/bench_shapes.h"
#include "bench/gpu/gpu_bench.h"
#include "command.h"
#include "options.h"
#include "gpu/driver.h"
#include "io/ex2_profile_io.h"

namespace po = boost::program_options;
using namespace tqref;
using namespace tqref::cli;

namespace {

int cmd_bench(const std::vector<std::string>& args) {
  bool quick = false;
  std::string json, set_name = "full";
  int device = 0;
  float q_sigma = 1.0f;
  uint32_t model_seqs = 2;
  uint32_t only_len = 0;
  bool no_writer = false, no_decode = false;
  bench::Settings st;
  po::options_description desc(
      "usage: tqref bench [--quick] [--json FILE] [options]\n"
      "  Times the writer and decoder kernels on the GPU (the reference-order kernels, the GQA\n"
      "  decoders, the fast writers), after checking every timed kernel bit for bit (GQA decoders\n"
      "  against the reference-order decoder before timing and on their last timed launch, that one\n"
      "  against the CPU model on a few sequences, both writers\n"
      "  against the CPU model; each writer timed beside a device copy of the same bytes).\n"
      "  Exit 0: all conformant; 1: a mismatch; 2: bad options; 4: no GPU");
  desc.add_options()("help,h", "this text")("quick", po::bool_switch(&quick),
                                            "the same as --set quick")(
      "set", po::value(&set_name)->default_value(set_name),
      "shape set: quick, full, models (real models' head counts), writers (bench/gpu/bench_shapes.h)")(
      "json", po::value(&json), "write the results as JSON (schema tqref.bench/1)")(
      "runs", po::value(&st.runs)->default_value(st.runs), "timed runs per kernel (median reported)")(
      "warmup", po::value(&st.warmup)->default_value(st.warmup), "untimed runs before timing")(
      "rotate-mib", po::value<uint64_t>()->default_value(st.rotate_bytes >> 20),
      "pool copies are rotated until they exceed this many MiB (L2 is 50 MB on H200)")(
      "seed", po::value(&st.seed)->default_value(st.seed), "input generator seed")(
      "q-sigma", po::value(&q_sigma)->default_value(q_sigma), "std dev of q (K, V ~ N(0,1)); larger = more skips")(
      "model-seqs", po::value(&model_seqs)->default_value(model_seqs),
      "sequences of the first shape checked against the CPU model (0: none)")(
      "len", po::value(&only_len)->default_value(0),
      "only the decode shapes of this context length (0: all); for profiling one shape")(
      "no-writer", po::bool_switch(&no_writer), "skip the writer benchmarks")(
      "no-decode", po::bool_switch(&no_decode), "skip the decode benchmarks")(
      "device", po::value(&device)->default_value(0), "CUDA device ordinal");
  po::variables_map vm;
  if (const auto rc = parse_options("tqref bench", args, desc, vm)) return *rc;
  st.rotate_bytes = vm["rotate-mib"].as<uint64_t>() << 20;
  if (quick) set_name = "quick";
  bench::ShapeSet shapes;
  try {
    shapes = bench::shape_set(set_name, q_sigma);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "tqref bench: %s\n", e.what());
    return kExitUsage;
  }
  if (st.runs < 1 || st.warmup < 0) {
    std::fprintf(stderr, "tqref bench: --runs must be >= 1 and --warmup >= 0\n");
    return kExitUsage;
  }
  if (!require_gpu("tqref bench", " Nothing measured.")) return kExitNoDevice;
  gpu::Context ctx(device);
  bench::Report rep;
  rep.device = ctx.device().name;
  rep.arch = ctx.device().arch();
  rep.sm_count = ctx.device().sm_count;
  rep.driver = gpu::Driver::kernel_module_version();
  rep.settings = st;
  rep.command_line = "tqref bench";
  for (const auto& a : args) rep.command_line += " " + a;
  if (model_seqs > 0) {
    try {
      (void)load_ex2_profile_for_arch(rep.arch);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tqref bench: no EX2 profile for %s (%s): reference-order-vs-model check skipped "
                   "(set TQREF_DATA_DIR to the repository's data/)\n", rep.arch.c_str(), e.what());
      model_seqs = 0;
    }
  }
  bench::GpuBench b(ctx, st);
  rep.copy = b.copy(1ull << 30);
  std::printf("copy: %.0f GB/s read+write\n", rep.copy.gbps());
  bool first = true;
  for (const auto& s : shapes.decode) {
    if (no_decode) break;
    if (only_len != 0 && s.seq_len != only_len) continue;
    std::printf("decode %s ...\n", s.label().c_str());
    std::fflush(stdout);
    for (auto& r : b.decode(s, bench::all_heads_per_cta(), first ? model_seqs : 0)) rep.decode.push_back(r);
    first = false;
  }
  for (const auto& w : shapes.writer) {
    if (no_writer) break;
    std::printf("writer %s ...\n", w.label().c_str());
    std::fflush(stdout);
    for (auto& r : b.writers(w)) rep.writer.push_back(r);
  }
  if (!json.empty()) bench::write_json(json, rep);
  bench::print_table(rep);
  bool ok = true;
  for (const auto& r : rep.decode) ok &= r.conformant;
  for (const auto& r : rep.writer) ok &= r.conformant;
  if (!ok) std::printf("MISMATCH: at least one benchmarked kernel differs (see the bits column)\n");
  return ok ? kExitOk : kExitMismatch;
}

}  // namespace

TQREF_COMMAND("bench", "time the writer/decoder kernels (reference-order, GQA, fast writer) on the GPU, checked bit for bit",
              cmd_bench);
