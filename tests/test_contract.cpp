// The contract's parameter rules (model/tqref/contract.h, docs/contract-checks.md): every rule
// accepts its boundary value and refuses the next value out with the exact message naming the
// parameter and the allowed range; window_start at its edges; the model's entry points refuse
// through ContractError. Catches an off-by-one in a range, a rule that was lost or loosened when
// the copies were merged, a message that no longer names its parameter or range, and extent
// arithmetic that wraps at 64 bits.
#define BOOST_TEST_MODULE contract
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <vector>

#include "decode_case.h"
#include "tqref/contract.h"
#include "tqref/decode.h"
#include "tqref/reference.h"
#include "tqref/writer.h"

using namespace tqref;

namespace {

void accepted(const Check& c, const char* what) {
  BOOST_TEST(!c.has_value(), what << ": refused with '" << (c ? c->message : "") << "'");
}
void refused(const Check& c, const std::string& message) {
  if (!c) {
    BOOST_ERROR("accepted; expected '" << message << "'");
    return;
  }
  BOOST_TEST(c->message == message);
}

// turbo3v (b = 3), 2 kv heads of 32 dims (n = 64), blocks of 4 slots, tight strides and sections:
// index section 4*64*3/8 = 96 bytes, scale section 4*64/16 = 16 bytes.
WriterParams writer() {
  WriterParams p;
  p.num_kv_heads = 2;
  p.head_dim = 32;
  p.block_size = 4;
  p.key_stride = 64;
  p.value_stride = 64;
  p.v_data_section_bytes = 96;
  p.v_block_stride_bytes = 112;
  return p;
}

CacheGeometry geometry(uint32_t H, uint32_t D, uint32_t B, uint64_t v_data = 0, uint64_t v_stride = 0) {
  return CacheGeometry{H, D, B, 0, v_stride, v_data};
}

// HDIM 128, GQA 2 (4 q heads on 2 kv heads), blocks of 4, 3 sequences of up to 5 blocks, turbo4v
// tight sections: index 4*256*4/8 = 512 bytes, scales 4*256/16 = 64 bytes.
DecodeParams decoder() {
  DecodeParams p;
  p.hdim = 128;
  p.head_dim = 128;
  p.num_kv_heads = 2;
  p.num_q_heads = 4;
  p.block_size = 4;
  p.max_blocks_per_seq = 5;
  p.q_stride = 520;
  p.v_data_section_bytes = 512;
  p.v_block_stride_bytes = 576;
  p.num_seqs = 3;
  p.inv_sqrt_d = 0.125f;
  return p;
}

}  // namespace

// window_start(L, W) = L - W when a window is on (W > 0) and shorter than L, else 0. Catches
// an off-by-one at W = L or W = L - 1 and a window of 0 taken as "attend to nothing".
BOOST_AUTO_TEST_CASE(window_start_edges) {
  static_assert(window_start(0, 0) == 0);
  BOOST_TEST(window_start(0, 0) == 0u);
  BOOST_TEST(window_start(0, 5) == 0u);         // L = 0
  BOOST_TEST(window_start(1, 0) == 0u);         // L = 1, no window
  BOOST_TEST(window_start(1, 1) == 0u);         // L = 1, W = L
  BOOST_TEST(window_start(10, 0) == 0u);        // W = 0: off
  BOOST_TEST(window_start(10, 10) == 0u);       // W = L
  BOOST_TEST(window_start(10, 9) == 1u);        // W = L - 1
  BOOST_TEST(window_start(10, 11) == 0u);       // W > L
  BOOST_TEST(window_start(10, 1) == 9u);        // W = 1: the last position only
  BOOST_TEST(window_start(UINT32_MAX, 1) == UINT32_MAX - 1);
}

