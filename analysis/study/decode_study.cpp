#include "analysis/study/decode_study.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "tqref/contract.h"
#include "tqref/decode.h"
#include "tqref/numeric.h"
#include "tqref/reference.h"
#include "tqref/writer.h"

namespace tqref::study {

namespace {

constexpr uint32_t kBlock = 16;  // block_size of the study's cache

// Final softmax weights of one (sequence, q head) in fp64 from the bf16 q and K rows.
std::vector<double> softmax_weights(const DecodeBatch& b, uint32_t s, uint32_t qh) {
  const uint32_t D = b.head_dim, kvh = qh / (b.q_heads / b.kv_heads), n = b.kv_heads * D;
  const uint32_t L = b.lens[s];
  std::vector<double> w(L);
  double mx = -INFINITY;
  for (uint32_t p = 0; p < L; ++p) {
    double acc = 0;
    for (uint32_t d = 0; d < D; ++d)
      acc += double(bf16_to_f32(b.q[s][qh * D + d])) * bf16_to_f32(b.k[s][uint64_t(p) * n + kvh * D + d]);
    w[p] = acc * double(b.inv_sqrt_d);
    mx = std::max(mx, w[p]);
  }
  double sum = 0;
  for (auto& x : w) sum += (x = std::exp(x - mx));
  for (auto& x : w) x /= sum;
  return w;
}

struct ErrStats {
  double rel_l2 = 0, cos = 0, max_abs = 0, ref_norm = 0;
};

ErrStats compare(const float* y, const double* ref, uint32_t D) {
  double e2 = 0, r2 = 0, y2 = 0, yr = 0, mx = 0;
  for (uint32_t d = 0; d < D; ++d) {
    double diff = double(y[d]) - ref[d];
    e2 += diff * diff;
    r2 += ref[d] * ref[d];
    y2 += double(y[d]) * y[d];
    yr += double(y[d]) * ref[d];
    mx = std::max(mx, std::fabs(diff));
  }
  ErrStats s;
  s.rel_l2 = r2 > 0 ? std::sqrt(e2 / r2) : (e2 > 0 ? INFINITY : 0.0);
  s.cos = (y2 > 0 && r2 > 0) ? yr / std::sqrt(y2 * r2) : (y2 == r2 ? 1.0 : 0.0);
  s.max_abs = mx;
  s.ref_norm = std::sqrt(r2);
  return s;
}

}  // namespace

std::vector<std::string> decode_columns() {
  return {"source", "layer", "format", "threshold", "context", "seq", "q_head",
          // output (bf16, as the kernel writes it) against the fp64 reference with bf16 V
          "rel_l2", "cosine", "max_abs", "ref_norm",
          // the same for the model's fp32 output before the bf16 rounding
          "rel_l2_f32",
          // against the fp64 reference with dequantised V: skip + operation order + EX2 only
          "rel_l2_vs_deq",
          // fp64 reference with dequantised V against bf16 V: the quantisation alone
          "rel_l2_quant_only",
          "skip_rate", "skipped_mass", "n_above_thresh", "false_skips", "kept_tiny", "n_tiny"};
}

void run_decode_batch(const StudyOptions& o, const DecodeBatch& b, const Ex2Profile& ex2,
                      const std::vector<float>& thresholds, Table& out) {
  const uint32_t S = uint32_t(b.lens.size());
  if (S == 0 || b.kv_heads == 0 || b.q_heads % b.kv_heads != 0 || b.head_dim % kGroupSize != 0)
    throw std::invalid_argument("run_decode_batch " + b.source + ": bad geometry");
  // Each head is padded to the build the engine would load; no build holds more than 256 dims.
  require("run_decode_batch " + b.source, check_engine_head_dim(b.head_dim));
  const uint32_t D = b.head_dim, HD = engine_hdim(D), H = b.kv_heads, n = H * HD;
  uint32_t max_blocks = 0, num_blocks = 0;
  std::vector<uint32_t> first_block(S);
  for (uint32_t s = 0; s < S; ++s) {
    uint32_t nb = (b.lens[s] + kBlock - 1) / kBlock;
    first_block[s] = num_blocks;
    num_blocks += nb;
    max_blocks = std::max(max_blocks, nb);
  }
  // Padded K/V rows in slot order ([num_blocks * B][H][HD]), q rows [S][q_heads * HD].
  const uint64_t slots = uint64_t(num_blocks) * kBlock;
  std::vector<uint16_t> key(slots * n, 0), value(slots * n, 0), q(uint64_t(S) * b.q_heads * HD, 0);
  std::vector<int64_t> slot_mapping(slots, -1);
  std::vector<int32_t> tables(uint64_t(S) * max_blocks, 0), lens(S);
  for (uint32_t s = 0; s < S; ++s) {
    lens[s] = int32_t(b.lens[s]);
    for (uint32_t j = 0; j < (b.lens[s] + kBlock - 1) / kBlock; ++j)
      tables[uint64_t(s) * max_blocks + j] = int32_t(first_block[s] + j);
    for (uint32_t p = 0; p < b.lens[s]; ++p) {
      uint64_t slot = uint64_t(first_block[s]) * kBlock + p;
      slot_mapping[slot] = int64_t(slot);
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t d = 0; d < D; ++d) {
          key[slot * n + h * HD + d] = b.k[s][uint64_t(p) * H * D + h * D + d];
          value[slot * n + h * HD + d] = b.v[s][uint64_t(p) * H * D + h * D + d];
        }
    }
    for (uint32_t h = 0; h < b.q_heads; ++h)
      for (uint32_t d = 0; d < D; ++d) q[uint64_t(s) * b.q_heads * HD + h * HD + d] = b.q[s][h * D + d];
  }
  CacheGeometry g{H, HD, kBlock, num_blocks, 0, 0};
  DecodeParams p;
  p.max_blocks_per_seq = max_blocks;
  p.num_q_heads = b.q_heads;
  p.num_kv_heads = H;
  p.head_dim = HD;
  p.block_size = kBlock;
  p.inv_sqrt_d = b.inv_sqrt_d;
  p.q_stride = b.q_heads * HD;
  p.num_seqs = S;
  p.hdim = HD;
  std::vector<uint8_t> k_cache(g.k_pool_bytes());
  // Weights are format- and threshold-independent.
  std::vector<std::vector<double>> weights(uint64_t(S) * b.q_heads);
#pragma omp parallel for schedule(dynamic)
  for (int64_t i = 0; i < int64_t(weights.size()); ++i)
    weights[i] = softmax_weights(b, uint32_t(i / b.q_heads), uint32_t(i % b.q_heads));
  std::vector<double> ref_unq;
  for (const auto& t : kFormats) {
    const uint32_t bits = t.bits;
    p.v_data_section_bytes = g.v_data_section_bytes = g.min_v_data_section_bytes(bits);
    p.v_block_stride_bytes = g.v_block_stride_bytes = g.min_v_block_stride_bytes();
    std::vector<uint8_t> v_cache(g.v_pool_bytes());
    WriterParams wp{H, HD, kBlock, n, n, g.k_block_bytes(), g.v_block_stride_bytes, g.v_data_section_bytes};
    reshape_and_cache_model(t.format, key, value, k_cache, v_cache, slot_mapping, wp);
    if (ref_unq.empty())
      ref_unq = reference_attention(t.format, q, k_cache, v_cache, value, tables, lens, p,
                                    ReferenceV::unquantised);
    auto ref_deq = reference_attention(t.format, q, k_cache, v_cache, value, tables, lens, p,
                                       ReferenceV::dequantised);
    progress(o, "decode %s%s: %s, %zu thresholds (%u sequences, longest %u)", b.source.c_str(),
             b.layer >= 0 ? (" layer " + std::to_string(b.layer)).c_str() : "", t.name,
             thresholds.size(), S, *std::max_element(b.lens.begin(), b.lens.end()));
    for (float th : thresholds) {
      p.threshold = th;
      std::vector<uint16_t> output(uint64_t(S) * b.q_heads * HD, 0);
      DecodeDiagnostics diag;
      paged_decode_model(t.format, q, k_cache, v_cache, output, tables, lens, p, ex2, &diag);
      for (uint32_t s = 0; s < S; ++s)
        for (uint32_t qh = 0; qh < b.q_heads; ++qh) {
          const uint64_t row = (uint64_t(s) * b.q_heads + qh) * HD;
          const auto& hd = diag.heads[uint64_t(s) * b.q_heads + qh];
          const auto& w = weights[uint64_t(s) * b.q_heads + qh];
          float y[256], yf[256];
          for (uint32_t d = 0; d < D; ++d) {
            y[d] = bf16_to_f32(output[row + d]);
            yf[d] = hd.out_f32[d];
          }
          ErrStats e = compare(y, &ref_unq[row], D), ef = compare(yf, &ref_unq[row], D),
                   ed = compare(y, &ref_deq[row], D);
          double qe2 = 0, qr2 = 0;  // quantisation-only error, both fp64
          for (uint32_t d = 0; d < D; ++d) {
            double diff = ref_deq[row + d] - ref_unq[row + d];
            qe2 += diff * diff;
            qr2 += ref_unq[row + d] * ref_unq[row + d];
          }
          double mass = 0;
          int64_t above = 0, false_skips = 0, kept_tiny = 0, tiny = 0;
          for (uint32_t j = 0; j < b.lens[s]; ++j) {
            const bool skipped = hd.skipped[j] != 0;
            if (skipped) mass += w[j];
            if (w[j] > th) {
              ++above;
              false_skips += skipped;
            }
            if (w[j] < th / 100.0) {
              ++tiny;
              kept_tiny += !skipped;
            }
          }
          out.add({b.source, b.layer, std::string(t.name), double(th), int64_t(b.lens[s]),
                   int64_t(s), int64_t(qh), e.rel_l2, e.cos, e.max_abs, e.ref_norm, ef.rel_l2,
                   ed.rel_l2, qr2 > 0 ? std::sqrt(qe2 / qr2) : 0.0,
                   double(hd.skip_count) / b.lens[s], mass, above, false_skips, kept_tiny, tiny});
        }
    }
  }
}

}  // namespace tqref::study
