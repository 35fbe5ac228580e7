#include "cases/generate.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "cases/builders.h"
#include "cases/rng.h"
#include "cases/spec_checks.h"
#include "cases/suites.h"
#include "io/memory_budget.h"
#include "tqref/build_info.h"
#include "tqref/model_path.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

bool generate_file(const std::vector<CaseSpec>& specs, const GenerateOptions& opt,
                   const Ex2Profile* ex2) {
  std::vector<size_t> mine;  // the deterministic case list of this shard
  for (size_t i = 0; i < specs.size(); ++i)
    if (i % opt.shard_count == opt.shard_index) mine.push_back(i);
  Provenance prov = opt.provenance;
  prov.seed = opt.seed;
  prov.shard = std::to_string(opt.shard_index) + "/" + std::to_string(opt.shard_count);
  bool has_decode = false;
  for (size_t i : mine) has_decode |= specs[i].kind == CaseKind::decode;
  prov.ex2_profile_id = has_decode && ex2 ? ex2->id() : "";
  // Through <out>.partial-<pid>, registered for removal on SIGINT/SIGTERM (io/atomic_output.h);
  // a cancelled run leaves the file by an exception, which removes the temporary.
  struct Cancelled {};
  try {
    h5::write_file_atomic(opt.out, [&](const h5::Node& root) {
      write_provenance(root, prov);
      h5::Node cases = root.create_group("cases");
      // Batches of up to two specs per thread whose cases fit the memory budget together (at
      // least one spec: each fits alone, sweep points by check_spec, the built-in suites by
      // test_reliability): built in parallel, written in order.
      const int threads = std::max(1, opt.threads);
      const size_t batch = size_t(threads) * 2;
      for (size_t b0 = 0, nb = 0; b0 < mine.size(); b0 += nb) {
        if (opt.cancel && opt.cancel->load()) throw Cancelled{};
        uint64_t bytes = memory_bytes(specs[mine[b0]]);
        for (nb = 1; nb < batch && b0 + nb < mine.size(); ++nb) {
          bytes = add_sat(bytes, memory_bytes(specs[mine[b0 + nb]]));
          if (bytes > memory_budget()) break;
        }
        std::vector<std::vector<GoldenCase>> built(nb);
        std::vector<std::exception_ptr> errors(nb);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (int64_t j = 0; j < int64_t(nb); ++j) {
          const size_t i = mine[b0 + size_t(j)];
          try {
            built[j] = build_cases(specs[i], i, case_seed(opt.seed, i) & 0x7FFFFFFFFFFFFFFFull, ex2);
          } catch (...) {
            errors[j] = std::current_exception();
          }
        }
        for (size_t j = 0; j < nb; ++j) {
          if (errors[j]) std::rethrow_exception(errors[j]);
          for (const GoldenCase& c : built[j]) write_case(cases, c);
          if (opt.progress) opt.progress(b0 + j + 1, mine.size());
        }
      }
    });
  } catch (const Cancelled&) {
    return false;
  }
  return true;
}

}  // namespace tqref::cases

namespace tqref::cases {
std::string canonical_command_line(const std::string& suite, uint64_t seed, uint32_t shard_index,
                                   uint32_t shard_count, const std::string& config_name) {
  std::string r = "tqref generate";
  if (config_name.empty()) r += " --suite " + suite;
  else r += " --config " + config_name;
  r += " --seed " + std::to_string(seed);
  if (shard_count != 1) r += " --shard " + std::to_string(shard_index) + "/" + std::to_string(shard_count);
  return r;
}

Provenance new_provenance(const std::vector<CaseSpec>& specs, const std::string& suite,
                          const std::string& command_line) {
  Provenance prov;
  prov.tqref_version = kVersion;
  prov.git_commit = kGitCommit;
  // Suites use the default THRESH; a --config file has at most one `threshold` value.
  prov.threshold = specs.empty() ? kSparseVThreshold : specs.front().threshold;
  prov.suite = suite;
  prov.command_line = command_line;
  if (!model_variant().is_contract()) {  // golden data of a build: its variant is in the file
    prov.model_variant = model_variant().name;
    prov.command_line += " --model-variant " + prov.model_variant;
  }
  return prov;
}

void generate_suite_file(const std::string& suite, const std::string& out, const Ex2Profile* ex2) {
  const std::vector<CaseSpec> specs = suite_specs(suite);
  GenerateOptions opt;
  opt.out = out;
  opt.seed = 1;
  opt.threads = omp_get_max_threads();
  opt.provenance = new_provenance(specs, suite, canonical_command_line(suite, 1, 0, 1, ""));
  generate_file(specs, opt, ex2);
}
}  // namespace tqref::cases
