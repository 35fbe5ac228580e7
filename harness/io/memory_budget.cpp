#include "io/memory_budget.h"

#include <atomic>
#include <cstdio>

namespace tqref {

namespace {

std::atomic<uint64_t> g_budget{kDefaultMaxMemory};

std::string gib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GiB", double(bytes) / double(uint64_t(1) << 30));
  return b;
}

}  // namespace

uint64_t memory_budget() { return g_budget.load(); }
void set_memory_budget(uint64_t bytes) { g_budget.store(bytes); }

uint64_t add_sat(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
uint64_t mul_sat(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

std::string over_budget(uint64_t bytes, const std::string& what) {
  const uint64_t budget = memory_budget();
  if (bytes <= budget) return "";
  return what + " needs " + (bytes == UINT64_MAX ? std::string("more than 2^64 bytes")
                                                   : std::to_string(bytes) + " bytes (" + gib(bytes) + ")") +
         "; allowed: at most the memory budget, " + std::to_string(budget) + " bytes (" + gib(budget) +
         "; --max-memory, default 8 GiB)";
}

bool parse_byte_size(const std::string& s, uint64_t* bytes) {
  size_t i = 0;
  uint64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i)
    if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, uint64_t(s[i] - '0'), &v)) return false;
  if (i == 0) return false;
  std::string unit = s.substr(i);
  int shift = 0;
  if (!unit.empty() && unit != "B") {
    const char u = unit[0];
    shift = u == 'K' || u == 'k' ? 10 : u == 'M' ? 20 : u == 'G' ? 30 : u == 'T' ? 40 : -1;
    const std::string rest = unit.substr(1);
    if (shift < 0 || !(rest.empty() || rest == "B" || rest == "iB")) return false;
  }
  if (v == 0 || (shift && v > (UINT64_MAX >> shift))) return false;
  *bytes = v << shift;
  return true;
}

}  // namespace tqref
