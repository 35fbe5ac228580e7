// Which HDIM a decoder module was built with, when --hdim does not say: the module's decoders
// are run on a small probe case built for HDIM 128 and on one built for 256, and the HDIM whose
// probe comes back exact is kept. A mismatched build cannot pass: an HDIM=128 build leaves dims
// 128..255 of every row of a head_dim=256 launch unwritten; an HDIM=256 build on a head_dim=128
// launch writes 256 dims per row, i.e. into the next row and past the buffer (guard band).
//
// Every sequence of the probe has length 1, which makes its expected bytes independent of the
// GPU's EX2 unit: the single position gives mn = score, eo = EXPF(-1e30 - score) = 0 and
// en = EXPF(0) = 1, so l = 1 and the output is bf16(dequant(V)) (SPEC section 5). The probe is
// therefore exact on any GPU, with or without an EX2 profile for it (tests/test_conform.cpp
// builds it with two different profiles and compares the bytes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/golden_case.h"
#include "tqref/ex2.h"

namespace tqref::conform {

// The probe decode case for `f` at head_dim = HDIM = hdim and THRESH = threshold (its pools
// already written by the linked writer case, as in every golden file). Fixed seed.
golden::GoldenCase hdim_probe_case(Format f, uint32_t hdim, float threshold, const Ex2Profile& ex2);

// What the module's decoders did on the probe of one HDIM.
struct ProbeAtHdim {
  uint32_t hdim = 0;
  uint32_t kernels = 0, exact = 0;   // decoders probed, and how many came back exact
  uint64_t bytes_differing = 0;      // summed over the kernels
  std::string error;                 // a launch error (first one), "" if none
};

struct HdimChoice {
  uint32_t hdim = 128;
  bool exact = false;  // false: neither (or both) probes exact; decoders are judged at level T
  std::string why;     // one sentence for the report
};

HdimChoice choose_hdim(const ProbeAtHdim& at128, const ProbeAtHdim& at256);

}  // namespace tqref::conform
