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
#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>

#include "cases/builders.h"
#include "cases/finish_decode.h"
#include "cases/fma_groups.h"
#include "cases/large_pool.h"
#include "cases/l_tie.h"
#include "cases/mutant_models.h"
#include "cases/observe.h"
#include "cases/step_groups.h"
#include "cases/threshold_scores.h"
#include "cases/tiny_rescale.h"
#include "cases/values.h"
#include "tqref/contract.h"
#include "tqref/decode.h"
#include "tqref/numeric.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

struct SlotOwner {
  int32_t seq = -1;
  uint32_t pos = 0;
};

// Where a decode spec's tokens live: block tables over a (permuted) pool, and for every physical
// slot the (sequence, position) that owns it.
struct Pool {
  uint32_t num_blocks = 0, max_blocks = 0;  // NB, MB
  std::vector<int32_t> tables;              // [S, MB]
  std::vector<SlotOwner> owner;             // [NB * B]: first sequence covering the slot
  std::vector<uint8_t> needed;              // [NB * B]: some sequence reads it (position >= start)
  std::vector<int64_t> slots;               // token order for the writer
};

// Specs whose q is 1.0 on dims 0..2 of every head and whose inv_sqrt_d is 1.
bool one_hot3(Dist d) { return d == Dist::threshold || d == Dist::l_tie; }

// The spec as built: threshold specs get their fixed sequences; checks what the builder needs.
CaseSpec decode_spec(const CaseSpec& in, const std::string& name) {
  CaseSpec spec = in;
  // Threshold specs: singles (chunk 2) and batches (chunk 4) with anchor score 0 at each chunk start.
  spec.seq_lens = built_seq_lens(in);
  if (spec.dist == Dist::threshold) spec.sliding_window = 0;
  if (spec.dist == Dist::l_tie)
    for (int32_t L : spec.seq_lens)
      if (L != int32_t(kLTieLength) || spec.sliding_window != 0 ||
          (spec.block_size % 4 != 0 && spec.block_size > 3))
        throw std::invalid_argument("decode spec " + name + ": l_tie needs seq_lens of " +
                                    std::to_string(kLTieLength) +
                                    ", sliding_window 0 and a block_size of 1 to 3 or a multiple of 4");
  // Generated cases launch the build the engine's dispatch picks (engine_hdim); a head_dim below
  // it is outside the contract and follows docs/spec.md section 5.1.
  if (spec.head_dim % kGroupSize != 0 || check_engine_head_dim(spec.head_dim))
    throw std::invalid_argument("decode spec " + name + ": head_dim = " + std::to_string(spec.head_dim) +
                                "; allowed: a multiple of 16 up to 256 (the decoder builds' HDIM)");
  if (spec.seq_lens.empty()) throw std::invalid_argument("decode spec " + name + ": no sequences");
  if (spec.q_per_kv == 0) throw std::invalid_argument("decode spec " + name + ": q_per_kv = 0");
  for (int32_t L : spec.seq_lens)
    if (L < 0) throw std::invalid_argument("decode spec " + name + ": negative seq_len");
  return spec;
}

