#include "tqref/decode.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <vector>

#include "decode_simd.h"
#include "rules.h"
#include "tqref/contract.h"
#include "tqref/model_path.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"

// Operation-by-operation model of paged_decode_attn_bf16k_turbo{2,3,4}v (docs/spec.md section 5).
// Every rounded operation below is one f32 operation of the kernel, in the kernel's order, made
// by the rules policy R (rules.h: the contract, or one variant of it); the build forbids
// contraction (-ffp-contract=off), as the kernels are built with --fmad=false. Loops that run
// "for each lane" or "for each dim" only reorder independent operations.

namespace tqref {

namespace {

static_assert(std::endian::native == std::endian::little, "dequant reads packed codes as LE words");

// CUDA fmaxf: the other operand when one is NaN. The sign of a zero result never matters here:
// m and mn only enter differences, and +-0 - +-0 is a zero of either sign, EXPF(+-0) = 1.
inline float fmaxf_cuda(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  return a > b ? a : b;
}

// Where one CTA finds its data; all offsets in elements or bytes of the pools as on the GPU.
struct Pools {
  const uint16_t* q;         // [num_seqs][q_stride] bf16
  const uint8_t* k;          // K pool, [num_blocks, B, H, D] bf16
  const uint8_t* v;          // V pool, blocks of v_block_stride_bytes
  const int32_t* tables;     // [num_seqs][max_blocks_per_seq]
  CacheGeometry geo;
  uint32_t bits;             // b of the format
  uint32_t group_code_bytes; // packed code bytes per group of 16
};

// dequant(p) of docs/spec.md section 5 as a table: value[sb][code] = f32(f32(fp16(CB[code])) * gs(sb)),
// the same two roundings as the kernel (dequantize_code), once per (scale, code).
struct DequantTable {
  std::array<float, 256 * 16> value{};
  uint32_t levels = 0;
  template <class R>
  DequantTable(const FormatTraits& t, const R& r) : levels(t.levels) {
    for (uint32_t sb = 0; sb < 256; ++sb)
      for (uint32_t c = 0; c < t.levels; ++c)
        value[sb * 16 + c] = r.mul(Step::d_dequant_mul, r.decoder_codebook(t.codebook[c]),
                                   fp8e4m3_to_f32(static_cast<uint8_t>(sb)));
  }
};

// One warp's online-softmax state. o[] is indexed by head dim d; lane l owns d = l*VEC .. +VEC-1,
// and every operation on o[d] is per element, so the lane split never changes a rounding.
template <uint32_t HDIM>
struct WarpState {
  float m = -1e30f;
  float l = 0.0f;
  std::array<float, HDIM> o{};
};

// One CTA (q head qh, sequence s) under the rules policy R.
template <uint32_t HDIM, class R>
class Cta {
 public:
  Cta(const R& r, const Pools& pools, const DequantTable& dq, const Ex2Profile& ex2,
      const DecodeParams& p, uint32_t s, uint32_t qh)
      : r_(r), pools_(pools), dq_(dq), ex2_(ex2), p_(p), s_(s),
        kvh_(qh / (p.num_q_heads / p.num_kv_heads)), dims_(p.head_dim) {
    // docs/spec.md section 5.1: dims head_dim .. HDIM-1 are the inactive lanes' dims; their q and
    // k are +0, which gives exactly the +0 partial sums of an inactive lane.
    const uint16_t* qrow = pools.q + uint64_t(s) * p.q_stride + uint64_t(qh) * dims_;
    for (uint32_t d = 0; d < HDIM; ++d) q_[d] = d < dims_ ? bf16_to_f32(qrow[d]) : 0.0f;
  }

