#include "judge/level_i_variants.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "cases/rng.h"

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

// Padding added by the stride variants: q +24 elements (48 bytes) and key +8 / value +16
// elements keep every row as aligned as before (key_stride stays a multiple of 4, docs/spec.md section
// 4); V +16 bytes before the scale section and +48 per block, multiples of 16 as well.
constexpr uint32_t kQPad = 24, kKeyPad = 8, kValuePad = 16;
constexpr uint64_t kVDataPad = 16, kVBlockPad = 48;

GoldenCase renamed(const GoldenCase& c, const std::string& tag) {
  GoldenCase v = c;
  v.name = c.name + " [" + tag + "]";
  v.d.diag = DecodeDiagData{};
  return v;
}

std::vector<int32_t> identity(uint32_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// ---- decoder ------------------------------------------------------------------------------

// First and last logical block a sequence of length L reads (docs/spec.md section 5: window start).
std::pair<uint64_t, uint64_t> blocks_in_use(const DecodeParams& p, int32_t L) {
  const uint32_t w = p.sliding_window;
  const uint64_t start = (w > 0 && uint32_t(L) > w) ? uint64_t(L) - w : 0;
  return {start / p.block_size, uint64_t(L - 1) / p.block_size};
}

// Physical block b of c moved to to[b] in a pool of `blocks` blocks (the rest poison); the table
// entries in use follow. Entries not in use keep their (out-of-range) values.
GoldenCase move_blocks(const GoldenCase& c, const std::vector<uint32_t>& to, uint32_t blocks,
                       const std::string& tag) {
  GoldenCase v = renamed(c, tag);
  DecodeCase& d = v.d;
  const CacheGeometry g = pool_geometry(c.d);
  d.num_blocks = blocks;
  d.k_init.assign(uint64_t(blocks) * g.k_block_bytes(), kVariantPoolPoison);
  d.v_init.assign(uint64_t(blocks) * g.v_block_stride_bytes, kVariantPoolPoison);
  for (uint32_t b = 0; b < c.d.num_blocks; ++b) {
    std::memcpy(d.k_init.data() + to[b] * g.k_block_bytes(), c.d.k_init.data() + b * g.k_block_bytes(),
                g.k_block_bytes());
    std::memcpy(d.v_init.data() + to[b] * g.v_block_stride_bytes,
                c.d.v_init.data() + b * g.v_block_stride_bytes, g.v_block_stride_bytes);
  }
  const uint32_t mb = d.p.max_blocks_per_seq;
  for (uint32_t s = 0; s < d.p.num_seqs; ++s) {
    if (d.seq_lens[s] <= 0) continue;
    const auto [lo, hi] = blocks_in_use(d.p, d.seq_lens[s]);
    for (uint64_t j = lo; j <= hi; ++j) {
      int32_t& e = d.block_tables[uint64_t(s) * mb + j];
      e = int32_t(to[uint32_t(e)]);
    }
  }
  return v;
}

// `rows` rows of `old` elements each, re-laid at a stride of `old + pad` (padding poisoned).
std::vector<uint16_t> restride(const std::vector<uint16_t>& v, uint64_t rows, uint32_t old, uint32_t pad) {
  std::vector<uint16_t> out(rows * (old + pad), kVariantRowPoison);
  for (uint64_t r = 0; r < rows; ++r) std::copy_n(v.data() + r * old, old, out.data() + r * (old + pad));
  return out;
}

GoldenCase pad_q(const GoldenCase& c) {
  GoldenCase v = renamed(c, "q_stride +" + std::to_string(kQPad));
  v.d.q = restride(c.d.q, c.d.p.num_seqs, c.d.p.q_stride, kQPad);
  v.d.p.q_stride += kQPad;
  return v;
}

// The V pool `init` (geometry `from`) with its data section and block stride padded: the
// parameters `p` (WriterParams or DecodeParams) are updated, the new pool returned.
template <class Params>
std::vector<uint8_t> pad_v(const std::vector<uint8_t>& init, const CacheGeometry& from, uint32_t bits, Params& p) {
  CacheGeometry to = from;
  to.v_data_section_bytes += kVDataPad;
  to.v_block_stride_bytes += kVDataPad + kVBlockPad;
  p.v_data_section_bytes = to.v_data_section_bytes;
  p.v_block_stride_bytes = to.v_block_stride_bytes;
  return repack_v_pool(init, from, to, bits, std::vector<uint8_t>(to.v_pool_bytes(), kVariantPoolPoison));
}

GoldenCase pad_v_decode(const GoldenCase& c) {
  GoldenCase v = renamed(c, "V blocks padded");
  v.d.v_init = pad_v(c.d.v_init, pool_geometry(c.d), traits(c.format).bits, v.d.p);
  return v;
}

// A shorter length for a sequence of length L that reads no block-table entry L does not read
// (with a sliding window, a shorter sequence starts earlier): about L/2, or L when none exists.
int32_t shorter(const DecodeParams& p, int32_t L) {
  if (L <= 0) return L;
  const uint64_t first = blocks_in_use(p, L).first;
  // start(L') = L' - W >= first*B keeps the first block; without a window any L' works.
  const int64_t floor = first == 0 ? 0 : int64_t(first * p.block_size + p.sliding_window);
  const int64_t n = std::max<int64_t>(L / 2, floor);
  return n < L ? int32_t(n) : L;
}

// Shortens the sequences with index parity `parity` (shorter()); the others are compared.
VariantLaunch halve_lengths(const GoldenCase& c, uint32_t parity) {
  VariantLaunch out;
  std::vector<int32_t> lens(c.d.seq_lens);
  out.seq_of = identity(c.d.p.num_seqs);
  for (uint32_t s = parity; s < lens.size(); s += 2) {
    const int32_t n = shorter(c.d.p, lens[s]);
    if (n != lens[s]) out.seq_of[s] = -1;
    lens[s] = n;
  }
  out.c = select_sequences(c, identity(c.d.p.num_seqs), lens,
                           parity ? "odd sequences shortened" : "even sequences shortened");
  return out;
}

std::vector<VariantBuilder> decode_builders(const GoldenCase& c, const LevelIOptions& o) {
  std::vector<VariantBuilder> v;
  // Repeats first: while they differ, no other variant is conclusive.
  for (int i = 1; i <= 2; ++i) {
    const std::string n = "repeat " + std::to_string(i);
    v.push_back({"repeat", n, [&c, n] { return VariantLaunch{renamed(c, n), identity(c.d.p.num_seqs), {}, false}; }});
  }
  const uint32_t S = c.d.p.num_seqs;
  const std::vector<int32_t>& L = c.d.seq_lens;
  auto placed = [&c](std::vector<int32_t> order, const std::string& tag) {
    std::vector<int32_t> lens;
    for (int32_t s : order) lens.push_back(c.d.seq_lens[s]);
    VariantLaunch out;
    out.c = select_sequences(c, order, lens, tag);
    out.seq_of = std::move(order);
    return out;
  };
  if (S > 1)
    for (uint32_t s = 0; s < S; ++s)
      if (L[s] > 0) {
        const std::string n = "seq " + std::to_string(s) + " alone";
        v.push_back({"placement", n, [=] { return placed({int32_t(s)}, n); }});
      }
  if (S > 1) {
    std::vector<int32_t> rev = identity(S);
    std::reverse(rev.begin(), rev.end());
    v.push_back({"placement", "batch reversed", [=] { return placed(rev, "batch reversed"); }});
  }
  if (S > 0) {
    // The batch reversed, then repeated in order: every sequence at several indices >= S.
    const uint32_t n = std::max<uint32_t>(o.large_batch, 2 * S + 1);
    std::vector<int32_t> big;
    for (uint32_t i = 0; i < n; ++i) big.push_back(int32_t(i < S ? S - 1 - i : (i - S) % S));
    const std::string name = "batch of " + std::to_string(n);
    v.push_back({"placement", name, [=] { return placed(big, name); }});
  }
  const uint32_t nb = c.d.num_blocks;
  v.push_back({"blocks", "blocks permuted", [&c, nb, seed = o.seed] {
                 std::vector<uint32_t> to(nb);
                 std::iota(to.begin(), to.end(), 0u);
                 cases::Rng rng(seed ^ 0xB10C5ull);
                 for (uint32_t i = nb; i > 1; --i) std::swap(to[i - 1], to[rng.below(i)]);
                 return VariantLaunch{move_blocks(c, to, nb, "blocks permuted"), identity(c.d.p.num_seqs), {}, false};
               }});
  v.push_back({"blocks", "blocks relocated", [&c, nb] {
                 // A pool 3 blocks larger, the blocks in reverse order at its far end.
                 std::vector<uint32_t> to(nb);
                 for (uint32_t b = 0; b < nb; ++b) to[b] = nb + 2 - b;
                 return VariantLaunch{move_blocks(c, to, nb + 3, "blocks relocated"), identity(c.d.p.num_seqs), {}, false};
               }});
  v.push_back({"strides", "q_stride +" + std::to_string(kQPad),
               [&c] { return VariantLaunch{pad_q(c), identity(c.d.p.num_seqs), {}, false}; }});
  v.push_back({"strides", "V blocks padded",
               [&c] { return VariantLaunch{pad_v_decode(c), identity(c.d.p.num_seqs), {}, false}; }});
  // other-lengths: only when each parity holds a sequence that can be shortened and one to compare
  bool shortened[2] = {false, false}, compared[2] = {false, false};
  for (uint32_t s = 0; s < S; ++s) {
    shortened[s % 2] = shortened[s % 2] || shorter(c.d.p, L[s]) != L[s];
    compared[s % 2] = compared[s % 2] || L[s] > 0;
  }
  const bool live[2] = {shortened[0] && compared[1], shortened[1] && compared[0]};
  for (uint32_t parity : {0u, 1u})
    if (live[parity])
      v.push_back({"other-lengths", parity ? "odd sequences shortened" : "even sequences shortened",
                   [&c, parity] { return halve_lengths(c, parity); }});
  return v;
}

// ---- writer -------------------------------------------------------------------------------

// Tokens of the variant: src[i] is c's token at variant index i, or -1 for an added slot -1
// token whose key/value rows copy c's first real token (plausible data a faulty kernel would
// store somewhere).
GoldenCase take_tokens(const GoldenCase& c, const std::vector<int64_t>& src, const std::string& tag) {
  GoldenCase v = renamed(c, tag);
  const WriterCase& w = c.w;
  WriterCase& x = v.w;
  int64_t model_token = 0;
  for (uint32_t t = 0; t < w.num_tokens; ++t)
    if (w.slot_mapping[t] >= 0) {
      model_token = t;
      break;
    }
  x.num_tokens = uint32_t(src.size());
  x.slot_mapping.assign(src.size(), -1);
  x.key.assign(src.size() * w.p.key_stride, kVariantRowPoison);
  x.value.assign(src.size() * w.p.value_stride, kVariantRowPoison);
  for (size_t i = 0; i < src.size(); ++i) {
    const int64_t t = src[i] >= 0 ? src[i] : model_token;
    if (src[i] >= 0) x.slot_mapping[i] = w.slot_mapping[t];
    if (w.num_tokens == 0) continue;
    std::copy_n(w.key.data() + t * w.p.key_stride, w.p.key_stride, x.key.data() + i * w.p.key_stride);
    std::copy_n(w.value.data() + t * w.p.value_stride, w.p.value_stride, x.value.data() + i * w.p.value_stride);
  }
  return v;
}

GoldenCase pad_token_strides(const GoldenCase& c) {
  GoldenCase v = renamed(c, "key/value strides padded");
  const WriterCase& w = c.w;
  v.w.key = restride(w.key, w.num_tokens, w.p.key_stride, kKeyPad);
  v.w.value = restride(w.value, w.num_tokens, w.p.value_stride, kValuePad);
  v.w.p.key_stride += kKeyPad;
  v.w.p.value_stride += kValuePad;
  return v;
}

GoldenCase pad_v_writer(const GoldenCase& c) {
  GoldenCase v = renamed(c, "V blocks padded");
  v.w.v_init = pad_v(c.w.v_init, pool_geometry(c.w), traits(c.format).bits, v.w.p);
  v.w.v_expected = v.w.v_init;
  return v;
}

std::vector<VariantBuilder> writer_builders(const GoldenCase& c, const LevelIOptions& o) {
  std::vector<VariantBuilder> v;
  v.push_back({"repeat", "repeat 1", [&c] { return VariantLaunch{renamed(c, "repeat 1"), {}, {}, false}; }});
  const uint32_t T = c.w.num_tokens;
  auto tokens = [&c](std::vector<int64_t> src, const std::string& tag) {
    return VariantLaunch{take_tokens(c, src, tag), {}, {}, false};
  };
  std::vector<int64_t> all(T);
  std::iota(all.begin(), all.end(), int64_t(0));
  if (T > 1) {
    std::vector<int64_t> rev(all.rbegin(), all.rend());
    v.push_back({"token-order", "tokens reversed", [=] { return tokens(rev, "tokens reversed"); }});
    std::vector<int64_t> sh = all;
    cases::Rng rng(o.seed ^ 0x70C3ull);
    for (size_t i = sh.size(); i > 1; --i) std::swap(sh[i - 1], sh[rng.below(i)]);
    v.push_back({"token-order", "tokens shuffled", [=] { return tokens(sh, "tokens shuffled"); }});
  }
  if (T >= 4) {  // first, middle (T >= 5) and last token stay: catches shortcuts that sample the ends
    std::vector<int64_t> sw = all;
    std::swap(sw[1], sw[T - 2]);
    v.push_back({"token-order", "interior tokens swapped", [=] { return tokens(sw, "interior tokens swapped"); }});
  }
  std::vector<int64_t> real;
  for (uint32_t t = 0; t < T; ++t)
    if (c.w.slot_mapping[t] >= 0) real.push_back(t);
  if (real.size() < T)
    v.push_back({"padding-tokens", "slot -1 tokens removed", [=] { return tokens(real, "slot -1 tokens removed"); }});
  {
    std::vector<int64_t> more = {-1};
    for (uint32_t t = 0; t < T; ++t) {
      if (t == T / 2) more.push_back(-1);
      more.push_back(t);
    }
    more.push_back(-1);
    v.push_back({"padding-tokens", "slot -1 tokens added", [=] { return tokens(more, "slot -1 tokens added"); }});
  }
  v.push_back({"strides", "key/value strides padded", [&c] { return VariantLaunch{pad_token_strides(c), {}, {}, false}; }});
  v.push_back({"strides", "V blocks padded", [&c] { return VariantLaunch{pad_v_writer(c), {}, {}, true}; }});
  if (T > 1) {
    std::vector<int64_t> first(all.begin(), all.begin() + T / 2), rest(all.begin() + T / 2, all.end());
    v.push_back({"split-launch", "two launches", [=] {
                   VariantLaunch out = tokens(first, "first launch");
                   out.second = take_tokens(c, rest, "second launch");
                   return out;
                 }});
  }
  return v;
}

}  // namespace

