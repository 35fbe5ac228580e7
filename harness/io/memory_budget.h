// The memory budget (docs/reliability.md, "Resource budget"): every allocation whose size comes
// from a file, a sweep or an option is computed in 64 bits with overflow checks and compared with
// this budget before anything is allocated. Set by `tqref --max-memory SIZE` (main.cpp); the
// default fits a 24 GiB machine with room for the OS and a second job.
#pragma once
#include <cstdint>
#include <string>

namespace tqref {

inline constexpr uint64_t kDefaultMaxMemory = uint64_t(8) << 30;  // 8 GiB

uint64_t memory_budget();
void set_memory_budget(uint64_t bytes);

// "" when `bytes` fit the budget; else "<what> needs N bytes (X GiB); allowed: at most the memory
// budget, M bytes (--max-memory, default 8 GiB)".
std::string over_budget(uint64_t bytes, const std::string& what);

// a + b and a * b that saturate at UINT64_MAX (which no budget admits).
uint64_t add_sat(uint64_t a, uint64_t b);
uint64_t mul_sat(uint64_t a, uint64_t b);

// "8G", "512M", "64K", "1073741824" (binary units, optional "iB"/"B"); false when it is none of
// these, zero, or overflows 64 bits.
bool parse_byte_size(const std::string& s, uint64_t* bytes);

}  // namespace tqref