  // Runs the CTA for a sequence of length L > 0; writes bf16 output and, if asked, diagnostics.
  void run(uint32_t L, uint16_t* out, DecodeHeadDiag* diag) {
    const uint32_t start = window_start(L, p_.sliding_window);
    const uint64_t A = L - start;
    const uint64_t chunk = (A + kDecodeWarps - 1) / kDecodeWarps;
    skipped_ = diag ? diag->skipped.data() : nullptr;
    start_ = start;
    std::array<WarpState<HDIM>, kDecodeWarps> warps{};
    for (uint32_t w = 0; w < kDecodeWarps; ++w) {
      const uint64_t lo = start + w * chunk;
      const uint64_t hi = std::min<uint64_t>(start + (w + 1) * chunk, L);
      walk(warps[w], lo, hi);
    }
    merge(warps);
    const WarpState<HDIM>& w0 = warps[0];
    // correctly rounded; NaN l -> 0
    const float inv = w0.l > 0.0f ? r_.div(Step::d_inv_div, 1.0f, w0.l) : 0.0f;
    for (uint32_t d = 0; d < dims_; ++d) {
      const float y = r_.mul(Step::d_out_mul, w0.o[d], inv);
      out[d] = r_.output_bf16(y);
      if (diag) diag->out_f32[d] = y;
    }
    if (diag) {
      diag->m = w0.m;
      diag->l = w0.l;
    }
  }

 private:
  // One step of a warp's walk: a batch (n = 4) or a single (n = 1) starting at position p,
  // with the factors the kernel computes for it: eo rescales the old state, ef[b] weighs
  // position p + b.
  struct WalkStep {
    uint64_t p;
    uint32_t n;
    float eo;
    float ef[4];
  };

  // Positions [lo, hi) of one warp, one cache block at a time: batches of 4 while 4 remain in
  // the block and in the range (a batch never crosses a block boundary), then singles.
  //
  // The kernel interleaves scores, softmax state and V accumulation; the model runs them as
  // three passes over the same steps. This is exact, not an approximation: the scores depend on
  // q and K only, and m, l and the factors depend on the scores only, never on o. Each variable
  // still receives the kernel's operations in the kernel's order. (The passes let the EX2 table
  // lookups of consecutive steps overlap in the host's memory system.)
  void walk(WarpState<HDIM>& ws, uint64_t lo, uint64_t hi) {
    const uint64_t B = pools_.geo.block_size;
    steps_.clear();
    for (uint64_t p = lo; p < hi;) {
      const uint64_t block_end = std::min((p / B + 1) * B, hi);
      if (r_.takes_batches())
        for (; p + 4 <= block_end; p += 4) steps_.push_back(WalkStep{p, 4, 0.0f, {}});
      for (; p < block_end; ++p) steps_.push_back(WalkStep{p, 1, 0.0f, {}});
    }
    scores_.resize(hi > lo ? hi - lo : 0);
    for (uint64_t p = lo; p < hi; ++p) scores_[p - lo] = score(p);
    for (WalkStep& st : steps_) {
      const float* sc = scores_.data() + (st.p - lo);
      if (st.n == 4)
        batch_factors(ws, sc, st);
      else
        single_factors(ws, sc[0], st);
    }
    for (const WalkStep& st : steps_) {
      if (st.n == 4)
        batch_accumulate(ws, st);
      else
        single_accumulate(ws, st);
    }
  }

  // EXPF of docs/spec.md section 5 of the difference a - b.
  float expf_of_difference(float a, float b) const { return r_.expf(ex2_, r_.sub(Step::d_max_sub, a, b)); }

  // Physical block of logical position p, from the sequence's block table.
  uint64_t physical_block(uint64_t p) const {
    return uint64_t(pools_.tables[uint64_t(s_) * p_.max_blocks_per_seq + p / p_.block_size]);
  }