// docs/spec.md section 3: num_kv_heads >= 1, head_dim a positive multiple of 16, block_size >= 1,
// n <= 2^32-1, a K block below 2^64 bytes.
BOOST_AUTO_TEST_CASE(cache_geometry) {
  accepted(check_cache_geometry(geometry(1, 16, 1)), "smallest geometry");
  refused(check_cache_geometry(geometry(0, 16, 1)), "num_kv_heads = 0; allowed: >= 1");
  refused(check_cache_geometry(geometry(1, 0, 1)), "head_dim = 0; allowed: a positive multiple of 16");
  accepted(check_cache_geometry(geometry(1, 32, 1)), "head_dim 32");
  refused(check_cache_geometry(geometry(1, 31, 1)), "head_dim = 31; allowed: a positive multiple of 16");
  refused(check_cache_geometry(geometry(1, 33, 1)), "head_dim = 33; allowed: a positive multiple of 16");
  refused(check_cache_geometry(geometry(1, 16, 0)), "block_size = 0; allowed: >= 1");
  // n = 2^32-16 is the largest multiple of 16 below 2^32; 2^28 heads of 16 give 2^32.
  accepted(check_cache_geometry(geometry((1u << 28) - 1, 16, 1)), "n = 2^32-16");
  refused(check_cache_geometry(geometry(1u << 28, 16, 1)),
          "num_kv_heads*head_dim = 4294967296; allowed: <= 2^32-1");
  // K block = 2*n*B: n = 2^31 with B = 2^32-1 is 2^64 - 2^32; the next n (2^31+16) passes 2^64.
  accepted(check_cache_geometry(geometry(1u << 27, 16, UINT32_MAX)), "K block 2^64-2^32 bytes");
  refused(check_cache_geometry(geometry((1u << 27) + 1, 16, UINT32_MAX)),
          "block_size*num_kv_heads*head_dim*2 (bytes of a K block) = 18446744206853537760; "
          "allowed: <= 2^64-1");
}

// docs/spec.md section 3: the index section holds B rows of n*b/8 bytes, the scale section B rows
// of n/16 bytes after v_data_section_bytes. Also catches v_data + scales wrapping at 2^64.
BOOST_AUTO_TEST_CASE(v_sections) {
  accepted(check_v_sections(Format::turbo3v, geometry(2, 32, 4, 96, 112)), "tight sections");
  refused(check_v_sections(Format::turbo3v, geometry(2, 32, 4, 95, 112)),
          "v_data_section_bytes = 95; allowed: >= block_size*n*b/8 = 96 (the index section)");
  refused(check_v_sections(Format::turbo3v, geometry(2, 32, 4, 96, 111)),
          "v_block_stride_bytes = 111; allowed: >= v_data_section_bytes + block_size*n/16 = 112");
  accepted(check_v_sections(Format::turbo3v, geometry(2, 32, 4, 100, 116)), "padded index section");
  refused(check_v_sections(Format::turbo3v, geometry(2, 32, 4, 100, 115)),
          "v_block_stride_bytes = 115; allowed: >= v_data_section_bytes + block_size*n/16 = 116");
  for (const FormatTraits& t : kFormats) {  // index section B*n*b/8 for each b
    const uint64_t codes = 4 * 64 * t.bits / 8;
    accepted(check_v_sections(t.format, geometry(2, 32, 4, codes, codes + 16)), t.name);
    refused(check_v_sections(t.format, geometry(2, 32, 4, codes - 1, codes + 16)),
            "v_data_section_bytes = " + std::to_string(codes - 1) + "; allowed: >= block_size*n*b/8 = " +
                std::to_string(codes) + " (the index section)");
  }
  refused(check_v_sections(Format::turbo3v, geometry(2, 32, 4, UINT64_MAX, UINT64_MAX)),
          "v_block_stride_bytes = 18446744073709551615; allowed: >= v_data_section_bytes + "
          "block_size*n/16 = 18446744073709551631");
}