std::vector<uint8_t> repack_v_pool(const std::vector<uint8_t>& src, const CacheGeometry& from,
                                   const CacheGeometry& to, uint32_t bits,
                                   const std::vector<uint8_t>& background) {
  std::vector<uint8_t> out(background);
  const uint64_t codes = from.min_v_data_section_bytes(bits);
  const uint64_t scales = uint64_t(from.v_scale_row_bytes()) * from.block_size;
  for (uint64_t b = 0; b < from.num_blocks; ++b) {
    const uint8_t* s = src.data() + b * from.v_block_stride_bytes;
    uint8_t* d = out.data() + b * to.v_block_stride_bytes;
    std::memcpy(d, s, codes);
    std::memcpy(d + to.v_data_section_bytes, s + from.v_data_section_bytes, scales);
  }
  return out;
}

uint64_t v_padding_differing(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                             const CacheGeometry& g, uint32_t bits) {
  const uint64_t codes = g.min_v_data_section_bytes(bits);
  const uint64_t scale_end = g.v_data_section_bytes + uint64_t(g.v_scale_row_bytes()) * g.block_size;
  uint64_t n = 0;
  for (uint64_t i = 0; i < a.size() && i < b.size(); ++i) {
    const uint64_t in = i % g.v_block_stride_bytes;
    const bool padding = (in >= codes && in < g.v_data_section_bytes) || in >= scale_end;
    n += padding && a[i] != b[i];
  }
  return n;
}

