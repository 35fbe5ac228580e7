// The GPU harness logic that can be proven without a GPU, in every build: `--backend gpu` without
// a device (exit 4), input buffers and their guard bands judged by compare_case, the EX2
// expectation logic, level T (tolerance report, flip candidates) and the CLI options around them.
// What only a CUDA build has (argument packing, our PTX, embedded modules): test_cuda_build.cpp.
#define BOOST_TEST_MODULE test_gpu_backend
#include <boost/test/unit_test.hpp>

#include <unistd.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "cases/builders.h"
#include "gpu/availability.h"
#include "io/ex2_profile_io.h"
#include "io/report_doc.h"
#include "judge/compare.h"
#include "judge/ex2_expectation.h"
#include "judge/launch_buffers.h"
#include "judge/level_t.h"
#include "tqref/numeric.h"

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

// Would catch: `--backend gpu` on a machine without a GPU crashing, hanging, passing silently or
// returning another exit code than kExitNoDevice (4). Checked before the file is read, so the
// message does not depend on data. On a machine with a GPU the no-device path cannot be taken.
BOOST_AUTO_TEST_CASE(backend_gpu_without_device_exits_4) {
  if (gpu::unavailable_reason().empty()) {
    BOOST_TEST_MESSAGE("a GPU is present: the no-device path is not testable here");
    return;
  }
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