  // Score of position p: per-lane pairwise partial dot products, the xor butterfly over all 32
  // simulated lanes, then the scale. The loops run over all dims / pairs / lanes at once (so
  // the compiler can vectorise them), but each value is formed by exactly the kernel's
  // operations: lane l's pair i is f32(f32(q[2i]*k[2i]) + f32(q[2i+1]*k[2i+1])) over its dims
  // l*VEC.., and its partial sum adds its pairs in order, starting from 0.
  float score(uint64_t p) const {
    const CacheGeometry& g = pools_.geo;
    const uint64_t slot = physical_block(p) * g.block_size + p % g.block_size;
    const uint8_t* kbytes = pools_.k + g.k_row_offset(int64_t(slot)) + uint64_t(kvh_) * dims_ * 2;
    std::array<uint16_t, HDIM> kbits{};  // dims >= head_dim stay +0 (section 5.1)
    std::memcpy(kbits.data(), kbytes, uint64_t(dims_) * 2);
    std::array<float, HDIM / 2> pair;
    for (uint32_t j = 0; j < HDIM / 2; ++j)
      pair[j] = r_.sum_products(Fusion::d_pair_ab, Fusion::d_pair_cd, Step::d_qk_mul,
                                Step::d_qk_mul, Step::d_pair_add, q_[2 * j],
                                bf16_to_f32(kbits[2 * j]), q_[2 * j + 1],
                                bf16_to_f32(kbits[2 * j + 1]));
    std::array<float, kWarpSize> part;
    part.fill(0.0f);
    r_.template lane_partials<HDIM>(pair.data(), part.data());
    // __shfl_xor_sync(part, off): lane l reads the old value of lane l ^ off.
    for (uint32_t i = 0; i < 5; ++i) {
      const uint32_t off = r_.butterfly_offset(i);
      std::array<float, kWarpSize> next;
      for (uint32_t lane = 0; lane < kWarpSize; ++lane)
        next[lane] = r_.add(Step::d_butterfly_add, part[lane], part[lane ^ off]);
      part = next;
    }
    // all lanes hold the same sum (f32 + is commutative)
    return r_.mul(Step::d_score_mul, part[0], p_.inv_sqrt_d);
  }

  // V of position p for head kvh: vals[d] = dequant of element (kvh*D + d) of the slot's row.
  void dequant(uint64_t p, float* vals) const {
    const CacheGeometry& g = pools_.geo;
    const int64_t slot = int64_t(physical_block(p) * g.block_size + p % g.block_size);
    const uint64_t group0 = uint64_t(kvh_) * dims_ / kGroupSize;
    const uint8_t* codes =
        pools_.v + g.v_code_row_offset(slot, pools_.bits) + group0 * pools_.group_code_bytes;
    const uint8_t* scales = pools_.v + g.v_scale_row_offset(slot) + group0;
    const uint32_t bits = pools_.bits, mask = (1u << bits) - 1u;
    for (uint32_t grp = 0; grp < dims_ / kGroupSize; ++grp) {
      const float* row = dq_.value.data() + uint32_t(scales[grp]) * 16;
      // The group's 2*b bytes as one little-endian word: every format packs LSB first, so
      // code k sits at bits k*b .. k*b+b-1 (what unpack_group_code computes byte by byte).
      uint64_t word = 0;
      std::memcpy(&word, codes + grp * pools_.group_code_bytes, pools_.group_code_bytes);
      for (uint32_t k = 0; k < kGroupSize; ++k)
        vals[grp * kGroupSize + k] = row[(word >> (k * bits)) & mask];
    }
    std::fill(vals + dims_, vals + HDIM, 0.0f);  // inactive lanes read no V (never output)
  }

  // v = ef > THRESH ? dequant(p) : 0. A skipped position's V bytes are never touched.
  bool load_v(uint64_t p, float ef, float* vals) const {
    const bool take = ef > p_.threshold;  // strictly greater; NaN -> skip
    if (take)
      dequant(p, vals);
    else
      std::fill(vals, vals + HDIM, 0.0f);
    if (skipped_) skipped_[p - start_] = take ? 0 : 1;
    return take;
  }