// A block counts when its K block and its V block up to the end of the scale section lie inside
// the pools. Catches a count that needs the last block's padding, or one that reads past the pool.
BOOST_AUTO_TEST_CASE(pool_block_counts) {
  const CacheGeometry g = geometry(2, 32, 4, 100, 130);  // K block 512 bytes, V end 116 of 130
  BOOST_TEST(k_pool_blocks(g, 3 * 512) == 3u);
  BOOST_TEST(k_pool_blocks(g, 3 * 512 - 1) == 2u);
  BOOST_TEST(pool_blocks(g, 3 * 512, 2 * 130 + 116) == 3u);
  BOOST_TEST(pool_blocks(g, 3 * 512, 2 * 130 + 115) == 2u);
  BOOST_TEST(pool_blocks(g, 2 * 512, 3 * 130) == 2u);  // K is the smaller pool
  BOOST_TEST(pool_blocks(g, 3 * 512, 115) == 0u);
}

// docs/spec.md section 4: key_stride >= n and a multiple of 4 (8-byte K copies), value_stride >= n;
// the geometry and V sections first.
BOOST_AUTO_TEST_CASE(writer_params) {
  accepted(check_writer_params(Format::turbo3v, writer()), "tight writer");
  WriterParams p = writer();
  p.key_stride = 63;  // below n: the >= rule speaks first
  refused(check_writer_params(Format::turbo3v, p), "key_stride = 63; allowed: >= num_kv_heads*head_dim = 64");
  p.key_stride = 68;
  accepted(check_writer_params(Format::turbo3v, p), "key_stride 68");
  for (uint32_t s : {65u, 66u, 67u}) {
    p.key_stride = s;
    refused(check_writer_params(Format::turbo3v, p),
            "key_stride = " + std::to_string(s) + "; allowed: a multiple of 4 (8-byte vector copy of K)");
  }
  p = writer();
  p.value_stride = 65;  // no alignment rule for V
  accepted(check_writer_params(Format::turbo3v, p), "value_stride 65");
  p.value_stride = 63;
  refused(check_writer_params(Format::turbo3v, p), "value_stride = 63; allowed: >= num_kv_heads*head_dim = 64");
  p = writer();
  p.head_dim = 24;
  refused(check_writer_params(Format::turbo3v, p), "head_dim = 24; allowed: a positive multiple of 16");
  p = writer();
  p.v_data_section_bytes = 95;
  refused(check_writer_params(Format::turbo3v, p),
          "v_data_section_bytes = 95; allowed: >= block_size*n*b/8 = 96 (the index section)");
  p = writer();
  p.k_block_stride_bytes = 1;  // accepted and ignored (docs/spec.md section 4)
  accepted(check_writer_params(Format::turbo3v, p), "k_block_stride_bytes ignored");
}

// grid.x = num_tokens < 2^31; key/value hold (T-1)*stride + n elements (the last row's padding may
// be absent).
BOOST_AUTO_TEST_CASE(writer_launch_and_buffers) {
  accepted(check_writer_launch(kMaxGridX), "2^31-1 tokens");
  refused(check_writer_launch(kMaxGridX + 1), "num_tokens = 2147483648; allowed: <= 2^31-1 (grid.x)");
  WriterParams p = writer();
  p.key_stride = 80;
  p.value_stride = 70;
  accepted(check_writer_buffers(p, 0, 0, 0), "no tokens");
  accepted(check_writer_buffers(p, 3, 2 * 80 + 64, 2 * 70 + 64), "tight buffers");
  refused(check_writer_buffers(p, 3, 2 * 80 + 63, 2 * 70 + 64),
          "key holds 223 elements; allowed: >= (num_tokens-1)*key_stride + n = 224");
  refused(check_writer_buffers(p, 3, 2 * 80 + 64, 2 * 70 + 63),
          "value holds 203 elements; allowed: >= (num_tokens-1)*value_stride + n = 204");
  // (T-1)*key_stride + n past 2^64 is refused, not wrapped: (2^33-1)*(2^32-4) + 64.
  p.key_stride = UINT32_MAX - 3;
  refused(check_writer_buffers(p, uint64_t(1) << 33, UINT64_MAX, UINT64_MAX),
          "key holds 18446744073709551615 elements; allowed: >= (num_tokens-1)*key_stride + n = "
          "36893488108764397636");
}

