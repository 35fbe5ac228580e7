// `tqref check` and the backend-independent comparison (harness/judge/compare.cpp): the model
// backend passes the committed smoke file; each injected fault is detected and classified; byte
// offsets decode to the documented places; reproducers re-run; bad input gives exit code 3.
#define BOOST_TEST_MODULE test_check
#include <boost/test/unit_test.hpp>

#include <optional>
#include <set>

#include "cases/mutant_models.h"
#include "golden_file_cases.h"
#include "io/case_io.h"
#include "judge/compare.h"
#include "judge/ex2_for_file.h"
#include "testing/faults.h"
#include "judge/report.h"

namespace {

using namespace tqref;
using namespace tqref::golden;
using namespace tqref::cases;
using namespace tqref::judge;
using namespace tqref::testing;
using namespace tqref::test;
namespace fs = std::filesystem;

// Would catch: the model backend or the reader drifting from the stored expectations (any byte).
BOOST_AUTO_TEST_CASE(model_backend_passes_committed_smoke) {
  const fs::path d = scratch("check_pass");
  BOOST_TEST(run_cli("check " + kCommittedSmoke + " --backend model --report " +
                         (d / "r.json").string() + " --junit " + (d / "j.xml").string(), d) == 0,
             slurp(d / "last.log"));
  const std::string json = slurp(d / "r.json"), xml = slurp(d / "j.xml");
  BOOST_TEST(json.find("\"failed\": 0") != std::string::npos);
  BOOST_TEST(xml.find("failures=\"0\"") != std::string::npos);
  BOOST_TEST(xml.find("paged_decode_attn_bf16k_turbo3v") != std::string::npos);
  fs::remove_all(d);
}

// Would catch: a comparison that misses a class of bug, or files it under the wrong category,
// for every fault the GPU issue requires (docs/spec.md section 6: other slots, guard bands, skipped V).
// Cases where a fault has nothing to damage (no L == 0 sequence, no skipped position) must pass.
BOOST_AUTO_TEST_CASE(each_injected_fault_is_detected_and_classified) {
  const GoldenFileCases& s = smoke();
  for (int fi = 1; fi < kNumFaults; ++fi) {
    const Fault f = Fault(fi);
    // mutant mirrors: crafted data only (tests below); the level I faults are run here too:
    // those without a category must leave every smoke case exact (test_level_i catches them)
    if (fault_mutant(f) && !fault_breaks_invariance(f)) continue;
    auto backend = make_fault_backend(make_model_backend(&*s.ex2), f, &*s.ex2);
    size_t detected = 0;
    for (const GoldenCase& c : s.cases) {
      const CaseVerdict v = compare_case(c, backend->run(c));
      BOOST_TEST(v.error.empty(), v.error);
      const std::string want = fault_category(f, c.kind);
      if (want.empty()) {
        BOOST_TEST(v.pass, fault_name(f) << " must not touch " << c.name);
        continue;
      }
      if (v.pass) continue;  // nothing to damage in this case
      ++detected;
      BOOST_TEST(v.categories.size() == 1u, fault_name(f) << " on " << c.name);
      BOOST_TEST(v.categories.count(want) == 1u,
                 fault_name(f) << " on " << c.name << " not classified as " << want << ": "
                               << report_text(v, 3));
    }
    if (*fault_category(f, CaseKind::writer) || *fault_category(f, CaseKind::decode))
      BOOST_TEST(detected > 0u, fault_name(f) << " was never detected");
  }
}

// Would catch: an unwritten-row or guard fault hitting writer and decode cases alike going
// unnoticed (every writer case has a written row and guard bands; every decode case too).
BOOST_AUTO_TEST_CASE(faults_that_apply_everywhere_fail_every_case) {
  const GoldenFileCases& s = smoke();
  for (Fault f : {Fault::guard, Fault::unwritten_row}) {
    auto backend = make_fault_backend(make_model_backend(&*s.ex2), f, &*s.ex2);
    for (const GoldenCase& c : s.cases) BOOST_TEST(!compare_case(c, backend->run(c)).pass, c.name);
  }
}

// Would catch: wrong offset decoding (block/slot/head/dim swapped, V sections mixed up), which
// would send a kernel developer to the wrong place.
BOOST_AUTO_TEST_CASE(mismatch_offsets_decode_to_places) {
  const GoldenFileCases& s = smoke();
  const GoldenCase* w = nullptr;
  for (const auto& c : s.cases)  // a writer case with a padded V block
    if (!w && c.kind == CaseKind::writer && c.w.p.block_size == 16 &&
        c.w.p.v_block_stride_bytes > c.w.p.v_data_section_bytes + 16u * c.w.p.num_kv_heads * c.w.p.head_dim / 16)
      w = &c;
  BOOST_REQUIRE(w);
  auto backend = make_model_backend(&*s.ex2);
  int64_t slot = -1;
  for (int64_t x : w->w.slot_mapping) slot = x >= 0 ? x : slot;
  const uint32_t B = w->w.p.block_size, D = w->w.p.head_dim, H = w->w.p.num_kv_heads;
  const CacheGeometry g{H, D, B, w->w.num_blocks, w->w.p.v_block_stride_bytes, w->w.p.v_data_section_bytes};
  // K element (slot, head H-1, dim 5)
  CaseResult r = backend->run(*w);
  r.buffers["k_cache"].data()[g.k_row_offset(slot) + 2 * ((H - 1) * D + 5) + 1] ^= 0x40;
  CaseVerdict v = compare_case(*w, r);
  BOOST_REQUIRE_EQUAL(v.first.size(), 1u);
  const std::string kwhere = "K block " + std::to_string(slot / B) + " slot " + std::to_string(slot % B) +
                             " head " + std::to_string(H - 1) + " dim 5";
  BOOST_TEST(v.first[0].where == kwhere);
  BOOST_TEST(v.first[0].category == "k-value");
  BOOST_TEST(v.first[0].width == 2);
  // V scale byte of group 3 of the same slot
  r = backend->run(*w);
  r.buffers["v_cache"].data()[g.v_scale_row_offset(slot) + 3] ^= 0x01;
  v = compare_case(*w, r);
  BOOST_REQUIRE_EQUAL(v.first.size(), 1u);
  BOOST_TEST(v.first[0].category == "v-scale");
  BOOST_TEST(v.first[0].where.find("scales slot " + std::to_string(slot % B) + " head 0 group 3 (dims 48..63)") != std::string::npos,
             v.first[0].where);
  // a padding byte at the end of the first V block (the smoke writer has v_block_pad)
  BOOST_REQUIRE(g.v_block_stride_bytes > g.min_v_block_stride_bytes());
  r = backend->run(*w);
  r.buffers["v_cache"].data()[g.v_block_stride_bytes - 1] ^= 0x01;
  v = compare_case(*w, r);
  BOOST_REQUIRE_EQUAL(v.first.size(), 1u);
  BOOST_TEST(v.first[0].category == "untouched-modified");
  BOOST_TEST(v.first[0].where.find("padding") != std::string::npos);
}

// Would catch: a reproducer that is not self-contained (missing provenance or parameters) or not
// named after its case, so a failure could not be replayed alone.
BOOST_AUTO_TEST_CASE(reproducer_is_written_and_rerunnable) {
  const fs::path d = scratch("check_repro");
  const std::string name = smoke().cases.back().name;
  BOOST_TEST(run_cli("check " + kCommittedSmoke + " --case " + name + " --inject guard --reproducer-dir " +
                         (d / "rep").string(), d) == 1);
  const fs::path rep = d / "rep" / (name + ".h5");
  BOOST_REQUIRE_MESSAGE(fs::exists(rep), slurp(d / "last.log"));
  BOOST_TEST(run_cli("check " + rep.string(), d) == 0, slurp(d / "last.log"));
  BOOST_TEST(run_cli("check " + rep.string() + " --inject guard", d) == 1);
  BOOST_TEST(run_cli("inspect " + rep.string(), d) == 0);
  BOOST_TEST(slurp(d / "last.log").find("reproducer of") != std::string::npos);
  fs::remove_all(d);
}

// Runs every case of `cases` through the model backend damaged by fault f; returns how many fail.
// Every failing case must fail only in the fault's category, and cases of the kind the fault
// does not apply to must pass.
size_t failing_cases(const std::vector<GoldenCase>& cases, Fault f, const Ex2Profile& ex2) {
  auto backend = make_fault_backend(make_model_backend(&ex2), f, &ex2);
  size_t failed = 0;
  for (const GoldenCase& c : cases) {
    const CaseVerdict v = compare_case(c, backend->run(c));
    BOOST_TEST(v.error.empty(), v.error);
    const std::string want = fault_category(f, c.kind);
    if (want.empty()) BOOST_TEST(v.pass, fault_name(f) << " must not touch " << c.name);
    if (v.pass) continue;
    ++failed;
    BOOST_TEST((v.categories.size() == 1u && v.categories.count(want) == 1u),
               fault_name(f) << " on " << c.name << " not classified as " << want << ": " << report_text(v, 3));
  }
  return failed;
}

// Would catch: smoke cases that lose their teeth against mutant 13's writer (docs/mutants.md):
// with nsq and rsq contracted into FMAs the scale byte changes only near an fp8 rounding
// midpoint, about 1 group in 10^6 of random data, so only the fma_sensitive cases catch it; each
// of them (one per format) must fail with wrong scale bytes, every other writer case passes.
BOOST_AUTO_TEST_CASE(smoke_catches_the_fma_contracted_writer) {
  const GoldenFileCases& s = smoke();
  std::vector<GoldenCase> crafted, other;
  for (const GoldenCase& c : s.cases)
    (c.distribution == "fma_sensitive" ? crafted : other).push_back(c);
  BOOST_TEST(crafted.size() == 3u);
  BOOST_TEST(failing_cases(crafted, Fault::writer_fma, *s.ex2) == crafted.size());
  failing_cases(other, Fault::writer_fma, *s.ex2);  // the classification checks only
}

// Would catch: smoke cases that lose their teeth against mutant 14 (EXPF without the split below
// y = -126): the tiny_rescale cases (HDIM 128 and 256) must fail, and in each of them every
// sequence, i.e. each of the in-warp (eo), merge-a and merge-c paths, must change output rows.
BOOST_AUTO_TEST_CASE(smoke_catches_expf_without_split) {
  const GoldenFileCases& s = smoke();
  std::vector<GoldenCase> crafted;
  std::set<uint32_t> hdims;
  for (const GoldenCase& c : s.cases)
    if (c.kind == CaseKind::decode && c.distribution == "tiny_rescale") {
      crafted.push_back(c);
      hdims.insert(c.d.p.hdim);
    }
  BOOST_TEST((hdims == std::set<uint32_t>{128, 256}));
  BOOST_TEST(failing_cases(crafted, Fault::expf_no_split, *s.ex2) == crafted.size());
  for (const GoldenCase& c : crafted) {
    const std::vector<uint16_t> out = decode_output_expf_no_split(c, *s.ex2);
    const uint64_t row = uint64_t(c.d.p.num_q_heads) * c.d.p.head_dim;  // one sequence
    for (uint32_t q = 0; q < c.d.p.num_seqs; ++q)
      BOOST_TEST(count_differing({out.data() + q * row, row}, {c.d.out_expected.data() + q * row, row}) > 0u,
                 c.name << " sequence " << q << " (mode " << q % 3 << ") unchanged");
  }
}

// Would catch: a threshold key or builder that fails to place a factor exactly at a reachable
// THRESH, so mutant 5 (V used when factor >= THRESH) survives: the committed 2^-10 config's
// threshold cases hold a probe exactly at 2^-10 (their exercises say so) and every one of them
// fails under the >= compare (it reads the poisoned V group of the probe), for all formats and
// both HDIMs. At the default 1e-3 no factor equals THRESH, so the smoke file cannot catch it.
BOOST_AUTO_TEST_CASE(threshold_config_catches_thresh_ge) {
  const fs::path d = scratch("check_thr");
  const std::string cfg = std::string(TQREF_SOURCE_DIR) + "/data/golden/configs/thresh-pow2m10.yaml";
  BOOST_REQUIRE_EQUAL(run_cli("generate --config " + cfg + " --threads 2 --out " + (d / "t.h5").string(), d), 0);
  h5::Node root = h5::Node::open_file((d / "t.h5").string());
  const Provenance prov = read_provenance(root);
  BOOST_TEST(prov.threshold == 0x1p-10);
  const std::optional<Ex2Profile> ex2 = ex2_for_file(prov, (d / "t.h5").string());
  std::vector<GoldenCase> thr;
  std::set<std::pair<std::string, uint32_t>> covered;  // (format, hdim)
  for (const auto& n : root.group("cases").children()) {
    GoldenCase c = read_case(root.group("cases"), n, false);
    BOOST_TEST(c.threshold == 0x1p-10f, n);
    if (c.kind != CaseKind::decode || c.distribution != "threshold") continue;
    BOOST_TEST(c.exercises.find("factors at THRESH and") != std::string::npos, n << ": " << c.exercises);
    BOOST_TEST(c.exercises.find(" +0: ") != std::string::npos, n << ": no rank-0 probe");
    covered.insert({traits(c.format).name, c.d.p.hdim});
    thr.push_back(std::move(c));
  }
  BOOST_TEST(covered.size() == 6u);
  BOOST_TEST(failing_cases(thr, Fault::thresh_ge, *ex2) == thr.size());
  BOOST_TEST(failing_cases(smoke().cases, Fault::thresh_ge, *smoke().ex2) == 0u);
  fs::remove_all(d);
}

// Would catch: mismatches reported with exit 0, or bad files reported as mismatches/crashes.
BOOST_AUTO_TEST_CASE(exit_codes) {
  const fs::path d = scratch("check_exit");
  BOOST_TEST(run_cli("check " + kCommittedSmoke + " --inject wrong-scale", d) == 1);
  BOOST_TEST(run_cli("check " + (d / "missing.h5").string(), d) == 3);
  {
    std::ofstream(d / "junk.h5") << "not hdf5";
  }
  BOOST_TEST(run_cli("check " + (d / "junk.h5").string(), d) == 3);
  BOOST_TEST(run_cli("check " + kCommittedSmoke + " --case no_such_case", d) == 3);
  BOOST_TEST(run_cli("check " + kCommittedSmoke + " --backend nosuch", d) == 2);
  BOOST_TEST(run_cli("check " + kCommittedSmoke + " --inject nosuch", d) == 2);
  // a truncated copy: HDF5 cannot read it
  const std::string bytes = slurp(kCommittedSmoke);
  {
    std::ofstream(d / "trunc.h5", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  BOOST_TEST(run_cli("check " + (d / "trunc.h5").string(), d) == 3);
  // an attribute outside its range names the file, the attribute and the range
  const std::string one = smoke().cases.front().name;
  fs::copy_file(kCommittedSmoke, d / "bad.h5");
  {
    h5::Node root = h5::Node::open_file_rw((d / "bad.h5").string());
    root.group("cases").group(one).set_attr("block_size", int64_t(0));
  }
  BOOST_TEST(run_cli("check " + (d / "bad.h5").string() + " --case " + one, d) == 3);
  const std::string log = slurp(d / "last.log");
  BOOST_TEST(log.find("block_size") != std::string::npos, log);
  BOOST_TEST(log.find("bad.h5") != std::string::npos, log);
  fs::remove_all(d);
}

}  // namespace
