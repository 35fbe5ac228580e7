// Host simulation of the bandwidth writers (kernels/fast_writer/fast_writer_core.h): the very source
// the GPU runs, executed thread by thread for every CTA of the launch grid with IEEE binary32
// host arithmetic (-ffp-contract=off) and the model's conversions. The K and V pools (poisoned
// first) are compared byte for byte with the CPU writer model (model/writer.cpp), and every byte
// the simulation stores is counted: the token rows must be written exactly once, nothing else.
// Bugs this catches before any GPU run: a wrong token/group split of a CTA (tokens per CTA, the
// last partial CTA, more groups than threads), a coalesced K chunk taken from the wrong group
// or token, a warp that spans two tokens taking the coalesced path, a lost padding token, a wrong
// V row/scale address with padded sections, a binary-search index that differs from the bound
// count, a codebook-square table off by one, a misaligned vector access (the GPU would fault).
#define BOOST_TEST_MODULE fast_writer_sim
#include <boost/test/unit_test.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "../kernels/fast_writer/fast_writer_core.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"
#include "tqref/writer.h"
#include "writer_oracle.h"

using namespace tqref;

namespace {

// The pools of the case being simulated, with a store count per byte.
struct Pool {
  uint8_t* lo = nullptr;
  size_t size = 0;
  std::vector<uint8_t> writes;
};
Pool g_k, g_v;

[[noreturn]] void sim_fault(const char* what, const void* p) {
  std::fprintf(stderr, "fast writer simulation: %s at %p\n", what, p);
  std::abort();
}

// Counts a store of `bytes` bytes at p, which must lie inside one of the pools and be aligned
// to its width (a misaligned vector store faults on the GPU).
void record_store(const void* p, size_t bytes) {
  const auto* b = static_cast<const uint8_t*>(p);
  if ((reinterpret_cast<uintptr_t>(p) & (bytes - 1)) != 0) sim_fault("misaligned store", p);
  for (Pool* pool : {&g_k, &g_v}) {
    if (b >= pool->lo && b + bytes <= pool->lo + pool->size) {
      for (size_t i = 0; i < bytes; ++i) ++pool->writes[size_t(b - pool->lo) + i];
      return;
    }
  }
  sim_fault("store outside both pools", p);
}

void check_load_alignment(const void* p, size_t bytes) {
  if ((reinterpret_cast<uintptr_t>(p) & (bytes - 1)) != 0) sim_fault("misaligned load", p);
}

// Host Ops: IEEE binary32 arithmetic, CUDA fmaxf semantics (std::fmax), the model's conversions
// (tqref/numeric.h), loads and stores through memcpy with the GPU's alignment rules.
struct HostWriterOps {
  static float add(float a, float b) { return a + b; }
  static float mul(float a, float b) { return a * b; }
  static float div(float a, float b) { return a / b; }
  static float sqrt(float a) { return std::sqrt(a); }
  static float fmax(float a, float b) { return std::fmax(a, b); }
  static float abs(float a) { return std::fabs(a); }
  static float bf16(uint16_t h) { return bf16_to_f32(h); }
  static uint8_t fp8(float s) { return f32_to_fp8e4m3_satfinite(s); }
  template <Format F> static float bounds(uint32_t j) { return traits(F).bounds[j]; }
  template <Format F> static float codebook(uint32_t i) { return traits(F).codebook[i]; }
  static bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
  static int64_t load_i64(const int64_t* p) { return *p; }
  static uint16_t load_u16(const uint16_t* p) { return *p; }
  template <uint32_t C> static void load_chunk(const uint16_t* p, uint32_t* w) {
    check_load_alignment(p, C);
    std::memcpy(w, p, C);
  }
  template <uint32_t C> static void store_chunk(uint16_t* p, const uint32_t* w) {
    record_store(p, C);
    std::memcpy(p, w, C);
  }
  template <class T> static void store(uint8_t* p, T v) {
    record_store(p, sizeof v);
    std::memcpy(p, &v, sizeof v);
  }
  static void store_u64(uint8_t* p, uint64_t v) { store(p, v); }
  static void store_u32(uint8_t* p, uint32_t v) { store(p, v); }
  static void store_u16(uint8_t* p, uint16_t v) { store(p, v); }
  static void store_u8(uint8_t* p, uint8_t v) { store(p, v); }
};

struct Case {
  Format format = Format::turbo3v;
  uint32_t heads = 8, head_dim = 128, block_size = 16, tokens = 37;
  uint32_t key_pad = 0, value_pad = 0;   // extra elements per token row
  uint32_t key_offset = 0;               // key starts this many elements into its buffer
  uint64_t data_pad = 0, stride_pad = 0; // extra bytes after the index / scale sections
  uint32_t padding_every = 5;            // every k-th token gets a negative slot (0: none)
  uint32_t seed = 1;

