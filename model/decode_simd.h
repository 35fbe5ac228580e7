// The SIMD path of paged_decode_model (simd_kernels.h; docs/decode-model.md, "The SIMD path").
#pragma once
#include <cstdint>
#include <span>

#include "tqref/decode.h"

namespace tqref::simd {

// paged_decode_model's work after its parameter checks (the same arguments, already valid; diag
// already sized): equal to the scalar model bit for bit, outputs and diagnostics.
void paged_decode(Format format, std::span<const uint16_t> q, std::span<const uint8_t> k_cache,
                  std::span<const uint8_t> v_cache, std::span<uint16_t> output,
                  std::span<const int32_t> block_tables, std::span<const int32_t> seq_lens,
                  const DecodeParams& p, const Ex2Profile& ex2, DecodeDiagnostics* diag);

}  // namespace tqref::simd
