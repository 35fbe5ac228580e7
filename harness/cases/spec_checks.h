// Checks on a generator spec (a suite entry or a YAML sweep point) before anything is built.
// Returns "" when the spec is buildable, else the first problem as
// "<parameter> = <value>; allowed: <range>"; the caller prefixes where the spec came from.
#pragma once
#include <cstdint>
#include <string>

#include "cases/case_spec.h"

namespace tqref::common {

// A generator spec (suite entry or YAML sweep point) before anything is built: SPEC ranges and
// the sweep limits of docs/reliability.md (so one spec's buffers stay below kMaxSpecPoolBytes).
inline constexpr uint64_t kMaxSpecPoolBytes = uint64_t(1) << 32;
std::string check_spec(const golden::CaseSpec& s);

}  // namespace tqref::common
