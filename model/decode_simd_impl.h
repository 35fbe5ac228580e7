// The decode model on kW-lane vectors (docs/decode-model.md, "The SIMD path"). Part of
// simd_isa_impl.h (included inside an ISA namespace; no includes of its own).
//
// Same operations in the same order per value as model/decode.cpp; what differs is only which
// independent values are computed together:
// - one work item is one warp's range of one sequence for all G q heads of a kv head (their
//   ranges, batches and singles are the same), so each K row is converted once for G scores and
//   each V row is dequantised once for every head that does not skip it;
// - dims are vector lanes in their natural order (o, V, products); the per-lane sums and the xor
//   butterfly of the score are regrouped from the pair vector by even/odd shuffles, and the
//   butterfly keeps lane 0's operand order (its own value + the upper half's);
// - the softmax arguments of a warp (m - mn, sc - mn) are all known once its scores are (m is a
//   running maximum of scores), so EXPF runs on vectors of them before l is accumulated.

// A step of the warp's walk: `n` = 4 (batch) or 1 (single) positions from offset `off` of the
// range; its factors are at `arg` (eo, then ef[0 .. n)) in the warp's factor array.
struct SimdStep {
  uint32_t off, n, arg;
};

// CUDA fmaxf: the other operand when one is NaN (as model/decode.cpp).
inline float fmaxf_cuda(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  return a > b ? a : b;
}

// q of one head split into the two dims of each pair: e[j] = q[2j], o[j] = q[2j+1].
template <uint32_t HDIM> struct PairedQ {
  alignas(64) float e[HDIM / 2], o[HDIM / 2];
};

// One K row as the two dims of each pair: a 32-bit little-endian load holds bf16 k[2j] in its
// low half and k[2j+1] in its high half, so each is one shift or mask away from its f32.
template <uint32_t HDIM> struct PairedK {
  static constexpr int kN = HDIM / 2 / kW;
  VF e[kN], o[kN];
  explicit PairedK(const uint8_t* row) {
    for (int c = 0; c < kN; ++c) {
      const VU w = vload<VU>(row + size_t(c) * kW * 4);
      e[c] = tqref::vec::bit_cast<VF>(w << 16);
      o[c] = tqref::vec::bit_cast<VF>(w & 0xFFFF0000u);
    }
  }
};

// docs/spec.md section 5's score. Lane l's pairs are j = l*P .. l*P + P - 1 (P = VEC/2 = HDIM/64): the
// per-lane sums take pair i of every lane as one vector (even/odd lanes, twice for P = 4), then
// add them in order starting from 0. The 32 lane sums sit in kWarpSize/kW vectors; the butterfly
// adds vectors while its offset is at least kW, then halves inside the last vector.
template <uint32_t HDIM> float simd_score(const PairedK<HDIM>& k, const PairedQ<HDIM>& q,
                                          float inv_sqrt_d) {
  constexpr int kN = PairedK<HDIM>::kN, kParts = int(kWarpSize) / kW;
  VF pair[kN];
  for (int c = 0; c < kN; ++c)
    pair[c] = vload<VF>(q.e + c * kW) * k.e[c] + vload<VF>(q.o + c * kW) * k.o[c];  // --fmad=false
  VF part[kParts];
  for (int c = 0; c < kParts; ++c) {
    if constexpr (HDIM == 128) {  // P = 2
      part[c] = (VF{} + even_lanes(pair[2 * c], pair[2 * c + 1])) + odd_lanes(pair[2 * c], pair[2 * c + 1]);
    } else {  // P = 4
      const VF e1 = even_lanes(pair[4 * c], pair[4 * c + 1]), o1 = odd_lanes(pair[4 * c], pair[4 * c + 1]);
      const VF e2 = even_lanes(pair[4 * c + 2], pair[4 * c + 3]), o2 = odd_lanes(pair[4 * c + 2], pair[4 * c + 3]);
      part[c] = (((VF{} + even_lanes(e1, e2)) + even_lanes(o1, o2)) + odd_lanes(e1, e2)) + odd_lanes(o1, o2);
    }
  }
  for (int n = kParts / 2; n >= 1; n /= 2)  // offsets 16 .. kW: lane l + lane l + off
    for (int c = 0; c < n; ++c) part[c] = part[c] + part[c + n];
  VF v = part[0];
  if constexpr (kW >= 16) v = v + upper_to_lower<8>(v);
  if constexpr (kW >= 8) v = v + upper_to_lower<4>(v);
  v = v + upper_to_lower<2>(v);
  v = v + upper_to_lower<1>(v);
  return v[0] * inv_sqrt_d;
}

