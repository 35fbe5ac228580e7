// The writer model reshape_and_cache_model (docs/spec.md sections 3-4; model/writer.cpp).
// Expected pools are built inside the test: offsets from the SPEC formulas written out here
// (not CacheGeometry), groups from writer_oracle.h. Pools are poisoned first, and the whole pool
// is compared, so a byte written outside a token's rows shows up.
#define BOOST_TEST_MODULE test_writer
#include <boost/test/unit_test.hpp>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fp_oracles.h"
#include "tqref/numeric.h"
#include "tqref/writer.h"
#include "writer_oracle.h"

namespace {

using namespace tqref;
using namespace tqref::test;

struct Case {
  Format format;
  uint32_t heads, head_dim, block_size, num_blocks;
  uint32_t key_pad = 0, value_pad = 0;           // extra elements per token row
  uint64_t data_pad = 0, stride_pad = 0;         // extra bytes after index / scale sections
  uint32_t tokens;
  uint32_t padding_every = 0;                    // every k-th token gets slot -1 (0 = none)
  uint32_t seed = 1;

  uint32_t n() const { return heads * head_dim; }
  uint32_t bits() const { return traits(format).bits; }
  WriterParams params() const {
    WriterParams p;
    p.num_kv_heads = heads;
    p.head_dim = head_dim;
    p.block_size = block_size;
    p.key_stride = n() + key_pad;
    p.value_stride = n() + value_pad;
    p.k_block_stride_bytes = 12345;  // accepted and ignored (docs/spec.md section 4)
    p.v_data_section_bytes = uint64_t(block_size) * n() * bits() / 8 + data_pad;
    p.v_block_stride_bytes = p.v_data_section_bytes + uint64_t(block_size) * n() / 16 + stride_pad;
    return p;
  }
  std::string name() const {
    char b[160];
    std::snprintf(b, sizeof b, "%s H%u D%u B%u blocks%u kpad%u vpad%u dpad%llu spad%llu T%u",
                  traits(format).name, heads, head_dim, block_size, num_blocks, key_pad, value_pad,
                  (unsigned long long)data_pad, (unsigned long long)stride_pad, tokens);
    return b;
  }
};

struct Buffers {
  std::vector<uint16_t> key, value;
  std::vector<int64_t> slots;
  std::vector<uint8_t> k_cache, v_cache;
};

// Values: mostly N(0, 1) scaled per token by 2^[-8, 8]; some groups get specials so the layout
// test also moves NaN / Inf / zero groups. Slots: a seeded shuffle of all pool slots, with
// padding tokens (-1 and -7) interleaved.
Buffers make_buffers(const Case& c) {
  std::mt19937 rng(c.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const WriterParams p = c.params();
  Buffers b;
  b.key.resize(uint64_t(c.tokens) * p.key_stride);
  b.value.resize(uint64_t(c.tokens) * p.value_stride);
  for (auto& k : b.key) k = uint16_t(rng());  // any bit pattern: K is copied, never interpreted
  for (uint32_t t = 0; t < c.tokens; ++t) {
    float scale = std::ldexp(1.0f, int(rng() % 17) - 8);
    for (uint32_t e = 0; e < p.value_stride; ++e) {
      uint16_t v = f32_to_bf16(normal(rng) * scale);
      if (rng() % 97 == 0) v = std::array<uint16_t, 4>{0x7FC0, 0x7F80, 0x0000, 0x8000}[rng() % 4];
      b.value[uint64_t(t) * p.value_stride + e] = v;
    }
  }
  std::vector<int64_t> all(uint64_t(c.num_blocks) * c.block_size);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  size_t next = 0;
  for (uint32_t t = 0; t < c.tokens; ++t) {
    bool pad = c.padding_every && t % c.padding_every == c.padding_every - 1;
    b.slots.push_back(pad ? (t % 2 ? -1 : -7) : all.at(next++));
  }
  b.k_cache.resize(uint64_t(c.num_blocks) * c.block_size * c.n() * 2);
  b.v_cache.resize(uint64_t(c.num_blocks) * p.v_block_stride_bytes);
  for (size_t i = 0; i < b.k_cache.size(); ++i) b.k_cache[i] = uint8_t(i * 167 + 0x5A);
  for (size_t i = 0; i < b.v_cache.size(); ++i) b.v_cache[i] = uint8_t(i * 131 + 0xA5);
  return b;
}

// The pools after the launch, from docs/spec.md sections 3-4 alone.
void expected_pools(const Case& c, const Buffers& in, std::vector<uint8_t>& k,
                    std::vector<uint8_t>& v) {
  const WriterParams p = c.params();
  const FormatTraits& t = traits(c.format);
  const uint64_t n = c.n(), B = c.block_size;
  k = in.k_cache;
  v = in.v_cache;
  for (uint32_t tok = 0; tok < c.tokens; ++tok) {
    int64_t s = in.slots[tok];
    if (s < 0) continue;
    uint64_t blk = uint64_t(s) / B, slot = uint64_t(s) % B;
    uint64_t k_off = blk * B * n * 2 + slot * n * 2;  // [num_blocks, B, H, D] bf16
    for (uint64_t e = 0; e < n; ++e) {
      uint16_t x = in.key[tok * uint64_t(p.key_stride) + e];
      k[k_off + 2 * e] = uint8_t(x);
      k[k_off + 2 * e + 1] = uint8_t(x >> 8);
    }
    uint64_t code_off = blk * p.v_block_stride_bytes + slot * n * t.bits / 8;
    uint64_t scale_off = blk * p.v_block_stride_bytes + p.v_data_section_bytes + slot * n / 16;
    for (uint64_t g = 0; g < n / 16; ++g) {
      OracleGroup q = oracle_quantize_group(t, &in.value[tok * uint64_t(p.value_stride) + g * 16]);
      oracle_pack(t.bits, q.codes, &v[code_off + g * t.bits * 2]);
      v[scale_off + g] = q.scale_byte;
    }
  }
}

// Byte-for-byte comparison of a whole pool; names the first differing bytes.
void compare_pool(const char* pool, const std::vector<uint8_t>& got,
                  const std::vector<uint8_t>& want, const std::string& name) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (++bad <= 5)
      BOOST_TEST_MESSAGE(name << ": " << pool << " byte " << i << " got 0x" << std::hex
                              << int(got[i]) << " want 0x" << int(want[i]));
  }
  BOOST_TEST(bad == 0u, name << ": " << pool << " differs in " << bad << " bytes");
}

