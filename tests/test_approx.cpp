// The approximate-unit model (tqref/approx.h, harness/io/approx_units_io.h; docs/approx-units.md)
// on synthetic tables. With every delta 0 the tables hold the correctly rounded 1/x and sqrt(x)
// on their base intervals, so wherever the structure scales exactly the model must equal IEEE
// 1.0f / x and std::sqrt(x) bit for bit: that catches a wrong exponent, mantissa index, parity or
// subnormal scaling without any GPU. What only the H200's own tables can show (that the structure
// is the hardware's) is the probe's job (harness/gpu/approx_explore.cu), not this test's.
#define BOOST_TEST_MODULE test_approx
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <vector>

#include <sys/wait.h>

#include "io/approx_units_io.h"
#include "io/hdf5_util.h"
#include "tqref/approx.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"
#include "tqref/variant.h"

using namespace tqref;

namespace {

uint32_t bits(float f) { return f32_bits(f); }
float from_bits(uint32_t b) { return f32_from_bits(b); }

const ApproxUnits& zero_units() {
  static const ApproxUnits u = ApproxUnits::from_deltas(
      "sm_90", std::vector<int8_t>(kRcpEntries, 0), std::vector<int8_t>(kSqrtEntries, 0));
  return u;
}

// Every 257th bit pattern plus the ends of each binade: about 16.7 million inputs, all exponents.
template <class F>
void for_sampled_floats(F f) {
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 257) f(uint32_t(b));
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t s : {0u, 1u})
      for (uint32_t m : {0u, 1u, 0x7FFFFEu, 0x7FFFFFu}) f((s << 31) | (e << 23) | m);
}

}  // namespace

// Catches: a wrong mantissa index or exponent in the reciprocal's scaling (normal and subnormal
// inputs alike), a sign lost, Inf/zero swapped.
BOOST_AUTO_TEST_CASE(zero_delta_rcp_is_the_ieee_reciprocal_wherever_the_result_is_normal) {
  const ApproxUnits& u = zero_units();
  uint64_t checked = 0;
  for_sampled_floats([&](uint32_t b) {
    const float x = from_bits(b), want = 1.0f / x;
    if (x != x || (want != 0.0f && std::fabs(want) < 0x1p-126f)) return;  // NaN; subnormal result
    BOOST_TEST_REQUIRE(bits(u.rcp(x, false)) == bits(want), "x = 0x" << std::hex << b);
    ++checked;
  });
  BOOST_TEST(checked > 16000000u);
}

// Catches: a wrong exponent parity or halving in the square root's table index, wrong subnormal
// scaling (2^24 in, 2^-12 out), negative inputs not NaN.
BOOST_AUTO_TEST_CASE(zero_delta_sqrt_is_the_ieee_square_root_of_every_sampled_input) {
  const ApproxUnits& u = zero_units();
  for_sampled_floats([&](uint32_t b) {
    const float x = from_bits(b);
    const float want = (x != x || x < 0.0f) ? from_bits(0x7FFFFFFFu) : std::sqrt(x);
    BOOST_TEST_REQUIRE(bits(u.sqrt(x, false)) == bits(want), "x = 0x" << std::hex << b);
  });
}

// Catches: .ftz forms that read subnormals as values or keep subnormal results, and non-canonical
// NaNs (x86 writes 0xFFC00000 for Inf * 0; the GPU 0x7FFFFFFF).
BOOST_AUTO_TEST_CASE(specials_and_ftz) {
  const ApproxUnits& u = zero_units();
  const float sub = from_bits(0x00000123u), inf = std::numeric_limits<float>::infinity();
  BOOST_TEST(bits(u.rcp(sub, true)) == bits(inf));
  BOOST_TEST(bits(u.rcp(-sub, true)) == bits(-inf));
  BOOST_TEST(bits(u.rcp(0x1.8p+127f, true)) == 0u);         // result subnormal: flushed
  BOOST_TEST(bits(u.rcp(0x1.8p+127f, false)) != 0u);        // kept without .ftz
  BOOST_TEST(bits(u.rcp(-0.0f, false)) == bits(-inf));
  BOOST_TEST(bits(u.rcp(-inf, false)) == 0x80000000u);
  BOOST_TEST(bits(u.sqrt(-0.0f, false)) == 0x80000000u);
  BOOST_TEST(bits(u.sqrt(-sub, true)) == 0x80000000u);
  BOOST_TEST(bits(u.sqrt(sub, true)) == 0u);
  BOOST_TEST(bits(u.sqrt(inf, false)) == bits(inf));
  BOOST_TEST(bits(u.sqrt(-1.0f, false)) == 0x7FFFFFFFu);
  BOOST_TEST(bits(u.div(Division::full, inf, inf, false)) == 0x7FFFFFFFu);
}

