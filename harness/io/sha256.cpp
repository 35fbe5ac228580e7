#include "io/sha256.h"

#include <nettle/sha2.h>

#include <cstdio>

namespace tqref::trace {

std::string sha256_hex(const uint8_t* data, size_t n) {
  sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, n, data);
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, SHA256_DIGEST_SIZE, digest);
  char out[2 * SHA256_DIGEST_SIZE + 1];
  for (int i = 0; i < SHA256_DIGEST_SIZE; ++i) std::snprintf(out + 2 * i, 3, "%02x", digest[i]);
  return std::string(out, 2 * SHA256_DIGEST_SIZE);
}

}  // namespace tqref::trace
