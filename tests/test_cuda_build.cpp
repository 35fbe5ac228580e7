// What a CUDA build adds that can be proven without a GPU: kernel arguments packed in SPEC's
// order and types (and matching our kernels' PTX entry points), and the kernel modules embedded in
// the binary. CMake builds this test only where CUDA is built (tests/CMakeLists.txt); a CPU-only
// build reports it as skipped.
#define BOOST_TEST_MODULE test_cuda_build
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "gpu/launch.h"
#include "tqref/builtin_kernels.h"
#include "tqref/format.h"
#include "tqref/numeric.h"

namespace {

using namespace tqref;
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using gpu::ArgType;
struct Expected {
  const char* name;
  ArgType type;
  size_t offset;
};

// Offsets follow from SPEC's declaration order with natural alignment: 8-byte pointers and u64,
// 4-byte u32 and f32. Written from docs/spec.md sections 4 and 5, not from the packer.
const Expected kWriterSpec[] = {
    {"key", ArgType::ptr, 0},           {"value", ArgType::ptr, 8},
    {"k_cache", ArgType::ptr, 16},      {"v_cache", ArgType::ptr, 24},
    {"slot_mapping", ArgType::ptr, 32}, {"num_kv_heads", ArgType::u32, 40},
    {"head_dim", ArgType::u32, 44},     {"block_size", ArgType::u32, 48},
    {"key_stride", ArgType::u32, 52},   {"value_stride", ArgType::u32, 56},
    {"k_block_stride_bytes", ArgType::u64, 64}, {"v_block_stride_bytes", ArgType::u64, 72},
    {"v_data_section_bytes", ArgType::u64, 80}};
const Expected kDecodeSpec[] = {
    {"q", ArgType::ptr, 0},  {"k_cache", ArgType::ptr, 8}, {"v_cache", ArgType::ptr, 16},
    {"output", ArgType::ptr, 24}, {"block_tables", ArgType::ptr, 32}, {"seq_lens", ArgType::ptr, 40},
    {"max_blocks_per_seq", ArgType::u32, 48}, {"num_q_heads", ArgType::u32, 52},
    {"num_kv_heads", ArgType::u32, 56}, {"head_dim", ArgType::u32, 60}, {"block_size", ArgType::u32, 64},
    {"inv_sqrt_d", ArgType::f32, 68}, {"q_stride", ArgType::u32, 72},
    {"v_block_stride_bytes", ArgType::u64, 80}, {"v_data_section_bytes", ArgType::u64, 88},
    {"sliding_window", ArgType::u32, 96}};

template <class T>
T read_at(const std::vector<uint8_t>& b, size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

// Would catch: a swapped, missing or mis-typed writer parameter (e.g. key_stride passed as u64,
// value_stride before key_stride), which the GPU would silently read as other strides.
BOOST_AUTO_TEST_CASE(writer_args_in_spec_order_and_types) {
  WriterParams p;
  p.num_kv_heads = 3; p.head_dim = 256; p.block_size = 13; p.key_stride = 772; p.value_stride = 771;
  p.k_block_stride_bytes = 0x100000001ull; p.v_block_stride_bytes = 0x200000003ull;
  p.v_data_section_bytes = 0x300000005ull;
  gpu::KernelArgs a;
  gpu::pack_writer_args(a, {0x1111000000000001ull, 0x2222, 0x3333, 0x4444, 0x5555}, p);
  BOOST_TEST_REQUIRE(a.size() == std::size(kWriterSpec));
  for (size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST(a.slots()[i].name == kWriterSpec[i].name);
    BOOST_TEST(int(a.slots()[i].type) == int(kWriterSpec[i].type), kWriterSpec[i].name);
    BOOST_TEST(a.slots()[i].offset == kWriterSpec[i].offset, kWriterSpec[i].name);
  }
  const std::vector<uint8_t> b = a.param_bytes();
  BOOST_TEST(b.size() == 88u);
  BOOST_TEST(read_at<uint64_t>(b, 0) == 0x1111000000000001ull);
  BOOST_TEST(read_at<uint64_t>(b, 32) == 0x5555u);
  BOOST_TEST(read_at<uint32_t>(b, 52) == 772u);
  BOOST_TEST(read_at<uint32_t>(b, 56) == 771u);
  BOOST_TEST(read_at<uint32_t>(b, 60) == 0u);  // alignment padding before the first u64
  BOOST_TEST(read_at<uint64_t>(b, 64) == 0x100000001ull);
  BOOST_TEST(read_at<uint64_t>(b, 80) == 0x300000005ull);
  // kernelParams[i] points at exactly the value of parameter i
  BOOST_TEST(*static_cast<uint32_t*>(a.params()[8]) == 772u);  // key_stride
  BOOST_TEST(*static_cast<uint32_t*>(a.params()[9]) == 771u);  // value_stride
  BOOST_TEST(*static_cast<uint64_t*>(a.params()[12]) == 0x300000005ull);
}

// Would catch: the same for the decoder, in particular inv_sqrt_d passed as a double or as
// integer bits converted by value, and the u64 section sizes packed as u32.
BOOST_AUTO_TEST_CASE(decode_args_in_spec_order_and_types) {
  DecodeParams p;
  p.max_blocks_per_seq = 7; p.num_q_heads = 8; p.num_kv_heads = 2; p.head_dim = 128; p.block_size = 16;
  p.inv_sqrt_d = 0.08838834764831845f; p.q_stride = 1032; p.v_block_stride_bytes = 0x500000007ull;
  p.v_data_section_bytes = 6144; p.sliding_window = 100;
  gpu::KernelArgs a;
  gpu::pack_decode_args(a, {1, 2, 3, 4, 5, 6}, p);
  BOOST_TEST_REQUIRE(a.size() == std::size(kDecodeSpec));
  for (size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST(a.slots()[i].name == kDecodeSpec[i].name);
    BOOST_TEST(int(a.slots()[i].type) == int(kDecodeSpec[i].type), kDecodeSpec[i].name);
    BOOST_TEST(a.slots()[i].offset == kDecodeSpec[i].offset, kDecodeSpec[i].name);
  }
  const std::vector<uint8_t> b = a.param_bytes();
  BOOST_TEST(b.size() == 100u);
  BOOST_TEST(read_at<uint32_t>(b, 68) == f32_bits(0.08838834764831845f));
  BOOST_TEST(read_at<uint32_t>(b, 72) == 1032u);
  BOOST_TEST(read_at<uint32_t>(b, 76) == 0u);
  BOOST_TEST(read_at<uint64_t>(b, 80) == 0x500000007ull);
  BOOST_TEST(read_at<uint64_t>(b, 88) == 6144u);
  BOOST_TEST(read_at<uint32_t>(b, 96) == 100u);
  BOOST_TEST(*static_cast<float*>(a.params()[11]) == 0.08838834764831845f);
}

// The .param list of `entry` in a PTX file, as PTX type names (".u64", ".u32", ".f32").
std::vector<std::string> ptx_params(const fs::path& ptx, const std::string& entry) {
  const std::string text = slurp(ptx);
  const size_t at = text.find(".entry " + entry + "(");
  if (at == std::string::npos) return {};
  const size_t end = text.find(')', at);
  std::vector<std::string> types;
  const std::string sig = text.substr(at, end - at);
  static const std::regex re(R"(\.param\s+(\.[a-z0-9]+))");
  for (std::sregex_iterator it(sig.begin(), sig.end(), re), e; it != e; ++it) types.push_back((*it)[1]);
  return types;
}

std::string ptx_type(ArgType t) {
  return t == ArgType::u32 ? ".u32" : t == ArgType::f32 ? ".f32" : ".u64";
}

// Would catch: our kernels' signatures drifting from the packer (and so from SPEC): a parameter
// added, removed, reordered or retyped in kernels/ shows here as a differing PTX .param list.
BOOST_AUTO_TEST_CASE(packer_matches_our_kernels_ptx) {
  const fs::path dir = TQREF_MODULE_DIR;
  gpu::KernelArgs w, d;
  gpu::pack_writer_args(w, {}, WriterParams{});
  gpu::pack_decode_args(d, {}, DecodeParams{});
  for (const auto& t : kFormats) {
    const std::string wk = std::string("reshape_and_cache_flash_bf16k_") + t.name;
    const auto wp = ptx_params(dir / "writers.compute_90.ptx", wk);
    BOOST_TEST_REQUIRE(wp.size() == w.size(), wk);
    for (size_t i = 0; i < wp.size(); ++i) BOOST_TEST(wp[i] == ptx_type(w.slots()[i].type), wk << " param " << i);
    for (const char* mod : {"decode_hdim128", "decode_hdim256"}) {
      const std::string dk = std::string("paged_decode_attn_bf16k_") + t.name;
      const auto dp = ptx_params(dir / (std::string(mod) + ".compute_90.ptx"), dk);
      BOOST_TEST_REQUIRE(dp.size() == d.size(), mod << " " << dk);
      for (size_t i = 0; i < dp.size(); ++i)
        BOOST_TEST(dp[i] == ptx_type(d.slots()[i].type), mod << " " << dk << " param " << i);
    }
  }
}

// Catches a module of the list in builtin_kernels.h that the generated lookup (from CMake's
// TQREF_MODULES) does not embed, or embeds as something other than a fatbin.
BOOST_AUTO_TEST_CASE(every_builtin_module_is_embedded) {
  for (const auto& m : tqref::kernels::kBuiltinModules) {
    const auto bytes = tqref::kernels::builtin_fatbin(m.name);
    BOOST_TEST_REQUIRE(bytes.size() > 8u, m.name);
    uint32_t magic = 0;
    std::memcpy(&magic, bytes.data(), 4);
    BOOST_TEST(magic == 0xBA55ED50u, m.name);  // the fatbin container's magic
  }
  BOOST_TEST(tqref::kernels::builtin_fatbin("no_such_module").empty());
}

}  // namespace