void run_model(const Case& c, Buffers& b) {
  reshape_and_cache_model(c.format, b.key, b.value, b.k_cache, b.v_cache, b.slots, c.params());
}

void check_case(const Case& c) {
  Buffers b = make_buffers(c);
  std::vector<uint8_t> k_want, v_want;
  expected_pools(c, b, k_want, v_want);
  // Guard against passing by accident: the expectation must differ from the poison somewhere.
  BOOST_REQUIRE(k_want != b.k_cache);
  BOOST_REQUIRE(v_want != b.v_cache);
  run_model(c, b);
  compare_pool("K pool", b.k_cache, k_want, c.name());
  compare_pool("V pool", b.v_cache, v_want, c.name());
}

}  // namespace

// Engine geometry (tight sections), every format, several blocks, every slot used once:
// catches a wrong row offset, group order or packing in the pool.
BOOST_AUTO_TEST_CASE(layout_engine_geometry) {
  for (const auto& t : kFormats) {
    check_case({t.format, 2, 32, 16, 4, 0, 0, 0, 0, 64, 0, 3});
    check_case({t.format, 1, 128, 1, 5, 0, 0, 0, 0, 5, 0, 4});     // block size 1
    check_case({t.format, 2, 256, 32, 2, 0, 0, 0, 0, 61, 0, 5});   // HDIM 256, B 32, not full
  }
}

// Padded key/value strides (value stride odd), padded index section and block stride, an odd
// block size, padding tokens: catches using n for a stride, v_data_section_bytes ignored, or a
// write into the padding between sections or blocks (the poison there must survive).
BOOST_AUTO_TEST_CASE(layout_padded_geometry_and_padding_tokens) {
  for (const auto& t : kFormats) {
    check_case({t.format, 3, 16, 5, 7, 4, 3, 40, 24, 40, 4, 6});
    check_case({t.format, 8, 128, 16, 3, 8, 1, 1, 13, 50, 3, 7});
    check_case({t.format, 1, 16, 7, 9, 12, 5, 3, 5, 63, 0, 8});    // every slot of the pool
  }
}