// Block tables: logical blocks (shared prefixes for Layout::shared) mapped through a permutation
// of the pool; entries past the last block in use and wholly before the window start hold
// out-of-range values. Then one token per physical slot any sequence covers in [0, L).
Pool lay_out_pool(const CaseSpec& spec, Rng& rng) {
  const uint32_t S = uint32_t(spec.seq_lens.size()), B = spec.block_size;
  std::vector<uint32_t> nblk(S);
  uint32_t max_blocks = 0;
  for (uint32_t s = 0; s < S; ++s) {
    nblk[s] = (uint32_t(spec.seq_lens[s]) + B - 1) / B;
    max_blocks = std::max(max_blocks, nblk[s]);
  }
  Pool pool;
  const uint32_t MB = pool.max_blocks = max_blocks + std::max<uint32_t>(spec.spare_table_entries, 1);
  std::vector<std::vector<int32_t>> logical(S);  // logical block -> abstract id (before permuting)
  int32_t next_id = 0;
  for (uint32_t s = 0; s < S; ++s) {
    uint32_t shared = 0;
    if (spec.layout == Layout::shared && s > 0)  // share up to 2 full prefix blocks with seq 0
      shared = std::min({2u, uint32_t(spec.seq_lens[0]) / B, uint32_t(spec.seq_lens[s]) / B});
    for (uint32_t j = 0; j < nblk[s]; ++j)
      logical[s].push_back(j < shared ? logical[0][j] : next_id++);
  }
  const uint32_t NB = pool.num_blocks = uint32_t(next_id) + std::max<uint32_t>(spec.spare_blocks, 1);
  std::vector<int32_t> perm(NB);
  for (uint32_t i = 0; i < NB; ++i) perm[i] = int32_t(i);
  if (spec.layout != Layout::sequential)
    for (uint32_t i = NB; i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
  const int32_t oor[4] = {-1, int32_t(NB), int32_t(NB) + 100000, INT32_MIN};
  pool.tables.resize(uint64_t(S) * MB);
  for (uint32_t s = 0; s < S; ++s) {
    const uint32_t start = window_start(uint32_t(spec.seq_lens[s]), spec.sliding_window);
    for (uint32_t j = 0; j < MB; ++j) {
      const bool in_use = j < nblk[s] && (j + 1) * B > start;
      pool.tables[uint64_t(s) * MB + j] = in_use ? perm[logical[s][j]] : oor[(s + j) % 4];
    }
  }
  pool.owner.resize(uint64_t(NB) * B);
  pool.needed.assign(pool.owner.size(), 0);
  for (uint32_t s = 0; s < S; ++s) {
    const uint32_t L = uint32_t(spec.seq_lens[s]), start = window_start(L, spec.sliding_window);
    for (uint32_t p = 0; p < L; ++p) {
      const int64_t slot = int64_t(perm[logical[s][p / B]]) * B + p % B;
      if (pool.owner[slot].seq < 0) {
        pool.owner[slot] = {int32_t(s), p};
        pool.slots.push_back(slot);
      }
      if (p >= start) pool.needed[slot] = 1;
    }
  }
  if (spec.layout == Layout::shuffled)
    for (size_t i = pool.slots.size(); i > 1; --i) std::swap(pool.slots[i - 1], pool.slots[rng.below(i)]);
  return pool;
}

DecodeParams decode_params(const CaseSpec& spec, uint32_t max_blocks) {
  const uint32_t H = spec.num_kv_heads, D = spec.head_dim, QH = H * spec.q_per_kv;
  DecodeParams p;
  p.max_blocks_per_seq = max_blocks;
  p.num_q_heads = QH;
  p.num_kv_heads = H;
  p.head_dim = D;
  p.block_size = spec.block_size;
  // sqrt is correctly rounded; threshold and l_tie specs score k[0] + k[1] + k[2] unscaled
  p.inv_sqrt_d = one_hot3(spec.dist) ? 1.0f : float(1.0 / std::sqrt(double(D)));
  p.q_stride = QH * D + spec.q_pad;
  p.sliding_window = spec.sliding_window;
  p.num_seqs = uint32_t(spec.seq_lens.size());
  p.hdim = engine_hdim(D);  // head_dim < HDIM: outside the contract (docs/spec.md section 5.1)
  p.threshold = spec.threshold;
  return p;
}

// bf16 2^64 and 1.5 * 2^63 (overflow_pair): 2^64 * 2^64 overflows binary32, 2^64 * 1.5 * 2^63
// = 1.5 * 2^127 does not.
constexpr uint16_t kBf16Pow64 = 0x5F80, kBf16OneAndHalfPow63 = 0x5F40;

// q rows [S, q_stride]: one-hot for threshold, l_tie and tiny_rescale specs (the score is then
// exact), nearly equal heads within a kv group for adversarial_skip; row padding poisoned.
std::vector<uint16_t> make_queries(const CaseSpec& spec, const DecodeParams& p, Rng& rng) {
  const uint32_t D = p.head_dim, QH = p.num_q_heads;
  std::vector<uint16_t> q(uint64_t(p.num_seqs) * p.q_stride);
  for (uint32_t s = 0; s < p.num_seqs; ++s) {
    uint16_t* row = q.data() + uint64_t(s) * p.q_stride;
    if (one_hot3(spec.dist)) {  // score = k[0] + k[1] + k[2] of the kv head, exactly
      for (uint32_t e = 0; e < QH * D; ++e) row[e] = (e % D) < 3 ? 0x3F80 : 0;
    } else if (spec.dist == Dist::tiny_rescale || spec.dist == Dist::subnormal_rescale) {
      // score = f32(k[0] * inv_sqrt_d), exactly
      for (uint32_t e = 0; e < QH * D; ++e) row[e] = (e % D) == 0 ? 0x3F80 : 0;
    } else {
      fill_k_row(rng, spec.dist, s, {row, QH * D});
      if (spec.dist == Dist::overflow_pair)
        for (uint32_t qh = 0; qh < QH; ++qh) {
          row[qh * D] = kBf16Pow64;
          row[qh * D + 1] = kBf16Pow64 ^ 0x8000u;
        }
      // q heads of a kv group nearly equal: adversarial_skip's skip the same positions and V
      // groups get poisoned; rising_scores' scores rise in every head
      if (spec.dist == Dist::adversarial_skip || spec.dist == Dist::rising_scores)
        for (uint32_t qh = 0; qh < QH; ++qh)
          if (qh % spec.q_per_kv)
            for (uint32_t d = 0; d < D; ++d)
              row[qh * D + d] = to_bf16(bf16_to_f32(row[(qh - qh % spec.q_per_kv) * D + d]) *
                                        (1.0 + 0.02 * rng.gaussian()));
    }
    poison_bf16(rng, {row + QH * D, spec.q_pad});
  }
  return q;
}

// Threshold probe `which` of a chunk: the probe list cycles with one exact tie (x = 0) after it.
bool is_tie(uint32_t which, const std::vector<ThresholdProbe>& probes) {
  return which % (probes.size() + 1) == probes.size();
}

// Threshold specs: chunk start (pos % chunk == 0) anchors score 0; the other positions probe
// (cycling through the list, plus an exact tie x = 0) and get V x1000 so that any wrong
// decision moves the output.
void threshold_row(const CaseSpec& spec, const DecodeParams& p, SlotOwner o,
                   const std::vector<ThresholdProbe>& probes, Rng& rng, std::span<uint16_t> kr,
                   std::span<uint16_t> vr) {
  const uint32_t chunk = spec.seq_lens[o.seq] == 16 ? 2 : 4;
  const uint32_t k = o.pos % chunk;
  const uint32_t which = (o.pos / chunk) * (chunk - 1) + (k ? k - 1 : 0);
  const float x = k == 0 || is_tie(which, probes) ? 0.0f : probes[which % (probes.size() + 1)].x;
  uint16_t parts[3];
  split3(x, parts);
  fill_k_row(rng, Dist::gaussian, o.pos, kr);
  for (uint32_t h = 0; h < p.num_kv_heads; ++h)
    for (uint32_t j = 0; j < 3; ++j) kr[h * p.head_dim + j] = parts[j];
  if (k)
    for (auto& v : vr) v = to_bf16(bf16_to_f32(v) * 1000.0);
}

// K = a * q(first q head of the kv group) + noise: scores ~ a * 15 with a in [-1, 1]; V x1000
// wherever a < 0.5, i.e. at every position that is or nearly is skipped.
void adversarial_row(const CaseSpec& spec, const DecodeParams& p, SlotOwner o,
                     const std::vector<uint16_t>& q, Rng& rng, std::span<uint16_t> kr,
                     std::span<uint16_t> vr) {
  const uint32_t D = p.head_dim;
  const double a = 2.0 * rng.uniform() - 1.0;
  const double c = 15.0 / std::sqrt(double(D));  // score = inv_sqrt_d * a*c*|q|^2 ~ 15 a
  for (uint32_t h = 0; h < p.num_kv_heads; ++h) {
    const uint16_t* qr = q.data() + uint64_t(o.seq) * p.q_stride + uint64_t(h) * spec.q_per_kv * D;
    for (uint32_t d = 0; d < D; ++d)
      kr[h * D + d] = to_bf16(a * c * double(bf16_to_f32(qr[d])) + 0.05 * rng.gaussian());
  }
  if (a < 0.5)
    for (auto& v : vr) v = to_bf16(bf16_to_f32(v) * 1000.0);
}

// Dist::cancelling: the sequence's base rows k and v (drawn once per sequence into `base`, [2n]),
// then this position's class: (3k, 0) a higher score with nothing to add, (k, v) and (k, -v)
// equal factors of opposite contributions, (k/4 + noise, 0) a lower score.
void cancelling_row(SlotOwner o, uint32_t n, Rng& rng, std::vector<uint16_t>& base,
                    std::span<uint16_t> kr, std::span<uint16_t> vr) {
  const uint64_t at = uint64_t(o.seq) * 2 * n;
  if (base.size() < at + 2 * n) base.resize(at + 2 * n, 0xFFFF);
  if (base[at] == 0xFFFF) {
    fill_k_row(rng, Dist::gaussian, o.pos, {base.data() + at, n});
    fill_v_row(rng, Dist::gaussian, o.pos, {base.data() + at + n, n});
  }
  const uint16_t* k = base.data() + at;
  const uint16_t* v = k + n;
  const uint64_t cls = rng.below(4);
  for (uint32_t e = 0; e < n; ++e) {
    const double ke = bf16_to_f32(k[e]);
    kr[e] = cls == 0 ? to_bf16(3.0 * ke) : cls == 3 ? to_bf16(0.25 * ke + 0.1 * rng.gaussian()) : k[e];
    vr[e] = cls == 1 ? v[e] : cls == 2 ? uint16_t(v[e] ^ 0x8000u) : uint16_t(0);
  }
}

// The K and V rows of every token, in the writer's token order [tokens, H*D] each.
void fill_token_rows(const CaseSpec& spec, const DecodeParams& p, const Pool& pool,
                     const std::vector<uint16_t>& q, const std::vector<ThresholdProbe>& probes,
                     const LTiePlan& tie, Rng& rng, std::vector<uint16_t>& k_rows,
                     std::vector<uint16_t>& v_rows) {
  const uint32_t H = p.num_kv_heads, D = p.head_dim, n = H * D;
  const FormatTraits& t = traits(spec.format);
  k_rows.assign(pool.slots.size() * n, 0);
  v_rows.assign(pool.slots.size() * n, 0);
  std::vector<uint16_t> base_rows;  // per-sequence rows of ties and cancelling
  for (size_t i = 0; i < pool.slots.size(); ++i) {
    const SlotOwner o = pool.owner[pool.slots[i]];
    std::span<uint16_t> kr{k_rows.data() + i * n, n}, vr{v_rows.data() + i * n, n};
    fill_v_row(rng, spec.dist == Dist::special_groups ? Dist::gaussian : spec.dist, o.pos, vr);
    craft_v_row(spec.dist, t, rng, vr);
    if (spec.dist == Dist::threshold) {
      threshold_row(spec, p, o, probes, rng, kr, vr);
    } else if (spec.dist == Dist::tiny_rescale || spec.dist == Dist::subnormal_rescale) {
      const bool tiny = spec.dist == Dist::tiny_rescale;
      const uint32_t L = uint32_t(spec.seq_lens[o.seq]);
      const bool high = tiny_rescale_high(uint32_t(o.seq), L, spec.sliding_window, o.pos);
      const uint16_t k0 = high ? 0
                          : tiny ? tiny_rescale_low_k0(uint32_t(o.seq), D, p.inv_sqrt_d)
                                 : subnormal_rescale_low_k0(uint32_t(o.seq), D, p.inv_sqrt_d);
      fill_k_row(rng, Dist::gaussian, o.pos, kr);
      for (uint32_t h = 0; h < H; ++h) kr[h * D] = k0;
      const double scale = tiny ? 1000.0 : double(kSubnormalRescaleV);
      for (auto& v : vr) v = high ? 0 : to_bf16(bf16_to_f32(v) * scale);
    } else if (spec.dist == Dist::ties) {
      // rows repeat with period 3 within a sequence: equal scores tie the running max
      const uint64_t base = uint64_t(o.seq) * 3 + o.pos % 3;
      if (base_rows.size() < (base + 1) * n) base_rows.resize((base + 1) * n, 0xFFFF);
      if (base_rows[base * n] == 0xFFFF) fill_k_row(rng, Dist::gaussian, o.pos, {base_rows.data() + base * n, n});
      std::copy_n(base_rows.data() + base * n, n, kr.data());
    } else if (spec.dist == Dist::adversarial_skip) {
      adversarial_row(spec, p, o, q, rng, kr, vr);
    } else if (spec.dist == Dist::rising_scores) {
      // rising in even sequences, falling in odd ones (the merge's partner warp then has the
      // lower maximum)
      const double L = spec.seq_lens[o.seq], at = o.seq % 2 ? L - o.pos : o.pos;
      const double a = 0.3 * at / L;
      for (uint32_t h = 0; h < H; ++h) {
        const uint16_t* qr = q.data() + uint64_t(o.seq) * p.q_stride + uint64_t(h) * spec.q_per_kv * D;
        for (uint32_t d = 0; d < D; ++d)
          kr[h * D + d] = to_bf16(a * double(bf16_to_f32(qr[d])) + 0.01 * rng.gaussian());
      }
      // every position of a sequence the same V row of midpoint groups (where the format has them)
      for (uint32_t g = 0; g < n / kGroupSize; ++g) {
        uint16_t x[kGroupSize];
        if (midpoint_group(t, uint64_t(o.seq) * 131 + g, x)) std::copy_n(x, kGroupSize, &vr[g * kGroupSize]);
      }
    } else if (spec.dist == Dist::l_tie) {
      l_tie_row(tie, uint32_t(o.seq), o.pos, D, kr.data(), vr.data(), n);
    } else if (spec.dist == Dist::cancelling) {
      cancelling_row(o, n, rng, base_rows, kr, vr);
    } else if (spec.dist == Dist::overflow_pair && o.pos == uint32_t(spec.seq_lens[o.seq]) / 2) {
      // q0*k0 + q1*k1 with q = (2^64, -2^64): (+Inf) + (-1.5 * 2^127) in even sequences,
      // (-1.5 * 2^127) + (+Inf) in odd ones; the exact sum is 2^126
      const bool first = o.seq % 2 == 0;
      std::fill(kr.begin(), kr.end(), uint16_t(0));
      for (uint32_t h = 0; h < H; ++h) {
        kr[h * D] = first ? kBf16Pow64 : uint16_t(kBf16OneAndHalfPow63 ^ 0x8000u);
        kr[h * D + 1] = first ? kBf16OneAndHalfPow63 : uint16_t(kBf16Pow64 ^ 0x8000u);
      }
    } else {
      fill_k_row(rng, spec.dist, o.pos, kr);
    }
  }
}

// What finish_decode_case needs from the pool: the writer's V by slot, and which slots are read.
void describe_slots(const Pool& pool, const std::vector<uint16_t>& v_rows, uint32_t n,
                    DecodeInputs& in) {
  in.v_values.assign(pool.owner.size() * n, 0);
  for (size_t i = 0; i < pool.slots.size(); ++i)
    std::copy_n(v_rows.data() + i * n, n, in.v_values.data() + uint64_t(pool.slots[i]) * n);
  for (uint64_t slot = 0; slot < pool.owner.size(); ++slot) {
    if (pool.needed[slot]) in.read_slots.push_back(int64_t(slot));
    else if (pool.owner[slot].seq >= 0) in.unread_slots.push_back(int64_t(slot));
  }
}

// The probes must skip exactly when their factor is <= THRESH (batch and single).
void check_threshold_probes(const GoldenCase& dc, const std::vector<ThresholdProbe>& probes) {
  const DecodeCase& d = dc.d;
  const DecodeDiagData& x = d.diag;
  for (uint32_t s = 0; s < d.p.num_seqs; ++s)
    for (uint32_t pos = 0; pos < uint32_t(d.seq_lens[s]); ++pos) {
      const uint32_t chunk = d.seq_lens[s] == 16 ? 2 : 4, k = pos % chunk;
      if (!k) continue;
      const uint32_t which = (pos / chunk) * (chunk - 1) + k - 1;
      const bool want_skip =
          !is_tie(which, probes) && !(probes[which % (probes.size() + 1)].factor > dc.threshold);
      if (x.skip_mask[x.skip_offsets[uint64_t(s) * d.p.num_q_heads] + pos] != want_skip)
        throw std::logic_error(dc.name + ": threshold probe at seq " + std::to_string(s) + " pos " +
                               std::to_string(pos) + " skipped != expected");
    }
}

// Every row's l must be the plan's (else the construction no longer holds); the `exercises` text
// of an l_tie case: both l and how many output elements each FMA of the tie's product changes.
std::string check_l_tie(const GoldenCase& dc, const LTiePlan& tie, const Ex2Profile& ex2) {
  for (float l : dc.d.diag.l)
    if (f32_bits(l) != f32_bits(tie.l))
      throw std::logic_error(dc.name + ": l_tie row l " + std::to_string(l) + " != planned " +
                             std::to_string(tie.l));
  char b[120];
  std::snprintf(b, sizeof b, "; l = 0x%08x, 0x%08x with the tie's product fused or one ulp down;",
                f32_bits(tie.l), f32_bits(tie.l_variant));
  std::string ex = b;
  const std::vector<uint8_t> expected = expected_bytes(dc);
  for (const char* site : {"fma:batch-l", "fma:single-l", "fma:merge-l-ab", "fma:merge-l-cd"}) {
    const std::vector<uint8_t> got = run_variant(dc, parse_variant(site), &ex2);
    uint64_t changed = 0;
    for (size_t i = 0; i + 1 < expected.size(); i += 2)
      changed += got[i] != expected[i] || got[i + 1] != expected[i + 1];
    if (!changed) continue;
    ex += ' ';
    ex += std::to_string(changed);
    ex += " output elements change under ";
    ex += site;
  }
  return ex;
}

// The probes of a threshold case, for its `exercises` text.
std::string describe_probes(const std::vector<ThresholdProbe>& probes, float threshold) {
  bool exact = false;
  for (const auto& pr : probes) exact |= pr.rank == 0;
  std::string ex = exact ? ", factors at THRESH and the nearest reachable values around it"
                         : ", factor exactly THRESH unreachable under this EX2 profile: nearest reachable below/above";
  ex += "; probes (rank: x -> factor bits):";
  for (const auto& pr : probes) {
    char b[80];
    std::snprintf(b, sizeof b, " %+d: %.9g -> 0x%08x", pr.rank, double(pr.x), f32_bits(pr.factor));
    ex += b;
  }
  char tb[40];
  std::snprintf(tb, sizeof tb, " (THRESH 0x%08x)", f32_bits(threshold));
  return ex + tb;
}

std::string decode_exercises(const CaseSpec& spec, const GoldenCase& dc, size_t tokens,
                             const DecodeStats& st, const std::vector<ThresholdProbe>& probes,
                             const Ex2Profile& ex2) {
  const bool thr = spec.dist == Dist::threshold, tiny = spec.dist == Dist::tiny_rescale;
  std::string ex = "decode: " + std::to_string(spec.seq_lens.size()) + " seqs, " + std::to_string(tokens) +
                   " tokens, " + std::to_string(st.skipped) + " skipped (row, position) pairs, " +
                   std::to_string(st.poisoned_groups) + " poisoned skipped V groups, " +
                   layout_name(spec.layout) + " blocks, window " + std::to_string(spec.sliding_window);
  if (thr) ex += describe_probes(probes, spec.threshold);
  if (thr || tiny) {  // teeth: expected output elements that the targeted mutant changes
    const uint64_t changed =
        count_differing(thr ? decode_output_thresh_ge(dc, ex2) : decode_output_expf_no_split(dc, ex2),
                        dc.d.out_expected);
    ex += "; " + std::to_string(changed) + " output elements change under " +
          (thr ? "V used when factor >= THRESH (mutant 5)" : "EXPF without the split below y = -126 (mutant 14)");
  }
  if (spec.dist == Dist::subnormal_rescale)  // what tells ftz from mutant 14 (its whole point)
    ex += "; " + std::to_string(count_differing(decode_output_variant(dc, ex2, "ftz"), dc.d.out_expected)) +
          " output elements change under ftz, " +
          std::to_string(count_differing(decode_output_expf_no_split(dc, ex2), dc.d.out_expected)) +
          " under EXPF without the split (mutant 14)";
  const DecodeParams& p = dc.d.p;
  if (!decode_in_contract(p.head_dim, p.hdim))
    ex += "; head_dim " + std::to_string(p.head_dim) + " launched on the HDIM=" + std::to_string(p.hdim) +
          " build (the engine's dispatch): outside the contract, expected bits by docs/spec.md section 5.1";
  if (!spec.label.empty()) ex += "; attention geometry of " + spec.label + " (data/models/attention.yaml)";
  return ex;
}

}  // namespace