  // Batch of 4 scores, softmax part: mn = fmaxf(fmaxf(fmaxf(fmaxf(m, sc0), sc1), sc2), sc3),
  // eo = EXPF(m - mn), ef[b] = EXPF(sc[b] - mn), l = f32(f32(l*eo) + ef[0]), then for b = 1..3
  // l = l + ef[b]; m = mn.
  void batch_factors(WarpState<HDIM>& ws, const float* sc, WalkStep& st) const {
    const float mn =
        fmaxf_cuda(fmaxf_cuda(fmaxf_cuda(fmaxf_cuda(ws.m, sc[0]), sc[1]), sc[2]), sc[3]);
    st.eo = expf_of_difference(ws.m, mn);
    for (uint32_t b = 0; b < 4; ++b) st.ef[b] = expf_of_difference(sc[b], mn);
    ws.l = r_.mul_add(Fusion::d_batch_l, Step::d_l_mul, Step::d_l_add, ws.l, st.eo, st.ef[0]);
    for (uint32_t b = 1; b < 4; ++b) ws.l = r_.add(Step::d_l_add, ws.l, st.ef[b]);
    ws.m = mn;
  }

  // Batch, V part: v[b] = ef[b] > THRESH ? dequant : 0; o = f32(f32(o*eo) + f32(ef[0]*v[0])),
  // then for b = 1..3 o = f32(o + f32(ef[b]*v[b])) (also for a skipped position: ef * 0).
  void batch_accumulate(WarpState<HDIM>& ws, const WalkStep& st) const {
    std::array<std::array<float, HDIM>, 4> v;
    for (uint32_t b = 0; b < 4; ++b) load_v(st.p + b, st.ef[b], v[b].data());
    for (uint32_t d = 0; d < HDIM; ++d)
      ws.o[d] = r_.sum_products(Fusion::d_batch_o_ab, Fusion::d_batch_o_cd, Step::d_o_mul,
                                Step::d_ev_mul, Step::d_o_add, ws.o[d], st.eo, st.ef[0], v[0][d]);
    for (uint32_t b = 1; b < 4; ++b)
      for (uint32_t d = 0; d < HDIM; ++d)
        ws.o[d] = r_.mul_add(Fusion::d_batch_ev, Step::d_ev_mul, Step::d_o_add, st.ef[b], v[b][d],
                             ws.o[d]);
  }

  // Single score, softmax part: mn = fmaxf(m, sc), eo = EXPF(m - mn), en = EXPF(sc - mn),
  // l = f32(f32(l*eo) + en), m = mn.
  void single_factors(WarpState<HDIM>& ws, float sc, WalkStep& st) const {
    const float mn = fmaxf_cuda(ws.m, sc);
    st.eo = expf_of_difference(ws.m, mn);
    st.ef[0] = expf_of_difference(sc, mn);
    ws.l = r_.mul_add(Fusion::d_single_l, Step::d_l_mul, Step::d_l_add, ws.l, st.eo, st.ef[0]);
    ws.m = mn;
  }

  // Single, V part: v = en > THRESH ? dequant : 0, o = f32(f32(o*eo) + f32(en*v)).
  void single_accumulate(WarpState<HDIM>& ws, const WalkStep& st) const {
    std::array<float, HDIM> v;
    load_v(st.p, st.ef[0], v.data());
    for (uint32_t d = 0; d < HDIM; ++d)
      ws.o[d] = r_.sum_products(Fusion::d_single_o_ab, Fusion::d_single_o_cd, Step::d_o_mul,
                                Step::d_ev_mul, Step::d_o_add, ws.o[d], st.eo, st.ef[0], v[d]);
  }

