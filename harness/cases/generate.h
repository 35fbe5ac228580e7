// Generation of a golden file from a list of specs: parallel across specs (OpenMP), written in
// spec order, so the file's bytes depend only on the specs, the seed and the provenance, never on
// the thread count. Written under a temporary name and renamed when complete.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cases/case_spec.h"
#include "io/case_io.h"
#include "tqref/ex2.h"

namespace tqref::cases {

struct GenerateOptions {
  std::string out;
  uint64_t seed = 1;
  int threads = 1;
  uint32_t shard_index = 0, shard_count = 1;  // keep spec i when i % shard_count == shard_index
  golden::Provenance provenance;              // seed, shard filled in by generate_file
  // Called after each written spec with (specs done, specs total); may be empty.
  std::function<void(size_t, size_t)> progress;
  // Polled between batches; when it turns true the temporary file is removed and
  // generate_file returns false.
  const std::atomic<bool>* cancel = nullptr;
};

// Returns true when the file was written; throws on a build or I/O error (temporary removed).
bool generate_file(const std::vector<CaseSpec>& specs, const GenerateOptions& opt,
                   const Ex2Profile* ex2);

}  // namespace tqref::cases

namespace tqref::cases {
// The provenance of a file this build generates now: version, commit, THRESH of the specs (the
// default for none), suite, the canonical command line and the process's model variant
// (tqref/model_path.h; its name appended to the command line as --model-variant). Seed, shard and
// EX2 profile are filled in by generate_file.
golden::Provenance new_provenance(const std::vector<CaseSpec>& specs, const std::string& suite,
                                  const std::string& command_line);

// `tqref generate --suite SUITE --out OUT` as a function (what `tqref conform` runs for a suite
// it has no file of): seed 1, every thread, `ex2` for the decode cases. Throws as generate_file.
void generate_suite_file(const std::string& suite, const std::string& out, const Ex2Profile* ex2);

// The provenance command line: only the options that change the file's contents (the output
// path and the thread count do not), so regenerating elsewhere gives the same bytes.
std::string canonical_command_line(const std::string& suite, uint64_t seed, uint32_t shard_index,
                                   uint32_t shard_count, const std::string& config_name);
}  // namespace tqref::cases
