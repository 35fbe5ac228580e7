// Variants of the Turbo-V group quantiser, to separate what each design choice of docs/spec.md section 4
// costs: the codebook (four-decimal SPEC table or exact Lloyd-Max), the scale rule and whether
// the scale is stored as fp8 E4M3 or kept in fp32. The (spec, matched, fp8) variant follows the
// writer's operation order exactly and reproduces quantize_group + dequantize_code bit for bit
// (tests/test_study.cpp checks this), so the study can trust the other variants' plumbing.
#pragma once
#include <cstdint>
#include <vector>

#include "tqref/format.h"

namespace tqref::study {

enum class CodebookKind { spec, exact };   // SPEC four-decimal table | exact Lloyd-Max (double)
enum class ScaleRule {
  matched,  // s = |x| / |CB[c]| (SPEC: the dequantised group keeps the input's L2 norm)
  absmax,   // s = amax / MAX (the plain absmax scale)
  lsq,      // s = <x, CB[c]> / |CB[c]|^2, the least-squares (MSE-optimal) scale for the codes
  oracle,   // no group scale: x / sigma is quantised with the known source sigma (theory case)
};
enum class ScaleEnc { fp8, fp32 };          // scale stored as fp8 E4M3 (satfinite) or fp32

const char* codebook_name(CodebookKind k);
const char* scale_rule_name(ScaleRule r);
const char* scale_enc_name(ScaleEnc e);

// A codebook as the writer (fp32 levels and bounds) and the decoder (fp16-rounded levels) see it.
struct GroupCodebook {
  uint32_t levels = 0;
  std::vector<float> cb;      // writer side, fp32
  std::vector<float> bounds;  // fp32
  std::vector<float> cb_dec;  // decoder side: f32(fp16(cb))
  std::vector<double> cb_exact, bounds_exact;  // double values (oracle path)
  float max = 0;
};
GroupCodebook make_group_codebook(const FormatTraits& t, CodebookKind kind);

// Per-group facts for the fp8 scale statistics.
struct GroupOutcome {
  bool scale_underflow = false;  // group not all zero, stored scale decodes to 0
  bool scale_subnormal = false;  // stored scale is a non-zero fp8 subnormal (< 2^-6)
  bool scale_saturated = false;  // scale before encoding exceeded 448 (clamped)
};

// Quantises and dequantises 16 values x (bf16-decoded) into y, as the cache would return them.
// `sigma` is used only by ScaleRule::oracle.
GroupOutcome quantize_dequantize_group(const GroupCodebook& cb, ScaleRule rule, ScaleEnc enc,
                                       double sigma, const float (&x)[kGroupSize],
                                       float (&y)[kGroupSize]);

}  // namespace tqref::study