  uint32_t n() const { return heads * head_dim; }
  WriterParams params() const {
    const uint32_t b = traits(format).bits;
    WriterParams p;
    p.num_kv_heads = heads;
    p.head_dim = head_dim;
    p.block_size = block_size;
    p.key_stride = n() + key_pad;
    p.value_stride = n() + value_pad;
    p.k_block_stride_bytes = 777;  // accepted and ignored (docs/spec.md section 4)
    p.v_data_section_bytes = uint64_t(block_size) * n() * b / 8 + data_pad;
    p.v_block_stride_bytes = p.v_data_section_bytes + uint64_t(block_size) * n() / 16 + stride_pad;
    return p;
  }
  std::string name() const {
    char s[200];
    std::snprintf(s, sizeof s, "%s H%u D%u B%u T%u kpad%u vpad%u koff%u dpad%llu spad%llu pad%u seed%u",
                  traits(format).name, heads, head_dim, block_size, tokens, key_pad, value_pad,
                  key_offset, (unsigned long long)data_pad, (unsigned long long)stride_pad,
                  padding_every, seed);
    return s;
  }
};

struct Inputs {
  std::vector<uint16_t> key_buf, value;  // key_buf holds key_offset elements before the key
  std::vector<int64_t> slots;
  std::vector<uint8_t> k_pool, v_pool;   // poisoned
  std::vector<float> scale_f32;          // the simulation's s per group (test hook)
};

// Values N(0,1) scaled per token by 2^[-8, 8]; whole special groups (zero, -0.0, one NaN, one
// Inf, the largest bf16, subnormals, values that saturate the scale) and scattered specials.
// Slots: a shuffle of the pool's slots (two blocks more than needed), padding tokens interleaved.
Inputs make_inputs(const Case& c) {
  std::mt19937 rng(c.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const WriterParams p = c.params();
  Inputs in;
  in.key_buf.resize(c.key_offset + uint64_t(c.tokens) * p.key_stride);
  for (auto& k : in.key_buf) k = uint16_t(rng());  // K is copied, never interpreted
  in.value.resize(uint64_t(c.tokens) * p.value_stride);
  for (uint32_t t = 0; t < c.tokens; ++t) {
    const float scale = std::ldexp(1.0f, int(rng() % 17) - 8);
    uint16_t* row = &in.value[uint64_t(t) * p.value_stride];
    for (uint32_t e = 0; e < p.value_stride; ++e) {
      row[e] = f32_to_bf16(normal(rng) * scale);
      if (rng() % 89 == 0) row[e] = std::array<uint16_t, 5>{0x7FC0, 0xFF80, 0x0000, 0x8000, 0x0001}[rng() % 5];
    }
    const uint32_t g = rng() % (c.n() / 16);
    uint16_t* grp = row + 16 * g;
    switch (rng() % 6) {
      case 0: for (int i = 0; i < 16; ++i) grp[i] = 0; break;
      case 1: for (int i = 0; i < 16; ++i) grp[i] = uint16_t(0x8000 | (i % 3 ? 0 : 0x0003)); break;
      case 2: grp[rng() % 16] = 0x7F80; break;                          // +Inf
      case 3: for (int i = 0; i < 16; ++i) grp[i] = uint16_t(0x7F7F ^ (i & 1 ? 0x8000 : 0)); break;
      case 4: for (int i = 0; i < 16; ++i) grp[i] = uint16_t(0x0001 + i); break;  // subnormals
      default: for (int i = 0; i < 16; ++i) grp[i] = uint16_t(0x4780 + 16 * i); break;  // ~6.5e4
    }
  }
  const uint32_t num_blocks = (c.tokens + c.block_size - 1) / c.block_size + 2;
  std::vector<int64_t> all(uint64_t(num_blocks) * c.block_size);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  for (uint32_t t = 0; t < c.tokens; ++t) {
    const bool pad = c.padding_every && t % c.padding_every == c.padding_every - 1;
    in.slots.push_back(pad ? (t % 2 ? -1 : -9) : all[t]);
  }
  in.k_pool.resize(uint64_t(num_blocks) * c.block_size * c.n() * 2);
  in.v_pool.resize(uint64_t(num_blocks) * p.v_block_stride_bytes);
  for (size_t i = 0; i < in.k_pool.size(); ++i) in.k_pool[i] = uint8_t(i * 167 + 0x5A);
  for (size_t i = 0; i < in.v_pool.size(); ++i) in.v_pool[i] = uint8_t(i * 131 + 0xA5);
  return in;
}

// Every CTA of the launch grid, every thread: init_tables for all threads (the barrier), then
// write_cta. Threads share nothing but the tables, so running them in turn is the GPU's result
// whenever no two threads store to the same byte, which the store counts check.
template <Format F> void run_grid(const fast_writer::Args& a) {
  const uint32_t grid = fast_writer::grid_x(a.num_tokens, a.num_kv_heads, a.head_dim);
  for (uint32_t cta = 0; cta < grid; ++cta) {
    fast_writer::CtaTables tb;
    std::memset(&tb, 0xFF, sizeof tb);  // NaN: an entry init_tables misses would show
    for (uint32_t tid = 0; tid < kThreadsPerBlock; ++tid) fast_writer::init_tables<HostWriterOps, F>(tid, tb);
    for (uint32_t tid = 0; tid < kThreadsPerBlock; ++tid) fast_writer::write_cta<HostWriterOps, F>(a, cta, tid, tb);
  }
}

void run_sim(const Case& c, Inputs& in) {
  const WriterParams p = c.params();
  in.scale_f32.assign(uint64_t(c.tokens) * (c.n() / 16), -1.0f);
  g_k = {in.k_pool.data(), in.k_pool.size(), std::vector<uint8_t>(in.k_pool.size(), 0)};
  g_v = {in.v_pool.data(), in.v_pool.size(), std::vector<uint8_t>(in.v_pool.size(), 0)};
  const fast_writer::Args a{in.key_buf.data() + c.key_offset, in.value.data(),
                       reinterpret_cast<uint16_t*>(in.k_pool.data()), in.v_pool.data(),
                       in.slots.data(), p.num_kv_heads, p.head_dim, p.block_size, p.key_stride,
                       p.value_stride, p.v_block_stride_bytes, p.v_data_section_bytes, c.tokens,
                       in.scale_f32.data()};
  switch (c.format) {
    case Format::turbo2v: run_grid<Format::turbo2v>(a); break;
    case Format::turbo3v: run_grid<Format::turbo3v>(a); break;
    case Format::turbo4v: run_grid<Format::turbo4v>(a); break;
  }
}

// 1 for every byte of the valid tokens' K rows, V index rows and V scale rows (docs/spec.md
// section 3, written out here), 0 elsewhere.
void expected_writes(const Case& c, const Inputs& in, std::vector<uint8_t>& k, std::vector<uint8_t>& v) {
  const WriterParams p = c.params();
  const uint64_t n = c.n(), B = c.block_size, row = n * traits(c.format).bits / 8;
  k.assign(in.k_pool.size(), 0);
  v.assign(in.v_pool.size(), 0);
  for (int64_t s : in.slots) {
    if (s < 0) continue;
    const uint64_t blk = uint64_t(s) / B, slot = uint64_t(s) % B;
    std::fill_n(k.begin() + int64_t((blk * B + slot) * n * 2), n * 2, uint8_t(1));
    std::fill_n(v.begin() + int64_t(blk * p.v_block_stride_bytes + slot * row), row, uint8_t(1));
    std::fill_n(v.begin() + int64_t(blk * p.v_block_stride_bytes + p.v_data_section_bytes + slot * (n / 16)),
                n / 16, uint8_t(1));
  }
}

size_t count_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const char* what) {
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && bad++ < 5)
      BOOST_TEST_MESSAGE(what << " byte " << i << ": 0x" << std::hex << int(a[i]) << " vs 0x" << int(b[i]));
  return bad;
}