// Slots: negative = padding, else 0 .. num_blocks*B-1, each at most once.
BOOST_AUTO_TEST_CASE(slot_mapping) {
  const std::vector<int64_t> ok = {11, -1, 0, INT64_MIN, -1};
  accepted(check_slot_mapping(ok, 3, 4), "last slot, padding repeated");
  const std::vector<int64_t> past = {0, 12};
  refused(check_slot_mapping(past, 3, 4),
          "slot_mapping[1] = 12; allowed: negative (padding) or 0 .. num_blocks*block_size-1 = 11");
  const std::vector<int64_t> twice = {3, -1, 3};
  refused(check_slot_mapping(twice, 3, 4),
          "slot_mapping[2] = 3 repeats an earlier token's slot; allowed: distinct slots");
  const std::vector<int64_t> none = {-1, 0};
  refused(check_slot_mapping(none, 0, 4),
          "slot_mapping[1] = 0; allowed: negative (padding): the pools hold no whole block");
}

// docs/spec.md section 5: HDIM is 128 or 256; head_dim may differ from it (section 5.1, outside
// the contract), and the published dispatch picks the build.
BOOST_AUTO_TEST_CASE(decode_build) {
  DecodeParams p = decoder();
  accepted(check_decode_build(p), "HDIM 128");
  p.hdim = p.head_dim = 256;
  accepted(check_decode_build(p), "HDIM 256");
  for (uint32_t h : {0u, 127u, 129u, 255u, 257u}) {
    p.hdim = p.head_dim = h;
    refused(check_decode_build(p),
            "hdim = " + std::to_string(h) + "; allowed: 128, 256 (the kernel's compile-time HDIM)");
  }
  p.hdim = 128;
  for (uint32_t d : {48u, 112u, 144u, 256u}) {
    p.head_dim = d;
    accepted(check_decode_build(p), "head_dim below or above HDIM 128 (section 5.1)");
    BOOST_TEST(!decode_in_contract(d, 128));
  }
  BOOST_TEST(decode_in_contract(128, 128));
}

// The build an engine loads for a model's head_dim (docs/spec.md section 5): 128 up to 128, 256
// up to 256, nothing above. Catches a dispatch off by one at 128 or one that accepts 257.
BOOST_AUTO_TEST_CASE(engine_dispatch) {
  static_assert(engine_hdim(128) == 128 && engine_hdim(129) == 256);
  BOOST_TEST(engine_hdim(1) == 128u);
  BOOST_TEST(engine_hdim(48) == 128u);
  BOOST_TEST(engine_hdim(128) == 128u);
  BOOST_TEST(engine_hdim(129) == 256u);
  BOOST_TEST(engine_hdim(256) == 256u);
  accepted(check_engine_head_dim(1), "head_dim 1");
  accepted(check_engine_head_dim(256), "head_dim 256");
  for (uint32_t d : {0u, 257u})
    refused(check_engine_head_dim(d), "head_dim = " + std::to_string(d) +
                                          "; allowed: 1 .. 256 (the engine runs HDIM=128 up to 128, "
                                          "HDIM=256 up to 256)");
}

// Geometry of the decoder without the build: GQA ratio and q_stride; the reference's rules.
BOOST_AUTO_TEST_CASE(decode_geometry) {
  DecodeParams p = decoder();
  accepted(check_decode_geometry(p), "GQA 2");
  p.hdim = 256;  // the reference ignores the build's HDIM (level T of mismatched launches)
  accepted(check_decode_geometry(p), "head_dim != hdim");
  p = decoder();
  p.num_q_heads = 2;  // MHA
  p.q_stride = 256;
  accepted(check_decode_geometry(p), "GQA 1");
  for (uint32_t q : {0u, 3u, 5u}) {
    p.num_q_heads = q;
    refused(check_decode_geometry(p),
            "num_q_heads = " + std::to_string(q) + "; allowed: a positive multiple of num_kv_heads = 2");
  }
  p = decoder();
  p.q_stride = 512;
  accepted(check_decode_geometry(p), "tight q_stride");
  p.q_stride = 511;
  refused(check_decode_geometry(p), "q_stride = 511; allowed: >= num_q_heads*head_dim = 512");
  p = decoder();
  p.block_size = 0;
  refused(check_decode_geometry(p), "block_size = 0; allowed: >= 1");
}

