// The SIMD paths of the model (docs/decode-model.md and docs/performance.md), one table of
// entry points per instruction set. Each simd_<isa>.cpp compiles the same sources
// (simd_isa_impl.h) for its vector width under `#pragma GCC target`, inside its own namespace,
// with every shared header included before that region (simd_isa_includes.h), so no inline
// function or template of one instruction set can stand in for another's at link time.
// simd_dispatch.cpp picks the best table the CPU supports (__builtin_cpu_supports, x86-64 only;
// elsewhere the portable table is the only one). Every entry equals the scalar model bit for bit
// (tests/test_simd_paths.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tqref/decode.h"
#include "tqref/ex2.h"
#include "tqref/format.h"
#include "tqref/writer.h"

namespace tqref::simd {

// Everything the SIMD decode reads, prepared once per launch and shared read-only by all work
// items. A work item is one warp's range of one sequence for all q heads of one kv head.
struct DecodeJob {
  const uint16_t* q;          // [num_seqs][q_stride] bf16
  const uint8_t* k;           // K pool
  const uint8_t* v;           // V pool
  const int32_t* tables;      // [num_seqs][max_blocks_per_seq]
  const int32_t* lens;        // [num_seqs]
  const DecodeParams* p;
  CacheGeometry geo;
  uint32_t bits, group_code_bytes;
  uint32_t heads_per_kv;      // G = num_q_heads / num_kv_heads
  Ex2EvalData ex2;
  float cb16[16];             // f32(fp16(CB[c])): the decoder's codebook (zero past `levels`)
  float scale[256];           // gs: fp8 E4M3 decode of each scale byte
};

// The eight warps' states of every CTA after their walks, before the merge:
// index ((s * num_q_heads + qh) * kDecodeWarps + w); o holds hdim floats per state.
struct WarpStates {
  uint32_t hdim = 0;
  std::vector<float> m, l, o;
  size_t index(const DecodeParams& p, uint32_t s, uint32_t qh, uint32_t w) const {
    return (size_t(s) * p.num_q_heads + qh) * kDecodeWarps + w;
  }
};

struct SimdKernels {
  const char* isa;  // "avx512", "avx2", "portable"
  // y[i] = EX2(x[i]) / EXPF(x[i]) of Ex2Profile for x <= 0 or NaN; F[first .. first + n).
  void (*ex2)(const Ex2EvalData& d, const float* x, float* y, size_t n);
  void (*expf)(const Ex2EvalData& d, const float* x, float* y, size_t n);
  void (*fractions)(const Ex2EvalData& d, uint32_t first, uint32_t n, uint32_t* out);
  // Warp w of sequence s for the q heads of kv head kvh: walk, scores, factors, V; writes their
  // states and, with diag, their skipped[] entries of the warp's range.
  void (*decode_warp)(const DecodeJob& j, WarpStates& st, DecodeDiagnostics* diag, uint32_t s,
                      uint32_t kvh, uint32_t w);
  // CTA (s, qh): the merge tree, the bf16 output row and the diagnostics entry.
  void (*decode_cta)(const DecodeJob& j, const WarpStates& st, uint16_t* out, DecodeHeadDiag* diag,
                     uint32_t s, uint32_t qh);
  // One token's V row (n values) quantised: codes and scale bytes as the writer stores them.
  void (*writer_v_row)(const FormatTraits& t, const uint16_t* vrow, uint32_t n, uint8_t* codes,
                       uint8_t* scales);
};

// The tables built into this binary, best first; the last is the portable one.
std::span<const SimdKernels* const> built_kernels();
// The table in use: the best one the CPU supports, unless set_simd_isa chose another.
const SimdKernels& kernels();

}  // namespace tqref::simd
