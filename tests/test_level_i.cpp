// Level I (harness/judge/level_i.h): the model is invariant under every variant on the committed
// smoke file; each injected invariance fault (testing/faults.h) breaks exactly the property it
// was made for, through the model backend, and is named by the level I diagnosis; the V pool
// repacking that the padded-block variants rely on is lossless; `tqref check --level I`.
#define BOOST_TEST_MODULE test_level_i
#include <boost/test/unit_test.hpp>

#include <map>
#include <optional>
#include <set>

#include "golden_file_cases.h"
#include "io/case_io.h"
#include "io/report_doc.h"
#include "judge/ex2_for_file.h"
#include "testing/faults.h"
#include "judge/level_i.h"
#include "judge/level_i_variants.h"

namespace {

using namespace tqref;
using namespace tqref::golden;
using namespace tqref::judge;
using namespace tqref::testing;
using namespace tqref::test;
namespace fs = std::filesystem;


// Would catch: a variant that changes what the kernel must compute (a block table remapped
// wrong, a stride padded without moving the data, a batch composed with the wrong rows, a token
// reordered without its slot), which the model would then "fail"; and a property that no smoke
// case exercises, which would leave its kernel bugs unseen.
BOOST_AUTO_TEST_CASE(model_is_invariant_on_smoke) {
  const GoldenFileCases& s = smoke();
  auto model = make_model_backend(&*s.ex2);
  std::map<std::string, std::set<std::string>> seen;  // kind -> properties checked
  for (const GoldenCase& c : s.cases) {
    const LevelIVerdict v = judge_level_i(c, *model, LevelIOptions{});
    BOOST_TEST(v.pass, level_i_text(v));
    BOOST_TEST(v.error.empty(), v.error);
    for (const InvarianceCheck& k : v.checks) {
      BOOST_TEST(k.compared > 0u, c.name << " / " << k.variant << " compared nothing");
      seen[v.kind].insert(k.property);
    }
  }
  BOOST_TEST((seen["decode"] == std::set<std::string>{"baseline", "placement", "blocks", "strides", "repeat",
                                                       "other-lengths"}));
  BOOST_TEST((seen["writer"] == std::set<std::string>{"baseline", "token-order", "padding-tokens", "strides",
                                                       "split-launch", "repeat"}));
}

// Would catch: level I missing a batch-size path, a block-id dependence, an order-dependent
// writer or a kernel that carries state from one launch to the next; or naming the wrong
// property (the report would send a developer to the wrong code). Each fault must fail some
// smoke case of its kind, and every failing case must name the fault's property first.
BOOST_AUTO_TEST_CASE(each_invariance_fault_breaks_its_property) {
  const GoldenFileCases& s = smoke();
  const std::map<Fault, std::pair<CaseKind, std::string>> want = {
      {Fault::dense_large_batch, {CaseKind::decode, "placement"}},
      {Fault::block_parity_lsb, {CaseKind::decode, "blocks"}},
      {Fault::writer_contiguous, {CaseKind::writer, "token-order"}},
      {Fault::repeat_lsb, {CaseKind::decode, "repeat"}}};
  for (int fi = 1; fi < kNumFaults; ++fi)  // the table covers every level I fault
    BOOST_TEST(fault_breaks_invariance(Fault(fi)) == (want.count(Fault(fi)) == 1), fault_name(Fault(fi)));
  for (const auto& [f, kp] : want) {
    auto backend = make_fault_backend(make_model_backend(&*s.ex2), f, &*s.ex2);
    size_t failed = 0;
    for (const GoldenCase& c : s.cases) {
      const LevelIVerdict v = judge_level_i(c, *backend, LevelIOptions{});
      if (c.kind != kp.first) {
        BOOST_TEST(v.pass, fault_name(f) << " must not touch " << c.name);
        continue;
      }
      if (v.pass) continue;
      ++failed;
      BOOST_TEST(v.diagnosis == "invariance:" + kp.second, fault_name(f) << " on " << c.name << ": " << level_i_text(v));
      BOOST_TEST(v.sentence.find("suspect") != std::string::npos, v.sentence);
    }
    BOOST_TEST(failed > 0u, fault_name(f) << " was never caught by level I");
  }
}

// Would catch: the large batch dropping under the dense-path trigger of mutant 18 (more than 32
// sequences), or sequences of the large batch that are not compared with their baseline rows.
BOOST_AUTO_TEST_CASE(large_batch_holds_every_sequence_at_several_places) {
  const GoldenFileCases& s = smoke();
  for (const GoldenCase& c : s.cases) {
    if (c.kind != CaseKind::decode) continue;
    for (const VariantBuilder& b : variant_builders(c, LevelIOptions{})) {
      if (b.name.rfind("batch of ", 0) != 0) continue;
      const VariantLaunch v = b.build();
      BOOST_TEST(v.c.d.p.num_seqs >= 33u);
      std::map<int32_t, int> copies;
      for (int32_t x : v.seq_of) ++copies[x];
      for (uint32_t q = 0; q < c.d.p.num_seqs; ++q) BOOST_TEST(copies[int32_t(q)] >= 2, c.name << " seq " << q);
    }
  }
}

// Would catch: a repack that misplaces the code or scale section (the padded-block variants
// would then compare the wrong bytes, or hide a kernel's write into the padding).
BOOST_AUTO_TEST_CASE(v_pool_repack_is_lossless) {
  const GoldenFileCases& s = smoke();
  for (const GoldenCase& c : s.cases) {
    if (c.kind != CaseKind::writer) continue;
    const CacheGeometry g = pool_geometry(c.w);
    CacheGeometry p = g;
    p.v_data_section_bytes += 16;
    p.v_block_stride_bytes += 64;
    const uint32_t bits = traits(c.format).bits;
    const std::vector<uint8_t> there =
        repack_v_pool(c.w.v_expected, g, p, bits, std::vector<uint8_t>(p.v_pool_bytes(), 0xEE));
    BOOST_TEST(v_padding_differing(there, std::vector<uint8_t>(p.v_pool_bytes(), 0xEE), p, bits) == 0u);
    const std::vector<uint8_t> back = repack_v_pool(there, p, g, bits, c.w.v_expected);
    BOOST_TEST((back == c.w.v_expected), c.name);
    // a byte in the new padding shows up as padding, not as a section byte
    std::vector<uint8_t> dirty(there);
    dirty[g.min_v_data_section_bytes(bits)] ^= 1;  // first padding byte of block 0
    BOOST_TEST(v_padding_differing(dirty, there, p, bits) == 1u);
  }
}

// Would catch: `tqref check --level I` not running level I, exiting 0 on a broken invariance, or
// a JSON report without the per-variant results.
BOOST_AUTO_TEST_CASE(cli_level_i) {
  const fs::path d = scratch("level_i_cli");
  BOOST_TEST(run_cli("check " + kCommittedSmoke + " --level I --report " + (d / "ok.json").string(), d) == 0,
             slurp(d / "last.log"));
  BOOST_TEST(report::Json::parse(slurp(d / "ok.json"))["level"] == "I");
  BOOST_TEST(run_cli("check " + kCommittedSmoke + " --level I --inject dense-large-batch --kind decode --report " +
                         (d / "bad.json").string(), d) == 1);
  const std::string log = slurp(d / "last.log");
  BOOST_TEST(log.find("FAIL I ") != std::string::npos, log);
  BOOST_TEST(log.find("placement / batch of 33") != std::string::npos, log);
  const report::Json bad = report::Json::parse(slurp(d / "bad.json"));
  bool placement = false;
  for (const auto& c : bad["invariance"]["cases"])
    placement = placement || c["diagnosis"] == "invariance:placement";
  BOOST_TEST(placement);
  BOOST_TEST(run_cli("check " + kCommittedSmoke + " --level X", d) == 2);
  fs::remove_all(d);
}

}  // namespace
