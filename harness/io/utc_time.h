// The current time in UTC, the one formatter of every date tqref records.
#pragma once
#include <string>

namespace tqref {

// ISO 8601 to the second, "2026-12-05T14:03:09Z" (a conform report's start time).
std::string utc_timestamp();
// The date alone, "2026-12-05" (an EX2 profile's measurement date).
std::string utc_date();

}  // namespace tqref
