// The group quantizer and code packing (docs/spec.md sections 2 and 4; model/quantize.cpp, format.h).
// Expected values are hand-derived (the arithmetic is in the comments) or come from
// writer_oracle.h, an independent reading of the spec.
#define BOOST_TEST_MODULE test_quantize
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "fp_oracles.h"
#include "tqref/format.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"
#include "writer_oracle.h"

namespace {

using namespace tqref;
using namespace tqref::test;
using Group = uint16_t[kGroupSize];

constexpr uint16_t kBf16One = 0x3F80;     // 1.0
constexpr uint16_t kBf16NaN = 0x7FC0;
constexpr uint16_t kBf16Inf = 0x7F80;
constexpr uint16_t kBf16NegInf = 0xFF80;
constexpr uint16_t kBf16Max = 0x7F7F;     // largest finite bf16, about 3.39e38
constexpr uint16_t kBf16NegZero = 0x8000;

void fill(Group& g, uint16_t v) {
  for (auto& x : g) x = v;
}

uint32_t mid_code(const FormatTraits& t) { return t.levels / 2; }  // index of y = +-0: L/2 bounds <= 0
uint32_t top_code(const FormatTraits& t) { return t.levels - 1; }

void expect_codes(const QuantizedGroup& q, const uint32_t (&want)[kGroupSize], const char* what,
                  const FormatTraits& t) {
  for (uint32_t i = 0; i < kGroupSize; ++i)
    BOOST_TEST(uint32_t(q.codes[i]) == want[i], t.name << " " << what << ": code " << i);
}

void expect_all_codes(const QuantizedGroup& q, uint32_t want, const char* what,
                      const FormatTraits& t) {
  uint32_t w[kGroupSize];
  for (auto& c : w) c = want;
  expect_codes(q, w, what, t);
}

// Expected scale byte from a double-precision derivation of s. The float computation differs
// from the double one by a few ulp, so the test first requires s to be at least 1e-4 (relative)
// away from every fp8 rounding midpoint; then both must round to the same code.
uint8_t scale_byte_from_double(double s) {
  if (s >= 448.0) return 0x7E;
  for (int c = 0; c < 0x7E; ++c) {
    double mid = (fp8_code_value(uint8_t(c)) + fp8_code_value(uint8_t(c + 1))) / 2;
    BOOST_REQUIRE_MESSAGE(std::fabs(s - mid) > 1e-4 * mid,
                          "test case too close to an fp8 midpoint: s = " << s);
  }
  return search_f32_to_fp8(float(s));
}

}  // namespace

// ---- code_index ---------------------------------------------------------------------------

// Every bound of every format, one ulp either side: catches `<` for `<=`, an off-by-one in the
// bound count, and bounds copied wrong from docs/spec.md section 2.
BOOST_AUTO_TEST_CASE(code_index_at_every_bound) {
  for (const auto& t : kFormats) {
    for (uint32_t j = 0; j + 1 < t.levels; ++j) {
      float b = t.bounds[j];
      BOOST_TEST(code_index(t, b) == j + 1, t.name << " at bound " << j);
      BOOST_TEST(code_index(t, std::nextafter(b, -INFINITY)) == j, t.name << " below bound " << j);
      BOOST_TEST(code_index(t, std::nextafter(b, INFINITY)) == j + 1,
                 t.name << " above bound " << j);
    }
  }
}

// -0.0 counts as >= the 0.0 bound; NaN gives 0; infinities give the end codes.
BOOST_AUTO_TEST_CASE(code_index_signed_zero_nan_inf) {
  for (const auto& t : kFormats) {
    BOOST_TEST(code_index(t, 0.0f) == mid_code(t), t.name);
    BOOST_TEST(code_index(t, -0.0f) == mid_code(t), t.name << " -0.0");
    BOOST_TEST(code_index(t, -std::numeric_limits<float>::denorm_min()) == mid_code(t) - 1,
               t.name << " smallest negative subnormal");
    BOOST_TEST(code_index(t, NAN) == 0u, t.name << " NaN");
    BOOST_TEST(code_index(t, -NAN) == 0u, t.name << " -NaN");
    BOOST_TEST(code_index(t, INFINITY) == top_code(t), t.name << " +Inf");
    BOOST_TEST(code_index(t, -INFINITY) == 0u, t.name << " -Inf");
  }
}

