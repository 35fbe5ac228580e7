// Measures the V quantisation error of one bf16 source under one quantiser variant.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/study/group_quant.h"
#include "analysis/study/hadamard.h"
#include "analysis/study/table.h"
#include "tqref/format.h"

namespace tqref::study {

// A quantiser variant; `writer_model` selects the bit-exact writer model itself
// (quantize_group + dequantize_code) instead of the study's re-implementation.
struct Variant {
  CodebookKind codebook = CodebookKind::spec;
  ScaleRule rule = ScaleRule::matched;
  ScaleEnc enc = ScaleEnc::fp8;
  bool writer_model = false;
};

struct VqResult {
  uint64_t values = 0, groups = 0;
  double sum_sq = 0, sum = 0, sum_4 = 0;  // of the input values (double): x^2, x, x^4
  double sum_err2 = 0;             // sum of (x - x_hat)^2
  double group_err2_sq = 0;        // sum over groups of (group squared error)^2, for the SE
  uint64_t underflow = 0, subnormal = 0, saturated = 0, nonzero_groups = 0;
  double mean_sq() const { return sum_sq / values; }
  double variance() const { double m = sum / values; return sum_sq / values - m * m; }
  double mse() const { return sum_err2 / values; }
  double kurtosis() const { return sum_4 / values / (mean_sq() * mean_sq()); }  // E[x^4]/E[x^2]^2
  // Standard error of mse() from the spread of per-group errors (groups independent).
  double mse_se() const;
};

// v: [tokens][heads * head_dim] bf16 bits. With `rot` (size head_dim) each head vector is
// rotated in double, rounded to bf16 (what the cache would be fed), quantised, dequantised and
// rotated back; the error is always measured against the original values. `sigma` feeds the
// oracle rule (scaled by the rotation-invariant source sigma). OpenMP over token chunks with a
// fixed reduction order: the result does not depend on the thread count.
VqResult measure_vq(const FormatTraits& t, const GroupCodebook& cb, const Variant& var,
                    const std::vector<uint16_t>& v, uint32_t heads, uint32_t head_dim,
                    double sigma, const RandomRotation* rot);

// The columns of the vq_* tables and one row of them (nmse = mse / mean_sq: the error relative
// to the signal power, which equals the variance for the zero-mean synthetic sources).
std::vector<std::string> vq_columns();
void add_vq_row(Table& t, const std::string& source, const std::string& kind, int64_t layer,
                double sigma, const FormatTraits& f, const Variant& v, bool rotated,
                const VqResult& r);
std::string variant_label(const Variant& v);

}  // namespace tqref::study