// Only padding tokens, and no tokens at all: nothing may change.
BOOST_AUTO_TEST_CASE(padding_only_changes_nothing) {
  for (const auto& t : kFormats) {
    Case c{t.format, 2, 16, 4, 2, 0, 0, 0, 0, 6, 1, 9};
    Buffers b = make_buffers(c);
    for (auto s : b.slots) BOOST_REQUIRE(s < 0);
    const auto k0 = b.k_cache, v0 = b.v_cache;
    run_model(c, b);
    BOOST_TEST((b.k_cache == k0 && b.v_cache == v0));
    reshape_and_cache_model(t.format, {}, {}, b.k_cache, b.v_cache, {}, c.params());
    BOOST_TEST((b.k_cache == k0 && b.v_cache == v0));
  }
}

// One thread and two threads give identical pools: catches shared scratch between tokens.
BOOST_AUTO_TEST_CASE(thread_count_independence) {
  for (const auto& t : kFormats) {
    Case c{t.format, 8, 128, 16, 24, 4, 0, 0, 0, 300, 7, 10};
    Buffers one = make_buffers(c), two = make_buffers(c);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    run_model(c, one);
    omp_set_num_threads(2);
    run_model(c, two);
    omp_set_num_threads(saved);
    BOOST_TEST((one.k_cache == two.k_cache), t.name << " K pool");
    BOOST_TEST((one.v_cache == two.v_cache), t.name << " V pool");
  }
}

// Each bad parameter is refused with std::invalid_argument naming it, before any byte is
// written: catches a missing check that would let the model write out of bounds or produce
// golden bytes for a launch the GPU cannot make.
BOOST_AUTO_TEST_CASE(rejects_bad_parameters) {
  const Case c{Format::turbo3v, 2, 32, 4, 3, 0, 0, 0, 0, 5, 0, 12};
  struct Bad { const char* param; void (*edit)(WriterParams&, Buffers&); };
  const Bad bad[] = {
      {"num_kv_heads = 0", [](WriterParams& p, Buffers&) { p.num_kv_heads = 0; }},
      {"head_dim = 24", [](WriterParams& p, Buffers&) { p.head_dim = 24; }},
      {"head_dim = 0", [](WriterParams& p, Buffers&) { p.head_dim = 0; }},
      {"block_size = 0", [](WriterParams& p, Buffers&) { p.block_size = 0; }},
      {"key_stride = 60", [](WriterParams& p, Buffers&) { p.key_stride = 60; }},
      {"key_stride = 66", [](WriterParams& p, Buffers&) { p.key_stride = 66; }},  // not a multiple of 4
      {"value_stride = 63", [](WriterParams& p, Buffers&) { p.value_stride = 63; }},
      {"v_data_section_bytes = 95", [](WriterParams& p, Buffers&) { p.v_data_section_bytes -= 1; }},
      {"v_block_stride_bytes = 111", [](WriterParams& p, Buffers&) { p.v_block_stride_bytes -= 1; }},
      {"slot_mapping[2] = 12", [](WriterParams&, Buffers& b) { b.slots[2] = 12; }},  // 3 blocks of 4
      {"slot_mapping[3]", [](WriterParams&, Buffers& b) { b.slots[3] = b.slots[1]; }},
      {"key holds", [](WriterParams&, Buffers& b) { b.key.pop_back(); }},
      {"value holds", [](WriterParams&, Buffers& b) { b.value.pop_back(); }},
      {"slot_mapping[0] = 11", [](WriterParams&, Buffers& b) {  // K pool holds one block only
         b.slots[0] = 11;
         b.k_cache.resize(b.k_cache.size() / 3);
       }},
  };
  for (const auto& x : bad) {
    Buffers b = make_buffers(c);
    WriterParams p = c.params();
    x.edit(p, b);
    const auto k0 = b.k_cache, v0 = b.v_cache;
    std::string msg;
    try {
      reshape_and_cache_model(c.format, b.key, b.value, b.k_cache, b.v_cache, b.slots, p);
    } catch (const std::invalid_argument& e) {
      msg = e.what();
    }
    BOOST_TEST(msg.find(x.param) != std::string::npos, x.param << ": message '" << msg << "'");
    BOOST_TEST((b.k_cache == k0 && b.v_cache == v0), x.param << ": pools changed");
  }
}
