// Golden cases <-> HDF5 (layout: docs/golden-schema.md). Readers take every parameter from the
// file and check the shapes against them; a malformed file raises h5::Error or BadCase naming the
// file, the dataset or attribute, the value and what was expected.
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
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
  std::string model_variant;            // "" = the contract; else the variant of the contract
                                        // (tqref/variant.h) the expectations were computed with
};

void write_provenance(const h5::Node& root, const Provenance& p);
Provenance read_provenance(const h5::Node& root);

// The one description of a case's HDF5 layout (docs/golden-schema.md): its attributes and its
// datasets in the order write_case creates them. write_case stores exactly these; the C
// interface (python/capi) hands them to Python by the same names.
using CaseAttrValue = h5::Node::AttrValue;
struct CaseAttr {
  std::string name;
  CaseAttrValue value;
};
std::vector<CaseAttr> case_attributes(const GoldenCase& c);

enum class ElemType { u8, u16, u32, u64, i32, i64, f32, f64 };
template <class T>
constexpr ElemType elem_type() {
  if constexpr (std::is_same_v<T, uint8_t>) return ElemType::u8;
  else if constexpr (std::is_same_v<T, uint16_t>) return ElemType::u16;
  else if constexpr (std::is_same_v<T, uint32_t>) return ElemType::u32;
  else if constexpr (std::is_same_v<T, uint64_t>) return ElemType::u64;
  else if constexpr (std::is_same_v<T, int32_t>) return ElemType::i32;
  else if constexpr (std::is_same_v<T, int64_t>) return ElemType::i64;
  else if constexpr (std::is_same_v<T, float>) return ElemType::f32;
  else return ElemType::f64;
}
struct CaseDataset {
  std::string group, name;       // "inputs", "key": stored at /cases/<case>/<group>/<name>
  ElemType type = ElemType::u8;
  std::vector<uint64_t> shape;
  const void* data = nullptr;    // `count` elements of `type`, owned by the case
  uint64_t count = 0;
  std::string encoding;          // the dataset's `encoding` attribute, "" for none
};
// A case read without diagnostics lacks output_f32 and the two fp64 references.
std::vector<CaseDataset> case_datasets(const GoldenCase& c);

// Writes /cases/<c.name> under `cases` (the "/cases" group).
void write_case(const h5::Node& cases, const GoldenCase& c);
// Reads one case; `with_diagnostics` false skips the large fp64 reference arrays.
GoldenCase read_case(const h5::Node& cases, const std::string& name, bool with_diagnostics = true);
// read_case without its bulk: key, value, q, both pools and the outputs are checked as read_case
// checks them (type, shape from the parameters, every stored chunk's checksum) and left empty;
// the rest (slots, block tables, sequence lengths, skip statistics) is read and checked. What
// `inspect` shows and `check` validates up front, at the speed of the file, not of inflating it.
GoldenCase read_case_summary(const h5::Node& cases, const std::string& name);
// The case's attributes and parameters only, checked as read_case checks them; no dataset is
// read and no buffer is filled. *pooled says whether the case stores its pools sparsely
// (production size: GoldenCase::sparse, which the header leaves empty). What a reader needs to
// decide whether to read the case at all (tqref conform: is its kernel in the module?).
GoldenCase read_case_header(const h5::Node& cases, const std::string& name, bool* pooled);

// Opens a golden file under the untrusted-file policy (h5::Node::open_file) with
// check_case_memory as its AttributeCheck: every reader of golden files opens them so.
h5::Node open_golden_file(const std::string& path);

// The memory each case needs, from its attributes as read_case reads them (decode cases without
// their diagnostics, the least any reader reads), against the budget: throws BadCase with
// read_case's message for the first case over it. Run when the file is opened, before any data is
// read, so a file of a few megabytes that declares gigabytes of pools is refused in a second
// (when the validating pass inflated every chunk, 8 GiB of zeros took 99 s first). A whole file is
// refused for one case over the budget, selected or not; a case whose attributes read_case
// refuses is left to it.
void check_case_memory(const h5::Node& root);

// A file holding case `c` alone, with `prov` and reproducer_of = `source`, written under a
// temporary name and renamed. Returns the path: <dir>/<case name>.h5.
std::string write_reproducer(const std::string& dir, const std::string& source,
                             const Provenance& prov, const GoldenCase& c);

}  // namespace tqref::golden
