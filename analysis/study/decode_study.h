// Study 3: decode output error of the kernel-order model (paged_decode_model) against the fp64
// reference, and what the sparse-V skip removes, per context length, format and threshold.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/study/study.h"
#include "analysis/study/table.h"
#include "tqref/ex2.h"
#include "tqref/format.h"

namespace tqref::study {

// A batch of decode queries: sequence s has lens[s] positions of K and V rows and one query row.
// Rows are bf16 bits, [L][kv_heads * head_dim] for K/V and [q_heads * head_dim] for q.
// head_dim need not equal the kernel's HDIM: rows are zero-padded to `hdim` per head (zeros add
// exact zeros to every score and make all-zero V groups whose dequantised value is 0), so
// head_dim 48 of the real traces runs through the HDIM=128 model with the real 1/sqrt(48).
struct DecodeBatch {
  std::string source;        // "gaussian_flat", "trace:<file>:L<layer>", ...
  int64_t layer = -1;        // real layer, or -1
  uint32_t kv_heads = 0, q_heads = 0, head_dim = 0;
  float inv_sqrt_d = 0;      // 1/sqrt(head_dim) as the engine passes it
  std::vector<uint32_t> lens;
  std::vector<std::vector<uint16_t>> k, v, q;  // per sequence
};

// Runs the writer model for every format, the decode model for every threshold and the fp64
// reference (unquantised and dequantised V), and appends one row per (sequence, q head, format,
// threshold) to `out` (columns: decode_columns()).
void run_decode_batch(const StudyOptions& o, const DecodeBatch& b, const Ex2Profile& ex2,
                      const std::vector<float>& thresholds, Table& out);
std::vector<std::string> decode_columns();

// Synthetic batches (Gaussian K/V; flat and peaked score distributions) over context lengths
// 64 .. 8192 (a shorter list with --quick). Appends the table "decode_error".
void run_decode_synthetic(const StudyOptions& o, const Ex2Profile& ex2, std::vector<Table>& out);

// The sparse-V thresholds the studies sweep: none, 1e-4, the kernels' default (tqref/format.h),
// 1e-2.
inline const std::vector<float> kThresholds = {0.0f, 1e-4f, kSparseVThreshold, 1e-2f};

}  // namespace tqref::study