GoldenCase select_sequences(const GoldenCase& c, const std::vector<int32_t>& order,
                            const std::vector<int32_t>& lens, const std::string& tag) {
  const DecodeCase& d = c.d;
  GoldenCase v;
  v.name = c.name + " [" + tag + "]";
  v.kind = c.kind;
  v.format = c.format;
  v.threshold = c.threshold;
  v.seed = c.seed;
  v.distribution = c.distribution;
  DecodeCase& x = v.d;
  x.p = d.p;
  x.num_blocks = d.num_blocks;
  x.k_init = d.k_init;
  x.v_init = d.v_init;
  const uint64_t S = order.size(), qs = d.p.q_stride, mb = d.p.max_blocks_per_seq;
  const uint64_t row = uint64_t(d.p.num_q_heads) * d.p.head_dim;
  x.p.num_seqs = uint32_t(S);
  x.q.resize(S * qs);
  x.block_tables.resize(S * mb);
  x.seq_lens = lens;
  x.out_init.resize(S * row);
  for (uint64_t i = 0; i < S; ++i) {
    const uint64_t s = uint64_t(order[i]);
    std::copy_n(d.q.data() + s * qs, qs, x.q.data() + i * qs);
    std::copy_n(d.block_tables.data() + s * mb, mb, x.block_tables.data() + i * mb);
    std::copy_n(d.out_init.data() + s * row, row, x.out_init.data() + i * row);
  }
  x.out_expected = x.out_init;
  return v;
}

std::vector<VariantBuilder> variant_builders(const GoldenCase& c, const LevelIOptions& o) {
  // A pool of production size (io/sparse_pool.h) keeps its stored blocks at fixed physical ids;
  // the variants re-number, add and re-pad blocks, which it cannot express: baseline only.
  if (c.sparse) return {};
  return c.kind == CaseKind::decode ? decode_builders(c, o) : writer_builders(c, o);
}

}  // namespace tqref::judge
