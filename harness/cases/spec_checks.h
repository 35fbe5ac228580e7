// Checks on a generator spec (a suite entry or a YAML sweep point) before anything is built.
// Returns "" when the spec is buildable, else the first problem as
// "<parameter> = <value>; allowed: <range>"; the caller prefixes where the spec came from.
#pragma once
#include <cstdint>
#include <string>

#include "cases/case_spec.h"

namespace tqref::cases {

// A generator spec (suite entry or YAML sweep point) before anything is built: SPEC ranges and
// the sweep limits of docs/bad-input.md (so one spec's buffers stay below kMaxSpecPoolBytes).
inline constexpr uint64_t kMaxSpecPoolBytes = uint64_t(1) << 32;
// Also: the spec's memory_bytes() within the memory budget (io/memory_budget.h).
std::string check_spec(const CaseSpec& s);

// Upper bound of the memory the spec's cases take once built (a decode spec builds its writer case
// too), computed in 64 bits with saturation from every parameter, pads and spares included: the
// pools twice per case (initial and expected) plus the builder's working copy, the inputs, the
// outputs and the decode diagnostics; for a searched spec, times the attempts it builds at once
// (kSearchRound). The generator holds a batch of built cases at a time
// (cases/generate.cpp); a sweep's total is bounded by kMaxSweepBytes (cases/config.cpp).
uint64_t memory_bytes(const CaseSpec& s);

// The sum of memory_bytes over one sweep file: the data the generator will build and write.
inline constexpr uint64_t kMaxSweepBytes = uint64_t(256) << 30;

// The specs of one file (a YAML sweep, a user's model table), checked as they are made: each
// against check_spec, their memory_bytes summed against kMaxSweepBytes.
class SpecTotal {
 public:
  // "" or the problem of the spec or of the total so far.
  std::string add(const CaseSpec& s);

 private:
  uint64_t bytes_ = 0;
};

}  // namespace tqref::cases
