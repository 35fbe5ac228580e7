// Number formats of docs/spec.md section 1 (model/tqref/numeric.h) against independent oracles.
// Built twice: test_numeric (label cpu) sweeps a stratified 2^24 subset of binary32 patterns;
// test_numeric_long (labels cpu long, TQREF_EXHAUSTIVE=1) sweeps all 2^32 patterns.
// Decodes are small domains and are always exhaustive (256 fp8 codes, 65536 bf16/fp16 patterns).
#define BOOST_TEST_MODULE test_numeric
#include <boost/test/unit_test.hpp>
#include <omp.h>

#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fp_oracles.h"
#include "tqref/numeric.h"

#ifndef TQREF_EXHAUSTIVE
#define TQREF_EXHAUSTIVE 0
#endif

namespace {

using namespace tqref;
using namespace tqref::test;

// The 2^24 stratified inputs: every sign x every exponent (512 strata) x all 128 values of the
// top 7 mantissa bits x 256 patterns of the low 16 bits. The top 7 bits cover every bf16 and
// fp8 kept-mantissa prefix; the low patterns hold every rounding boundary of bf16 (bit 15),
// fp16 (bits 12 and below, subnormals) and fp8 (bit 19 with low 16 bits 0, 1 and 0xFFFF), each
// also one unit either side, plus seeded random fill.
std::array<uint16_t, 256> low_patterns() {
  std::array<uint16_t, 256> p{};
  size_t n = 0;
  p[n++] = 0x0000;
  p[n++] = 0xFFFF;
  p[n++] = 0xFFFE;
  for (int k = 1; k < 16; ++k) {
    p[n++] = uint16_t(1u << k);
    p[n++] = uint16_t((1u << k) - 1);
    p[n++] = uint16_t((1u << k) + 1);
  }
  std::mt19937 rng(20240601);
  while (n < p.size()) p[n++] = uint16_t(rng());
  return p;
}

uint32_t stratified_input(uint32_t i, const std::array<uint16_t, 256>& low) {
  uint32_t b = low[i & 0xFF];
  uint32_t top7 = (i >> 8) & 0x7F, exp = (i >> 15) & 0xFF, sign = (i >> 23) & 1;
  return (sign << 31) | (exp << 23) | (top7 << 16) | b;
}

// Runs `check(bits)` (true = agree) over the sweep's inputs on all OpenMP threads; returns the
// number of disagreements and reports the first few in hex.
uint64_t sweep(const char* what, const std::function<bool(uint32_t, std::string&)>& check) {
  const auto low = low_patterns();
  const int64_t count = TQREF_EXHAUSTIVE ? (int64_t(1) << 32) : (int64_t(1) << 24);
  uint64_t bad = 0;
  std::vector<std::string> first;
#pragma omp parallel for schedule(static, 1 << 16) reduction(+ : bad)
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits = TQREF_EXHAUSTIVE ? uint32_t(i) : stratified_input(uint32_t(i), low);
    std::string msg;
    if (check(bits, msg)) continue;
    ++bad;
#pragma omp critical
    if (first.size() < 8) first.push_back(msg);
  }
  for (const auto& m : first) BOOST_TEST_MESSAGE(what << " mismatch: " << m);
  std::printf("%s: %" PRId64 " inputs, %" PRIu64 " mismatches\n", what, count, bad);
  return bad;
}

std::string hex_msg(uint32_t in, uint32_t model, uint32_t oracle) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "input 0x%08X model 0x%X oracle 0x%X", in, model, oracle);
  return buf;
}

}  // namespace

// Same sweep against the search oracle, so host-only builds test the encoder too, and so a
// header change in a future toolkit would show up as a disagreement between the two oracles.
BOOST_AUTO_TEST_CASE(fp8_encode_vs_nearest_search) {
  uint64_t bad = sweep("fp8 encode vs nearest search", [](uint32_t b, std::string& msg) {
    uint8_t m = f32_to_fp8e4m3_satfinite(float_of(b)), o = search_f32_to_fp8(float_of(b));
    if (m != o) msg = hex_msg(b, m, o);
    return m == o;
  });
  BOOST_TEST(bad == 0u);
}

BOOST_AUTO_TEST_CASE(bf16_encode_vs_nearest_search) {
  uint64_t bad = sweep("bf16 encode vs nearest search", [](uint32_t b, std::string& msg) {
    uint16_t m = f32_to_bf16(float_of(b)), o = search_f32_to_bf16(float_of(b));
    if (m != o) msg = hex_msg(b, m, o);
    return m == o;
  });
  BOOST_TEST(bad == 0u);
}