void check_case(const Case& c) {
  BOOST_TEST_CONTEXT(c.name()) {
    Inputs sim = make_inputs(c);
    Inputs model = sim;
    const WriterParams p = c.params();
    reshape_and_cache_model(c.format,
                            std::span<const uint16_t>(model.key_buf.data() + c.key_offset,
                                                      uint64_t(c.tokens) * p.key_stride),
                            model.value, model.k_pool, model.v_pool, model.slots, p);
    run_sim(c, sim);
    // Guards against a vacuous pass: the model changed the pools, and both sides agree.
    BOOST_REQUIRE(model.k_pool != make_inputs(c).k_pool);
    BOOST_TEST(count_diff(sim.k_pool, model.k_pool, "K pool sim vs model") == 0u);
    BOOST_TEST(count_diff(sim.v_pool, model.v_pool, "V pool sim vs model") == 0u);
    std::vector<uint8_t> kw, vw;
    expected_writes(c, sim, kw, vw);
    BOOST_TEST(count_diff(g_k.writes, kw, "K stores (count) vs token rows") == 0u);
    BOOST_TEST(count_diff(g_v.writes, vw, "V stores (count) vs token rows") == 0u);
    // s before the fp8 rounding, which would hide most low-bit differences (a codebook square
    // off by one ulp, a sum in another order): the model's quantizer on each valid token's groups.
    const uint32_t G = c.n() / 16;
    std::vector<QuantizedGroup> q(G);
    uint64_t bad = 0;
    for (uint32_t t = 0; t < c.tokens; ++t) {
      if (sim.slots[t] < 0) continue;
      quantize_groups(traits(c.format), &sim.value[uint64_t(t) * p.value_stride], G, q.data());
      for (uint32_t g = 0; g < G; ++g) {
        const float got = sim.scale_f32[uint64_t(t) * G + g];
        if (f32_bits(got) != f32_bits(q[g].scale) && bad++ < 5)
          BOOST_ERROR("token " << t << " group " << g << ": s model 0x" << std::hex
                      << f32_bits(q[g].scale) << " sim 0x" << f32_bits(got));
      }
    }
    BOOST_TEST(bad == 0u);
  }
}

}  // namespace

