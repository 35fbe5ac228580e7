// Which HDIM a decoder module was built with, when --hdim does not say. Each decoder of the
// module is launched on a probe case at head_dim 128 and at head_dim 256, and the HDIM is read
// from WHAT IT WRITES, independently of whether the values are right (docs/conform-guide.md,
// step 3): the output is poisoned, every row of an L == 1 sequence is followed by two rows of
// L == 0 sequences that a correct launch never writes, and the output address uses the runtime
// head_dim (docs/spec.md section 5). What each build writes:
//   an HDIM=128 build at head_dim 256: bf16 NaN over every element of the row, when it follows
//     section 5.1 (head_dim > HDIM; tqref's own decoders); else the first half of the row, lanes
//     covering 128 dims (dims 128-255 keep their poison);
//   an HDIM=256 build at head_dim 256: every element of the row;
//   at head_dim 128 an HDIM=256 build writes its own row, and either stops there (section 5.1's
//     inactive lanes) or spills into the next row (an L == 0 row), never the second one after it;
//     an HDIM=128 build writes its own row.
// So a head_dim=128 row written and nothing after it is consistent with both builds: weak
// evidence for 128, which decides only when no launch gives strong evidence. Writes that fit
// neither (nothing written, the second L == 0 row written, a head_dim=256 row overrun) decide
// nothing. Only when the writes decide nothing are the values used: the HDIM whose probe comes
// back exact. The report says which evidence decided; the suites then judge the values at that
// HDIM (a build with wrong values at both HDIMs is judged at its real HDIM and fails on its
// values, not on guard writes of a mismatched launch).
//
// Every active sequence has length 1, which makes the expected bytes independent of the GPU's
// EX2 unit: the single position gives mn = score, eo = EXPF(-1e30 - score) = 0 and en = EXPF(0)
// = 1, so l = 1 and the output is bf16(dequant(V)) (docs/spec.md section 5). The value evidence is
// therefore exact on any GPU, with or without an EX2 profile for it (tests/test_conform.cpp
// builds the probe with two different profiles and compares the bytes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "judge/backend.h"
#include "tqref/ex2.h"

namespace tqref::conform {

// The probe decode case for `f` at head_dim = HDIM = hdim and THRESH = threshold (its pools
// already written by the linked writer case, as in every golden file). One kv head, one q head,
// sequence lengths 1, 0, 0, 1, 0, 0, 1, 0, 0 (row = sequence). Fixed seed.
golden::GoldenCase hdim_probe_case(Format f, uint32_t hdim, float threshold, const Ex2Profile& ex2);

// What one decoder wrote on a probe launch, read from the output's poison and guard band.
struct ProbeWrites {
  uint32_t head_dim = 0;
  uint32_t active_rows = 0;       // rows of the L == 1 sequences
  uint64_t in_rows = 0;           // elements of active rows that changed
  uint32_t dims_written = 0;      // 1 + the highest dim changed in an active row (0: none)
  uint64_t nan_in_rows = 0;       // elements of active rows that now hold bf16 0x7FFF (section 5.1)
  uint64_t next_rows = 0;         // elements changed in the L == 0 row right after an active row
  uint32_t next_extent = 0;       // 1 + the highest element changed in such a row (0: none)
  uint64_t far = 0;               // elements changed in the second L == 0 row after an active row
  uint64_t guard_after = 0;       // guard bytes changed after the output buffer
  std::string error;              // the launch failed
};
ProbeWrites observe_probe_writes(const golden::GoldenCase& probe, const judge::CaseResult& r);

// The HDIM one launch's writes show (0: they decide nothing) and the sentence that says why.
struct WriteEvidence {
  uint32_t hdim = 0;
  std::string why;
  bool weak = false;  // consistent with the other HDIM too (section 5.1): decides only alone
};
WriteEvidence hdim_from_writes(const ProbeWrites& w);

// What the module's decoders did on the probe of one head_dim: values and writes.
struct ProbeAtHdim {
  uint32_t hdim = 0;
  uint32_t kernels = 0, exact = 0;   // decoders probed, and how many came back exact
  uint64_t bytes_differing = 0;      // summed over the kernels
  std::string error;                 // a launch error (first one), "" if none
  std::vector<WriteEvidence> writes; // one per decoder launched
};

struct HdimChoice {
  uint32_t hdim = 128;
  bool decided = false;  // false: neither evidence decided; decoders are judged at level T
  std::string evidence;  // "writes", "values" or "none"
  std::string why;       // one sentence for the report
};

HdimChoice choose_hdim(const ProbeAtHdim& at128, const ProbeAtHdim& at256);

}  // namespace tqref::conform