  // Shared-memory tree (R::merge_partner): for stride 4, 2, 1 warp w < stride absorbs warp
  // w + stride if that warp's l > 0 (NaN l: not absorbed); l = f32(f32(a.l*fa) + f32(o.l*fo)),
  // o likewise.
  void merge(std::array<WarpState<HDIM>, kDecodeWarps>& warps) const {
    for (uint32_t step = 0; step < r_.merge_steps(); ++step) {
      for (uint32_t w = 0; w < kDecodeWarps; ++w) {
        uint32_t partner = 0;
        if (!r_.merge_partner(step, w, partner)) continue;
        WarpState<HDIM>& a = warps[w];
        const WarpState<HDIM>& o = warps[partner];
        if (!(o.l > 0.0f)) continue;
        const float mn = fmaxf_cuda(a.m, o.m);
        const float fa = expf_of_difference(a.m, mn);
        const float fo = expf_of_difference(o.m, mn);
        a.l = r_.sum_products(Fusion::d_merge_l_ab, Fusion::d_merge_l_cd, Step::d_merge_mul,
                              Step::d_merge_mul, Step::d_merge_add, a.l, fa, o.l, fo);
        a.m = mn;
        for (uint32_t d = 0; d < HDIM; ++d)
          a.o[d] = r_.sum_products(Fusion::d_merge_o_ab, Fusion::d_merge_o_cd, Step::d_merge_mul,
                                   Step::d_merge_mul, Step::d_merge_add, a.o[d], fa, o.o[d], fo);
      }
    }
  }

