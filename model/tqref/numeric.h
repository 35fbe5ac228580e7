// Number formats of docs/spec.md section 1 as small pure functions, written from the spec (not from the
// CUDA headers, which the tests use as an independent oracle). All conversions are exact bit
// manipulations; none depends on the host's floating-point environment except where noted.
// NaN results are canonical, as in the CUDA headers' host code (fp16 0x7FFF, fp32 0x7FFFFFFF,
// sign dropped): no output of the contract depends on a NaN payload, since the bf16 and fp8
// encodes map every NaN to one pattern, and tests compare NaNs bit for bit against the headers.
#pragma once
#include <cstdint>
#include <cstring>

namespace tqref {

inline uint32_t f32_bits(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }
inline float f32_from_bits(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }

// ---- bf16 ----------------------------------------------------------------------------------
//   bit 15 | 14 ........ 7 | 6 ...... 0
//   sign   | exponent (8)  | mantissa (7)      = upper half of an IEEE binary32
inline float bf16_to_f32(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }

// Round to nearest-even on the dropped 16 bits; every NaN becomes 0x7FFF; no flush-to-zero;
// overflow rounds to +-Inf as IEEE requires (like __float2bfloat16_rn).
inline uint16_t f32_to_bf16(float f) {
  uint32_t b = f32_bits(f);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;
  uint32_t lsb = (b >> 16) & 1u;
  return static_cast<uint16_t>((b + 0x7FFFu + lsb) >> 16);
}

// ---- fp16 (IEEE binary16) --------------------------------------------------------------------
//   bit 15 | 14 ... 10 | 9 ....... 0
//   sign   | exp (5)   | mantissa (10)     bias 15, subnormals step 2^-24
inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  if (exp == 0x1F) return f32_from_bits(man ? 0x7FFFFFFFu : (sign | 0x7F800000u));
  if (exp != 0) return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
  // subnormal: man * 2^-24, exact in binary32
  float v = float(man) * 5.9604644775390625e-8f;
  return f32_from_bits(f32_bits(v) | sign);
}

// Round to nearest-even (like __float2half); overflow to +-Inf; every NaN -> 0x7FFF.
inline uint16_t f32_to_f16(float f) {
  uint32_t b = f32_bits(f);
  uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7FFF;
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520: rounds to Inf
  if (a >= 0x38800000u) {                                               // normal in fp16
    uint32_t lsb = (a >> 13) & 1u;
    return static_cast<uint16_t>(sign | ((a - 0x38000000u + 0xFFFu + lsb) >> 13));
  }
  if (a < 0x33000000u) return sign;                                     // <= 2^-25: to zero
  // subnormal result: mantissa with hidden bit, shifted so the unit is 2^-24
  uint32_t exp = a >> 23, man = (a & 0x7FFFFFu) | 0x800000u;
  uint32_t shift = 126u - exp;  // 14..24 for exp in [102, 112]
  uint32_t q = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

// ---- fp8 E4M3 (OCP "E4M3FN") -----------------------------------------------------------------
//   bit 7 | 6 .. 3   | 2 .. 0
//   sign  | exp (4)  | mantissa (3)     bias 7; no Inf; S.1111.111 = NaN; max finite 448 (0x7E)
//   exp 0: subnormal, mantissa * 2^-9 (steps of 2^-9 below 2^-6)
inline float fp8e4m3_to_f32(uint8_t v) {
  uint32_t sign = uint32_t(v & 0x80u) << 24;
  uint32_t exp = (v >> 3) & 0xFu, man = v & 0x7u;
  if (exp == 0xF && man == 0x7) return f32_from_bits(0x7FFFFFFFu);  // NaN, sign dropped
  if (exp != 0) return f32_from_bits(sign | ((exp + 120u) << 23) | (man << 20));
  float m = float(man) * 0.001953125f;  // man * 2^-9, exact
  return f32_from_bits(f32_bits(m) | sign);
}

// The writer's encoder, `cvt.rn.satfinite.e4m3x2.f32`: nearest-even; |x| > 448 (also +-Inf)
// saturates to +-448; NaN -> 0x7F; |x| <= 2^-10 -> zero of the same sign.
inline uint8_t f32_to_fp8e4m3_satfinite(float f) {
  uint32_t b = f32_bits(f);
  uint8_t sign = static_cast<uint8_t>((b >> 24) & 0x80u);
  uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7F;
  if (a >= 0x43E00000u) return static_cast<uint8_t>(sign | 0x7E);      // >= 448 (and Inf)
  if (a >= 0x3C800000u) {                                                // >= 2^-6: normal
    uint32_t lsb = (a >> 20) & 1u;
    uint32_t r = (a + 0x7FFFFu + lsb) >> 20;                              // rounded, exp|man
    uint32_t code = r - (120u << 3);
    if (code > 0x7Eu) code = 0x7Eu;                                      // 464.. rounds past max
    return static_cast<uint8_t>(sign | code);
  }
  if (a <= 0x3A800000u) return sign;                                     // <= 2^-10: signed zero
  // subnormal: round |x| / 2^-9 to an integer 0..8 (8 is the smallest normal, code 0x08)
  uint32_t exp = a >> 23, man = (a & 0x7FFFFFu) | 0x800000u;
  uint32_t shift = 141u - exp;  // unit 2^-9: value = man * 2^(exp-150), q = man >> (141-exp)
  uint32_t q = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<uint8_t>(sign | q);
}

}  // namespace tqref
