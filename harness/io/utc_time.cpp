#include "io/utc_time.h"

#include <ctime>

namespace tqref {

namespace {

std::string utc_now(const char* strftime_format) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char s[32];
  std::strftime(s, sizeof s, strftime_format, &tm);
  return s;
}

}  // namespace

std::string utc_timestamp() { return utc_now("%Y-%m-%dT%H:%M:%SZ"); }

std::string utc_date() { return utc_now("%Y-%m-%d"); }

}  // namespace tqref