// Catches: div.full / div.approx computed as one correctly rounded quotient instead of a times
// the reciprocal (3 * rn(1/7) rounds to 0x3EDB6DB8; rn(3/7) is 0x3EDB6DB7), and rn not being
// IEEE division.
BOOST_AUTO_TEST_CASE(division_is_a_times_the_reciprocal_rounded_once) {
  const ApproxUnits& u = zero_units();
  BOOST_TEST(bits(u.div(Division::full, 3.0f, 7.0f, false)) == 0x3EDB6DB8u);
  BOOST_TEST(bits(u.div(Division::approx, 3.0f, 7.0f, true)) == 0x3EDB6DB8u);
  BOOST_TEST(bits(u.div(Division::rn, 3.0f, 7.0f, false)) == 0x3EDB6DB7u);
  // .ftz: a subnormal dividend reads as zero.
  BOOST_TEST(bits(u.div(Division::approx, from_bits(0x00400000u), 0.5f, true)) == 0u);
  BOOST_TEST(bits(u.div(Division::full, from_bits(0x00400000u), 0.5f, false)) == 0x00800000u);
}

// Catches: a division that lets MUFU.RCP see an out-of-range divisor (the first hypothesis, a *
// rcp(b)). The oracle is the H200: the first counter-examples its probe printed against that
// hypothesis (docs/conformance/2026-12-05-session13-h200.md), each the GPU's own result, checked
// against the committed sm_90 tables. The PTX ISA states the div.approx case too: a divisor above
// 2^126 gives zero.
BOOST_AUTO_TEST_CASE(division_scales_the_divisor_into_the_reciprocals_range) {
  struct Pair {
    Division d;
    bool ftz;
    uint32_t a, b, got;
  };
  static const Pair kH200[] = {
    {Division::full, false, 0x0096C82Bu, 0x000939E2u, 0x4182BE64u},  // div.full.f32
    {Division::full, false, 0x31916187u, 0x8019BB31u, 0xF1B4CCACu},  // div.full.f32
    {Division::full, false, 0xABE0BE48u, 0x000F884Du, 0xEC67823Fu},  // div.full.f32
    {Division::full, false, 0x27E4967Au, 0x001B9928u, 0x680485E2u},  // div.full.f32
    {Division::full, false, 0xAA41B34Eu, 0x0004ABDDu, 0xEBA5DCE0u},  // div.full.f32
    {Division::full, false, 0x176E479Fu, 0x80000196u, 0xDD963ED1u},  // div.full.f32
    {Division::full, false, 0x6EB0E203u, 0x7EC139B1u, 0x2F6A5922u},  // div.full.f32
    {Division::full, false, 0x76F010C8u, 0xFF6C9EDEu, 0xB701DD12u},  // div.full.f32
    {Division::full, false, 0xEB2C495Au, 0xFF0C7DF9u, 0x2B9CF7A7u},  // div.full.f32
    {Division::full, false, 0x4469203Bu, 0x7EBCCB9Fu, 0x051E0E29u},  // div.full.f32
    {Division::full, false, 0xCDD2BE46u, 0xFF72024Au, 0x0DDEED40u},  // div.full.f32
    {Division::full, false, 0xF29512A2u, 0x7EF13DC4u, 0xB31E315Cu},  // div.full.f32
    {Division::full, false, 0xBFDBE879u, 0xFF702422u, 0x003A9B92u},  // div.full.f32
    {Division::full, false, 0xBDE71731u, 0x7F63A796u, 0x80040F75u},  // div.full.f32
    {Division::full, false, 0xBDA6D250u, 0x7F374524u, 0x8003A418u},  // div.full.f32
    {Division::full, false, 0x3E46829Fu, 0xFF5DEA44u, 0x80072801u},  // div.full.f32
    {Division::full, false, 0x3EAD3BD4u, 0x7F5E8A7Au, 0x000C7479u},  // div.full.f32
    {Division::full, false, 0xBF6E7DC4u, 0xFEAD15BBu, 0x00582F4Au},  // div.full.f32
    {Division::full, true, 0xD0AAFE27u, 0xFF0A493Bu, 0x111E4620u},  // div.full.ftz.f32
    {Division::full, true, 0xE6C88886u, 0x7F713D48u, 0xA6D4CDA1u},  // div.full.ftz.f32
    {Division::full, true, 0x78EF6E93u, 0x7EED04C6u, 0x39814DA4u},  // div.full.ftz.f32
    {Division::full, true, 0x54760943u, 0xFF4D420Fu, 0x94996DF2u},  // div.full.ftz.f32
    {Division::full, true, 0x4836C429u, 0x7EDBA2E7u, 0x08D5068Eu},  // div.full.ftz.f32
    {Division::full, true, 0x6B69561Bu, 0xFF68472Au, 0xAB80954Eu},  // div.full.ftz.f32
    {Division::approx, false, 0xB2E35DE4u, 0x800354F6u, 0x74887AC8u},  // div.approx.f32
    {Division::approx, false, 0x048076C6u, 0x000BC77Eu, 0x452E7EBAu},  // div.approx.f32
    {Division::approx, false, 0x9BF94DC6u, 0x001599D1u, 0xDC38A98Au},  // div.approx.f32
    {Division::approx, false, 0xA637E791u, 0x800D3DCDu, 0x66DE37AFu},  // div.approx.f32
    {Division::approx, false, 0x8CF5D6D8u, 0x001776A8u, 0xCD27A3E9u},  // div.approx.f32
    {Division::approx, false, 0x10EA6D6Bu, 0x8008BA5Cu, 0xD1D6DFEDu},  // div.approx.f32
    {Division::approx, false, 0xFDD40C96u, 0x7EDD81A3u, 0x80000000u},  // div.approx.f32
    {Division::approx, false, 0xFD321158u, 0xFEDA9824u, 0x00000000u},  // div.approx.f32
    {Division::approx, false, 0xC8BF8646u, 0x7EEF4974u, 0x80000000u},  // div.approx.f32
    {Division::approx, false, 0xCC6C8915u, 0xFF2FFE19u, 0x00000000u},  // div.approx.f32
    {Division::approx, false, 0xCD5FAF58u, 0x7F1A2B29u, 0x80000000u},  // div.approx.f32
    {Division::approx, false, 0xFF205F93u, 0xFF122A43u, 0x00000000u},  // div.approx.f32
    {Division::approx, false, 0x34263CE0u, 0xFEDFF57Du, 0x80000000u},  // div.approx.f32
    {Division::approx, false, 0xB65C1943u, 0x7F48CD36u, 0x80000000u},  // div.approx.f32
    {Division::approx, false, 0xBCE054FFu, 0xFE9D444Cu, 0x00000000u},  // div.approx.f32
    {Division::approx, false, 0x33D20AC4u, 0xFE81181Au, 0x80000000u},  // div.approx.f32
  };
  const ApproxUnits u = load_approx_units(std::string(TQREF_SOURCE_DIR) + "/data/hw/sm_90/approx.h5");
  for (const Pair& p : kH200)
    BOOST_TEST(bits(u.div(p.d, from_bits(p.a), from_bits(p.b), p.ftz)) == p.got,
               std::hex << "a=0x" << p.a << " b=0x" << p.b << " ftz=" << p.ftz);
  const ApproxUnits& z = zero_units();
  BOOST_TEST(bits(z.div(Division::approx, 1.0f, 0x1p127f, false)) == 0u);
  BOOST_TEST(bits(z.div(Division::approx, -1.0f, 0x1p127f, true)) == 0x80000000u);
}

