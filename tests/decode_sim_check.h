// The bit-for-bit comparison of a simulated decode kernel's output with the CPU model, for
// test_gqa_decode_sim (Boost.Test assertions).
#pragma once
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "decode_case.h"
#include "tqref/numeric.h"

namespace tqref::test {

// Equal bf16 bits everywhere (L == 0 rows keep the poison in both), equal f32 values before the
// bf16 rounding (an order change, such as a batch taken as singles or a rescale in the wrong
// place, moves low bits that the bf16 rounding would mostly hide; NaN equals NaN there, its
// payload is not part of the contract), and, unless require_nonzero is false, some output that
// is neither zero nor poison (guards against a vacuous pass).
inline void expect_model_bits(const DecodeCase& dc, const DecodeDiagnostics& diag,
                              const std::vector<uint16_t>& want, const std::vector<uint16_t>& out,
                              const std::vector<float>& out_f32, bool require_nonzero = true) {
  uint64_t bad = 0, nonzero = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != out[i] && bad++ < 5)
      BOOST_ERROR("element " << i << ": model 0x" << std::hex << want[i] << " sim 0x" << out[i]);
    nonzero += (want[i] != 0 && want[i] != kPoison);
  }
  BOOST_TEST(bad == 0u);
  if (require_nonzero) BOOST_TEST(nonzero > 0u);
  uint64_t bad32 = 0;
  const uint32_t D = dc.p.head_dim, Hq = dc.p.num_q_heads;
  for (uint32_t s = 0; s < dc.p.num_seqs; ++s) {
    if (dc.lens[s] == 0) continue;
    for (uint32_t qh = 0; qh < Hq; ++qh) {
      const std::vector<float>& m = diag.heads[s * Hq + qh].out_f32;
      for (uint32_t i = 0; i < D; ++i) {
        const float g = out_f32[(uint64_t(s) * Hq + qh) * D + i];
        if (f32_bits(m[i]) != f32_bits(g) && !(std::isnan(m[i]) && std::isnan(g)) && bad32++ < 5)
          BOOST_ERROR("f32 seq " << s << " head " << qh << " dim " << i << ": model 0x" << std::hex
                      << f32_bits(m[i]) << " sim 0x" << f32_bits(g));
      }
    }
  }
  BOOST_TEST(bad32 == 0u);
}

}  // namespace tqref::test
