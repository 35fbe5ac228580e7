#include "generate_trace.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "cases/trace_golden.h"
#include "command.h"
#include "io/atomic_output.h"
#include "io/ex2_profile_io.h"
#include "io/hdf5_util.h"
#include "io/trace_file.h"

namespace po = boost::program_options;

namespace tqref::trace {

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<int> split_ints(const std::string& s, const char* option) {
  std::vector<int> out;
  for (const std::string& item : split(s)) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size())
      throw std::invalid_argument(std::string(option) + ": '" + item +
                                  "' is not an integer (comma-separated list expected)");
    out.push_back(v);
  }
  return out;
}

}  // namespace

void add_trace_generate_options(po::options_description& desc, TraceGenerateCli& tc) {
  desc.add_options()(
      "trace", po::value(&tc.trace),
      "build the 'real' suite from a trace file (docs/traces.md) instead of --suite/--config")(
      "trace-sequences", po::value(&tc.sequences), "with --trace: sequence names, comma-separated (default all)")(
      "trace-layers", po::value(&tc.layers), "with --trace: layers, comma-separated (default all)")(
      "trace-formats", po::value(&tc.formats), "with --trace: rotate (default) or all")(
      "trace-queries", po::value(&tc.queries),
      "with --trace: query positions, comma-separated, negative from the end (default: a fixed set)")(
      "trace-block-size", po::value(&tc.block_size), "with --trace: cache block size (default 16)")(
      "trace-padding-tokens", po::value(&tc.padding_tokens),
      "with --trace: slot -1 tokens per writer case (0 .. 65536, default 2)");
}

int run_trace_generate(const TraceGenerateCli& tc, const std::string& out, uint64_t seed,
                       const std::string& ex2_arch, const std::string& command) {
  using namespace tqref::cli;
  if (const std::string why = common::output_path_problem(out, {tc.trace}); !why.empty()) {
    std::fprintf(stderr, "%s --out %s\n", command.c_str(), why.c_str());
    return kExitUsage;
  }
  try {
    cases::TraceGoldenOptions opt;
    opt.sequences = split(tc.sequences);
    opt.layers = split_ints(tc.layers, "--trace-layers");
    opt.query_positions = split_ints(tc.queries, "--trace-queries");
    opt.formats = tc.formats;
    opt.block_size = tc.block_size;
    opt.padding_tokens = tc.padding_tokens;
    opt.seed = seed;
    Ex2Profile ex2 = load_ex2_profile_for_arch(ex2_arch);
    // Canonical command: what changes the contents (not --out or thread counts).
    std::string cmd = command + " --trace " +
                      std::filesystem::path(tc.trace).filename().string() + " --seed " +
                      std::to_string(seed);
    if (!tc.sequences.empty()) cmd += " --trace-sequences " + tc.sequences;
    if (!tc.layers.empty()) cmd += " --trace-layers " + tc.layers;
    if (tc.formats != "rotate") cmd += " --trace-formats " + tc.formats;
    if (!tc.queries.empty()) cmd += " --trace-queries " + tc.queries;
    if (tc.block_size != 16) cmd += " --trace-block-size " + std::to_string(tc.block_size);
    if (tc.padding_tokens != 2) cmd += " --trace-padding-tokens " + std::to_string(tc.padding_tokens);
    if (ex2_arch != "sm_90") cmd += " --ex2-arch " + ex2_arch;
    auto t0 = std::chrono::steady_clock::now();
    size_t n = cases::generate_trace_golden(tc.trace, out, opt, ex2, cmd);
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("wrote %s: %zu cases from %s, %.1f s, %llu bytes\n", out.c_str(), n,
                tc.trace.c_str(), sec, (unsigned long long)std::filesystem::file_size(out));
    return kExitOk;
  } catch (const cases::TraceOptionError& e) {  // an option outside its range, or past the budget
    std::fprintf(stderr, "%s: %s\n", command.c_str(), e.what());
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s --trace: %s\n", command.c_str(), e.what());
    return kExitBadInput;
  } catch (const h5::Error& e) {  // unreadable trace datasets, unwritable --out
    std::fprintf(stderr, "%s --trace: %s\n", command.c_str(), e.what());
    return kExitBadInput;
  } catch (const common::OutputError& e) {  // disk full, destination refused at the rename
    std::fprintf(stderr, "%s --trace: %s\n", command.c_str(), e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {  // a model inconsistency: a bug
    std::fprintf(stderr, "%s --trace: internal error: %s\n", command.c_str(), e.what());
    return kExitInternal;
  }
}

}  // namespace tqref::trace