// Catches: a delta applied to the wrong entry or with the wrong sign, and the exponent scaling
// applied before the table (a delta must move every binade's result by one ulp the same way).
BOOST_AUTO_TEST_CASE(a_delta_moves_its_entry_in_every_binade) {
  std::vector<int8_t> r(kRcpEntries, 0), s(kSqrtEntries, 0);
  const uint32_t m = 0x2AAAAAu;  // x = 1.333...
  r[m] = 1;
  s[(1u << 23) | m] = -1;        // x = 2 * 1.333... in [2, 4)
  const ApproxUnits u = ApproxUnits::from_deltas("sm_90", r, s);
  for (int e : {-60, -3, 0, 7, 60}) {  // the square root's input 2^(2e) stays normal
    const float x = std::ldexp(from_bits(0x3F800000u | m), e);
    BOOST_TEST(bits(u.rcp(x, false)) == bits(1.0f / x) + 1u, "e = " << e);
    BOOST_TEST(bits(u.rcp(x * 1.5f, false)) == bits(1.0f / (x * 1.5f)), "e = " << e);
    const float y = std::ldexp(from_bits(0x40000000u | m), 2 * e);
    BOOST_TEST(bits(u.sqrt(y, false)) == bits(std::sqrt(y)) - 1u, "e = " << e);
  }
}