namespace {

std::vector<GoldenCase> build_once(const CaseSpec& spec_in, uint64_t index, uint64_t seed,
                                   const Ex2Profile* ex2) {
  const std::string name = spec_name(spec_in, index);
  if (spec_in.kind == CaseKind::writer) {
    // push_back, not an initializer list: its elements are const and would be copied, holding
    // the case twice at the peak (docs/conformance/2026-12-05-golden-20gb-vm.md).
    std::vector<GoldenCase> w;
    w.push_back(build_writer_case(spec_in, name, seed));
    if (!spec_in.label.empty()) w[0].exercises += "; attention geometry of " + spec_in.label + " (data/models/attention.yaml)";
    place_in_large_pool(spec_in, w);
    return w;
  }
  if (!ex2) throw std::invalid_argument("decode spec " + name + " needs an EX2 profile");
  const CaseSpec spec = decode_spec(spec_in, name);
  Rng rng(seed);
  const Pool pool = lay_out_pool(spec, rng);
  DecodeInputs in;
  in.p = decode_params(spec, pool.max_blocks);
  in.q = make_queries(spec, in.p, rng);
  std::vector<ThresholdProbe> probes;
  if (spec.dist == Dist::threshold) probes = threshold_probes(*ex2, spec.threshold);
  std::vector<uint16_t> k_rows, v_rows;
  const LTiePlan tie = spec.dist == Dist::l_tie ? l_tie_plan(traits(spec.format), *ex2) : LTiePlan{};
  fill_token_rows(spec, in.p, pool, in.q, probes, tie, rng, k_rows, v_rows);

  CaseSpec wspec = spec;  // the linked writer case stores every token any sequence uses
  wspec.kind = CaseKind::writer;
  GoldenCase wc = build_writer_from_tokens(wspec, name + "__writer", seed, pool.num_blocks, pool.slots,
                                           k_rows, v_rows);
  wc.exercises = "writer half of " + name + ": " + wc.exercises;

  in.name = name;
  in.distribution = dist_name(spec.dist);
  in.seed = seed;
  in.num_blocks = pool.num_blocks;
  in.block_tables = pool.tables;
  in.seq_lens = spec.seq_lens;
  describe_slots(pool, v_rows, in.p.num_kv_heads * in.p.head_dim, in);
  DecodeStats st;
  GoldenCase dc = finish_decode_case(std::move(in), wc, *ex2, &st);
  if (spec.dist == Dist::threshold) check_threshold_probes(dc, probes);
  dc.exercises = decode_exercises(spec, dc, pool.slots.size(), st, probes, *ex2);
  if (spec.dist == Dist::l_tie) dc.exercises += check_l_tie(dc, tie, *ex2);
  std::vector<GoldenCase> pair;  // moved in, not copied from an initializer list (as above)
  pair.reserve(2);
  pair.push_back(std::move(wc));
  pair.push_back(std::move(dc));
  place_in_large_pool(spec, pair);
  return pair;
}

// What a searched spec looks for: coverage entries it must observe (its `observe` list, or every
// entry of its kernel), or with `tell_apart` the pairs of those variants it must tell apart.
struct SearchGoal {
  std::vector<Variant> variants;
  std::vector<std::string> targets;  // entry names, or "a|b" pairs
  bool pairs = false;

