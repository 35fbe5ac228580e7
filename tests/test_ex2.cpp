// The EX2 model (model/ex2.cpp) loaded from the committed sm_90 profile (format 2, the datapath),
// against hardware readings (data/hw/sm_90/ex2_readings.h5, made by
// harness/gpu/make_ex2_readings.py from the H200 measurement) and against the measured
// fraction table (data/hw/sm_90/ex2_measured_table.h5, stored as a table); the datapath's readable and SIMD
// forms, the fit of model/tqref/ex2_fit.h, structural properties of the unit, EXPF, and the profile
// loader's failure modes. test_ex2_long.cpp compares the datapath model with the measured table
// on every non-positive float and NaN.
#define BOOST_TEST_MODULE test_ex2
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <chrono>
#include <random>

#include "io/ex2_profile_io.h"
#include "io/hdf5_util.h"
#include "sm90_ex2.h"
#include "tqref/ex2_fit.h"
#include "tqref/ex2.h"
#include "tqref/ex2_datapath.h"
#include "tqref/numeric.h"

namespace fs = std::filesystem;
using namespace tqref;

namespace {

using test::hex32;
const std::string& kProfile = test::kSm90Profile;
const std::string& kMeasured = test::kSm90Measured;  // the measured table (format 2, a table)
const std::string kReadings = std::string(TQREF_SOURCE_DIR) + "/data/hw/sm_90/ex2_readings.h5";
const Ex2Profile& profile() { return test::sm90_profile(); }
const Ex2Profile& measured() { return test::sm90_measured(); }

// The sm_90 coefficients (C0, C1, C2) per segment as the independent exploration of 2026-12-01
// found them (docs/ex2.md, "The datapath"), with cut 19 and bias 6114: the oracle for the
// committed profile and for the fitter, which never saw them.
constexpr uint32_t kFoundCut = 19, kFoundBias = 6114;
constexpr uint32_t kFoundCoefficients[64][3] = {
    {3, 22713, 494}, {365386, 22960, 501}, {734750, 23210, 506}, {1108133, 23463, 511},
    {1485586, 23718, 518}, {1867145, 23977, 521}, {2252860, 24238, 527}, {2642777, 24502, 532},
    {3036940, 24768, 541}, {3435393, 25038, 546}, {3838184, 25311, 551}, {4245365, 25586, 559},
    {4656977, 25865, 564}, {5073072, 26147, 568}, {5493699, 26431, 577}, {5918905, 26719, 583},
    {6348741, 27010, 589}, {6783258, 27304, 596}, {7222505, 27602, 600}, {7666538, 27902, 609},
    {8115404, 28206, 615}, {8569160, 28513, 622}, {9027854, 28824, 627}, {9491545, 29138, 633},
    {9960285, 29455, 641}, {10434129, 29776, 647}, {10913133, 30100, 655}, {11397354, 30428, 661},
    {11886846, 30759, 670}, {12381669, 31094, 677}, {12881882, 31432, 686}, {13387539, 31775, 691},
    {13898703, 32121, 699}, {14415435, 32471, 705}, {14937793, 32824, 715}, {15465837, 33182, 721},
    {15999633, 33543, 730}, {16539242, 33908, 739}, {17084727, 34277, 748}, {17636150, 34651, 753},
    {18193579, 35028, 763}, {18757078, 35409, 773}, {19326714, 35795, 779}, {19902551, 36185, 787},
    {20484659, 36579, 796}, {21073106, 36977, 806}, {21667961, 37380, 813}, {22269293, 37787, 822},
    {22877175, 38198, 833}, {23491674, 38614, 842}, {24112865, 39035, 849}, {24740822, 39460, 858},
    {25375616, 39889, 870}, {26017322, 40324, 877}, {26666015, 40763, 887}, {27321773, 41207, 896},
    {27984672, 41655, 909}, {28654788, 42109, 917}, {29332202, 42568, 925}, {30016992, 43031, 938},
    {30709240, 43500, 946}, {31409026, 43973, 959}, {32116431, 44452, 969}, {32831540, 44936, 980},
};

Ex2Datapath found_datapath() {
  Ex2Datapath d;
  d.cut = kFoundCut;
  d.bias = kFoundBias;
  for (uint32_t s = 0; s < kEx2Segments; ++s)
    d.seg[s] = {kFoundCoefficients[s][0], kFoundCoefficients[s][1], kFoundCoefficients[s][2]};
  return d;
}

uint32_t ex2_bits(uint32_t x) { return f32_bits(profile().ex2(f32_from_bits(x))); }
uint32_t expf_bits(uint32_t x) { return f32_bits(profile().expf(f32_from_bits(x))); }

std::string hex(uint32_t b) { return hex32(b); }

// Scratch directory for the loader tests, removed at the end of each test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("tqref_test_ex2_" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(readings)

// Every hardware reading, per category. Catches any rule of the structure that is wrong (ftz,
// NaN result, truncation instead of rounding of the fraction index, the -126 cut-off, the
// integer scaling) and any corruption of the stored fraction table.
BOOST_AUTO_TEST_CASE(ex2_equals_hardware) {
  h5::Node f = h5::Node::open_file(kReadings);
  auto in = f.read<uint32_t>("ex2_input_bits");
  auto out = f.read<uint32_t>("ex2_output_bits");
  auto cat = f.read<uint8_t>("ex2_category");
  const std::string names = f.attr_string("categories");
  BOOST_REQUIRE_EQUAL(in.size(), out.size());
  BOOST_REQUIRE_EQUAL(in.size(), cat.size());
  BOOST_REQUIRE_GT(in.size(), 3000u);
  std::vector<std::string> cats;
  for (size_t a = 0, b; a <= names.size(); a = b + 1) {
    b = names.find(',', a);
    if (b == std::string::npos) b = names.size();
    cats.push_back(names.substr(a, b - a));
  }
  std::vector<uint64_t> n(cats.size()), bad(cats.size());
  uint64_t distinct_guard = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    BOOST_REQUIRE_LT(cat[i], cats.size());
    uint32_t got = ex2_bits(in[i]);
    ++n[cat[i]];
    distinct_guard += out[i] != out[0];
    if (got != out[i]) {
      if (++bad[cat[i]] <= 4)
        BOOST_ERROR(cats[cat[i]] << ": EX2(" << hex(in[i]) << ") = " << hex(got) << ", hardware "
                                 << hex(out[i]));
    }
  }
  for (size_t c = 0; c < cats.size(); ++c) {
    BOOST_TEST_MESSAGE(cats[c] << ": " << n[c] << " readings, " << bad[c] << " mismatches");
    BOOST_CHECK_GT(n[c], 0u);
    BOOST_CHECK_EQUAL(bad[c], 0u);
  }
  BOOST_CHECK_GT(distinct_guard, in.size() / 2);  // readings are not one repeated value
}

