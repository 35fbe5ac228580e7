// The measured approximate reciprocal and square root on disk (data/hw/<arch>/approx.h5) and the
// source that gives them to the variant models (tqref/approx.h; docs/approx-units.md).
//
// File layout (format "tqref-approx-units", version 1):
//   root attributes  format, format_version, arch, structure (kApproxStructure), structure_rules,
//                    tables_sha256, device_name, driver_version, cuda_version, measured_date,
//                    measured_by, regenerate_command
//   /rcp_delta   int8 [2^23]  R_bits[m] = bits(1.0f / (1 + m * 2^-23)) + delta[m]
//   /sqrt_delta  int8 [2^24]  S_bits[i] = bits(sqrtf(float of bits 0x3F800000 + i)) + delta[i]
// The approximations are within a few ulp of the correctly rounded results, so the deltas take a
// handful of values and compress well; tables_sha256 covers both tables' bytes in that order.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tqref/approx.h"

namespace tqref {

// Any problem finding, reading or validating the tables; what() names file, dataset and range.
struct ApproxUnitsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where and how the tables were measured; stored as attributes.
struct ApproxProvenance {
  std::string device_name, driver_version, cuda_version, measured_date, measured_by,
      regenerate_command;
};

// The structure model/approx.cpp implements; a file naming another is refused.
inline constexpr const char* kApproxStructure = "rcp-sqrt-approx-fraction-tables-v1";

ApproxUnits load_approx_units(const std::string& path);
// The first of $TQREF_DATA_DIR/hw/<arch>/approx.h5 and <source tree>/data/hw/<arch>/approx.h5
// that exists; throws ApproxUnitsError naming both places and how to measure the tables.
std::string find_approx_units(const std::string& arch);
// Writes the file whole or not at all, read back and compared before it is renamed into place;
// an existing file is replaced only with `force`.
void save_approx_units(const std::string& path, const std::string& arch,
                       const std::vector<int8_t>& rcp_delta, const std::vector<int8_t>& sqrt_delta,
                       const ApproxProvenance& prov, bool force);

// The architecture whose units the variant models use: sm_90, the only one measured (the
// instructions' results may differ on another GPU; docs/approx-units.md).
inline constexpr const char* kApproxArch = "sm_90";
// Installs the source that loads kApproxArch's file on first use (tqref::approx_units()). Done
// at static initialization wherever approx_units_io.cpp is linked; the CLI calls it again so that
// every command has it, whichever objects the linker kept.
void install_approx_units_source();
// Whether that file exists (the variants that need it are left out of coverage and pinning
// where it does not, and say so).
bool approx_units_present();

}  // namespace tqref