// Catches: tables of the wrong size or entries outside the structure accepted.
BOOST_AUTO_TEST_CASE(malformed_tables_are_refused) {
  BOOST_CHECK_THROW(ApproxUnits::from_deltas("sm_90", std::vector<int8_t>(10, 0),
                                             std::vector<int8_t>(kSqrtEntries, 0)),
                    std::invalid_argument);
  std::vector<int8_t> r(kRcpEntries, 0);
  r[0] = 1;  // R[0] = 1.0 moved above 1
  BOOST_CHECK_THROW(ApproxUnits::from_deltas("sm_90", r, std::vector<int8_t>(kSqrtEntries, 0)),
                    std::invalid_argument);
}

// Catches: a file that does not read back to its tables, a changed table byte or attribute not
// refused, an existing file overwritten without --force.
BOOST_AUTO_TEST_CASE(file_round_trip_and_refusals) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tqref_test_approx";
  std::filesystem::remove_all(dir);
  const std::string path = (dir / "approx.h5").string();
  std::vector<int8_t> r(kRcpEntries, 0), s(kSqrtEntries, 0);
  for (uint32_t i = 1; i < kRcpEntries; i += 3) r[i] = int8_t(i % 2 ? 1 : -1);
  for (uint32_t i = 5; i < kSqrtEntries; i += 7) s[i] = -1;
  save_approx_units(path, "sm_90", r, s, {"test", "0", "13.0", "2026-12-05", "test", "none"}, false);
  const ApproxUnits back = load_approx_units(path);
  const ApproxUnits want = ApproxUnits::from_deltas("sm_90", r, s);
  for (uint32_t i = 0; i < kRcpEntries; i += 997) {
    const float x = from_bits(0x3F800000u | i);
    BOOST_TEST_REQUIRE(bits(back.rcp(x, false)) == bits(want.rcp(x, false)));
  }
  for (uint32_t i = 0; i < kSqrtEntries; i += 997) {
    const float x = from_bits(0x3F800000u + i);
    BOOST_TEST_REQUIRE(bits(back.sqrt(x, false)) == bits(want.sqrt(x, false)));
  }
  BOOST_CHECK_THROW(save_approx_units(path, "sm_90", r, s, {}, false), ApproxUnitsError);
  {
    h5::Node f = h5::Node::open_file_rw(path);
    f.set_attr("tables_sha256", std::string(64, '0'));
  }
  BOOST_CHECK_THROW(load_approx_units(path), ApproxUnitsError);
  std::filesystem::remove_all(dir);
}