// check_decode_params = build, geometry, then the V sections; launch limits of the grid.
BOOST_AUTO_TEST_CASE(decode_params_and_launch) {
  DecodeParams p = decoder();
  accepted(check_decode_params(Format::turbo4v, p), "tight turbo4v");
  p.v_block_stride_bytes = 575;
  refused(check_decode_params(Format::turbo4v, p),
          "v_block_stride_bytes = 575; allowed: >= v_data_section_bytes + block_size*n/16 = 576");
  p = decoder();
  p.v_data_section_bytes = 511;
  refused(check_decode_params(Format::turbo4v, p),
          "v_data_section_bytes = 511; allowed: >= block_size*n*b/8 = 512 (the index section)");
  p.hdim = 192;  // the build is checked first
  refused(check_decode_params(Format::turbo4v, p), "hdim = 192; allowed: 128, 256 (the kernel's compile-time HDIM)");
  p = decoder();
  p.num_seqs = 65535;
  p.num_q_heads = uint32_t(kMaxGridX);
  accepted(check_decode_launch(p), "largest grid");
  p.num_seqs = 65536;
  refused(check_decode_launch(p), "num_seqs = 65536; allowed: <= 65535 (grid.y)");
  p.num_seqs = 1;
  p.num_q_heads = uint32_t(kMaxGridX + 1);
  refused(check_decode_launch(p), "num_q_heads = 2147483648; allowed: <= 2^31-1 (grid.x)");
}

// Buffers of the decoder: q (last row without its padding), output, seq_lens, block_tables.
BOOST_AUTO_TEST_CASE(decode_buffers) {
  const DecodeParams p = decoder();  // 3 sequences, q rows of 512 in strides of 520
  const DecodeBuffers tight{2 * 520 + 512, 3 * 512, 3, 15};
  accepted(check_decode_buffers(p, tight), "tight buffers");
  DecodeBuffers b = tight;
  b.q_elems -= 1;
  refused(check_decode_buffers(p, b),
          "q holds 1551 elements; allowed: >= (num_seqs-1)*q_stride + num_q_heads*head_dim = 1552");
  b = tight;
  b.output_elems = 3 * 512 - 1;
  refused(check_decode_buffers(p, b), "output holds 1535 elements; allowed: >= num_seqs*num_q_heads*head_dim = 1536");
  b.output_elems = std::nullopt;  // the reference returns its output
  accepted(check_decode_buffers(p, b), "no output buffer");
  b = tight;
  b.seq_lens_entries = 2;
  refused(check_decode_buffers(p, b), "seq_lens holds 2 entries; allowed: >= num_seqs = 3");
  b = tight;
  b.block_table_entries = 14;
  refused(check_decode_buffers(p, b), "block_tables holds 14 entries; allowed: >= num_seqs*max_blocks_per_seq = 15");
  DecodeParams none = p;
  none.num_seqs = 0;
  accepted(check_decode_buffers(none, DecodeBuffers{0, 0, 0, 0}), "no sequences");
}