// The host-only oracle for fp16(CB), the decoder's codebook: catches a wrong tie rule, subnormal
// step, overflow threshold (65520 rounds to Inf) or NaN pattern of f32_to_f16 where the CUDA
// headers are missing, and disagrees with them if either changes.
BOOST_AUTO_TEST_CASE(fp16_encode_vs_nearest_search) {
  uint64_t bad = sweep("fp16 encode vs nearest search", [](uint32_t b, std::string& msg) {
    uint16_t m = f32_to_f16(float_of(b)), o = search_f32_to_f16(float_of(b));
    if (m != o) msg = hex_msg(b, m, o);
    return m == o;
  });
  BOOST_TEST(bad == 0u);
}

// All 65536 fp16 patterns against the definition: finite values exactly, Inf with its sign, every
// NaN payload as the canonical NaN 0x7FFFFFFF (model/tqref/numeric.h). Catches subnormal scaling
// and exponent-bias errors of f16_to_f32 in host-only builds.
BOOST_AUTO_TEST_CASE(fp16_decode_all_patterns_vs_definition) {
  uint32_t bad = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(uint16_t(h));
    const bool neg = h & 0x8000;
    const uint16_t mag = uint16_t(h & 0x7FFF);
    bool ok;
    if (mag > 0x7C00) {
      ok = bits_of(f) == 0x7FFFFFFFu;
    } else if (mag == 0x7C00) {
      ok = std::isinf(f) && std::signbit(f) == neg;
    } else {
      ok = double(f) == (neg ? -1.0 : 1.0) * f16_code_value(mag) && std::signbit(f) == neg;
    }
    if (!ok && ++bad <= 8) BOOST_TEST_MESSAGE("fp16 decode " << hex_msg(h, bits_of(f), 0));
  }
  BOOST_TEST(bad == 0u);
}

// All 256 codes against the definition; and every finite code must encode back to itself.
BOOST_AUTO_TEST_CASE(fp8_decode_all_codes_vs_definition) {
  for (uint32_t v = 0; v < 256; ++v) {
    float f = fp8e4m3_to_f32(uint8_t(v));
    if ((v & 0x7F) == 0x7F) {
      BOOST_TEST(std::isnan(f), "fp8 code 0x" << std::hex << v << " must be NaN");
      continue;
    }
    double want = (v & 0x80 ? -1.0 : 1.0) * fp8_code_value(uint8_t(v & 0x7F));
    BOOST_TEST(double(f) == want, "fp8 code 0x" << std::hex << v);
    BOOST_TEST(std::signbit(f) == bool(v & 0x80), "fp8 code 0x" << std::hex << v << " sign");
    BOOST_TEST(f32_to_fp8e4m3_satfinite(f) == v, "fp8 round trip 0x" << std::hex << v);
  }
}

// All 65536 bf16 patterns decode to the same upper half (exact decode), as the CUDA headers do.
BOOST_AUTO_TEST_CASE(bf16_decode_all_patterns) {
  uint32_t bad = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    uint32_t m = bits_of(bf16_to_f32(uint16_t(h)));
    if (m != h << 16 && ++bad <= 8) BOOST_TEST_MESSAGE("bf16 decode " << hex_msg(h, m, h << 16));
#if TQREF_HAVE_CUDA_HEADERS
    uint32_t o = bits_of(cuda_bf16_to_f32(uint16_t(h)));
    if (m != o && ++bad <= 8) BOOST_TEST_MESSAGE("bf16 decode " << hex_msg(h, m, o));
#endif
  }
  BOOST_TEST(bad == 0u);
}