// The tables against docs/spec.md section 2 typed in again here: catches a typo in format.h.
BOOST_AUTO_TEST_CASE(tables_match_spec_text) {
  const double cb3[8] = {-2.1520, -1.3440, -0.7560, -0.2451, 0.2451, 0.7560, 1.3440, 2.1520};
  const double bd3[7] = {-1.748, -1.050, -0.501, 0.0, 0.501, 1.050, 1.748};
  const double cb2[4] = {-1.5104, -0.4528, 0.4528, 1.5104};
  const double bd2[3] = {-0.9816, 0.0, 0.9816};
  const double cb4[16] = {-2.7326, -2.0690, -1.6180, -1.2562, -0.9423, -0.6568, -0.3880, -0.1284,
                          0.1284,  0.3880,  0.6568,  0.9423,  1.2562,  1.6180,  2.0690,  2.7326};
  const double bd4[15] = {-2.4008, -1.8435, -1.4371, -1.0993, -0.7996, -0.5224, -0.2582, 0.0,
                          0.2582,  0.5224,  0.7996,  1.0993,  1.4371,  1.8435,  2.4008};
  const double* cbs[3] = {cb2, cb3, cb4};
  const double* bds[3] = {bd2, bd3, bd4};
  for (int f = 0; f < kNumFormats; ++f) {
    const auto& t = kFormats[f];
    BOOST_TEST(t.levels == (1u << t.bits));
    BOOST_TEST(t.max == float(cbs[f][t.levels - 1]));
    for (uint32_t i = 0; i < t.levels; ++i) BOOST_TEST(t.codebook[i] == float(cbs[f][i]));
    for (uint32_t i = 0; i + 1 < t.levels; ++i) BOOST_TEST(t.bounds[i] == float(bds[f][i]));
  }
}

// ---- quantize_group: the docs/spec.md section 7 groups ---------------------------------------------

// All zero: amax = 0 takes inv = 1; y = 0 -> code L/2; nsq = 0 so s = 0/rn = 0 -> byte 0x00.
// Catches 0/0 (NaN scale) if the inv guard were missing. -0.0 inputs: y = -0.0 still counts as
// >= the 0.0 bound, and nsq = (-0)*(-0) = +0 gives +0 -> 0x00, not 0x80.
BOOST_AUTO_TEST_CASE(all_zero_group) {
  for (const auto& t : kFormats) {
    for (uint16_t z : {uint16_t(0x0000), kBf16NegZero}) {
      Group x;
      fill(x, z);
      QuantizedGroup q = quantize_group(t, x);
      expect_all_codes(q, mid_code(t), "all zero", t);
      BOOST_TEST(q.scale_byte == 0x00, t.name << " zero scale byte");
      BOOST_TEST(q.inv == 1.0f);
      for (uint32_t c = 0; c < t.levels; ++c)
        BOOST_TEST(dequantize_code(t, c, q.scale_byte) == 0.0f);
    }
  }
}

// One NaN among ones: fmaxf skips it, so amax = 1, inv = MAX, y = MAX >= top bound -> top code;
// the NaN element's y is NaN -> code 0; nsq is NaN -> s NaN (NaN > 448 is false) -> 0x7F.
// All NaN: amax stays 0 -> inv = 1, every code 0, byte 0x7F.
BOOST_AUTO_TEST_CASE(nan_groups) {
  for (const auto& t : kFormats) {
    Group x;
    fill(x, kBf16One);
    x[5] = kBf16NaN;
    QuantizedGroup q = quantize_group(t, x);
    uint32_t want[kGroupSize];
    for (auto& c : want) c = top_code(t);
    want[5] = 0;
    expect_codes(q, want, "one NaN", t);
    BOOST_TEST(q.amax == 1.0f);
    BOOST_TEST(q.scale_byte == 0x7F, t.name << " NaN scale byte");
    fill(x, kBf16NaN);
    q = quantize_group(t, x);
    expect_all_codes(q, 0, "all NaN", t);
    BOOST_TEST(q.scale_byte == 0x7F, t.name << " all-NaN scale byte");
  }
}

// One +-Inf among ones: amax = Inf, inv = MAX/Inf = 0; finite y = 1*0 = 0 -> code L/2; the Inf
// element's y = Inf*0 = NaN -> code 0. nsq = Inf -> s = Inf -> clamped to 448 -> 0x7E.
BOOST_AUTO_TEST_CASE(inf_groups) {
  for (const auto& t : kFormats) {
    for (uint16_t inf : {kBf16Inf, kBf16NegInf}) {
      Group x;
      fill(x, kBf16One);
      x[3] = inf;
      QuantizedGroup q = quantize_group(t, x);
      uint32_t want[kGroupSize];
      for (auto& c : want) c = mid_code(t);
      want[3] = 0;
      expect_codes(q, want, "one Inf", t);
      BOOST_TEST(q.inv == 0.0f);
      BOOST_TEST(q.scale_byte == 0x7E, t.name << " Inf scale byte");
    }
  }
}