// Catches: `tqref calibrate approx --from-raw` expecting other file names or sizes than the probe
// writes (harness/gpu/approx_explore.cu: rcp_delta.i8, 2^23 int8 deltas; sqrt_delta.i8, 2^24), or
// storing other tables than it read; a short raw table accepted, or a refusal that leaves a file.
// The device plan `approx` runs this conversion once on the H200's measurement: a mismatch here
// would only show there.
BOOST_AUTO_TEST_CASE(calibrate_converts_the_probes_raw_tables) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "tqref_test_approx_cli";
  fs::remove_all(dir);
  fs::create_directories(dir / "raw");
  std::vector<int8_t> r(kRcpEntries, 0), s(kSqrtEntries, 0);
  for (uint32_t i = 2; i < kRcpEntries; i += 11) r[i] = 1;
  for (uint32_t i = 3; i < kSqrtEntries; i += 13) s[i] = -1;
  const auto write = [&](const char* name, const std::vector<int8_t>& d, size_t n) {
    std::FILE* f = std::fopen((dir / "raw" / name).c_str(), "wb");
    BOOST_TEST_REQUIRE((f && std::fwrite(d.data(), 1, n, f) == n));
    std::fclose(f);
  };
  write("rcp_delta.i8", r, r.size());
  write("sqrt_delta.i8", s, s.size());
  const std::string out = (dir / "approx.h5").string();
  const std::string cmd = std::string(TQREF_CLI) + " calibrate approx --from-raw " + (dir / "raw").string() +
                          " --arch sm_90 --device-name test --driver 0 --cuda 13.0 --date 2026-12-05 --out " + out;
  BOOST_TEST_REQUIRE(std::system((cmd + " > /dev/null").c_str()) == 0);
  const ApproxUnits back = load_approx_units(out);
  const ApproxUnits want = ApproxUnits::from_deltas("sm_90", r, s);
  for (uint32_t i = 0; i < kRcpEntries; i += 1) {
    const float x = from_bits(0x3F800000u | i);
    BOOST_TEST_REQUIRE(bits(back.rcp(x, false)) == bits(want.rcp(x, false)), "rcp entry " << i);
  }
  for (uint32_t i = 0; i < kSqrtEntries; i += 1) {
    const float x = from_bits(0x3F800000u + i);
    BOOST_TEST_REQUIRE(bits(back.sqrt(x, false)) == bits(want.sqrt(x, false)), "sqrt entry " << i);
  }
  write("sqrt_delta.i8", s, s.size() - 1);  // one byte short
  const std::string again = (dir / "again.h5").string();
  const int rc = std::system((cmd.substr(0, cmd.size() - out.size()) + again + " 2> " +
                              (dir / "err.txt").string()).c_str());
  BOOST_TEST(WEXITSTATUS(rc) == 3);
  BOOST_TEST(!fs::exists(again));
  std::FILE* e = std::fopen((dir / "err.txt").c_str(), "rb");
  char msg[512] = {};
  if (e) {
    std::fread(msg, 1, sizeof msg - 1, e);
    std::fclose(e);
  }
  BOOST_TEST(std::string(msg).find("sqrt_delta.i8") != std::string::npos, msg);
  fs::remove_all(dir);
}

// Catches: the variants routed to the wrong unit or not at all. With zero-delta tables the
// approximate square root is IEEE's, so prec-sqrt must give the contract's every intermediate;
// div.full is t.max * rn(1/amax), computed here independently, and differs from rn(t.max / amax)
// for some groups, so prec-div must change some inverse scales.
BOOST_AUTO_TEST_CASE(variants_run_on_the_installed_units) {
  set_approx_units_source(
      [] { return std::shared_ptr<const ApproxUnits>(&zero_units(), [](const ApproxUnits*) {}); });
  const FormatTraits& t = traits(Format::turbo3v);
  constexpr uint32_t kGroups = 4096;
  std::vector<uint16_t> x(kGroupSize * kGroups);
  uint32_t state = 12345;
  for (uint16_t& v : x) {  // bf16 of magnitude 2^-12 .. 2^6, either sign
    state = state * 1664525u + 1013904223u;
    v = uint16_t(0x3980u + (state >> 16) % 0x0900u) | uint16_t((state & 1u) << 15);
  }
  std::vector<QuantizedGroup> contract(kGroups), sqrt_v(kGroups), div_v(kGroups);
  quantize_groups(t, x.data(), kGroups, contract.data());
  quantize_groups(t, x.data(), kGroups, sqrt_v.data(), parse_variant("prec-sqrt"));
  quantize_groups(t, x.data(), kGroups, div_v.data(), parse_variant("prec-div"));
  uint32_t inv_changed = 0;
  for (uint32_t g = 0; g < kGroups; ++g) {
    const QuantizedGroup &c = contract[g], &q = sqrt_v[g], &d = div_v[g];
    BOOST_TEST_REQUIRE((bits(q.rn) == bits(c.rn) && bits(q.scale) == bits(c.scale) &&
                        q.scale_byte == c.scale_byte && bits(q.inv) == bits(c.inv)), "group " << g);
    BOOST_TEST_REQUIRE(bits(d.inv) == bits(t.max * (1.0f / c.amax)), "group " << g);
    inv_changed += bits(d.inv) != bits(c.inv);
  }
  BOOST_TEST(inv_changed > 0u);
  install_approx_units_source();
}