// dequant(p) of docs/spec.md section 5 for the HDIM dims of kv head kvh in the V row of `slot`:
// f32(f32(fp16(CB)[code]) * gs), as dequantize_code. A group's 2b code bytes are one
// little-endian word; code k sits at bits k*b.., codes 0-7 in the low 8b bits, 8-15 above.
// The 2b code bytes of a group as one little-endian word, from register-sized loads (a 6-byte
// memcpy into a zeroed word would go through memory and stall the next load).
template <uint32_t Bytes> inline uint64_t load_code_word(const uint8_t* p) {
  if constexpr (Bytes == 6) {
    uint32_t a;
    uint16_t b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + 4, 2);
    return uint64_t(a) | uint64_t(b) << 32;
  } else {
    std::conditional_t<Bytes == 8, uint64_t, uint32_t> w;
    std::memcpy(&w, p, Bytes);
    return w;
  }
}

template <uint32_t HDIM, uint32_t Bits>
void simd_dequant_bits(const DecodeJob& j, int64_t slot, uint32_t kvh, float* out) {
  constexpr uint32_t kCodeBytes = 2 * Bits, kMask = (1u << Bits) - 1u;
  const uint64_t group0 = uint64_t(kvh) * HDIM / kGroupSize;
  const uint8_t* codes = j.v + j.geo.v_code_row_offset(slot, Bits) + group0 * kCodeBytes;
  const uint8_t* scales = j.v + j.geo.v_scale_row_offset(slot) + group0;
  for (uint32_t grp = 0; grp < HDIM / kGroupSize; ++grp) {
    const uint64_t word = load_code_word<kCodeBytes>(codes + grp * kCodeBytes);
    const VU lo = vsplat<VU>(uint32_t(word & ((uint64_t(1) << (8 * Bits)) - 1u)));
    const VU hi = vsplat<VU>(uint32_t(word >> (8 * Bits)));
    const float gs = j.scale[scales[grp]];
    if constexpr (kW == 4) {
      // Element by element on 4 lanes: GCC 12.2 at -O3 loses the stores of the lane form below
      // when it must lower the per-lane shifts itself (SSE2 has none); -fno-tree-loop-optimize or
      // -fno-delete-null-pointer-checks avoid it. Found by test_simd_paths; same arithmetic.
      for (uint32_t k = 0; k < kGroupSize; ++k)
        out[grp * kGroupSize + k] = j.cb16[(word >> (k * Bits)) & kMask] * gs;
      continue;
    }
    for (int c = 0; c < int(kGroupSize) / kW; ++c) {
      const VI k = kLaneIndex + c * kW;  // code index within the group
      const VU idx = (((k < 8) ? lo : hi) >> VU((k & 7) * int(Bits))) & kMask;
      vstore(out + grp * kGroupSize + c * kW, lookup16(j.cb16, idx) * gs);
    }
  }
}

template <uint32_t HDIM> void simd_dequant(const DecodeJob& j, int64_t slot, uint32_t kvh, float* out) {
  switch (j.bits) {
    case 2: return simd_dequant_bits<HDIM, 2>(j, slot, kvh, out);
    case 3: return simd_dequant_bits<HDIM, 3>(j, slot, kvh, out);
    default: return simd_dequant_bits<HDIM, 4>(j, slot, kvh, out);
  }
}

