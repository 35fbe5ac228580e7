// The EX2 model (model/ex2.cpp) loaded from the committed sm_90 profile, against hardware readings
// (data/hw/sm_90/ex2_readings.h5, made by harness/gpu/make_ex2_readings.py from the H200
// measurement), structural properties of the unit, EXPF, and the profile loader's failure modes.
#define BOOST_TEST_MODULE test_ex2
#include <boost/test/unit_test.hpp>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "io/ex2_profile_io.h"
#include "io/hdf5_util.h"
#include "tqref/ex2.h"
#include "tqref/numeric.h"

namespace fs = std::filesystem;
using namespace tqref;

namespace {

const std::string kProfile = std::string(TQREF_SOURCE_DIR) + "/data/hw/sm_90/ex2.h5";
const std::string kReadings = std::string(TQREF_SOURCE_DIR) + "/data/hw/sm_90/ex2_readings.h5";

const Ex2Profile& profile() {
  static const Ex2Profile p = load_ex2_profile(kProfile);
  return p;
}

uint32_t ex2_bits(uint32_t x) { return f32_bits(profile().ex2(f32_from_bits(x))); }
uint32_t expf_bits(uint32_t x) { return f32_bits(profile().expf(f32_from_bits(x))); }

std::string hex(uint32_t b) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08" PRIX32, b);
  return s;
}

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

BOOST_AUTO_TEST_SUITE(loader)

// The committed profile's identity: catches a regenerated file whose table differs silently.
BOOST_AUTO_TEST_CASE(committed_profile_identity) {
  BOOST_CHECK_EQUAL(profile().arch(), "sm_90");
  BOOST_CHECK_EQUAL(profile().id(), ex2_profile_id("sm_90", profile().fraction_table()));
  const Ex2Provenance p = read_ex2_provenance(kProfile);
  BOOST_CHECK_EQUAL(p.device_name, "NVIDIA H200");
  BOOST_CHECK_EQUAL(p.driver_version, "580.159.04");
  BOOST_CHECK_LT(fs::file_size(kProfile), 4u << 20);
}

// Save then load gives the same table and id: catches an encoding that loses entries.
BOOST_AUTO_TEST_CASE(round_trip) {
  TempDir d;
  const std::string path = (d.path / "ex2.h5").string();
  save_ex2_profile(path, profile(), read_ex2_provenance(kProfile));
  Ex2Profile back = load_ex2_profile(path);
  BOOST_CHECK(back.fraction_table() == profile().fraction_table());
  BOOST_CHECK_EQUAL(back.id(), profile().id());
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

// Bytes overwritten in the middle of the file: the checksum or the table hash must catch it.
BOOST_AUTO_TEST_CASE(corrupt_bytes) {
  TempDir d;
  const fs::path p = d.path / "ex2.h5";
  fs::copy_file(kProfile, p);
  {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(p) / 2));
    const char junk[64] = {};
    f.write(junk, sizeof junk);
  }
  const std::string msg = error_of([&] { load_ex2_profile(p.string()); });
  BOOST_CHECK(contains(msg, p.string()));
}

// A well-formed file whose deltas were edited (valid checksums, written through libhdf5): the
// table hash catches it. (save_ex2_profile refuses to write such a file: it reads back first.)
BOOST_AUTO_TEST_CASE(edited_table) {
  TempDir d;
  const std::string path = (d.path / "ex2.h5").string();
  fs::copy_file(kProfile, path);
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t ds = H5Dopen2(f, "fraction_delta", H5P_DEFAULT);
    const hid_t space = H5Dget_space(ds);
    const hsize_t at = 777, one = 1;
    H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, nullptr, &one, nullptr);
    const hid_t mem = H5Screate_simple(1, &one, nullptr);
    int8_t v = 0;
    BOOST_TEST_REQUIRE(H5Dread(ds, H5T_NATIVE_INT8, mem, space, H5P_DEFAULT, &v) >= 0);
    v = int8_t(v - 1);
    BOOST_TEST_REQUIRE(H5Dwrite(ds, H5T_NATIVE_INT8, mem, space, H5P_DEFAULT, &v) >= 0);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(ds);
    BOOST_TEST_REQUIRE(H5Fclose(f) >= 0);
  }
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
