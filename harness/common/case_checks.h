// Launch checks for golden cases, run before any work: after a case is read from a file
// (golden/case_io.cpp) and before a backend launches it. Each check is a SPEC range (sections
// 3-5) or a buffer-extent rule without which a launch would read or write outside its buffers
// (a GPU would fault or corrupt memory; the model would refuse late, after other cases ran).
// Returns "" when the case is launchable, else the first problem as
// "<parameter> = <value>; allowed: <range>"; the caller prefixes the file and object.
#pragma once
#include <string>

#include "golden/case_spec.h"
#include "golden/golden_case.h"

namespace tqref::common {

// Largest pool the harness accepts (bytes per K or V pool): far beyond any SPEC test geometry,
// small enough that products of the parameters below cannot overflow 64 bits.
inline constexpr uint64_t kMaxPoolBytes = uint64_t(1) << 40;
// cuLaunchKernel limits: grid.x < 2^31, grid.y <= 65535.
inline constexpr uint64_t kMaxGridX = (uint64_t(1) << 31) - 1;
inline constexpr uint64_t kMaxGridY = 65535;

// Parameters only (attributes of a case, before its datasets are read): SPEC ranges, launch
// limits, and extents that fit 64-bit arithmetic, so the dataset shapes they imply are safe.
std::string check_writer_params(Format f, const golden::WriterCase& w);
std::string check_decode_params(Format f, const golden::DecodeCase& d);
// Everything: parameters, buffer sizes, slots, block-table entries in use, sequence lengths.
std::string check_writer_case(Format f, const golden::WriterCase& w);
// `diagnostics`: also check the stored model diagnostics (skip masks per row) when present.
std::string check_decode_case(Format f, const golden::DecodeCase& d, bool diagnostics = true);
std::string check_case(const golden::GoldenCase& c);

// A generator spec (suite entry or YAML sweep point) before anything is built: SPEC ranges and
// the sweep limits of docs/reliability.md (so one spec's buffers stay below kMaxSpecPoolBytes).
inline constexpr uint64_t kMaxSpecPoolBytes = uint64_t(1) << 32;
std::string check_spec(const golden::CaseSpec& s);

}  // namespace tqref::common