// Cache hints for the K row and the V bytes of position p (kv head kvh): the rows of one head
// are a block of H*D*2 bytes apart, too far for the hardware prefetchers, and blocks are
// scattered. Hints only: no effect on any value.
template <uint32_t HDIM> void prefetch_k(const DecodeJob& j, int64_t slot, uint32_t kvh) {
  const uint8_t* row = j.k + j.geo.k_row_offset(slot) + uint64_t(kvh) * HDIM * 2;
  for (uint32_t b = 0; b < HDIM * 2; b += 64) __builtin_prefetch(row + b);
}
template <uint32_t HDIM> void prefetch_v(const DecodeJob& j, int64_t slot, uint32_t kvh) {
  const uint64_t group0 = uint64_t(kvh) * HDIM / kGroupSize;
  __builtin_prefetch(j.v + j.geo.v_code_row_offset(slot, j.bits) + group0 * j.group_code_bytes);
  __builtin_prefetch(j.v + j.geo.v_scale_row_offset(slot) + group0);
}
inline constexpr uint64_t kPrefetchAhead = 8;  // positions

// The per-thread buffers of one work item, reused between items.
struct WarpScratch {
  std::vector<SimdStep> steps;
  std::vector<float> scores;   // [G][range]
  std::vector<float> args;     // [G][factors]: EXPF arguments, then the factors
  std::vector<float> o;        // [G][HDIM]
  std::vector<float> m, l;     // [G]
  std::vector<uint8_t> take;   // [4][G]: head g uses the V of step position b
  alignas(64) float v[4][256]; // V of the step's positions (HDIM <= 256)
};

inline WarpScratch& warp_scratch() {
  thread_local WarpScratch s;
  return s;
}

// Physical slot of logical position p of sequence s.
inline int64_t simd_slot(const DecodeJob& j, uint32_t s, uint64_t p) {
  const uint32_t B = j.p->block_size;
  return int64_t(j.tables[uint64_t(s) * j.p->max_blocks_per_seq + p / B]) * B + int64_t(p % B);
}

// Walk (as Cta::walk) and the factors of every head: the arguments in the kernel's order, EXPF
// over all of them, then l.
template <uint32_t HDIM> void simd_factors(const DecodeJob& j, WarpScratch& sc, uint32_t G,
                                           uint64_t lo, uint64_t hi) {
  const uint64_t B = j.p->block_size, n = hi - lo;
  sc.steps.clear();
  uint32_t nargs = 0;
  for (uint64_t p = lo; p < hi;) {
    const uint64_t block_end = std::min((p / B + 1) * B, hi);
    for (; p + 4 <= block_end; p += 4, nargs += 5) sc.steps.push_back({uint32_t(p - lo), 4, nargs});
    for (; p < block_end; ++p, nargs += 2) sc.steps.push_back({uint32_t(p - lo), 1, nargs});
  }
  sc.args.resize(size_t(G) * nargs);
  for (uint32_t g = 0; g < G; ++g) {
    float m = -1e30f, *a = sc.args.data() + size_t(g) * nargs;
    const float* scr = sc.scores.data() + size_t(g) * n;
    for (const SimdStep& st : sc.steps) {
      const float* s4 = scr + st.off;
      float mn = fmaxf_cuda(m, s4[0]);
      if (st.n == 4) mn = fmaxf_cuda(fmaxf_cuda(fmaxf_cuda(mn, s4[1]), s4[2]), s4[3]);
      a[st.arg] = m - mn;
      for (uint32_t b = 0; b < st.n; ++b) a[st.arg + 1 + b] = s4[b] - mn;
      m = mn;
    }
    sc.m[g] = m;
  }
  expf_lanes(j.ex2, sc.args.data(), sc.args.data(), sc.args.size());
  for (uint32_t g = 0; g < G; ++g) {
    const float* f = sc.args.data() + size_t(g) * nargs;
    float l = 0.0f;
    for (const SimdStep& st : sc.steps) {
      if (st.n == 4) {
        l = l * f[st.arg];
        for (uint32_t b = 0; b < 4; ++b) l = l + f[st.arg + 1 + b];
      } else {
        const float scaled = l * f[st.arg];
        l = scaled + f[st.arg + 1];
      }
    }
    sc.l[g] = l;
  }
}

