// SHA-256 of a byte buffer as 64 lowercase hex digits (Debian's nettle, package nettle-dev):
// which checkpoint a trace came from, which module conform ran, the approximate-unit tables.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tqref::trace {

std::string sha256_hex(const uint8_t* data, size_t n);

}  // namespace tqref::trace
