// Whole-file reads for the small binary inputs (checkpoints, tokenizers, traces to hash).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tqref {

// Reads a whole file; throws std::invalid_argument naming it ("<what> <path>: ...") when it cannot
// be read.
std::vector<uint8_t> read_file_bytes(const std::string& path, const std::string& what);

}  // namespace tqref