// V of position `pos` (step position b) for every head: v = ef > THRESH ? dequant : 0,
// dequantised once into sc.v[b] if any head takes it; sc.take[b][g] says which. Diagnostics
// mark the heads that skip.
template <uint32_t HDIM> void simd_load_v(const DecodeJob& j, WarpScratch& sc, uint32_t b,
                                          DecodeDiagnostics* diag, uint32_t s, uint32_t kvh,
                                          uint64_t pos, uint32_t start, const float* ef,
                                          size_t ef_stride) {
  const uint32_t G = j.heads_per_kv;
  bool any = false;
  for (uint32_t g = 0; g < G; ++g) {
    const bool t = ef[g * ef_stride] > j.p->threshold;  // strictly greater; NaN -> skip
    sc.take[b * G + g] = t;
    any |= t;
    if (diag) diag->heads[size_t(s) * j.p->num_q_heads + kvh * G + g].skipped[pos - start] = t ? 0 : 1;
  }
  if (any) simd_dequant<HDIM>(j, simd_slot(j, s, pos), kvh, sc.v[b]);
}

// The V pass over the warp's steps for all heads (batch: o = o*eo, then o = o + ef[b]*v[b] for
// b = 0..3; single: o = f32(f32(o*eo) + f32(en*v))), with v = 0 for a head that skips.
template <uint32_t HDIM> void simd_accumulate(const DecodeJob& j, WarpScratch& sc,
                                              DecodeDiagnostics* diag, uint32_t s, uint32_t kvh,
                                              uint64_t lo, uint32_t start) {
  constexpr int kC = HDIM / kW;
  const uint32_t G = j.heads_per_kv;
  const size_t nargs = sc.args.size() / G;
  const uint8_t* take = sc.take.data();
  const uint64_t n = sc.scores.size() / G;
  for (const SimdStep& st : sc.steps) {
    for (uint32_t b = 0; b < st.n; ++b)
      if (st.off + b + kPrefetchAhead < n) prefetch_v<HDIM>(j, simd_slot(j, s, lo + st.off + b + kPrefetchAhead), kvh);
    for (uint32_t b = 0; b < st.n; ++b)
      simd_load_v<HDIM>(j, sc, b, diag, s, kvh, lo + st.off + b, start,
                        sc.args.data() + st.arg + 1 + b, nargs);
    for (uint32_t g = 0; g < G; ++g) {
      const float* f = sc.args.data() + g * nargs + st.arg;
      float* o = sc.o.data() + size_t(g) * HDIM;
      const VF zero{};
      if (st.n == 4) {
        for (int c = 0; c < kC; ++c) {
          VF x = vload<VF>(o + c * kW) * f[0];
          for (uint32_t b = 0; b < 4; ++b)
            x = x + f[1 + b] * (take[b * G + g] ? vload<VF>(sc.v[b] + c * kW) : zero);  // also ef * 0
          vstore(o + c * kW, x);
        }
      } else {
        for (int c = 0; c < kC; ++c) {
          const VF a = vload<VF>(o + c * kW) * f[0];
          const VF t = f[1] * (take[g] ? vload<VF>(sc.v[0] + c * kW) : zero);
          vstore(o + c * kW, a + t);
        }
      }
    }
  }
}

template <uint32_t HDIM> void simd_warp(const DecodeJob& j, WarpStates& states, DecodeDiagnostics* diag,
                                        uint32_t s, uint32_t kvh, uint32_t w) {
  const DecodeParams& p = *j.p;
  const uint32_t L = uint32_t(j.lens[s]), G = j.heads_per_kv;
  const uint32_t start = window_start(L, p.sliding_window);  // tqref/contract.h
  const uint64_t chunk = (uint64_t(L - start) + kDecodeWarps - 1) / kDecodeWarps;
  const uint64_t lo = start + w * chunk, hi = std::min<uint64_t>(start + (w + 1) * chunk, L);
  WarpScratch& sc = warp_scratch();
  sc.m.assign(G, -1e30f);
  sc.l.assign(G, 0.0f);
  sc.take.assign(size_t(4) * G, 0);
  sc.steps.clear();
  sc.args.clear();
  sc.o.assign(size_t(G) * HDIM, 0.0f);
  if (lo < hi) {
    const uint64_t n = hi - lo;
    std::vector<PairedQ<HDIM>> q(G);
    for (uint32_t g = 0; g < G; ++g) {
      const uint16_t* row = j.q + uint64_t(s) * p.q_stride + uint64_t(kvh * G + g) * HDIM;
      for (uint32_t i = 0; i < HDIM / 2; ++i) {
        q[g].e[i] = bf16_to_f32(row[2 * i]);
        q[g].o[i] = bf16_to_f32(row[2 * i + 1]);
      }
    }
    sc.scores.resize(size_t(G) * n);
    for (uint64_t i = 0; i < n; ++i) {
      if (i + kPrefetchAhead < n) prefetch_k<HDIM>(j, simd_slot(j, s, lo + i + kPrefetchAhead), kvh);
      const int64_t slot = simd_slot(j, s, lo + i);
      const PairedK<HDIM> k(j.k + j.geo.k_row_offset(slot) + uint64_t(kvh) * HDIM * 2);
      for (uint32_t g = 0; g < G; ++g) sc.scores[g * n + i] = simd_score<HDIM>(k, q[g], p.inv_sqrt_d);
    }
    simd_factors<HDIM>(j, sc, G, lo, hi);
    simd_accumulate<HDIM>(j, sc, diag, s, kvh, lo, start);
  }
  for (uint32_t g = 0; g < G; ++g) {
    const size_t i = states.index(p, s, kvh * G + g, w);
    states.m[i] = sc.m[g];
    states.l[i] = sc.l[g];
    std::copy_n(sc.o.data() + size_t(g) * HDIM, HDIM, states.o.data() + i * HDIM);
  }
}