// One huge element 2^20 among ones: inv = MAX * 2^-20 exactly, so y = MAX -> top code for it and
// y = MAX * 2^-20 (tiny, positive) -> L/2 for the rest; s ~ 2^20 / rn >> 448 -> 0x7E.
// One element 100 among zeros: s = 100 / sqrt(MAX^2 + 15 CB[L/2]^2), fp8-rounded.
BOOST_AUTO_TEST_CASE(one_huge_element) {
  for (const auto& t : kFormats) {
    Group x;
    fill(x, kBf16One);
    x[0] = 0x4980;  // 2^20
    QuantizedGroup q = quantize_group(t, x);
    uint32_t want[kGroupSize];
    for (auto& c : want) c = mid_code(t);
    want[0] = top_code(t);
    expect_codes(q, want, "2^20 among ones", t);
    BOOST_TEST(q.scale_byte == 0x7E, t.name << " saturated by one element");

    fill(x, 0x0000);
    x[9] = 0x42C8;  // 100
    q = quantize_group(t, x);
    for (auto& c : want) c = mid_code(t);
    want[9] = top_code(t);
    expect_codes(q, want, "100 among zeros", t);
    double cm = t.codebook[mid_code(t)];
    double s = 100.0 / std::sqrt(double(t.max) * t.max + 15 * cm * cm);
    BOOST_TEST(int(q.scale_byte) == int(scale_byte_from_double(s)), t.name << " s ~ " << s);
  }
}

// Equal elements a: y ~ MAX -> top code (bottom code for -a); rsq = 16 MAX^2 so s ~ a / MAX.
// a = 2^-20: s ~ 2^-20 / MAX < 2^-10 -> fp8 zero 0x00 (scale underflow).
// a ~ 3 * 2^-9 * MAX: s ~ 3 * 2^-9, the third fp8 subnormal -> 0x03.
// a = 2000: s ~ 2000 / MAX > 448 -> clamped -> 0x7E; a ~ 440 * MAX: s ~ 440 rounds up to 448.
BOOST_AUTO_TEST_CASE(scale_underflow_subnormal_and_saturation) {
  for (const auto& t : kFormats) {
    struct Case { float a; uint8_t want; const char* what; };
    const Case cases[] = {
        {std::ldexp(1.0f, -20), 0x00, "underflow to zero"},
        {float(3 * std::ldexp(1.0, -9) * t.max), 0x03, "subnormal 3 * 2^-9"},
        {float(5.2 * std::ldexp(1.0, -9) * t.max), 0x05, "subnormal ~5 * 2^-9"},
        {2000.0f, 0x7E, "clamp to 448"},
        {float(440.0 * t.max), 0x7E, "440 rounds to 448"},
    };
    for (const auto& c : cases) {
      for (int sign : {1, -1}) {
        Group x;
        fill(x, f32_to_bf16(float(sign) * c.a));
        QuantizedGroup q = quantize_group(t, x);
        expect_all_codes(q, sign > 0 ? top_code(t) : 0, c.what, t);
        double a = std::fabs(double(bf16_to_f32(x[0])));
        BOOST_TEST(int(scale_byte_from_double(a / t.max)) == int(c.want), "test derivation");
        BOOST_TEST(int(q.scale_byte) == int(c.want), t.name << " " << c.what << " sign " << sign);
      }
    }
  }
}

// amax at the 1e-12 guard: 2^-41 (< 1e-12) keeps inv = 1, so y = 2^-41 -> code L/2;
// 2^-39 (> 1e-12) scales to y ~ MAX -> top code. Both scales underflow to 0x00.
BOOST_AUTO_TEST_CASE(inverse_guard_threshold) {
  for (const auto& t : kFormats) {
    Group x;
    fill(x, 0x2B00);  // 2^-41
    QuantizedGroup q = quantize_group(t, x);
    expect_all_codes(q, mid_code(t), "amax 2^-41", t);
    BOOST_TEST(q.inv == 1.0f);
    BOOST_TEST(q.scale_byte == 0x00);
    fill(x, 0x2C00);  // 2^-39
    q = quantize_group(t, x);
    expect_all_codes(q, top_code(t), "amax 2^-39", t);
    BOOST_TEST(q.scale_byte == 0x00);
  }
}