// seq_lens in 0 .. max_blocks_per_seq*B; the table entries of blocks holding [window_start, L) in
// 0 .. num_blocks-1, other entries free (docs/spec.md section 7). Catches a check that reads
// entries the kernel never reads, or that misses the first block a window still touches.
BOOST_AUTO_TEST_CASE(sequences) {
  DecodeParams p = decoder();  // B = 4, 5 blocks per sequence: L up to 20
  const uint64_t NB = 7;
  std::vector<int32_t> tables = {6, 0, 1, -7, 1 << 30,  // seq 0: L = 5 uses entries 0, 1
                                 2, 3, 4, 5, 6,         // seq 1: L = 20 uses all
                                 -1, -1, -1, -1, -1};   // seq 2: L = 0 uses none
  std::vector<int32_t> lens = {5, 20, 0};
  accepted(check_sequences(p, tables, lens, NB), "entries in use inside, others garbage");
  lens[1] = 21;
  refused(check_sequences(p, tables, lens, NB), "seq_lens[1] = 21; allowed: 0 .. max_blocks_per_seq*block_size = 20");
  lens[1] = -1;
  refused(check_sequences(p, tables, lens, NB), "seq_lens[1] = -1; allowed: 0 .. max_blocks_per_seq*block_size = 20");
  lens[1] = 20;
  tables[1] = 7;  // seq 0, entry 1: num_blocks is out
  refused(check_sequences(p, tables, lens, NB),
          "block_tables[0][1] = 7 (in use by seq_lens[0] = 5); allowed: 0 .. num_blocks-1 = 6");
  tables[1] = -1;
  refused(check_sequences(p, tables, lens, NB),
          "block_tables[0][1] = -1 (in use by seq_lens[0] = 5); allowed: 0 .. num_blocks-1 = 6");
  tables[1] = 0;
  // Sequence 1 (L = 20) with a window: W = 16 starts at position 4, so entry 0 is not read; W = 17
  // starts at 3, inside block 0.
  tables[5] = -3;
  p.sliding_window = 16;
  accepted(check_sequences(p, tables, lens, NB), "window starts at block 1");
  p.sliding_window = 17;
  refused(check_sequences(p, tables, lens, NB),
          "block_tables[1][0] = -3 (in use by seq_lens[1] = 20); allowed: 0 .. num_blocks-1 = 6");
}

// The model's entry points refuse through ContractError (an std::invalid_argument) whose text is
// the function and the contract's message. Catches an entry point that still validates with its
// own copy of a rule (another text) or throws another type.
BOOST_AUTO_TEST_CASE(model_entry_points_throw_contract_errors) {
  const WriterParams w = writer();
  std::vector<uint16_t> key(64), value(64);
  std::vector<uint8_t> k_cache(512), v_cache(112);
  const std::vector<int64_t> slots = {4};  // one block of 4 slots: slot 4 is out
  try {
    reshape_and_cache_model(Format::turbo3v, key, value, k_cache, v_cache, slots, w);
    BOOST_ERROR("writer accepted slot 4 of a one-block pool");
  } catch (const ContractError& e) {
    BOOST_TEST(std::string(e.what()) ==
               "reshape_and_cache_model: slot_mapping[0] = 4; allowed: negative (padding) or 0 .. "
               "num_blocks*block_size-1 = 3");
  }
  DecodeParams d = decoder();
  d.hdim = 64;  // not a build
  const std::vector<uint16_t> q(2 * 520 + 512);
  std::vector<uint16_t> out(3 * 512);
  const std::vector<int32_t> tables(15, 0), lens = {1, 1, 1};
  const std::vector<uint8_t> kc(4 * 512 * 2), vc(576);
  BOOST_CHECK_EXCEPTION(paged_decode_model(Format::turbo4v, q, kc, vc, out, tables, lens, d,
                                           test::synthetic_ex2()),
                        ContractError, [](const ContractError& e) {
                          return std::string(e.what()) ==
                                 "paged_decode_model: hdim = 64; allowed: 128, 256 (the kernel's "
                                 "compile-time HDIM)";
                        });
  d.num_q_heads = 3;
  BOOST_CHECK_EXCEPTION(
      reference_attention(Format::turbo4v, q, kc, vc, {}, tables, lens, d, ReferenceV::dequantised),
      ContractError, [](const ContractError& e) {
        return std::string(e.what()) ==
               "reference_attention: num_q_heads = 3; allowed: a positive multiple of num_kv_heads = 2";
      });
}