// Engine geometry at the benchmark's head shape (G = 64: 4 tokens per CTA, coalesced K), every
// format, a token count that leaves the last CTA partial, padding tokens.
BOOST_AUTO_TEST_CASE(engine_geometry_every_format) {
  uint32_t seed = 1;
  for (Format f : {Format::turbo2v, Format::turbo3v, Format::turbo4v})
    for (uint32_t B : {16u, 13u}) {
      Case c;
      c.format = f;
      c.block_size = B;
      c.tokens = 37;
      c.seed = seed++;
      check_case(c);
    }
}

// Head shapes whose group count does not divide 256 or the warp: G = 56 (7 x 128: warps span two
// tokens, the per-group K path), 12 (3 x 64: 21 tokens per CTA), 1 (1 x 16: 256 tokens per CTA),
// 32 (2 x 256: 8 tokens), 320 (40 x 128: one token, two rounds of the threads), block size 1.
BOOST_AUTO_TEST_CASE(awkward_head_shapes) {
  const std::array<std::array<uint32_t, 4>, 6> shapes{{{7, 128, 16, 11}, {3, 64, 16, 53},
                                                       {1, 16, 1, 517}, {2, 256, 32, 19},
                                                       {40, 128, 16, 3}, {8, 128, 1, 9}}};
  uint32_t seed = 100;
  for (Format f : {Format::turbo2v, Format::turbo3v, Format::turbo4v})
    for (const auto& s : shapes) {
      Case c;
      c.format = f;
      c.heads = s[0];
      c.head_dim = s[1];
      c.block_size = s[2];
      c.tokens = s[3];
      c.padding_every = 3;
      c.seed = seed++;
      check_case(c);
    }
}

// Strides and offsets that forbid the fast accesses: key_stride % 8 != 0 and a key that is
// 8- but not 16-byte aligned (8-byte K chunks), an odd value stride (2-byte V loads), padded V
// sections with odd lengths (code rows and scale rows at any alignment: byte stores).
BOOST_AUTO_TEST_CASE(unaligned_strides_and_padded_sections) {
  uint32_t seed = 300;
  for (Format f : {Format::turbo2v, Format::turbo3v, Format::turbo4v})
    for (int variant = 0; variant < 3; ++variant) {
      Case c;
      c.format = f;
      c.heads = variant == 2 ? 7 : 8;
      c.tokens = 29;
      c.key_pad = variant == 0 ? 4 : 8;
      c.key_offset = variant == 1 ? 4 : 0;
      c.value_pad = variant == 0 ? 0 : 3;
      c.data_pad = variant == 0 ? 0 : 5;
      c.stride_pad = variant == 0 ? 0 : 3;
      c.seed = seed++;
      check_case(c);
    }
}

