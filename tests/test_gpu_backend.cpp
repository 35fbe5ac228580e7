// The GPU harness logic that can be proven without a GPU: kernel arguments packed in SPEC's order
// and types (and matching our kernels' PTX entry points), `--backend gpu` without a device (exit 4),
// input buffers and their guard bands judged by compare_case, the EX2 expectation logic, level T
// (tolerance report, flip candidates) and the CLI options around them.
#define BOOST_TEST_MODULE test_gpu_backend
#include <boost/test/unit_test.hpp>

#include <unistd.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>

#include "cases/builders.h"
#include "io/ex2_profile_io.h"
#include "io/report_doc.h"
#include "judge/compare.h"
#include "judge/ex2_expectation.h"
#include "judge/launch_buffers.h"
#include "judge/level_t.h"
#include "tqref/numeric.h"
#if TQREF_HAVE_BUILTIN_KERNELS
#include "tqref/builtin_kernels.h"
#endif
#if TQREF_HAVE_GPU
#include "gpu/driver.h"
#include "gpu/launch.h"
#endif

namespace {

using namespace tqref;
using namespace tqref::golden;
using namespace tqref::cases;
using namespace tqref::judge;
namespace fs = std::filesystem;

int run_cli(const std::string& args, const fs::path& log) {
  const std::string cmd = std::string(TQREF_CLI) + " " + args + " > " + log.string() + " 2>&1";
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

fs::path scratch(const std::string& tag) {
  auto d = fs::temp_directory_path() / ("tqref_gpub_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

const Ex2Profile& sm90() {
  static const Ex2Profile p = load_ex2_profile_for_arch("sm_90");
  return p;
}

// A writer case and a linked decode pair built in-process (explicit seeds).
GoldenCase make_case(CaseKind kind, Dist dist, uint64_t seed, std::vector<int32_t> lens = {0, 5, 37}) {
  CaseSpec s;
  s.kind = kind;
  s.format = Format::turbo3v;
  s.head_dim = 128;
  s.num_kv_heads = 2;
  s.q_per_kv = 2;
  s.block_size = 16;
  s.num_tokens = 21;
  s.padding_tokens = 2;
  s.seq_lens = std::move(lens);
  s.dist = dist;
  std::vector<GoldenCase> cs = build_cases(s, 0, seed, &sm90());
  return cs.back();  // decode specs give {writer, decode}
}

// What a backend that uploads inputs returns when the kernel leaves them alone.
CaseResult clean_result(const GoldenCase& c) {
  CaseResult r = make_model_backend(&sm90())->run(c);
  for (const LaunchBuffer& b : launch_buffers(c))
    if (!b.output) r.inputs[b.name] = GuardedBuffer::with_guards(b.bytes);
  return r;
}

#if TQREF_HAVE_GPU
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
#endif

// Would catch: `--backend gpu` on a machine without a GPU crashing, hanging, passing silently or
// returning another exit code than kExitNoDevice (4). Checked before the file is read, so the
// message does not depend on data. On a machine with a GPU the no-device path cannot be taken.
// Catches a module of the list in builtin_kernels.h that the generated lookup (from CMake's
// TQREF_MODULES) does not embed, or embeds as something other than a fatbin.
BOOST_AUTO_TEST_CASE(every_builtin_module_is_embedded) {
#if TQREF_HAVE_BUILTIN_KERNELS
  for (const auto& m : tqref::kernels::kBuiltinModules) {
    const auto bytes = tqref::kernels::builtin_fatbin(m.name);
    BOOST_TEST_REQUIRE(bytes.size() > 8u, m.name);
    uint32_t magic = 0;
    std::memcpy(&magic, bytes.data(), 4);
    BOOST_TEST(magic == 0xBA55ED50u, m.name);  // the fatbin container's magic
  }
  BOOST_TEST(tqref::kernels::builtin_fatbin("no_such_module").empty());
#else
  BOOST_TEST_MESSAGE("skipped: built without CUDA, no embedded modules");
#endif
}

BOOST_AUTO_TEST_CASE(backend_gpu_without_device_exits_4) {
#if TQREF_HAVE_GPU
  std::string why;
  const gpu::Driver* drv = gpu::Driver::get(&why);
  if (drv && drv->device_count() > 0) {
    BOOST_TEST_MESSAGE("a GPU is present: the no-device path is not testable here");
    return;
  }
#endif
  const fs::path d = scratch("nodev");
  const int rc = run_cli("check " + (d / "any.h5").string() + " --backend gpu", d / "log");
  const std::string log = slurp(d / "log");
  BOOST_TEST(rc == 4, log);
  BOOST_TEST(log.find("--backend gpu: no usable GPU") != std::string::npos, log);
  fs::remove_all(d);
}

// Would catch: a kernel writing into an input (key, q, the decoder's pools, tables) or past an
// input buffer going unreported; and the check failing clean results.
BOOST_AUTO_TEST_CASE(inputs_and_their_guards_are_judged) {
  for (CaseKind k : {CaseKind::writer, CaseKind::decode}) {
    const GoldenCase c = make_case(k, Dist::gaussian, 11);
    BOOST_TEST(compare_case(c, clean_result(c)).pass, c.name);
    for (const LaunchBuffer& b : launch_buffers(c)) {
      if (b.output || b.bytes.empty()) continue;
      CaseResult r = clean_result(c);
      r.inputs[b.name].data()[b.bytes.size() / 2] ^= 0x10;
      CaseVerdict v = compare_case(c, r);
      BOOST_TEST(!v.pass, c.name << " " << b.name);
      BOOST_TEST(v.categories.count("input-modified") == 1u, c.name << " " << b.name);
      BOOST_TEST_REQUIRE(!v.first.empty());
      BOOST_TEST(v.first[0].buffer == b.name);
      BOOST_TEST(v.first[0].offset == int64_t(b.bytes.size() / 2));
      r = clean_result(c);
      r.inputs[b.name].bytes[kGuardBytes - 1] ^= 0x01;  // the byte just before the data
      v = compare_case(c, r);
      BOOST_TEST(v.categories.count("guard") == 1u, c.name << " " << b.name);
      BOOST_TEST(v.first[0].offset == -1);
    }
    CaseResult r = clean_result(c);
    r.inputs.erase(r.inputs.begin());
    BOOST_TEST(compare_case(c, r).error.find("no input buffer") != std::string::npos);
  }
}

// Would catch: a recomputed expectation that differs from the generator's for the same profile
// (then a GPU with another profile would be judged against wrong bits), and a GPU without any
// profile being judged exactly anyway.
BOOST_AUTO_TEST_CASE(decode_expectation_follows_the_backend_ex2) {
  const GoldenCase c0 = make_case(CaseKind::decode, Dist::gaussian, 12);
  GoldenCase c = c0;
  BOOST_TEST(align_decode_expectation(c, Ex2Source{}) == "");
  BOOST_TEST((c.d.out_expected == c0.d.out_expected));
  c.d.out_expected.assign(c.d.out_expected.size(), 0x1234);  // must be replaced, not kept
  BOOST_TEST(align_decode_expectation(c, Ex2Source{false, &sm90(), "recompute"}) == "");
  BOOST_TEST((c.d.out_expected == c0.d.out_expected));
  const std::string why = align_decode_expectation(c, Ex2Source{false, nullptr, "no EX2 profile for sm_121"});
  BOOST_TEST(why == "no EX2 profile for sm_121");
  GoldenCase w = make_case(CaseKind::writer, Dist::gaussian, 13);
  BOOST_TEST(align_decode_expectation(w, Ex2Source{false, nullptr, "x"}) == "");
}

uint16_t out_elem(const CaseResult& r, uint64_t i) {
  const uint8_t* p = r.buffers.at("output").data() + 2 * i;
  return uint16_t(p[0] | p[1] << 8);
}
void set_out_elem(CaseResult& r, uint64_t i, uint16_t v) {
  uint8_t* p = r.buffers.at("output").data() + 2 * i;
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
// First element of the first row of a non-empty sequence whose model value is finite and non-zero.
uint64_t first_judged(const GoldenCase& c) {
  const uint64_t row_elems = uint64_t(c.d.p.num_q_heads) * c.d.p.head_dim;
  for (uint32_t s = 0; s < c.d.p.num_seqs; ++s) {
    if (c.d.seq_lens[s] <= 0) continue;
    for (uint64_t i = s * row_elems; i < (s + 1) * row_elems; ++i) {
      const float v = bf16_to_f32(c.d.out_expected[i]);
      if (std::isfinite(v) && v != 0) return i;
    }
  }
  BOOST_FAIL("no judged element");
  return 0;
}

// Would catch: level T failing exact results or a one-ulp difference (a legal reordering), or
// passing a grossly wrong element, a new NaN or an unwritten row; distributions not measured.
BOOST_AUTO_TEST_CASE(level_t_tolerance_and_distributions) {
  const GoldenCase c = make_case(CaseKind::decode, Dist::gaussian, 14);
  const LevelTOptions o;
  LevelTVerdict t = judge_level_t(c, clean_result(c), &sm90(), o);
  BOOST_TEST(t.pass, level_t_text(t));
  BOOST_TEST(t.elements > 0u);
  BOOST_TEST(t.ulp_vs_model.max == 0.0);
  BOOST_TEST(t.row_vs_ref_dequantised.n > 0u);
  BOOST_TEST(t.row_vs_ref_dequantised.max > 0.0);  // bf16 output is never exactly the fp64 value
  BOOST_TEST(t.row_vs_ref_dequantised.max == t.model_row_vs_ref_dequantised.max);
  const uint64_t i = first_judged(c);
  CaseResult r = clean_result(c);
  set_out_elem(r, i, uint16_t(out_elem(r, i) + 1));  // one bf16 ulp away from zero
  t = judge_level_t(c, r, &sm90(), o);
  BOOST_TEST(t.pass, level_t_text(t));
  BOOST_TEST(t.ulp_vs_model.max == 1.0);
  r = clean_result(c);
  set_out_elem(r, i, f32_to_bf16(bf16_to_f32(out_elem(r, i)) * 4 + 1));
  t = judge_level_t(c, r, &sm90(), o);
  BOOST_TEST(!t.pass);
  BOOST_TEST(t.over_tolerance == 1u);
  BOOST_TEST(t.worst.find("got") != std::string::npos);
  r = clean_result(c);
  set_out_elem(r, i, 0x7FC0);  // NaN where the model is finite; gaussian V: no flip onto poison
  t = judge_level_t(c, r, &sm90(), o);
  BOOST_TEST(!t.pass);
  BOOST_TEST(t.nan_mismatch == 1u);
  BOOST_TEST(t.rows_flip_poisoned == 0u);
  r = clean_result(c);
  for (uint32_t k = 0; k < c.d.p.head_dim; ++k) set_out_elem(r, i - i % c.d.p.head_dim + k, c.d.out_init[i - i % c.d.p.head_dim + k]);
  t = judge_level_t(c, r, &sm90(), o);
  BOOST_TEST(!t.pass);
  BOOST_TEST(t.structural.count("row-not-written") == 1u);
  const CaseVerdict v = level_t_case_verdict(t);
  BOOST_TEST(!v.pass);
  BOOST_TEST(v.categories.count("row-not-written") == 1u);
}

// Would catch: flip candidates not found where the suite places factors exactly at and one ulp
// around THRESH (Dist::threshold), or found in a case built to have none near it.
BOOST_AUTO_TEST_CASE(level_t_finds_skip_decisions_that_could_flip) {
  const GoldenCase thr = make_case(CaseKind::decode, Dist::threshold, 15);
  LevelTVerdict t = judge_level_t(thr, clean_result(thr), &sm90(), LevelTOptions{});
  BOOST_TEST(t.pass, level_t_text(t));
  BOOST_TEST(t.flip_candidates > 0u);
  BOOST_TEST_REQUIRE(!t.first_flips.empty());
  bool skipped = false, used = false;
  for (const auto& f : t.first_flips) (f.skipped_by_model ? skipped : used) = true;
  BOOST_TEST(skipped);  // a factor at or one ulp below THRESH
  BOOST_TEST(used);     // one ulp above
  LevelTOptions none;
  none.margin = 0;
  t = judge_level_t(thr, clean_result(thr), &sm90(), none);
  BOOST_TEST(t.flip_candidates == 0u);
  BOOST_TEST(level_t_json({t}, none)["cases"][0]["flip_candidates"] == 0);
}

// Would catch: the CLI accepting a level or GPU-only option it does not implement, and level T
// on the model backend failing or writing no tolerance section.
BOOST_AUTO_TEST_CASE(cli_level_and_gpu_options) {
  const fs::path d = scratch("cli");
  const std::string file = (d / "smoke.h5").string();
  BOOST_TEST_REQUIRE(run_cli("generate --suite smoke --threads 2 --out " + file, d / "log") == 0, slurp(d / "log"));
  BOOST_TEST(run_cli("check " + file + " --level X", d / "log") == 2);
  BOOST_TEST(run_cli("check " + file + " --module m.cubin", d / "log") == 2);
  BOOST_TEST(run_cli("check " + file + " --kind neither", d / "log") == 2);
  BOOST_TEST(run_cli("check " + file + " --filter no_such_case", d / "log") == 3);
  const fs::path rep = d / "t.json";
  BOOST_TEST(run_cli("check " + file + " --level T --report " + rep.string(), d / "log") == 0, slurp(d / "log"));
  const report::Json json = report::Json::parse(slurp(rep));
  BOOST_TEST(json["level"] == "T");
  BOOST_TEST(json["tolerance"]["cases"][0].contains("ulp_vs_model"));
  BOOST_TEST(slurp(d / "log").find("PASS(T)") != std::string::npos);
  BOOST_TEST(run_cli("check " + file + " --level T --inject unwritten-row --kind decode", d / "log") == 1);
  fs::remove_all(d);
}

}  // namespace