  explicit SearchGoal(const CaseSpec& spec) : pairs(!spec.tell_apart.empty()) {
    if (pairs || !spec.observe.empty())
      for (const std::string& n : pairs ? spec.tell_apart : spec.observe) variants.push_back(parse_variant(n));
    else
      variants = coverage_entries(spec.kind);
    if (pairs) {
      targets = rival_pairs(variants);
    } else {
      for (const Variant& v : variants) targets.push_back(v.name);
    }
  }
  std::vector<std::string> reached(const GoldenCase& c, const Ex2Profile* ex2) const {
    return pairs ? told_apart_pairs(c, variants, ex2) : observed_entries(c, variants, ex2);
  }
  std::string summary(size_t reached, const std::string& missing) const {
    const std::string n = std::to_string(reached) + " of " + std::to_string(targets.size());
    if (pairs) return "tells apart " + n + " rival pairs" + (missing.empty() ? "" : "; not told apart: " + missing);
    return "observes " + n + " entries" + (missing.empty() ? "" : "; not observed: " + missing);
  }
};

// One attempt of a search: its cases and what they reach, or the exception building them threw.
struct Attempt {
  std::vector<GoldenCase> cases;
  std::vector<std::string> seen;
  std::exception_ptr error;
};

// A searched spec (CaseSpec::search_attempts): seeds derived from the case seed in turn; the
// case that reaches every target of its goal, else the one that reaches most (the first of equals).
// Attempts after the first run kSearchRound at a time as OpenMP tasks (idle threads of the
// generator's parallel region take them; outside one they run in turn) and are judged in order,
// so the result, an exception included, is the one-at-a-time search's for any thread count.
std::vector<GoldenCase> build_searched(const CaseSpec& spec, uint64_t index, uint64_t seed,
                                       const Ex2Profile* ex2) {
  const SearchGoal goal(spec);
  std::vector<uint64_t> seeds(spec.search_attempts);
  uint64_t state = seed;
  for (uint32_t a = 0; a < spec.search_attempts; ++a)
    seeds[a] = a == 0 ? seed : splitmix64(state) & 0x7FFFFFFFFFFFFFFFull;
  std::vector<GoldenCase> best;
  std::vector<std::string> best_seen;
  uint32_t best_attempt = 0;
  bool done = false;
  for (uint32_t a0 = 0, n = 1; a0 < spec.search_attempts && !done; a0 += n) {
    n = std::min(a0 == 0 ? 1u : kSearchRound, spec.search_attempts - a0);
    std::vector<Attempt> round(n);
    for (uint32_t j = 0; j < n; ++j) {
#pragma omp task default(shared) firstprivate(j)
      {
        try {
          round[j].cases = build_once(spec, index, seeds[a0 + j], ex2);
          round[j].seen = goal.reached(round[j].cases.back(), ex2);
        } catch (...) {
          round[j].error = std::current_exception();
        }
      }
    }
#pragma omp taskwait
    for (uint32_t j = 0; j < n && !done; ++j) {
      if (round[j].error) std::rethrow_exception(round[j].error);
      if (best.empty() || round[j].seen.size() > best_seen.size()) {
        best = std::move(round[j].cases);
        best_seen = std::move(round[j].seen);
        best_attempt = a0 + j;
      }
      done = best_seen.size() == goal.targets.size();
    }
  }
  std::string missing;
  for (const std::string& t : goal.targets)
    if (std::find(best_seen.begin(), best_seen.end(), t) == best_seen.end())
      missing += (missing.empty() ? "" : " ") + t;
  best.back().exercises += "; searched against the variants (docs/variants.md): attempt " +
                           std::to_string(best_attempt + 1) + " of at most " +
                           std::to_string(spec.search_attempts) + " " +
                           goal.summary(best_seen.size(), missing);
  return best;
}

}  // namespace

std::vector<GoldenCase> build_cases(const CaseSpec& spec, uint64_t index, uint64_t seed,
                                    const Ex2Profile* ex2) {
  if (spec.search_attempts > 0) return build_searched(spec, index, seed, ex2);
  return build_once(spec, index, seed, ex2);
}

}  // namespace tqref::cases
