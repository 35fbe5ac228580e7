// Whole-file reads for the binary inputs (checkpoints, tokenizers, kernel modules, traces to
// hash), under the untrusted-file policy (input_file.h): a regular file whose size fits the
// memory budget (memory_budget.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tqref {

// Reads a whole file; throws std::invalid_argument (InputError) naming it ("<what> <path>: ...")
// when it cannot be read or breaks the policy.
std::vector<uint8_t> read_file_bytes(const std::string& path, const std::string& what);

}  // namespace tqref
