// Independent oracles for the number formats of docs/spec.md section 1, used only by tests.
//  - cuda_*: the CUDA headers' host code (cuda_fp8.hpp, cuda_bf16.hpp, cuda_fp16.hpp), which SPEC
//    section 1 states equals the device result for all 2^32 inputs. Compiled as host C++; present
//    only when tests/CMakeLists.txt found the toolkit (TQREF_HAVE_CUDA_HEADERS).
//  - search_* / *_code_value: nearest-value search in double over the format's representable
//    values and decodes written from the definition (no bit tricks), so that host-only builds
//    still have an oracle for every format (fp8, bf16, fp16).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#if TQREF_HAVE_CUDA_HEADERS
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

namespace tqref::test {

inline uint32_t bits_of(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }
inline float float_of(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }

#if TQREF_HAVE_CUDA_HEADERS
inline uint8_t cuda_f32_to_fp8(float x) {
  return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}
inline float cuda_fp8_to_f32(uint8_t v) {  // fp8 -> fp16 -> fp32, the route of docs/spec.md section 1
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(v, __NV_E4M3)));
}
inline uint16_t cuda_f32_to_bf16(float x) { return __nv_bfloat16_raw(__float2bfloat16_rn(x)).x; }
inline float cuda_bf16_to_f32(uint16_t h) {
  __nv_bfloat16_raw r;
  r.x = h;
  return __bfloat162float(__nv_bfloat16(r));
}
inline uint16_t cuda_f32_to_f16(float x) { return __half_raw(__float2half_rn(x)).x; }
inline float cuda_f16_to_f32(uint16_t h) {
  __half_raw r;
  r.x = h;
  return __half2float(__half(r));
}
#endif

// Value of a non-negative fp8 E4M3 code 0x00..0x7E from the definition: bias 7, 3 mantissa bits,
// exponent field 0 = subnormal m * 2^-9.
inline double fp8_code_value(uint8_t c) {
  int e = (c >> 3) & 0xF, m = c & 7;
  return e == 0 ? std::ldexp(double(m), -9) : std::ldexp(1.0 + m / 8.0, e - 7);
}

// cvt.rn.satfinite.e4m3 by search: NaN -> 0x7F; |x| >= 448 -> +-448; otherwise the nearest of
// the 127 non-negative finite codes, ties to the even code (= even mantissa); sign kept, also
// for zero.
inline uint8_t search_f32_to_fp8(float x) {
  if (std::isnan(x)) return 0x7F;
  uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  double a = std::fabs(double(x));
  if (a >= 448.0) return uint8_t(sign | 0x7E);
  int lo = 0, hi = 0x7E;  // largest code with value <= a
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (fp8_code_value(uint8_t(mid)) <= a) lo = mid; else hi = mid - 1;
  }
  double below = a - fp8_code_value(uint8_t(lo)), above = fp8_code_value(uint8_t(lo + 1)) - a;
  int c = (below < above || (below == above && lo % 2 == 0)) ? lo : lo + 1;
  return uint8_t(sign | c);
}

// Round-to-nearest-even to the upper 16 bits by comparing distances in double to the two
// neighbouring bf16 values (truncation and one step away from zero; one step past the largest
// finite value is the Inf pattern, valued 2^128 so that IEEE overflow rounding falls out).
inline uint16_t search_f32_to_bf16(float x) {
  if (std::isnan(x)) return 0x7FFF;
  uint32_t b = bits_of(x);
  uint16_t t = uint16_t(b >> 16);
  if ((b & 0xFFFFu) == 0) return t;
  auto mag = [](uint16_t h) {
    uint32_t a = uint32_t(h & 0x7FFF) << 16;
    return a == 0x7F800000u ? std::ldexp(1.0, 128) : double(std::fabs(float_of(a)));
  };
  double a = std::fabs(double(x));
  double below = a - mag(t), above = mag(uint16_t(t + 1)) - a;
  return (below < above || (below == above && t % 2 == 0)) ? t : uint16_t(t + 1);
}

// Value of a non-negative fp16 pattern 0x0000..0x7C00 from the definition: bias 15, 10 mantissa
// bits, exponent field 0 = subnormal m * 2^-24; 0x7C00 (Inf) is valued 2^16, one step past the
// largest finite 65504, so that IEEE overflow rounding falls out of the nearest search below.
inline double f16_code_value(uint16_t c) {
  int e = (c >> 10) & 0x1F, m = c & 0x3FF;
  if (e == 31) return std::ldexp(1.0, 16);
  return e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
}

// __float2half_rn by search: NaN -> 0x7FFF (the canonical NaN of the CUDA headers' host code);
// otherwise the nearest of the non-negative patterns 0x0000..0x7C00 (Inf included, see above),
// ties to the even pattern; sign kept, also for zero and Inf.
inline uint16_t search_f32_to_f16(float x) {
  if (std::isnan(x)) return 0x7FFF;
  uint16_t sign = std::signbit(x) ? 0x8000 : 0x0000;
  double a = std::fabs(double(x));
  if (a >= f16_code_value(0x7C00)) return uint16_t(sign | 0x7C00);
  int lo = 0, hi = 0x7BFF;  // largest pattern with value <= a
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (f16_code_value(uint16_t(mid)) <= a) lo = mid; else hi = mid - 1;
  }
  double below = a - f16_code_value(uint16_t(lo)), above = f16_code_value(uint16_t(lo + 1)) - a;
  int c = (below < above || (below == above && lo % 2 == 0)) ? lo : lo + 1;
  return uint16_t(sign | c);
}

}  // namespace tqref::test