// EXPF readings: includes y just below -126 where the square of EX2(y/2) is subnormal or zero.
// Catches a wrong branch condition (y > -126 vs y >= -126), a squaring done in double, or a
// flush of the subnormal product.
BOOST_AUTO_TEST_CASE(expf_equals_hardware) {
  h5::Node f = h5::Node::open_file(kReadings);
  auto in = f.read<uint32_t>("expf_input_bits");
  auto out = f.read<uint32_t>("expf_output_bits");
  BOOST_REQUIRE_EQUAL(in.size(), out.size());
  uint64_t bad = 0, subnormal = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t got = expf_bits(in[i]);
    subnormal += out[i] != 0 && out[i] < 0x00800000u;
    if (got != out[i] && ++bad <= 8)
      BOOST_ERROR("EXPF(" << hex(in[i]) << ") = " << hex(got) << ", hardware " << hex(out[i]));
  }
  BOOST_CHECK_EQUAL(bad, 0u);
  BOOST_CHECK_GT(subnormal, 100u);  // the squaring path really was exercised
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(structure)

// F non-increasing and within 2 ulp of exp2 in double: catches a table loaded in the wrong order,
// shifted by one entry, or decoded against the wrong reference.
BOOST_AUTO_TEST_CASE(fraction_table_is_monotone_and_close_to_exp2) {
  const auto& t = profile().fraction_table();
  BOOST_REQUIRE_EQUAL(t.size(), kEx2FractionEntries);
  uint64_t not_monotone = 0, far = 0;
  for (uint32_t k = 0; k < t.size(); ++k) {
    if (k > 0 && t[k] > t[k - 1]) ++not_monotone;
    const float want = static_cast<float>(std::exp2(-double(k) / 8388608.0));
    if (std::llabs(int64_t(t[k]) - int64_t(f32_bits(want))) > 2) ++far;
  }
  BOOST_CHECK_EQUAL(not_monotone, 0u);
  BOOST_CHECK_EQUAL(far, 0u);
}

