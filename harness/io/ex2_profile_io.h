// The EX2 hardware profile on disk (data/hw/<arch>/ex2.h5) and where to find it.
//
// File layout (format "tqref-ex2-profile", version 1):
//   /fraction_delta   int8 [2^23 + 1], deflate: F_bits[k] = ex2_reference_bits(k) + delta[k],
//                     where F[k] = EX2(-k * 2^-23) is the unit's measured fraction table.
//   root attributes   format, format_version, profile_id, arch, structure, structure_rules,
//                     reference, table_fnv1a64, device_name, driver_version, cuda_version,
//                     measured_date, measured_by, regenerate_command.
// The reference is deterministic IEEE double arithmetic (no libm), so the file stays small: the
// unit is within 2 ulp of exp2, the deltas take four values and compress to about 170 KB.
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
// "<arch>-ex2-v1-<first 12 hex digits of the hash>"
std::string ex2_profile_id(const std::string& arch, const std::vector<uint32_t>& frac_bits);

// "" when `arch` names a GPU architecture the way profiles do ("sm_" then 2 to 4 digits and an
// optional lower-case letter: sm_90, sm_121, sm_90a); else why not. Checked before an arch from
// a file or an option becomes part of a path (data/hw/<arch>/ex2.h5).
std::string arch_problem(const std::string& arch);
// "" when `id` is "<arch>-ex2-v1-<12 lower-case hex digits>" with a valid arch; else why not.
std::string ex2_profile_id_problem(const std::string& id);

Ex2Profile load_ex2_profile(const std::string& path);
// Searches $TQREF_DATA_DIR/hw/<arch>/ex2.h5, then <source tree>/data/hw/<arch>/ex2.h5.
std::string find_ex2_profile(const std::string& arch);
Ex2Profile load_ex2_profile_for_arch(const std::string& arch);
// Writes the profile whole or not at all (h5::write_file_atomic): it is read back and compared
// with `p` before it is renamed into place.
void save_ex2_profile(const std::string& path, const Ex2Profile& p, const Ex2Provenance& prov);
Ex2Provenance read_ex2_provenance(const std::string& path);

}  // namespace tqref
