// The EX2 hardware profile on disk (data/hw/<arch>/ex2.h5) and where to find it.
//
// File layout (format "tqref-ex2-profile"; docs/ex2.md, "The profile file"):
//   root attributes   format, format_version (2; version 1 files are still read), profile_id,
//                     arch, structure, structure_rules, table_fnv1a64, device_name,
//                     driver_version, cuda_version, measured_date, measured_by,
//                     regenerate_command; version 2 adds fraction_model and fraction_note.
//   fraction_model = "datapath" (tqref/ex2_datapath.h):
//     /datapath_coefficients  uint32 [64, 3]: (C0, C1, C2) of segment 0 .. 63
//     attributes datapath_family, datapath_cut, datapath_bias, datapath_steps (text)
//   fraction_model = "table" (and every version 1 file):
//     /fraction_delta   int8 [2^23 + 1], deflate: F_bits[k] = ex2_reference_bits(k) + delta[k],
//                       where F[k] = EX2(-k * 2^-23) is the unit's measured fraction table;
//                       attribute reference (text). The reference is deterministic IEEE double
//                       arithmetic (no libm): the unit is within 2 ulp of exp2, so the deltas take
//                       four values and compress to about 500 KB.
// Either way the loader rebuilds all of F and checks it against table_fnv1a64 and profile_id, so
// a profile's id names its fraction map, whatever form the file stores it in.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tqref/ex2.h"

namespace tqref {

// Any problem finding, reading or validating a profile; what() names file, dataset and range.
struct Ex2ProfileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where and how a profile was measured; stored as attributes, shown by the CLI.
struct Ex2Provenance {
  std::string device_name;     // "NVIDIA H200"
  std::string driver_version;  // "580.159.04"
  std::string cuda_version;    // "13.0"
  std::string measured_date;   // ISO date "2026-11-30"
  std::string measured_by;     // program that read the hardware
  std::string regenerate_command;
  std::string fraction_note;   // how the stored form was obtained (fit, or why a table); v2
};

// The structure this model implements (model/ex2.cpp); a profile naming another is refused.
inline constexpr const char* kEx2Structure = "mufu-ex2-ftz-fraction23-v1";

// Reference bit pattern for F[k], k in [0, 2^23]: float(A[k >> 11] * B[k & 2047]) where A and B
// are products of c_j = 2^(-2^j / 2^23) over the set bits, c_22 = sqrt(0.5), c_{j-1} = sqrt(c_j),
// c_23 = 0.5; IEEE double, products in increasing bit order. Deterministic on any IEEE host.
// Computed once per process (2^23 + 1 entries).
const std::vector<uint32_t>& ex2_reference_table();

// FNV-1a 64 over the table's little-endian bytes, as 16 hex digits.
std::string ex2_table_hash(const std::vector<uint32_t>& frac_bits);
// "<arch>-ex2-v1-<first 12 hex digits of the hash>": names the fraction map F (the "v1" is the
// id scheme, unchanged by file format version 2), so a refit or converted file keeps its id.
std::string ex2_profile_id(const std::string& arch, const std::vector<uint32_t>& frac_bits);

// "" when `arch` names a GPU architecture the way profiles do ("sm_" then 2 to 4 digits and an
// optional lower-case letter: sm_90, sm_121, sm_90a); else why not. Checked before an arch from
// a file or an option becomes part of a path (data/hw/<arch>/ex2.h5).
std::string arch_problem(const std::string& arch);
// "" when `id` is "<arch>-ex2-v1-<12 lower-case hex digits>" with a valid arch; else why not.
std::string ex2_profile_id_problem(const std::string& id);

// Reads a version 1 or 2 file; throws Ex2ProfileError naming file, dataset or attribute and the
// allowed form.
Ex2Profile load_ex2_profile(const std::string& path);
// The profile given to prefer_ex2_profile for arch, else the first of
// $TQREF_DATA_DIR/hw/<arch>/ex2.h5 and <source tree>/data/hw/<arch>/ex2.h5 that exists.
std::string find_ex2_profile(const std::string& arch);
// For the rest of this process, find_ex2_profile(arch) returns `path`: `tqref conform --calibrate`
// judges with a measurement that differs from the stored profile without replacing the stored one.
void prefer_ex2_profile(const std::string& arch, const std::string& path);
Ex2Profile load_ex2_profile_for_arch(const std::string& arch);
// Writes a version 2 file, whole or not at all (h5::write_file_atomic): the datapath's
// coefficients when the profile has them, else the table; it is read back and compared with `p`
// before it is renamed into place.
void save_ex2_profile(const std::string& path, const Ex2Profile& p, const Ex2Provenance& prov);
Ex2Provenance read_ex2_provenance(const std::string& path);

}  // namespace tqref
