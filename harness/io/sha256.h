// SHA-256 (FIPS 180-4) of a byte buffer or a file, as 64 lowercase hex digits. Used to record
// which checkpoint a trace came from; written here so the harness needs no crypto library.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tqref::trace {

std::string sha256_hex(const uint8_t* data, size_t n);

}  // namespace tqref::trace
