// `tqref generate`: writes a golden file (docs/golden-schema.md) from a named suite or a YAML sweep.
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <boost/program_options.hpp>

#include "cases/generate.h"
#include "cases/model_table.h"
#include "cases/spec_checks.h"
#include "cases/suites.h"
#include "command.h"
#include "options.h"
#include "generate_trace.h"
#include "io/atomic_output.h"
#include "io/ex2_profile_io.h"
#include "io/input_file.h"
#include "io/text_escape.h"
#include "tqref/build_info.h"
#include "tqref/model_path.h"

namespace po = boost::program_options;

namespace {

using namespace tqref;
using namespace tqref::cli;
using namespace tqref::golden;
using namespace tqref::cases;

bool parse_shard(const std::string& s, uint32_t* i, uint32_t* n) {
  unsigned a = 0, b = 0;
  char slash = 0;
  std::istringstream in(s);
  if (!(in >> a >> slash >> b) || slash != '/' || b == 0 || a >= b || !in.eof()) return false;
  *i = a;
  *n = b;
  return true;
}

// The specs of --suite or --config (a user's --models table checked like a sweep) and the
// provenance they start (suite, config text); an exit code after the message when they cannot
// be made.
std::optional<int> read_specs(const std::string& suite, const std::string& config, const std::string& models,
                              std::vector<CaseSpec>& specs, Provenance& prov) {
  try {
    if (!config.empty()) {
      prov.config_yaml = read_text_input(config, "--config");  // a regular file of at most 1 MiB
      specs = config_specs(prov.config_yaml, config);
      prov.suite = "config";
    } else if (suite == "models") {
      // the table the cases came from is the file's config_yaml (docs/golden-schema.md)
      prov.config_yaml = builtin_model_table_text();
      if (!models.empty()) prov.config_yaml = read_text_input(models, "--models");  // regular, <= 1 MiB
      const std::string where = models.empty() ? "data/models/attention.yaml (built in)" : models;
      specs = models_suite(models.empty() ? builtin_model_table() : parse_model_table(prov.config_yaml, where));
      // A user's table is checked like a sweep (the built-in one by test_reliability): a model
      // of 2^31 heads is refused here, not by the allocator.
      cases::SpecTotal total;
      for (size_t i = 0; !models.empty() && i < specs.size(); ++i)
        if (const std::string why = total.add(specs[i]); !why.empty())
          throw std::invalid_argument(where + ": model '" + printable(specs[i].label) + "' (" +
                                      kind_name(specs[i].kind) + " spec " + std::to_string(i) + "): " + why);
      prov.suite = suite;
    } else {
      specs = suite_specs(suite);
      prov.suite = suite;
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "tqref generate: %s\n", e.what());
    return config.empty() && models.empty() ? kExitUsage : kExitBadInput;
  }
  return std::nullopt;
}

// --seed, --threads and --out against their allowed ranges; false after the message.
bool ranges_ok(uint64_t seed, int threads, const std::string& out, const std::string& config) {
  if (seed >> 63) {
    std::fprintf(stderr, "tqref generate: --seed %llu; allowed: 0 .. 2^63-1\n", (unsigned long long)seed);
    return false;
  }
  if (threads < 1 || threads > 1024) {
    std::fprintf(stderr, "tqref generate: --threads %d; allowed: 1 .. 1024\n", threads);
    return false;
  }
  if (const std::string why = common::output_path_problem(out, {config}); !why.empty()) {
    std::fprintf(stderr, "tqref generate: --out %s\n", why.c_str());
    return false;
  }
  return true;
}

int cmd_generate(const std::vector<std::string>& args) {
  std::string suite, out, shard = "0/1", config, ex2_arch = "sm_90", models, model, variant;
  uint64_t seed = 1;
  int threads = omp_get_max_threads();
  po::options_description desc(
      "usage: tqref generate --suite NAME --out FILE [options]\n"
      "Writes golden cases (docs/golden-schema.md); same options give the same bytes for any\n"
      "--threads. Suites: smoke, standard, stress, models, pools, flags. Options");
  desc.add_options()("help,h", "this text")(
      "suite", po::value(&suite), "smoke | standard | stress | models")(
      "models", po::value(&models), "--suite models: a model table in the format of "
      "data/models/attention.yaml instead of the built-in one (docs/models.md)")(
      "config", po::value(&config), "YAML sweep file instead of --suite (docs/golden-schema.md)")(
      "out", po::value(&out), "output HDF5 file (written as OUT.partial-PID, then renamed)")(
      "seed", po::value(&seed), "base seed (< 2^63), default 1")(
      "threads", po::value(&threads), "OpenMP threads across cases (default: all)")(
      "shard", po::value(&shard), "I/N: only specs with index % N == I (default 0/1)")(
      "ex2-arch", po::value(&ex2_arch), "EX2 profile used for decode cases (default sm_90)");
  add_model_option(desc, &model);
  add_model_variant_option(desc, &variant);
  // --trace FILE: cases from a captured trace instead of a suite (docs/traces.md).
  tqref::trace::TraceGenerateCli trace_cli;
  tqref::trace::add_trace_generate_options(desc, trace_cli);
  po::variables_map vm;
  if (const auto rc = parse_options("tqref generate", args, desc, vm)) return *rc;
  if (!apply_model_option("tqref generate", model)) return kExitUsage;
  if (!apply_model_variant("tqref generate", variant)) return kExitUsage;
  if (vm.count("trace")) {
    if (out.empty() || !suite.empty() || !config.empty()) {
      std::fprintf(stderr, "tqref generate: --trace takes --out and neither --suite nor --config\n");
      return kExitUsage;
    }
    return tqref::trace::run_trace_generate(trace_cli, out, seed, ex2_arch, "tqref generate");
  }
  if (out.empty() || suite.empty() == config.empty()) {
    std::fprintf(stderr, "tqref generate: give --out and exactly one of --suite, --config, --trace\n");
    return kExitUsage;
  }
  if (!models.empty() && suite != "models") {
    std::fprintf(stderr, "tqref generate: --models %s needs --suite models\n", models.c_str());
    return kExitUsage;
  }
  uint32_t si = 0, sn = 1;
  if (!parse_shard(shard, &si, &sn)) {
    std::fprintf(stderr, "tqref generate: --shard %s; allowed: I/N with 0 <= I < N\n", shard.c_str());
    return kExitUsage;
  }
  if (!ranges_ok(seed, threads, out, config)) return kExitUsage;
  std::vector<CaseSpec> specs;
  Provenance prov;
  if (const auto rc = read_specs(suite, config, models, specs, prov)) return *rc;
  std::optional<Ex2Profile> ex2;
  bool need_ex2 = false;
  for (const auto& s : specs) need_ex2 |= s.kind == CaseKind::decode;
  if (need_ex2) {
    try {
      ex2 = load_ex2_profile_for_arch(ex2_arch);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tqref generate: decode cases need the EX2 profile: %s\n", e.what());
      return kExitBadInput;
    }
  }
  {
    const std::string config_yaml = prov.config_yaml;
    prov = new_provenance(specs, prov.suite, canonical_command_line(
        suite, seed, si, sn, config.empty() ? "" : std::filesystem::path(config).filename().string()));
    prov.config_yaml = config_yaml;
  }
  GenerateOptions opt;
  opt.out = out;
  opt.seed = seed;
  opt.threads = threads;
  opt.shard_index = si;
  opt.shard_count = sn;
  opt.provenance = prov;
  const bool tty = isatty(2);
  opt.progress = [tty](size_t done, size_t total) {
    if (tty) std::fprintf(stderr, "\rgenerate: %zu / %zu specs", done, total);
    else if (done == total || done % 50 == 0) std::fprintf(stderr, "generate: %zu / %zu specs\n", done, total);
  };
  const auto t0 = std::chrono::steady_clock::now();
  try {
    // No cancel flag: SIGINT/SIGTERM end the process and remove the temporary (main.cpp).
    generate_file(specs, opt, ex2 ? &*ex2 : nullptr);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "\ntqref generate: %s\n", e.what());
    return kExitBadInput;
  }
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (tty) std::fprintf(stderr, "\n");
  std::printf("wrote %s: %zu specs, %.1f s, %d threads, %llu bytes\n", out.c_str(), specs.size(),
              sec, threads, (unsigned long long)std::filesystem::file_size(out));
  return kExitOk;
}

}  // namespace

TQREF_COMMAND("generate", "write a golden-data file (suite or YAML sweep)", cmd_generate);