// EX2 over a strided walk of every binade from -0 down to -Inf: non-increasing as |x| grows and
// within 2 ulp of exp2 wherever the result is normal and above 2^-126. Catches an off-by-one in
// the exponent ranges (the [-2, -1) binade once read the unscaled table) and a scaling error.
BOOST_AUTO_TEST_CASE(ex2_monotone_and_close_to_exp2) {
  uint32_t prev = ex2_bits(0x80000000u);
  uint64_t not_monotone = 0, far = 0, checked = 0;
  for (uint64_t b = 0x80000000u; b <= 0xFF800000u; b += 997) {
    const uint32_t got = ex2_bits(uint32_t(b));
    if (got > prev) ++not_monotone;
    prev = got;
    const float x = f32_from_bits(uint32_t(b));
    if (x >= -126.0f && x <= -1e-6f) {
      ++checked;
      const float want = static_cast<float>(std::exp2(double(x)));
      if (std::llabs(int64_t(got) - int64_t(f32_bits(want))) > 2) ++far;
    }
  }
  BOOST_CHECK_EQUAL(not_monotone, 0u);
  BOOST_CHECK_EQUAL(far, 0u);
  BOOST_CHECK_GT(checked, 100000u);
}

// Exact powers of two for integer inputs, +0 for everything below -126: catches scaling by
// 2^floor instead of 2^ceil and a cut-off at -127 or -125.
BOOST_AUTO_TEST_CASE(integers_and_cutoff) {
  for (int n = 0; n <= 126; ++n)
    BOOST_CHECK_EQUAL(hex(ex2_bits(f32_bits(-float(n)))), hex(uint32_t(127 - n) << 23));
  BOOST_CHECK_EQUAL(ex2_bits(f32_bits(-126.0f) + 1), 0u);
  BOOST_CHECK_EQUAL(ex2_bits(0xFF800000u), 0u);  // -Inf
  BOOST_CHECK_NE(ex2_bits(f32_bits(-126.0f) - 1), 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(domain)

// Positive inputs are outside the measured contract: the model must refuse them rather than
// extrapolate. +0.0 is in the contract (x <= 0) and reads as zero.
BOOST_AUTO_TEST_CASE(positive_inputs_throw) {
  BOOST_CHECK_THROW(profile().ex2(1.0f), std::domain_error);
  BOOST_CHECK_THROW(profile().ex2(f32_from_bits(0x00000001u)), std::domain_error);
  BOOST_CHECK_THROW(profile().ex2(std::numeric_limits<float>::infinity()), std::domain_error);
  BOOST_CHECK_THROW(profile().expf(1e-30f), std::domain_error);
  BOOST_CHECK_THROW(profile().expf(f32_from_bits(0x00000001u)), std::domain_error);
  BOOST_CHECK_EQUAL(hex(ex2_bits(0u)), hex(0x3F800000u));
  BOOST_CHECK_EQUAL(hex(expf_bits(0u)), hex(0x3F800000u));
  const std::string msg = error_of([] { profile().ex2(2.0f); });
  BOOST_CHECK(contains(msg, "0x40000000"));
}

// from_table's invariants: catches a truncated or unanchored table reaching the model.
BOOST_AUTO_TEST_CASE(from_table_rejects_bad_tables) {
  std::vector<uint32_t> t = profile().fraction_table();
  BOOST_CHECK_THROW(Ex2Profile::from_table("x", "sm_90", std::vector<uint32_t>(t.begin(), t.end() - 1)),
                    std::invalid_argument);
  auto bad = t;
  bad[12345] = 0x3F800001u;  // above 1.0
  BOOST_CHECK_THROW(Ex2Profile::from_table("x", "sm_90", bad), std::invalid_argument);
  bad = t;
  bad.back() = 0x3F000001u;  // F[2^23] must be 0.5
  BOOST_CHECK_THROW(Ex2Profile::from_table("x", "sm_90", bad), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(datapath)

// The committed profile stores exactly the coefficients the exploration found: catches a
// conversion that changed them (even to another set giving the same table, which would make the
// file disagree with docs/ex2.md).
BOOST_AUTO_TEST_CASE(committed_coefficients_are_the_found_ones) {
  BOOST_REQUIRE(profile().datapath());
  BOOST_CHECK(*profile().datapath() == found_datapath());
}

// Every entry of the measured table, by the SIMD evaluation the model calls and by the readable
// generator: catches any error in either form of any step (index complement, segment split,
// squarer cut, the 32-bit split of Y, the final truncation, the two exact end points).
BOOST_AUTO_TEST_CASE(every_entry_equals_measured_table) {
  const std::vector<uint32_t> want = measured().fraction_table(), simd = profile().fraction_table();
  const Ex2Datapath d = found_datapath();
  uint64_t bad_simd = 0, bad_readable = 0;
  for (uint32_t k = 0; k < kEx2FractionEntries; ++k) {
    if (simd[k] != want[k] && ++bad_simd <= 4)
      BOOST_ERROR("simd F[" << k << "] = " << hex(simd[k]) << ", measured " << hex(want[k]));
    const uint32_t r = ex2_fraction_by_datapath_steps(d, k);
    if (r != want[k] && ++bad_readable <= 4)
      BOOST_ERROR("readable F[" << k << "] = " << hex(r) << ", measured " << hex(want[k]));
  }
  BOOST_CHECK_EQUAL(bad_simd, 0u);
  BOOST_CHECK_EQUAL(bad_readable, 0u);
  BOOST_CHECK_NE(want[1], want[1u << 22]);  // the table is not constant
}

// The SIMD evaluation equals the readable generator for parameters sm_90 does not use (random
// coefficients at every admitted cut, random bias): catches a 32-bit split that is exact only for
// sm_90's values.
BOOST_AUTO_TEST_CASE(simd_equals_readable_for_other_parameters) {
  std::mt19937_64 rng(20261201);
  uint64_t bad = 0, checked = 0;
  for (uint32_t cut = kEx2MinCut; cut <= kEx2MaxCut; ++cut) {
    Ex2Datapath d;
    d.cut = cut;
    d.bias = uint32_t(rng() % (1u << kEx2C0Shift));
    for (Ex2Segment& s : d.seg)  // any widths-conforming values; the map need not be valid
      s = {uint32_t(rng() % (1u << kEx2C0Bits)), uint32_t(rng() % (1u << kEx2C1Bits)),
           uint32_t(rng() % (1u << kEx2C2Bits))};
    d.seg[0] = {(1u << kEx2C0Bits) - 1, (1u << kEx2C1Bits) - 1, (1u << kEx2C2Bits) - 1};  // maxima
    const std::vector<uint32_t> simd = ex2_datapath_table(d);
    for (int i = 0; i < 20000; ++i) {
      // k near the top of each segment's range too (X large: the widest products)
      const uint32_t k = i < 64 ? 0x7FFFFFu - (uint32_t(i) << 17) - 0x1FFFEu
                                : uint32_t(rng() % kEx2FractionEntries);
      ++checked;
      if (simd[k] != ex2_fraction_by_datapath_steps(d, k) && ++bad <= 4)
        BOOST_ERROR("cut " << cut << " k " << k << ": simd " << hex(simd[k]) << ", readable "
                           << hex(ex2_fraction_by_datapath_steps(d, k)));
    }
  }
  BOOST_CHECK_EQUAL(bad, 0u);
  BOOST_CHECK_GT(checked, 200000u);
}

// The fitter finds the sm_90 coefficients from the measured table alone, and verifies them:
// catches a fitter that cannot find the unit's member (wrong index complement, window, bias
// search) or that picks another member. Its time is reported (about 1 s on 2 cores).
BOOST_AUTO_TEST_CASE(fit_recovers_sm90_coefficients) {
  const Ex2FitResult r = fit_ex2_datapath(measured().fraction_table());
  BOOST_TEST_MESSAGE("fit: " << r.summary << "time " << r.seconds << " s");
  BOOST_REQUIRE(r.datapath.has_value());
  BOOST_CHECK(*r.datapath == found_datapath());
  BOOST_CHECK_EQUAL(r.mismatches, 0u);
  BOOST_CHECK_EQUAL(r.bias_choices, 1u);
  for (const Ex2SegmentFit& s : r.segments) BOOST_CHECK_EQUAL(s.feasible_pairs, 1u);
}

// A table no member reproduces (one entry 64 ulp low, which no quadratic through its neighbours
// can reach) is refused with the segment named, so calibrate keeps the table: catches a fitter
// that accepts without checking every point.
BOOST_AUTO_TEST_CASE(fit_refuses_table_outside_family) {
  std::vector<uint32_t> t = measured().fraction_table();
  const uint32_t k = 0x7FFFFFu - ((5u << 17) | 777u);  // segment 5, X = 777
  t[k] -= 64;
  const Ex2FitResult r = fit_ex2_datapath(t);
  BOOST_CHECK(!r.datapath.has_value());
  BOOST_CHECK(contains(r.summary, "cut 19: segment 5"));
  BOOST_CHECK_THROW(fit_ex2_datapath(std::vector<uint32_t>(100)), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(loader)

// The committed profile's identity: catches a regenerated file whose table differs silently, a
// datapath file that lost its id, and a measured-table file that no longer reads or was
// re-expressed as the datapath (it is the ground truth the datapath is tested against).
BOOST_AUTO_TEST_CASE(committed_profile_identity) {
  BOOST_CHECK_EQUAL(profile().arch(), "sm_90");
  BOOST_CHECK_EQUAL(profile().id(), "sm_90-ex2-v1-b16c2a8bd78f");
  BOOST_CHECK_EQUAL(profile().id(), ex2_profile_id("sm_90", profile().fraction_table()));
  BOOST_CHECK(profile().datapath().has_value());
  BOOST_CHECK_EQUAL(measured().id(), profile().id());
  BOOST_CHECK(!measured().datapath().has_value());
  for (const std::string& path : {kProfile, kMeasured}) {
    const Ex2Provenance p = read_ex2_provenance(path);
    BOOST_CHECK_EQUAL(p.device_name, "NVIDIA H200");
    BOOST_CHECK_EQUAL(p.driver_version, "580.159.04");
    BOOST_CHECK_EQUAL(p.measured_date, "2026-11-30");
  }
  BOOST_CHECK_LT(fs::file_size(kProfile), 16u << 10);  // 64 rows, not 2^23 entries
  for (const std::string& path : {kProfile, kMeasured})
    BOOST_CHECK_EQUAL(h5::Node::open_file(path).attr_int("format_version"), 2);
  BOOST_CHECK_EQUAL(h5::Node::open_file(kMeasured).attr_string("fraction_model"), "table");
}

// A format 1 file (the table only, no fraction_model or fraction_note; what calibrate wrote
// before format 2) still reads, to the same map and id: catches a loader that demands version
// 2's attributes of every file. Made from the measured table by removing version 2's attributes.
BOOST_AUTO_TEST_CASE(format_1_still_read) {
  TempDir d;
  const fs::path p = d.path / "ex2.h5";
  fs::copy_file(kMeasured, p);
  {
    h5::Node f = h5::Node::open_file_rw(p.string());
    f.set_attr("format_version", int64_t(1));
    for (const char* a : {"fraction_model", "fraction_note"}) BOOST_TEST_REQUIRE(H5Adelete(f.id(), a) >= 0);
  }
  const Ex2Profile back = load_ex2_profile(p.string());
  BOOST_CHECK(back.fraction_table() == measured().fraction_table());
  BOOST_CHECK_EQUAL(back.id(), measured().id());
  BOOST_CHECK(!back.datapath().has_value());
}

// Save then load gives the same map, form and id, for a datapath and for a table profile (which
// format 2 stores as deltas, like format 1): catches an encoding that loses entries or
// coefficients, or a table profile written as something else.
BOOST_AUTO_TEST_CASE(round_trip) {
  TempDir d;
  for (const Ex2Profile* p : {&profile(), &measured()}) {
    const std::string path = (d.path / "ex2.h5").string();
    save_ex2_profile(path, *p, read_ex2_provenance(kProfile));
    Ex2Profile back = load_ex2_profile(path);
    BOOST_CHECK(back.fraction_table() == p->fraction_table());
    BOOST_CHECK(back.datapath() == p->datapath());
    BOOST_CHECK_EQUAL(back.id(), p->id());
    BOOST_CHECK_EQUAL(h5::Node::open_file(path).attr_string("fraction_model"),
                      p->datapath() ? "datapath" : "table");
    fs::remove(path);
  }
}

// Adds `delta` to element `index` of `dataset` through libhdf5 (so its checksum stays valid):
// an edited, well-formed file.
template <class T> void edit_element(const std::string& path, const char* dataset, size_t index, T delta) {
  const hid_t type = sizeof(T) == 1 ? H5T_NATIVE_INT8 : H5T_NATIVE_UINT32;
  static_assert(std::is_same_v<T, int8_t> || std::is_same_v<T, uint32_t>);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t ds = H5Dopen2(f, dataset, H5P_DEFAULT);
  const hid_t space = H5Dget_space(ds);
  std::vector<T> v(size_t(H5Sget_simple_extent_npoints(space)));
  BOOST_TEST_REQUIRE(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0);
  v.at(index) = T(v.at(index) + delta);
  BOOST_TEST_REQUIRE(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0);
  H5Sclose(space);
  H5Dclose(ds);
  BOOST_TEST_REQUIRE(H5Fclose(f) >= 0);
}

// A datapath file whose coefficient was edited (through libhdf5, so the checksum is valid) but
// kept its id: the rebuilt map's hash catches it, naming the dataset. (save_ex2_profile refuses
// to write such a file: it reads back first.)
BOOST_AUTO_TEST_CASE(edited_coefficient) {
  TempDir d;
  const std::string path = (d.path / "ex2.h5").string();
  fs::copy_file(kProfile, path);
  edit_element<uint32_t>(path, "datapath_coefficients", 3 * 17, 1);  // C0 of segment 17
  const std::string msg = error_of([&] { load_ex2_profile(path); });
  BOOST_CHECK(contains(msg, "datapath_coefficients"));
  BOOST_CHECK(contains(msg, "hash"));
}

// Parameters outside the family's widths are refused by name and range, before any evaluation:
// catches a cut or bias attribute that reaches the evaluation unchecked.
BOOST_AUTO_TEST_CASE(datapath_out_of_range) {
  TempDir d;
  const std::string path = (d.path / "ex2.h5").string();
  save_ex2_profile(path, profile(), read_ex2_provenance(kProfile));
  h5::Node::open_file_rw(path).set_attr("datapath_cut", int64_t(40));
  std::string msg = error_of([&] { load_ex2_profile(path); });
  BOOST_CHECK(contains(msg, "'datapath_cut' = 40"));
  BOOST_CHECK(contains(msg, "[14, 26]"));
  const std::string path2 = (d.path / "ex2_bias.h5").string();
  save_ex2_profile(path2, profile(), read_ex2_provenance(kProfile));
  h5::Node::open_file_rw(path2).set_attr("datapath_bias", int64_t(1) << 13);
  msg = error_of([&] { load_ex2_profile(path2); });
  BOOST_CHECK(contains(msg, "'datapath_bias' = 8192"));
  BOOST_CHECK(contains(msg, "[0, 2^13)"));
  Ex2Datapath dp = *profile().datapath();
  dp.seg[3].c2 = 1024;
  msg = error_of([&] { Ex2Profile::from_datapath("x", "sm_90", dp); });
  BOOST_CHECK(contains(msg, "segment 3"));
}

BOOST_AUTO_TEST_CASE(missing_file) {
  const std::string msg = error_of([] { load_ex2_profile("/nonexistent/ex2.h5"); });
  BOOST_CHECK(contains(msg, "/nonexistent/ex2.h5"));
}

// No profile for an architecture: the message names the arch and how to make one.
BOOST_AUTO_TEST_CASE(unknown_arch) {
  const std::string msg = error_of([] { load_ex2_profile_for_arch("sm_7777"); });
  BOOST_CHECK(contains(msg, "sm_7777"));
  BOOST_CHECK(contains(msg, "tqref calibrate ex2"));
}

// A file under hw/sm_80/ that says sm_90 inside: the search must not hand it out as sm_80.
BOOST_AUTO_TEST_CASE(wrong_arch_in_file) {
  TempDir d;
  fs::create_directories(d.path / "hw" / "sm_80");
  fs::copy_file(kProfile, d.path / "hw" / "sm_80" / "ex2.h5");
  ::setenv("TQREF_DATA_DIR", d.path.c_str(), 1);
  const std::string msg = error_of([] { load_ex2_profile_for_arch("sm_80"); });
  BOOST_CHECK_EQUAL(find_ex2_profile("sm_80"), (d.path / "hw" / "sm_80" / "ex2.h5").string());
  ::unsetenv("TQREF_DATA_DIR");
  BOOST_CHECK(contains(msg, "'sm_90'"));
  BOOST_CHECK(contains(msg, "'sm_80'"));
}

// Where the stored bytes of `dataset`'s first chunk start in the file.
uint64_t first_chunk_address(const std::string& path, const char* dataset) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t ds = H5Dopen2(f, dataset, H5P_DEFAULT);
  hsize_t offset[2] = {}, size = 0;
  haddr_t addr = HADDR_UNDEF;
  unsigned mask = 0;
  const herr_t st = H5Dget_chunk_info_by_coord(ds, offset, &mask, &addr, &size);
  H5Dclose(ds);
  H5Fclose(f);
  BOOST_TEST_REQUIRE((st >= 0 && addr != HADDR_UNDEF && size >= 16), path << ": " << dataset);
  return addr;
}

// Stored bytes of the dataset flipped (not overwritten with zeros, which may equal what was
// there), in the datapath file and in the measured-table file: the checksum or the table hash
// must catch it and the message name the file. Catches a dataset stored without a checksum
// whose corruption would decode to another map.
BOOST_AUTO_TEST_CASE(corrupt_bytes) {
  TempDir d;
  for (const auto& [src, dataset] : {std::pair{kProfile, "datapath_coefficients"},
                                     std::pair{kMeasured, "fraction_delta"}}) {
    const fs::path p = d.path / (std::string(dataset) + ".h5");
    fs::copy_file(src, p);
    const uint64_t at = first_chunk_address(p.string(), dataset) + 4;
    {
      std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
      char b[8];
      f.seekg(static_cast<std::streamoff>(at));
      f.read(b, sizeof b);
      for (char& c : b) c = char(~c);
      f.seekp(static_cast<std::streamoff>(at));
      f.write(b, sizeof b);
    }
    const std::string msg = error_of([&] { load_ex2_profile(p.string()); });
    BOOST_CHECK_MESSAGE(contains(msg, p.string()), dataset << ": " << msg);
  }
}

// A well-formed file whose deltas were edited (valid checksums, written through libhdf5): the
// table hash catches it. (save_ex2_profile refuses to write such a file: it reads back first.)
BOOST_AUTO_TEST_CASE(edited_table) {
  TempDir d;
  const std::string path = (d.path / "ex2.h5").string();
  fs::copy_file(kMeasured, path);
  edit_element<int8_t>(path, "fraction_delta", 777, -1);
  const std::string msg = error_of([&] { load_ex2_profile(path); });
  BOOST_CHECK(contains(msg, "fraction_delta"));
  BOOST_CHECK(contains(msg, "hash"));
}

// Wrong dtype or shape of the dataset: the message names the dataset and the expected form.
BOOST_AUTO_TEST_CASE(wrong_dataset_shape) {
  TempDir d;
  const std::string path = (d.path / "ex2.h5").string();
  {
    h5::Node f = h5::Node::create_file(path);
    for (const char* a : {"arch", "profile_id", "table_fnv1a64"}) f.set_attr(a, std::string("sm_90"));
    f.set_attr("format", std::string("tqref-ex2-profile"));
    f.set_attr("format_version", int64_t(1));
    f.set_attr("structure", std::string(kEx2Structure));
    f.write<int8_t>("fraction_delta", std::vector<int8_t>(1000), {1000});
  }
  const std::string msg = error_of([&] { load_ex2_profile(path); });
  BOOST_CHECK(contains(msg, "fraction_delta"));
  BOOST_CHECK(contains(msg, "8388609"));
}

BOOST_AUTO_TEST_SUITE_END()

// `tqref calibrate ex2` writes by default where the profile loader looks first: a table measured
// elsewhere (--from-raw), calibrated without --out, must then be what find_ex2_profile() returns
// for its architecture, with TQREF_DATA_DIR set (its folder) and unset (the source tree's data/,
// run from another working directory). Catches a default output the loader never searches (it
// was ./tqref-data/... of the working directory while the loader read data/ of the source tree).
// The unused architecture name sm_999 keeps the file written into data/ apart; it is removed.
BOOST_AUTO_TEST_CASE(calibrate_default_output_is_where_the_loader_looks) {
  const fs::path dir = fs::temp_directory_path() / ("tqref_calib_" + std::to_string(::getpid()));
  const fs::path in_source = fs::path(TQREF_SOURCE_DIR) / "data" / "hw" / "sm_999";
  fs::remove_all(dir);
  fs::remove_all(in_source);
  fs::create_directories(dir / "data");
  const fs::path raw = dir / "F.u32";
  {
    std::ofstream out(raw, std::ios::binary);
    for (uint32_t v : profile().fraction_table()) {
      const unsigned char le[4] = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
      out.write(reinterpret_cast<const char*>(le), 4);
    }
  }
  for (const bool set : {true, false}) {
    const std::string env = set ? "TQREF_DATA_DIR='" + (dir / "data").string() + "'"
                                : "env -u TQREF_DATA_DIR";
    const std::string cmd = "cd '" + dir.string() + "' && " + env + " '" TQREF_CLI "' calibrate ex2" +
                            " --from-raw '" + raw.string() + "' --arch sm_999 --device-name test" +
                            " --driver 0 --cuda 0 --date 2026-12-01 > log 2>&1";
    BOOST_TEST_REQUIRE(std::system(cmd.c_str()) == 0, cmd);
    if (set) ::setenv("TQREF_DATA_DIR", (dir / "data").c_str(), 1);
    const std::string found = find_ex2_profile("sm_999");
    ::unsetenv("TQREF_DATA_DIR");
    const fs::path want = (set ? dir / "data" / "hw" / "sm_999" : in_source) / "ex2.h5";
    BOOST_TEST(found == want.string());
    BOOST_TEST(load_ex2_profile(found).fraction_table() == profile().fraction_table());
  }
  fs::remove_all(in_source);
  fs::remove_all(dir);
}

// --store table keeps the measured table even when the datapath fits (how the ground-truth file
// data/hw/sm_90/ex2_measured_table.h5 is written), --store auto (the default) stores the fitted
// datapath, and any other value is a usage error naming the option and the allowed values:
// catches a --store that is ignored or a form chosen against it.
BOOST_AUTO_TEST_CASE(calibrate_store_option) {
  TempDir d;
  const auto run = [&](const std::string& store, const std::string& out) {
    const std::string cmd = "'" TQREF_CLI "' calibrate ex2 --from-profile '" + kMeasured + "'" + store +
                            " --out '" + (d.path / out).string() + "' > '" + (d.path / "log").string() + "' 2>&1";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  BOOST_TEST_REQUIRE(run(" --store table", "t.h5") == 0);
  BOOST_TEST_REQUIRE(run("", "a.h5") == 0);
  const Ex2Profile t = load_ex2_profile((d.path / "t.h5").string()), a = load_ex2_profile((d.path / "a.h5").string());
  BOOST_CHECK(!t.datapath().has_value());
  BOOST_CHECK(a.datapath() == profile().datapath());
  BOOST_CHECK(t.fraction_table() == measured().fraction_table());
  BOOST_CHECK_EQUAL(t.id(), measured().id());
  BOOST_CHECK_EQUAL(run(" --store datapath", "x.h5"), 2);
  std::ifstream log(d.path / "log");
  const std::string msg((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  BOOST_CHECK(contains(msg, "--store 'datapath'; allowed: auto or table"));
  BOOST_CHECK(!fs::exists(d.path / "x.h5"));
}
