// Golden cases <-> HDF5 (layout: docs/golden-schema.md). Readers take every parameter from the
// file and check the shapes against them; a malformed file raises h5::Error or BadCase naming the
// file, the dataset or attribute, the value and what was expected.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "io/golden_case.h"
#include "io/hdf5_util.h"

namespace tqref::golden {

inline constexpr int64_t kSchemaVersion = 1;
inline constexpr const char* kRngName =
    "xoshiro256** 1.0 seeded by SplitMix64; case seed = splitmix64 of (seed ^ index * "
    "0xD1B54A32D192ED03); normals: Marsaglia polar method with a libm-free log (rng.h)";

// Input that violates the schema or SPEC ranges (maps to exit code kExitBadInput).
struct BadCase : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// File-level provenance, attributes of "/".
struct Provenance {
  int64_t schema_version = kSchemaVersion;
  std::string tqref_version, git_commit;
  uint64_t seed = 0;                    // < 2^63, stored as int64
  std::string rng = kRngName;
  double threshold = 0;                 // THRESH the decode cases were generated for
  std::string ex2_profile_id;           // "" when the file holds no decode case
  std::string command_line;             // canonical: options that change the contents only
  std::string suite;                    // smoke | standard | stress | config
  std::string shard;                    // "I/N"
  std::string config_yaml;              // text of --config, "" otherwise
  std::string reproducer_of;            // set on single-case reproducer files
};

void write_provenance(const h5::Node& root, const Provenance& p);
Provenance read_provenance(const h5::Node& root);

// Writes /cases/<c.name> under `cases` (the "/cases" group).
void write_case(const h5::Node& cases, const GoldenCase& c);
// Reads one case; `with_diagnostics` false skips the large fp64 reference arrays.
GoldenCase read_case(const h5::Node& cases, const std::string& name, bool with_diagnostics = true);

// A file holding case `c` alone, with `prov` and reproducer_of = `source`, written under a
// temporary name and renamed. Returns the path: <dir>/<case name>.h5.
std::string write_reproducer(const std::string& dir, const std::string& source,
                             const Provenance& prov, const GoldenCase& c);

}  // namespace tqref::golden