// The largest bf16 (~3.39e38): x*x overflows, nsq = Inf -> s = 448 -> 0x7E; inv = MAX / 3.39e38
// is an fp32 subnormal (~6e-39) and must not be flushed to zero: y ~ MAX -> top code. With
// flush-to-zero every code would be L/2.
BOOST_AUTO_TEST_CASE(largest_bf16_no_flush_to_zero) {
  for (const auto& t : kFormats) {
    Group x;
    fill(x, kBf16Max);
    QuantizedGroup q = quantize_group(t, x);
    BOOST_TEST(std::fpclassify(q.inv) == FP_SUBNORMAL, t.name);
    expect_all_codes(q, top_code(t), "largest bf16", t);
    BOOST_TEST(q.scale_byte == 0x7E);
  }
}

// Random groups over many magnitudes, with specials sprinkled in, against the oracle: catches
// any operation-order or rounding difference the hand cases miss.
BOOST_AUTO_TEST_CASE(random_groups_vs_oracle) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exp_dist(-40, 40), pick(0, 63);
  const uint16_t specials[] = {kBf16NaN, kBf16Inf, kBf16NegInf, kBf16Max, 0x0000, kBf16NegZero,
                               0x0001, 0x8001};
  int bad = 0;
  for (int iter = 0; iter < 200000; ++iter) {
    Group x;
    float scale = std::ldexp(1.0f, exp_dist(rng));
    for (auto& v : x) {
      int p = pick(rng);
      v = p < 8 && iter % 4 == 0 ? specials[p] : f32_to_bf16(normal(rng) * scale);
    }
    for (const auto& t : kFormats) {
      QuantizedGroup q = quantize_group(t, x);
      OracleGroup o = oracle_quantize_group(t, x);
      bool same = q.scale_byte == o.scale_byte && bits_of(q.scale) == bits_of(o.scale);
      for (uint32_t i = 0; i < kGroupSize; ++i) same = same && q.codes[i] == o.codes[i];
      if (!same && ++bad <= 5) {
        std::string in;
        char buf[8];
        for (auto v : x) std::snprintf(buf, sizeof buf, "%04X ", v), in += buf;
        BOOST_TEST_MESSAGE(t.name << " iter " << iter << " input " << in << " model byte 0x"
                                  << std::hex << int(q.scale_byte) << " oracle 0x"
                                  << int(o.scale_byte));
      }
    }
  }
  BOOST_TEST(bad == 0);
}

// ---- dequantize_code ------------------------------------------------------------------------

// f32(fp16(CB[c]) * gs): both factors have few significant bits (11 and 4), so the product is
// exact and equals the double product. Catches using the fp32 codebook on the decode side.
BOOST_AUTO_TEST_CASE(dequantize_every_code_and_scale) {
  for (const auto& t : kFormats) {
    for (uint32_t c = 0; c < t.levels; ++c) {
      double cb16 = f16_to_f32(f32_to_f16(t.codebook[c]));  // both verified in test_numeric
      for (uint32_t sb = 0; sb < 0x7F; ++sb) {
        double want = cb16 * fp8_code_value(uint8_t(sb));
        BOOST_TEST(double(dequantize_code(t, c, uint8_t(sb))) == want,
                   t.name << " code " << c << " scale byte " << sb);
      }
      BOOST_TEST(std::isnan(dequantize_code(t, c, 0x7F)));
    }
  }
}

// ---- packing --------------------------------------------------------------------------------

// Random codes: pack then unpack gives the codes back, and the bytes equal the bit-at-a-time
// oracle packer. Catches a straddle bug of the 3-bit stream or a nibble swap.
BOOST_AUTO_TEST_CASE(pack_round_trip_every_format) {
  std::mt19937 rng(11);
  for (const auto& t : kFormats) {
    for (int iter = 0; iter < 10000; ++iter) {
      uint8_t c[kGroupSize];
      for (auto& v : c) v = uint8_t(rng() % t.levels);
      uint8_t packed[8], want[8];
      pack_group_codes(t.bits, c, packed);
      oracle_pack(t.bits, c, want);
      for (uint32_t i = 0; i < t.group_code_bytes; ++i)
        BOOST_TEST(packed[i] == want[i], t.name << " byte " << i);
      for (uint32_t k = 0; k < kGroupSize; ++k)
        BOOST_TEST(unpack_group_code(t.bits, packed, k) == c[k], t.name << " code " << k);
    }
  }
}