void decode_warp(const DecodeJob& j, WarpStates& st, DecodeDiagnostics* diag, uint32_t s,
                 uint32_t kvh, uint32_t w) {
  if (st.hdim == 128)
    simd_warp<128>(j, st, diag, s, kvh, w);
  else
    simd_warp<256>(j, st, diag, s, kvh, w);
}

// The merge tree (strides 4, 2, 1; absorb only if l_o > 0), inv = l_0 > 0 ? 1/l_0 : 0 and the
// bf16 output, as Cta::merge and the end of Cta::run.
template <uint32_t HDIM> void simd_cta(const DecodeJob& j, const WarpStates& st, uint16_t* out,
                                       DecodeHeadDiag* diag, uint32_t s, uint32_t qh) {
  constexpr int kC = HDIM / kW;
  float m[kDecodeWarps], l[kDecodeWarps];
  alignas(64) float o[kDecodeWarps][HDIM];
  for (uint32_t w = 0; w < kDecodeWarps; ++w) {
    const size_t i = st.index(*j.p, s, qh, w);
    m[w] = st.m[i];
    l[w] = st.l[i];
    std::copy_n(st.o.data() + i * HDIM, HDIM, o[w]);
  }
  for (uint32_t stride = kDecodeWarps / 2; stride >= 1; stride /= 2)
    for (uint32_t w = 0; w < stride; ++w) {
      const uint32_t x = w + stride;
      if (!(l[x] > 0.0f)) continue;
      const float mn = fmaxf_cuda(m[w], m[x]);
      const float fa = ex2_eval::expf<float, uint32_t>(j.ex2, m[w] - mn);
      const float fo = ex2_eval::expf<float, uint32_t>(j.ex2, m[x] - mn);
      const float la = l[w] * fa;
      const float lo = l[x] * fo;
      l[w] = la + lo;
      m[w] = mn;
      for (int c = 0; c < kC; ++c)
        vstore(o[w] + c * kW, vload<VF>(o[w] + c * kW) * fa + vload<VF>(o[x] + c * kW) * fo);
    }
  const float inv = l[0] > 0.0f ? 1.0f / l[0] : 0.0f;  // correctly rounded; NaN l -> 0
  for (uint32_t d = 0; d < HDIM; ++d) {
    const float y = o[0][d] * inv;
    out[d] = f32_to_bf16(y);
    if (diag) diag->out_f32[d] = y;
  }
  if (diag) {
    diag->m = m[0];
    diag->l = l[0];
    diag->skip_count = uint32_t(std::count(diag->skipped.begin(), diag->skipped.end(), uint8_t(1)));
  }
}

void decode_cta(const DecodeJob& j, const WarpStates& st, uint16_t* out, DecodeHeadDiag* diag,
                uint32_t s, uint32_t qh) {
  if (st.hdim == 128)
    simd_cta<128>(j, st, out, diag, s, qh);
  else
    simd_cta<256>(j, st, out, diag, s, qh);
}
