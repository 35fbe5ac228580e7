// Decode cases and their linked writer cases. The pair shares one token set: the writer case
// stores every token any sequence uses; the decode case starts from the writer's expected pools
// and poisons everything the decoder must not read:
//   - pool blocks no table entry in use points to, and unused slots of used blocks (the writer's
//     poison background: K +-Inf/NaN, V scale NaN);
//   - slots before every sharing sequence's sliding-window start (K and V);
//   - V groups (slot, kv head) that every reading q head skips (found by a first model run);
//   - block-table entries past the last block in use, and entries of blocks wholly before the
//     window start: out-of-range values (-1, num_blocks, large positive, INT32_MIN);
//   - q row padding (NaN patterns) and the whole output buffer (0xFFFF background).
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cmath>
#include <stdexcept>

#include "cases/builders.h"
#include "cases/fma_groups.h"
#include "cases/mutant_models.h"
#include "cases/threshold_scores.h"
#include "cases/tiny_rescale.h"
#include "cases/values.h"
#include "tqref/contract.h"
#include "tqref/decode.h"
#include "tqref/numeric.h"
#include "tqref/reference.h"

namespace tqref::golden {

namespace {

constexpr uint16_t kOutputPoison = 0xFFFF;  // a NaN the kernel never writes (it writes 0x7FFF)

struct SlotOwner {
  int32_t seq = -1;
  uint32_t pos = 0;
};

// Exact split of a binary32 x into three bf16 values whose sum in any order is exactly x:
// hi = top 8 significant bits, mid = next 8, lo = the rest (truncation keeps signs equal).
void split3(float x, uint16_t out[3]) {
  const uint16_t hi = uint16_t(f32_bits(x) >> 16);
  const float r1 = x - bf16_to_f32(hi);
  const uint16_t mid = uint16_t(f32_bits(r1) >> 16);
  const float r2 = r1 - bf16_to_f32(mid);
  out[0] = hi;
  out[1] = mid;
  out[2] = uint16_t(f32_bits(r2) >> 16);
  if (bf16_to_f32(out[0]) + bf16_to_f32(out[1]) + bf16_to_f32(out[2]) != x ||
      (f32_bits(r2) & 0xFFFF) != 0)
    throw std::logic_error("split3: " + std::to_string(x) + " is not a sum of three bf16");
}

}  // namespace

std::vector<GoldenCase> build_cases(const CaseSpec& spec_in, uint64_t index, uint64_t seed,
                                    const Ex2Profile* ex2) {
  const std::string name = spec_name(spec_in, index);
  if (spec_in.kind == CaseKind::writer) return {build_writer_case(spec_in, name, seed)};
  if (!ex2) throw std::invalid_argument("decode spec " + name + " needs an EX2 profile");
  CaseSpec spec = spec_in;
  const bool thr = spec.dist == Dist::threshold;
  const bool tiny = spec.dist == Dist::tiny_rescale;
  if (thr) {  // singles (chunk 2) and batches (chunk 4) with anchor score 0 at each chunk start
    spec.seq_lens = {16, 32};
    spec.sliding_window = 0;
  }
  if (!is_decode_hdim(spec.head_dim))  // generated cases launch the build head_dim names
    throw std::invalid_argument("decode spec " + name + ": head_dim = " +
                                std::to_string(spec.head_dim) + "; allowed: 128, 256 (HDIM)");
  if (spec.seq_lens.empty()) throw std::invalid_argument("decode spec " + name + ": no sequences");
  if (spec.q_per_kv == 0) throw std::invalid_argument("decode spec " + name + ": q_per_kv = 0");
  Rng rng(seed);
  const FormatTraits& t = traits(spec.format);
  const uint32_t S = uint32_t(spec.seq_lens.size()), B = spec.block_size, H = spec.num_kv_heads,
                 D = spec.head_dim, QH = H * spec.q_per_kv, n = H * D;

  // ---- block tables ------------------------------------------------------------------------
  std::vector<uint32_t> nblk(S);
  uint32_t max_blocks = 0;
  for (uint32_t s = 0; s < S; ++s) {
    if (spec.seq_lens[s] < 0) throw std::invalid_argument("decode spec " + name + ": negative seq_len");
    nblk[s] = (uint32_t(spec.seq_lens[s]) + B - 1) / B;
    max_blocks = std::max(max_blocks, nblk[s]);
  }
  const uint32_t MB = max_blocks + std::max<uint32_t>(spec.spare_table_entries, 1);
  std::vector<std::vector<int32_t>> logical(S);  // logical block -> abstract id (before permuting)
  int32_t next_id = 0;
  for (uint32_t s = 0; s < S; ++s) {
    uint32_t shared = 0;
    if (spec.layout == Layout::shared && s > 0)  // share up to 2 full prefix blocks with seq 0
      shared = std::min({2u, uint32_t(spec.seq_lens[0]) / B, uint32_t(spec.seq_lens[s]) / B});
    for (uint32_t j = 0; j < nblk[s]; ++j)
      logical[s].push_back(j < shared ? logical[0][j] : next_id++);
  }
  const uint32_t NB = uint32_t(next_id) + std::max<uint32_t>(spec.spare_blocks, 1);
  std::vector<int32_t> perm(NB);
  for (uint32_t i = 0; i < NB; ++i) perm[i] = int32_t(i);
  if (spec.layout != Layout::sequential)
    for (uint32_t i = NB; i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
  const int32_t oor[4] = {-1, int32_t(NB), int32_t(NB) + 100000, INT32_MIN};
  std::vector<int32_t> tables(uint64_t(S) * MB);
  for (uint32_t s = 0; s < S; ++s) {
    const uint32_t start = window_start(uint32_t(spec.seq_lens[s]), spec.sliding_window);
    for (uint32_t j = 0; j < MB; ++j) {
      const bool in_use = j < nblk[s] && (j + 1) * B > start;
      tables[uint64_t(s) * MB + j] = in_use ? perm[logical[s][j]] : oor[(s + j) % 4];
    }
  }

  // ---- tokens: one per physical slot any sequence covers in [0, L) --------------------------
  std::vector<SlotOwner> owner(uint64_t(NB) * B);
  std::vector<uint8_t> needed(owner.size(), 0);  // some sequence reads it (position >= start)
  std::vector<int64_t> slots;                     // token order for the writer
  for (uint32_t s = 0; s < S; ++s) {
    const uint32_t L = uint32_t(spec.seq_lens[s]), start = window_start(L, spec.sliding_window);
    for (uint32_t p = 0; p < L; ++p) {
      const int64_t slot = int64_t(perm[logical[s][p / B]]) * B + p % B;
      if (owner[slot].seq < 0) {
        owner[slot] = {int32_t(s), p};
        slots.push_back(slot);
      }
      if (p >= start) needed[slot] = 1;
    }
  }
  if (spec.layout == Layout::shuffled)
    for (size_t i = slots.size(); i > 1; --i) std::swap(slots[i - 1], slots[rng.below(i)]);

  // ---- values --------------------------------------------------------------------------------
  DecodeParams p;
  p.max_blocks_per_seq = MB;
  p.num_q_heads = QH;
  p.num_kv_heads = H;
  p.head_dim = D;
  p.block_size = B;
  p.inv_sqrt_d = thr ? 1.0f : float(1.0 / std::sqrt(double(D)));  // sqrt: correctly rounded
  p.q_stride = QH * D + spec.q_pad;
  p.sliding_window = spec.sliding_window;
  p.num_seqs = S;
  p.hdim = D;
  p.threshold = spec.threshold;
  std::vector<uint16_t> q(uint64_t(S) * p.q_stride);
  for (uint32_t s = 0; s < S; ++s) {
    uint16_t* row = q.data() + uint64_t(s) * p.q_stride;
    if (thr) {  // one-hot: score = k[0] + k[1] + k[2] of the kv head, exactly
      for (uint32_t e = 0; e < QH * D; ++e) row[e] = (e % D) < 3 ? 0x3F80 : 0;
    } else if (tiny) {  // one-hot: score = f32(k[0] * inv_sqrt_d), exactly
      for (uint32_t e = 0; e < QH * D; ++e) row[e] = (e % D) == 0 ? 0x3F80 : 0;
    } else {
      fill_k_row(rng, spec.dist, s, {row, QH * D});
      if (spec.dist == Dist::adversarial_skip)  // q heads of a kv group nearly equal, so they
        for (uint32_t qh = 0; qh < QH; ++qh)    // skip the same positions and V groups get poisoned
          if (qh % spec.q_per_kv)
            for (uint32_t d = 0; d < D; ++d)
              row[qh * D + d] = to_bf16(bf16_to_f32(row[(qh - qh % spec.q_per_kv) * D + d]) *
                                        (1.0 + 0.02 * rng.gaussian()));
    }
    poison_bf16(rng, {row + QH * D, spec.q_pad});
  }
  std::vector<ThresholdProbe> probes;
  if (thr) probes = threshold_probes(*ex2, spec.threshold);
  std::vector<uint16_t> k_rows(slots.size() * n), v_rows(slots.size() * n);
  std::vector<uint16_t> ties_base;
  for (size_t i = 0; i < slots.size(); ++i) {
    const SlotOwner o = owner[slots[i]];
    std::span<uint16_t> kr{k_rows.data() + i * n, n}, vr{v_rows.data() + i * n, n};
    fill_v_row(rng, spec.dist == Dist::special_groups ? Dist::gaussian : spec.dist, o.pos, vr);
    if (spec.dist == Dist::fma_sensitive)
      for (uint32_t gi = 0; gi < n / kGroupSize; ++gi)
        fma_sensitive_group(t, rng, vr.data() + gi * kGroupSize);
    if (thr) {
      // chunk start (pos % chunk == 0): anchor score 0; else probe (cycling through the list,
      // plus an exact tie x = 0); probes get V x1000 so any wrong decision moves the output.
      const uint32_t chunk = spec.seq_lens[o.seq] == 16 ? 2 : 4;
      const uint32_t k = o.pos % chunk;
      const uint32_t which = (o.pos / chunk) * (chunk - 1) + (k ? k - 1 : 0);
      const float x = k == 0 ? 0.0f
                      : which % (probes.size() + 1) == probes.size() ? 0.0f
                                                                     : probes[which % (probes.size() + 1)].x;
      uint16_t parts[3];
      split3(x, parts);
      fill_k_row(rng, Dist::gaussian, o.pos, kr);
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t j = 0; j < 3; ++j) kr[h * D + j] = parts[j];
      if (k)
        for (auto& v : vr) v = to_bf16(bf16_to_f32(v) * 1000.0);
    } else if (tiny) {
      const uint32_t L = uint32_t(spec.seq_lens[o.seq]);
      const bool high = tiny_rescale_high(uint32_t(o.seq), L, spec.sliding_window, o.pos);
      const uint16_t k0 = high ? 0 : tiny_rescale_low_k0(uint32_t(o.seq), D, p.inv_sqrt_d);
      fill_k_row(rng, Dist::gaussian, o.pos, kr);
      for (uint32_t h = 0; h < H; ++h) kr[h * D] = k0;
      for (auto& v : vr) v = high ? 0 : to_bf16(bf16_to_f32(v) * 1000.0);
    } else if (spec.dist == Dist::ties) {
      // rows repeat with period 3 within a sequence: equal scores tie the running max
      const uint64_t base = uint64_t(o.seq) * 3 + o.pos % 3;
      if (ties_base.size() < (base + 1) * n) ties_base.resize((base + 1) * n, 0xFFFF);
      if (ties_base[base * n] == 0xFFFF) fill_k_row(rng, Dist::gaussian, o.pos, {ties_base.data() + base * n, n});
      std::copy_n(ties_base.data() + base * n, n, kr.data());
    } else if (spec.dist == Dist::adversarial_skip) {
      // K = a * q(first q head of the kv group) + noise: scores ~ a * 15 with a in [-1, 1];
      // V x1000 wherever a < 0.5, i.e. at every position that is or nearly is skipped
      const double a = 2.0 * rng.uniform() - 1.0;
      const double c = 15.0 / std::sqrt(double(D));  // score = inv_sqrt_d * a*c*|q|^2 ~ 15 a
      for (uint32_t h = 0; h < H; ++h) {
        const uint16_t* qr = q.data() + uint64_t(o.seq) * p.q_stride + uint64_t(h) * spec.q_per_kv * D;
        for (uint32_t d = 0; d < D; ++d)
          kr[h * D + d] = to_bf16(a * c * double(bf16_to_f32(qr[d])) + 0.05 * rng.gaussian());
      }
      if (a < 0.5)
        for (auto& v : vr) v = to_bf16(bf16_to_f32(v) * 1000.0);
    } else {
      fill_k_row(rng, spec.dist, o.pos, kr);
    }
  }

  // ---- the linked writer case ------------------------------------------------------------------
  CaseSpec wspec = spec;
  wspec.kind = CaseKind::writer;
  GoldenCase wc = build_writer_from_tokens(wspec, name + "__writer", seed, NB, slots, k_rows, v_rows);
  wc.exercises = "writer half of " + name + ": " + wc.exercises;

  GoldenCase dc;
  dc.name = name;
  dc.kind = CaseKind::decode;
  dc.format = spec.format;
  dc.threshold = spec.threshold;
  dc.seed = seed;
  dc.distribution = dist_name(spec.dist);
  dc.linked_case = wc.name;
  DecodeCase& d = dc.d;
  p.v_block_stride_bytes = wc.w.p.v_block_stride_bytes;
  p.v_data_section_bytes = wc.w.p.v_data_section_bytes;
  d.p = p;
  d.num_blocks = NB;
  d.q = q;
  d.block_tables = tables;
  d.seq_lens = spec.seq_lens;
  d.k_init = wc.w.k_expected;
  d.v_init = wc.w.v_expected;
  const CacheGeometry g{H, D, B, NB, p.v_block_stride_bytes, p.v_data_section_bytes};
  Rng prng(seed ^ 0x504F49534F4E0000ull);  // "POISON"
  for (uint64_t slot = 0; slot < owner.size(); ++slot) {
    if (owner[slot].seq < 0 || needed[slot]) continue;  // unused slots hold writer poison already
    poison_k(prng, {d.k_init.data() + g.k_row_offset(int64_t(slot)), g.k_row_bytes()});
    poison_v_codes(prng, {d.v_init.data() + g.v_code_row_offset(int64_t(slot), t.bits), g.v_code_row_bytes(t.bits)});
    poison_v_scales(prng, {d.v_init.data() + g.v_scale_row_offset(int64_t(slot)), g.v_scale_row_bytes()});
  }
  d.out_init.assign(uint64_t(S) * QH * D, kOutputPoison);

  // fp64 references before skipped V is poisoned (the reference reads every window position)
  std::vector<uint16_t> v_values(uint64_t(NB) * B * n, 0);  // writer's bf16 V, laid out like K
  for (size_t i = 0; i < slots.size(); ++i)
    std::copy_n(v_rows.data() + i * n, n, v_values.data() + uint64_t(slots[i]) * n);
  d.diag.ref_dequantised = reference_attention(spec.format, q, d.k_init, d.v_init, v_values, tables,
                                               d.seq_lens, p, ReferenceV::dequantised);
  d.diag.ref_unquantised = reference_attention(spec.format, q, d.k_init, d.v_init, v_values, tables,
                                               d.seq_lens, p, ReferenceV::unquantised);

  // first run: which positions skip
  DecodeDiagnostics diag;
  std::vector<uint16_t> out1(d.out_init);
  paged_decode_model(spec.format, q, d.k_init, d.v_init, out1, tables, d.seq_lens, p, *ex2, &diag);
  // V group (slot, kv head) needed when some q head of that kv head reads it unskipped
  std::vector<uint8_t> v_needed(owner.size() * H, 0);
  for (uint32_t s = 0; s < S; ++s) {
    const uint32_t L = uint32_t(d.seq_lens[s]), start = window_start(L, p.sliding_window);
    for (uint32_t qh = 0; qh < QH; ++qh) {
      const DecodeHeadDiag& hd = diag.heads[uint64_t(s) * QH + qh];
      for (uint32_t pos = start; pos < L; ++pos) {
        if (hd.skipped[pos - start]) continue;
        const int64_t slot = int64_t(tables[uint64_t(s) * MB + pos / B]) * B + pos % B;
        v_needed[uint64_t(slot) * H + qh / spec.q_per_kv] = 1;
      }
    }
  }
  uint64_t poisoned_groups = 0;
  const uint32_t gph = D / kGroupSize;  // groups per head
  for (uint64_t slot = 0; slot < owner.size(); ++slot) {
    if (!needed[slot]) continue;
    for (uint32_t h = 0; h < H; ++h) {
      if (v_needed[slot * H + h]) continue;
      poison_v_codes(prng, {d.v_init.data() + g.v_code_row_offset(int64_t(slot), t.bits) +
                                uint64_t(h) * gph * t.group_code_bytes,
                            uint64_t(gph) * t.group_code_bytes});
      poison_v_scales(prng, {d.v_init.data() + g.v_scale_row_offset(int64_t(slot)) + uint64_t(h) * gph, gph});
      ++poisoned_groups;
    }
  }
  // second run on the poisoned pools: the model must not have read any poisoned byte
  DecodeDiagnostics diag2;
  d.out_expected = d.out_init;
  paged_decode_model(spec.format, q, d.k_init, d.v_init, d.out_expected, tables, d.seq_lens, p, *ex2, &diag2);
  if (d.out_expected != out1)
    throw std::logic_error(name + ": decode output changed after poisoning skipped V groups");

  DecodeDiagData& x = d.diag;
  x.skip_offsets.push_back(0);
  for (const DecodeHeadDiag& hd : diag2.heads) {
    x.skip_mask.insert(x.skip_mask.end(), hd.skipped.begin(), hd.skipped.end());
    x.skip_offsets.push_back(x.skip_mask.size());
    x.skip_count.push_back(hd.skip_count);
    x.m.push_back(hd.m);
    x.l.push_back(hd.l);
    std::vector<float> of = hd.out_f32;
    of.resize(D, 0.0f);  // rows of L == 0 sequences: no output, zeros
    x.out_f32.insert(x.out_f32.end(), of.begin(), of.end());
  }
  if (thr) {  // the probes must skip exactly when their factor is <= THRESH (batch and single)
    for (uint32_t s = 0; s < S; ++s)
      for (uint32_t pos = 0; pos < uint32_t(d.seq_lens[s]); ++pos) {
        const uint32_t chunk = d.seq_lens[s] == 16 ? 2 : 4, k = pos % chunk;
        if (!k) continue;
        const uint32_t which = (pos / chunk) * (chunk - 1) + k - 1;
        const bool tie = which % (probes.size() + 1) == probes.size();
        const bool want_skip = !tie && !(probes[which % (probes.size() + 1)].factor > spec.threshold);
        if (x.skip_mask[x.skip_offsets[uint64_t(s) * QH] + pos] != want_skip)
          throw std::logic_error(name + ": threshold probe at seq " + std::to_string(s) + " pos " +
                                 std::to_string(pos) + " skipped != expected");
      }
  }
  uint64_t skipped = 0;
  for (uint32_t c : x.skip_count) skipped += c;
  std::string ex = "decode: " + std::to_string(S) + " seqs, " + std::to_string(slots.size()) +
                   " tokens, " + std::to_string(skipped) + " skipped (row, position) pairs, " +
                   std::to_string(poisoned_groups) + " poisoned skipped V groups, " +
                   layout_name(spec.layout) + " blocks, window " + std::to_string(spec.sliding_window);
  if (thr) {
    bool exact = false;
    for (const auto& pr : probes) exact |= pr.rank == 0;
    ex += exact ? ", factors at THRESH and the nearest reachable values around it"
                : ", factor exactly THRESH unreachable under this EX2 profile: nearest reachable below/above";
    ex += "; probes (rank: x -> factor bits):";
    for (const auto& pr : probes) {
      char b[80];
      std::snprintf(b, sizeof b, " %+d: %.9g -> 0x%08x", pr.rank, double(pr.x), f32_bits(pr.factor));
      ex += b;
    }
    char tb[40];
    std::snprintf(tb, sizeof tb, " (THRESH 0x%08x)", f32_bits(spec.threshold));
    ex += tb;
  }
  if (thr || tiny) {  // teeth: expected output elements that the targeted mutant changes
    const uint64_t changed =
        count_differing(thr ? decode_output_thresh_ge(dc, *ex2) : decode_output_expf_no_split(dc, *ex2),
                        d.out_expected);
    ex += "; " + std::to_string(changed) + " output elements change under " +
          (thr ? "V used when factor >= THRESH (mutant 5)" : "EXPF without the split below y = -126 (mutant 14)");
  }
  dc.exercises = ex;
  return {std::move(wc), std::move(dc)};
}

}  // namespace tqref::golden