// Only padding tokens: nothing is stored (a launch that writes anything fails the counts).
BOOST_AUTO_TEST_CASE(all_padding_writes_nothing) {
  Case c;
  c.tokens = 9;
  c.padding_every = 1;
  Inputs in = make_inputs(c);
  const Inputs before = in;
  run_sim(c, in);
  BOOST_TEST(in.k_pool == before.k_pool);
  BOOST_TEST(in.v_pool == before.v_pool);
  BOOST_TEST(std::count(g_k.writes.begin(), g_k.writes.end(), 0) == std::ptrdiff_t(g_k.writes.size()));
  BOOST_TEST(std::count(g_v.writes.begin(), g_v.writes.end(), 0) == std::ptrdiff_t(g_v.writes.size()));
}

// The binary-search index against the counting definition of docs/spec.md section 2
// (writer_oracle.h): every bound and its 3 neighbours on each side, +-0, +-Inf, NaNs of both
// signs, and a stride-4099 sweep of all 2^32 bit patterns. A search step reading the wrong table
// entry, or a constant step comparing the wrong way, shows as a different count.
BOOST_AUTO_TEST_CASE(code_index_equals_bound_count) {
  for (Format f : {Format::turbo2v, Format::turbo3v, Format::turbo4v}) {
    const FormatTraits& t = traits(f);
    fast_writer::CtaTables tb;
    std::memset(&tb, 0xFF, sizeof tb);
    auto index = [&](float y) {
      switch (f) {
        case Format::turbo2v: return fast_writer::code_index<Format::turbo2v>(y, tb.bd);
        case Format::turbo3v: return fast_writer::code_index<Format::turbo3v>(y, tb.bd);
        default: return fast_writer::code_index<Format::turbo4v>(y, tb.bd);
      }
    };
    for (uint32_t tid = 0; tid < 16; ++tid) {
      switch (f) {
        case Format::turbo2v: fast_writer::init_tables<HostWriterOps, Format::turbo2v>(tid, tb); break;
        case Format::turbo3v: fast_writer::init_tables<HostWriterOps, Format::turbo3v>(tid, tb); break;
        default: fast_writer::init_tables<HostWriterOps, Format::turbo4v>(tid, tb); break;
      }
    }
    std::vector<uint32_t> bits{0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
                               0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x00000001u, 0x80000001u};
    for (uint32_t j = 0; j + 1 < t.levels; ++j)
      for (int d = -3; d <= 3; ++d) bits.push_back(f32_bits(t.bounds[j]) + uint32_t(d));
    for (uint64_t b = 0; b < (1ull << 32); b += 4099) bits.push_back(uint32_t(b));
    uint64_t bad = 0;
    for (uint32_t b : bits) {
      const float y = f32_from_bits(b);
      const uint32_t want = test::oracle_index(t, y), got = index(y);
      if (want != got && bad++ < 5)
        BOOST_ERROR(t.name << " y bits 0x" << std::hex << b << ": count " << std::dec << want
                           << ", search " << got);
    }
    BOOST_TEST(bad == 0u);
  }
}

// The launch geometry rule the launcher and the kernel share.
BOOST_AUTO_TEST_CASE(tokens_per_cta_rule) {
  BOOST_TEST(fast_writer::tokens_per_cta(64) == 4u);    // 8 x 128
  BOOST_TEST(fast_writer::tokens_per_cta(56) == 4u);    // 7 x 128: 224 of 256 threads busy
  BOOST_TEST(fast_writer::tokens_per_cta(1) == 256u);
  BOOST_TEST(fast_writer::tokens_per_cta(256) == 1u);
  BOOST_TEST(fast_writer::tokens_per_cta(320) == 1u);
  BOOST_TEST(fast_writer::grid_x(65536, 8, 128) == 16384u);
  BOOST_TEST(fast_writer::grid_x(37, 8, 128) == 10u);
  BOOST_TEST(fast_writer::grid_x(0, 8, 128) == 0u);
}