  const R& r_;
  const Pools& pools_;
  const DequantTable& dq_;
  const Ex2Profile& ex2_;
  const DecodeParams& p_;
  uint32_t s_;
  uint32_t kvh_;
  uint32_t dims_;  // head_dim <= HDIM: the active lanes' dims (section 5.1)
  std::array<float, HDIM> q_;
  uint8_t* skipped_ = nullptr;  // diagnostics mask over [start, L), or null
  uint32_t start_ = 0;
  std::vector<WalkStep> steps_; // the current warp's walk
  std::vector<float> scores_;   // the current warp's scores, [hi - lo]
};

// Every rule of docs/spec.md sections 3 and 5 (tqref/contract.h) against the buffers; afterwards
// no access of the model is out of range.
void validate(Format f, size_t q_elems, size_t k_bytes, size_t v_bytes, size_t out_elems,
              std::span<const int32_t> tables, std::span<const int32_t> lens,
              const DecodeParams& p) {
  constexpr const char* kFunction = "paged_decode_model";
  require(kFunction, check_decode_params(f, p));
  const DecodeBuffers buffers{q_elems, out_elems, lens.size(), tables.size()};
  require(kFunction, check_decode_buffers(p, buffers));
  const CacheGeometry g{p.num_kv_heads, p.head_dim, p.block_size, 0, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  require(kFunction, check_sequences(p, tables, lens, pool_blocks(g, k_bytes, v_bytes)));
}

// Diagnostics of a CTA that computes nothing (head_dim > HDIM, section 5.1): every position's V
// load is skipped (none is read), m, l and the f32 outputs are NaN.
void no_compute_diag(DecodeHeadDiag& hd, uint32_t positions, uint32_t head_dim) {
  const float nan = f32_from_bits(0x7FC00000u);
  hd.skipped.assign(positions, 1);
  hd.skip_count = positions;
  hd.m = hd.l = nan;
  hd.out_f32.assign(head_dim, nan);
}

template <uint32_t HDIM, class R>
void run_all(const R& r, const Pools& pools, const DequantTable& dq, const Ex2Profile& ex2,
             std::span<uint16_t> output, std::span<const int32_t> lens, const DecodeParams& p,
             DecodeDiagnostics* diag) {
  const int64_t ctas = int64_t(p.num_seqs) * p.num_q_heads;
  // Each CTA writes only its own output row and diagnostics entry: any thread count and any
  // schedule give the same bits.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < ctas; ++i) {
    const uint32_t s = uint32_t(i / p.num_q_heads), qh = uint32_t(i % p.num_q_heads);
    const uint32_t L = uint32_t(lens[s]);
    if (L == 0) continue;  // the CTA returns and writes nothing
    DecodeHeadDiag* hd = diag ? &diag->heads[i] : nullptr;
    uint16_t* out = output.data() + uint64_t(i) * p.head_dim;
    if (p.head_dim > HDIM) {  // section 5.1: no V is read, every element of the row is NaN
      std::fill(out, out + p.head_dim, kNoComputeOutput);
      if (hd) no_compute_diag(*hd, L - window_start(L, p.sliding_window), p.head_dim);
      continue;
    }
    if (hd) {
      hd->skipped.assign(L - window_start(L, p.sliding_window), 0);
      hd->out_f32.assign(p.head_dim, 0.0f);
    }
    Cta<HDIM, R> cta(r, pools, dq, ex2, p, s, qh);
    cta.run(L, out, hd);
    if (hd)
      hd->skip_count = uint32_t(std::count(hd->skipped.begin(), hd->skipped.end(), uint8_t(1)));
  }
}

// The scalar model under the rules policy r, after validation.
template <class R>
void run_scalar(const R& r, const FormatTraits& t, std::span<const uint16_t> q,
                std::span<const uint8_t> k_cache, std::span<const uint8_t> v_cache,
                std::span<uint16_t> output, std::span<const int32_t> block_tables,
                std::span<const int32_t> seq_lens, const DecodeParams& p, const Ex2Profile& ex2,
                DecodeDiagnostics* diag) {
  const Pools pools{q.data(),
                    k_cache.data(),
                    v_cache.data(),
                    block_tables.data(),
                    CacheGeometry{p.num_kv_heads, p.head_dim, p.block_size, 0,
                                  p.v_block_stride_bytes, p.v_data_section_bytes},
                    t.bits,
                    t.group_code_bytes};
  const DequantTable dq(t, r);
  if (p.hdim == 128)
    run_all<128>(r, pools, dq, ex2, output, seq_lens, p, diag);
  else
    run_all<256>(r, pools, dq, ex2, output, seq_lens, p, diag);
}

// Validation and diagnostics set-up of both entry points; false when there is nothing to run.
bool prepare(Format format, std::span<const uint16_t> q, std::span<const uint8_t> k_cache,
             std::span<const uint8_t> v_cache, std::span<uint16_t> output,
             std::span<const int32_t> block_tables, std::span<const int32_t> seq_lens,
             const DecodeParams& p, DecodeDiagnostics* diag) {
  validate(format, q.size(), k_cache.size(), v_cache.size(), output.size(), block_tables, seq_lens,
           p);
  if (diag) diag->heads.assign(uint64_t(p.num_seqs) * p.num_q_heads, DecodeHeadDiag{});
  return p.num_seqs != 0;
}

}  // namespace

void paged_decode_model(Format format, std::span<const uint16_t> q,
                        std::span<const uint8_t> k_cache, std::span<const uint8_t> v_cache,
                        std::span<uint16_t> output, std::span<const int32_t> block_tables,
                        std::span<const int32_t> seq_lens, const DecodeParams& p,
                        const Ex2Profile& ex2, DecodeDiagnostics* diag) {
  paged_decode_model(format, q, k_cache, v_cache, output, block_tables, seq_lens, p, ex2,
                     model_variant(), diag);
}

void paged_decode_model(Format format, std::span<const uint16_t> q,
                        std::span<const uint8_t> k_cache, std::span<const uint8_t> v_cache,
                        std::span<uint16_t> output, std::span<const int32_t> block_tables,
                        std::span<const int32_t> seq_lens, const DecodeParams& p,
                        const Ex2Profile& ex2, const Variant& v, DecodeDiagnostics* diag) {
  if (!prepare(format, q, k_cache, v_cache, output, block_tables, seq_lens, p, diag)) return;
  const FormatTraits& t = traits(format);
  if (!v.is_contract())  // variants run on the scalar path only
    return run_scalar(rules::VariantRules(v), t, q, k_cache, v_cache, output, block_tables,
                      seq_lens, p, ex2, diag);
  // The SIMD path (decode_simd.h), equal bit for bit, covers launches inside the contract; the
  // rare head_dim != hdim launches of docs/spec.md section 5.1 run on this scalar path.
  if (model_path() == ModelPath::simd && decode_in_contract(p.head_dim, p.hdim))
    return simd::paged_decode(format, q, k_cache, v_cache, output, block_tables, seq_lens, p, ex2, diag);
  run_scalar(rules::ContractRules{}, t, q, k_cache, v_cache, output, block_tables, seq_lens, p,
             ex2, diag);
}

}  // namespace tqref