// turbo3v layout by hand: code k occupies bits 3k..3k+2 of the 6 bytes. A single code 7 at k
// must set exactly those three bits; codes 0..7 then 7..0 give 88 C6 FA 77 39 05
// (sum k << 3k = 0xFAC688, sum (7-k) << 3k = 0x053977, little-endian).
BOOST_AUTO_TEST_CASE(turbo3v_bit_layout) {
  for (uint32_t k = 0; k < kGroupSize; ++k) {
    uint8_t c[kGroupSize] = {};
    c[k] = 7;
    uint8_t p[6];
    pack_group_codes(3, c, p);
    uint64_t stream = 0;
    for (int i = 0; i < 6; ++i) stream |= uint64_t(p[i]) << (8 * i);
    BOOST_TEST(stream == (uint64_t(7) << (3 * k)), "code " << k);
  }
  uint8_t c[kGroupSize] = {0, 1, 2, 3, 4, 5, 6, 7, 7, 6, 5, 4, 3, 2, 1, 0};
  uint8_t p[6];
  pack_group_codes(3, c, p);
  const uint8_t want[6] = {0x88, 0xC6, 0xFA, 0x77, 0x39, 0x05};
  for (int i = 0; i < 6; ++i) BOOST_TEST(p[i] == want[i], "byte " << i);
}

// turbo4v: c[2i] in the low nibble; turbo2v: c[4i] in bits 0-1.
BOOST_AUTO_TEST_CASE(turbo4v_and_turbo2v_bit_layout) {
  uint8_t c4[kGroupSize] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0};
  uint8_t p[8];
  pack_group_codes(4, c4, p);
  const uint8_t want4[8] = {0x21, 0x43, 0x65, 0x87, 0xA9, 0xCB, 0xED, 0x0F};
  for (int i = 0; i < 8; ++i) BOOST_TEST(p[i] == want4[i], "turbo4v byte " << i);
  uint8_t c2[kGroupSize] = {1, 2, 3, 0, 3, 3, 0, 0, 0, 0, 0, 3, 2, 1, 0, 1};
  pack_group_codes(2, c2, p);
  const uint8_t want2[4] = {0x39, 0x0F, 0xC0, 0x46};  // e.g. byte 0 = 1 | 2<<2 | 3<<4 | 0<<6
  for (int i = 0; i < 4; ++i) BOOST_TEST(p[i] == want2[i], "turbo2v byte " << i);
}

// code_index (a binary search) against the counting definition on every bf16 value scaled into
// the codebook range by a few factors: catches an off-by-one in the search steps.
BOOST_AUTO_TEST_CASE(code_index_vs_counting_definition) {
  const float factors[] = {1.0f, 0.37f, 2.9f, 1e-3f};
  int bad = 0;
  for (const auto& t : kFormats)
    for (uint32_t h = 0; h < 65536; ++h)
      for (float f : factors) {
        float y = bf16_to_f32(uint16_t(h)) * f;
        if (code_index(t, y) != oracle_index(t, y) && ++bad <= 5)
          BOOST_TEST_MESSAGE(t.name << " y bits 0x" << std::hex << bits_of(y));
      }
  BOOST_TEST(bad == 0);
}

// quantize_groups (the writer's path, steps interleaved across groups) equals quantize_group on
// each group, intermediates included: catches state leaking from one group into the next.
BOOST_AUTO_TEST_CASE(quantize_groups_equals_quantize_group) {
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const auto& t : kFormats) {
    for (uint32_t count = 1; count <= 9; ++count) {
      std::vector<uint16_t> x(count * kGroupSize);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = i % 37 == 5 ? kBf16NaN : f32_to_bf16(normal(rng) * std::ldexp(1.0f, int(i / 16) * 9 - 30));
      std::vector<QuantizedGroup> many(count);
      quantize_groups(t, x.data(), count, many.data());
      for (uint32_t k = 0; k < count; ++k) {
        Group one;
        for (uint32_t i = 0; i < kGroupSize; ++i) one[i] = x[k * kGroupSize + i];
        QuantizedGroup q = quantize_group(t, one);
        OracleGroup o = oracle_quantize_group(t, one);
        BOOST_TEST(q.scale_byte == o.scale_byte);
        BOOST_TEST(many[k].scale_byte == q.scale_byte, t.name << " count " << count << " k " << k);
        BOOST_TEST(bits_of(many[k].nsq) == bits_of(q.nsq));
        BOOST_TEST(bits_of(many[k].inv) == bits_of(q.inv));
        BOOST_TEST(bits_of(many[k].scale) == bits_of(q.scale));
        for (uint32_t i = 0; i < kGroupSize; ++i) BOOST_TEST(many[k].codes[i] == o.codes[i]);
      }
    }
  }
}
