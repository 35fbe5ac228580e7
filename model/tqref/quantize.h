// The Turbo-V group quantizer (docs/spec.md sections 2 and 4), in the exact operation order of the writer.
#pragma once
#include <cstdint>

#include "tqref/format.h"
#include "tqref/variant.h"

namespace tqref {

// Number of bounds BD[j] with BD[j] <= y (IEEE compare; -0.0 counts as >= 0.0; NaN gives 0).
uint32_t code_index(const FormatTraits& t, float y);

// Everything the writer computes for one group, kept for diagnostics and the CLI.
struct QuantizedGroup {
  uint8_t codes[kGroupSize] = {};  // code indices before packing
  uint8_t scale_byte = 0;          // fp8 E4M3 encoding of the clamped scale
  float nsq = 0, amax = 0, inv = 0, rsq = 0, rn = 0;
  float scale = 0;                 // s after the clamp to 448, before fp8 encoding
};

// Steps 1-7 of docs/spec.md section 4 on 16 bf16 inputs.
QuantizedGroup quantize_group(const FormatTraits& t, const uint16_t (&x_bf16)[kGroupSize]);

// quantize_group for `count` consecutive groups of x_bf16 ([count * 16] bf16), the writer's
// SIMD path: out[k] equals quantize_group on group k bit for bit.
void quantize_groups(const FormatTraits& t, const uint16_t* x_bf16, uint32_t count,
                     QuantizedGroup* out);
// The same under a variant of the contract (tqref/variant.h; docs/variants.md).
void quantize_groups(const FormatTraits& t, const uint16_t* x_bf16, uint32_t count,
                     QuantizedGroup* out, const Variant& v);

// The value the decoder reconstructs for code c with scale byte sb: f32(f32(fp16(CB[c])) * gs).
float dequantize_code(const FormatTraits& t, uint32_t code, uint8_t scale_byte);

}  // namespace tqref