// Hand-derived fp8 encodes at the edges docs/spec.md section 1 names, so a reader sees the rules.
BOOST_AUTO_TEST_CASE(fp8_encode_named_edges) {
  struct Case { float x; uint8_t want; const char* why; };
  const Case cases[] = {
      {448.0f, 0x7E, "max finite"},
      {464.0f, 0x7E, "past max: saturates (non-saturating would be NaN)"},
      {INFINITY, 0x7E, "+Inf saturates"},
      {-INFINITY, 0xFE, "-Inf saturates to -448"},
      {NAN, 0x7F, "NaN"},
      {-NAN, 0x7F, "negative NaN: 0x7F too"},
      {0.0f, 0x00, "+0"},
      {-0.0f, 0x80, "-0 keeps the sign"},
      {std::ldexp(1.0f, -10), 0x00, "2^-10 is half the smallest subnormal: tie to even zero"},
      {-std::ldexp(1.0f, -10), 0x80, "negative tie keeps the sign"},
      {std::nextafter(std::ldexp(1.0f, -10), 1.0f), 0x01, "just above 2^-10 -> 2^-9"},
      {std::ldexp(3.0f, -10), 0x02, "1.5 * 2^-9: tie between codes 1 and 2 -> even 2"},
      {std::ldexp(1.0f, -6), 0x08, "smallest normal"},
      {std::ldexp(15.0f, -10), 0x08, "7.5 * 2^-9: tie between 7 and 8 -> even 8 (normal)"},
      {1.0f, 0x38, "one"},
      {1.0625f, 0x38, "tie between 1 and 1.125 -> even mantissa 0"},
      {1.1875f, 0x3A, "tie between 1.125 and 1.25 -> even mantissa 2"},
      {432.0f, 0x7E, "tie between 416 and 448 -> 448 (mantissa 6 even)"},
      {std::nextafter(432.0f, 0.0f), 0x7D, "just below that tie -> 416"},
  };
  for (const auto& c : cases) {
    uint8_t got = f32_to_fp8e4m3_satfinite(c.x);
    BOOST_TEST(got == c.want, c.why << ": got 0x" << std::hex << int(got) << " want 0x"
                                    << int(c.want));
  }
}

// The CUDA headers' host code as oracle (docs/spec.md section 1: equal to the device for all 2^32
// inputs). Compiled only when CMake found the toolkit's headers; CTest runs this suite as its own
// test, test_numeric_cuda_oracle, which CTest reports as skipped where the headers are missing
// (tests/CMakeLists.txt), so a host-only build never counts these as passed.
#if TQREF_HAVE_CUDA_HEADERS
BOOST_AUTO_TEST_SUITE(cuda_oracle)

// Catches any rounding, saturation, subnormal or signed-zero error of the writer's scale encoder.
BOOST_AUTO_TEST_CASE(fp8_encode_vs_cuda_headers) {
  uint64_t bad = sweep("fp8 encode vs __nv_cvt_float_to_fp8", [](uint32_t b, std::string& msg) {
    uint8_t m = f32_to_fp8e4m3_satfinite(float_of(b)), o = cuda_f32_to_fp8(float_of(b));
    if (m != o) msg = hex_msg(b, m, o);
    return m == o;
  });
  BOOST_TEST(bad == 0u);
}

// Catches a wrong tie rule, a NaN pattern other than 0x7FFF, or overflow not rounding to Inf in
// the K/V input conversion.
BOOST_AUTO_TEST_CASE(bf16_encode_vs_cuda_headers) {
  uint64_t bad = sweep("bf16 encode vs __float2bfloat16_rn", [](uint32_t b, std::string& msg) {
    uint16_t m = f32_to_bf16(float_of(b)), o = cuda_f32_to_bf16(float_of(b));
    if (m != o) msg = hex_msg(b, m, o);
    return m == o;
  });
  BOOST_TEST(bad == 0u);
}

// The decoder's codebook is fp16(CB); catches rounding errors of f32_to_f16, including the
// subnormal range and the NaN pattern (0x7FFF, as __float2half).
BOOST_AUTO_TEST_CASE(fp16_encode_vs_cuda_headers) {
  uint64_t bad = sweep("fp16 encode vs __float2half_rn", [](uint32_t b, std::string& msg) {
    uint16_t m = f32_to_f16(float_of(b)), o = cuda_f32_to_f16(float_of(b));
    if (m != o) msg = hex_msg(b, m, o);
    return m == o;
  });
  BOOST_TEST(bad == 0u);
}

// All 256 fp8 codes, bit for bit (NaN payload included: 0x7F/0xFF decode via fp16 0x7FFF to
// 0x7FFFE000). Catches a wrong bias, subnormal step or sign handling in the scale decode.
BOOST_AUTO_TEST_CASE(fp8_decode_all_codes_vs_cuda_headers) {
  for (uint32_t v = 0; v < 256; ++v) {
    uint32_t m = bits_of(fp8e4m3_to_f32(uint8_t(v))), o = bits_of(cuda_fp8_to_f32(uint8_t(v)));
    BOOST_TEST(m == o, "fp8 decode " << hex_msg(v, m, o));
  }
}

// All 65536 fp16 patterns (Inf and NaN payloads included). Catches subnormal scaling errors.
BOOST_AUTO_TEST_CASE(fp16_decode_all_patterns_vs_cuda_headers) {
  uint32_t bad = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    uint32_t m = bits_of(f16_to_f32(uint16_t(h))), o = bits_of(cuda_f16_to_f32(uint16_t(h)));
    if (m != o && ++bad <= 8) BOOST_TEST_MESSAGE("fp16 decode " << hex_msg(h, m, o));
  }
  BOOST_TEST(bad == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
#endif
