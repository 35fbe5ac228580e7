// The EX2 unit model on every input it is defined for: every non-positive float (-0 .. -NaN),
// every positive NaN and +0 (2^31 + 2^23 inputs). Label long (about a minute on 2 idle cores per
// instruction set; excluded from the default test preset).
#define BOOST_TEST_MODULE test_ex2_long
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <vector>

#include "sm90_ex2.h"
#include "tqref/model_path.h"
#include "tqref/numeric.h"

using namespace tqref;
using namespace tqref::test;

BOOST_AUTO_TEST_SUITE(exhaustive)

// Every non-positive float (-0 .. -NaN), every positive NaN and +0: the datapath profile equals
// the measured table (which calibration checked against the H200 on every one of these inputs),
// and the branch-free SIMD EX2 and EXPF of every SIMD-path instruction set equal the readable
// scalar ones. 0 mismatches required; the first few are printed in hex.
BOOST_AUTO_TEST_CASE(every_input_datapath_equals_measured_table) {
  const std::string saved_isa = simd_isa();
  const std::vector<std::string> isas = simd_isas();
  struct Range { uint64_t first, count; };
  const Range ranges[] = {{0x80000000ull, 1ull << 31}, {0x7F800001ull, (1ull << 23) - 1}, {0, 1}};
  uint64_t inputs = 0, bad_table = 0, bad_simd = 0;
  constexpr uint64_t kChunk = 1u << 16;
  for (const std::string& isa : isas) {
    set_simd_isa(isa);
    for (const Range& r : ranges) {
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : inputs, bad_table, bad_simd)
      for (int64_t c = 0; c < int64_t((r.count + kChunk - 1) / kChunk); ++c) {
        const uint64_t first = r.first + uint64_t(c) * kChunk;
        const size_t n = size_t(std::min<uint64_t>(kChunk, r.first + r.count - first));
        std::vector<float> x(n), y(n), z(n);
        for (size_t i = 0; i < n; ++i) x[i] = f32_from_bits(uint32_t(first + i));
        sm90_profile().ex2_many(x.data(), y.data(), n);
        sm90_profile().expf_many(x.data(), z.data(), n);
        for (size_t i = 0; i < n; ++i) {
          const uint32_t dp = f32_bits(sm90_profile().ex2(x[i]));
          if (isa == isas.front()) {  // the two profiles once, the SIMD forms per instruction set
            ++inputs;
            const uint32_t tb = f32_bits(sm90_measured().ex2(x[i]));
            if (dp != tb && ++bad_table <= 4)
#pragma omp critical
              BOOST_ERROR("EX2(" << hex32(uint32_t(first + i)) << "): datapath " << hex32(dp) << ", table " << hex32(tb));
          }
          const uint32_t e = f32_bits(sm90_profile().expf(x[i]));
          if ((f32_bits(y[i]) != dp || f32_bits(z[i]) != e) && ++bad_simd <= 4)
#pragma omp critical
            BOOST_ERROR(isa << " x " << hex32(uint32_t(first + i)) << ": ex2 " << hex32(f32_bits(y[i])) << "/" << hex32(dp)
                            << " expf " << hex32(f32_bits(z[i])) << "/" << hex32(e));
        }
      }
    }
  }
  set_simd_isa(saved_isa);
  BOOST_TEST_MESSAGE(inputs << " inputs, " << bad_table << " datapath/table mismatches, " << bad_simd
                            << " SIMD mismatches over " << isas.size() << " instruction sets");
  BOOST_CHECK_EQUAL(inputs, (1ull << 31) + (1ull << 23));
  BOOST_CHECK_EQUAL(bad_table, 0u);
  BOOST_CHECK_EQUAL(bad_simd, 0u);
}

BOOST_AUTO_TEST_SUITE_END()
