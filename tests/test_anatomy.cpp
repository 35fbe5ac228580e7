// Failure anatomy (harness/anatomy/anatomy.h, hypotheses.h): every fault of testing/faults.h gets an
// anatomy sentence and a verdict that names it, through the model backend on the committed smoke
// file (thresh-ge on the generated 2^-10 config); the lane / VEC-slot attribution of the
// sentence; and hypotheses reproducing kernels built here independently of hypotheses.cpp.
#define BOOST_TEST_MODULE test_anatomy
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "golden_file_cases.h"
#include "io/case_io.h"
#include "anatomy/anatomy.h"
#include "judge/ex2_for_file.h"
#include "testing/faults.h"
#include "judge/judge_case.h"
#include "judge/level_i_variants.h"
#include "judge/report.h"
#include "tqref/decode.h"
#include "tqref/writer.h"

namespace {

using namespace tqref;
using namespace tqref::golden;
using namespace tqref::judge;
using namespace tqref::anatomy;
using namespace tqref::testing;
using namespace tqref::test;
namespace fs = std::filesystem;


// The cases of `cs` that fail exactly under fault f, each judged and explained as `tqref check`
// does it; the diagnoses found.
std::map<std::string, size_t> diagnoses(const GoldenFileCases& cs, Fault f, size_t* failing) {
  auto backend = make_fault_backend(make_model_backend(&*cs.ex2), f, &*cs.ex2);
  std::map<std::string, size_t> seen;
  *failing = 0;
  for (GoldenCase c : cs.cases) {
    const JudgedCase j = run_and_judge(c, *backend, Ex2Source{}, &*cs.ex2, false, LevelTOptions{},
                                         OutOfContractLevel::T, explain_with_known_units);
    if (j.verdict.pass) continue;
    ++*failing;
    const Explanation& e = j.verdict.explanation;
    BOOST_TEST(e.sentence.find(": suspect ") != std::string::npos, fault_name(f) << " on " << c.name << ": " << e.sentence);
    BOOST_TEST(!e.verdict.empty(), fault_name(f) << " on " << c.name);
    BOOST_TEST(e.json.contains("facts"));
    ++seen[e.diagnosis];
  }
  return seen;
}

// A hypothesis diagnosis names `id` first: "hypothesis:<id>" (pinned) or "tie:<id>|<rival>..."
// (reproduced by rivals too, the narrowest change first). Patterns and structural diagnoses must
// equal `want`.
bool names_first(const std::string& diagnosis, const std::string& want) {
  const std::string id = want.substr(want.find(':') + 1);
  if (want.rfind("hypothesis:", 0) != 0) return diagnosis == want;
  return diagnosis == want || diagnosis.rfind("tie:" + id + "|", 0) == 0;
}

// Would catch: a fault whose failures carry no anatomy sentence or verdict, or a verdict that
// names another cause (a wrong hypothesis reproducing it, a pattern misread, a structural fault
// blamed on values). Where rivals reproduce the same bytes (a variant of the contract, or a
// hypothesis that reads more skipped V than the fault), the verdict is a tie listing them, with
// the fault's own hypothesis first. The three level I faults that keep W/D exact have no
// exact-level failure to explain: level I names them (test_level_i).
BOOST_AUTO_TEST_CASE(every_fault_is_explained_and_named) {
  const std::map<Fault, std::string> want = {
      {Fault::flip_code_bit, "pattern:single-bit"},
      {Fault::wrong_scale, "pattern:scale-one-code"},
      {Fault::neighbour_slot, "structural:untouched-modified"},
      {Fault::guard, "structural:guard"},
      {Fault::flip_skip, "hypothesis:skip-disabled"},
      {Fault::unwritten_row, "structural:row-not-written"},
      {Fault::thresh_ge, "hypothesis:thresh-ge"},
      {Fault::expf_no_split, "hypothesis:expf-no-split"},
      {Fault::writer_fma, "hypothesis:writer-fma"},
      {Fault::block_parity_lsb, "pattern:lowest-bit"},
      {Fault::dense_large_batch, ""},
      {Fault::writer_contiguous, ""},
      {Fault::repeat_lsb, ""}};
  BOOST_TEST(want.size() == size_t(kNumFaults - 1));  // every fault but none
  const fs::path d = scratch("anatomy_thr");
  const std::string cfg = std::string(TQREF_SOURCE_DIR) + "/data/golden/configs/thresh-pow2m10.yaml";
  BOOST_REQUIRE_EQUAL(run_cli("generate --config " + cfg + " --threads 2 --out " + (d / "t.h5").string(), d), 0);
  const GoldenFileCases thr((d / "t.h5").string());
  for (const auto& [f, diag] : want) {
    size_t failing = 0;
    const std::map<std::string, size_t> seen = diagnoses(f == Fault::thresh_ge ? thr : smoke(), f, &failing);
    if (diag.empty()) {
      BOOST_TEST(failing == 0u, fault_name(f) << " must keep W/D exact");
      continue;
    }
    BOOST_TEST(failing > 0u, fault_name(f) << " never failed");
    for (const auto& [got, n] : seen)
      BOOST_TEST(names_first(got, diag), fault_name(f) << ": expected " << diag << " first, got " << got
                                                       << " (" << n << " cases)");
  }
  fs::remove_all(d);
}

// The first smoke decode case of HDIM `hdim`, its model output and a result holding `out`.
const GoldenCase& decode_case(uint32_t hdim) {
  for (const GoldenCase& c : smoke().cases)
    if (c.kind == CaseKind::decode && c.d.p.hdim == hdim && c.distribution == "gaussian") return c;
  BOOST_FAIL("no gaussian smoke decode case with HDIM " << hdim);
  return smoke().cases.front();
}

CaseResult result_of(const std::vector<uint16_t>& out) {
  std::vector<uint8_t> b(out.size() * 2);
  std::memcpy(b.data(), out.data(), b.size());
  CaseResult r;
  r.buffers["output"] = GuardedBuffer::with_guards(b);
  return r;
}

Explanation explain(const GoldenCase& c, const CaseResult& r) {
  CaseVerdict v = compare_case(c, r);
  ExplainOptions o;
  o.ex2 = &*smoke().ex2;
  explain_failure(c, r, v, o);
  return v.explanation;
}

// The expectation with 1 added to the bits of every dim `pick` selects, in rows with L > 0.
std::vector<uint16_t> bumped(const GoldenCase& c, bool (*pick)(uint32_t dim, uint32_t vec)) {
  std::vector<uint16_t> out(c.d.out_expected);
  const uint32_t D = c.d.p.head_dim, vec = c.d.p.hdim / 32;
  for (size_t i = 0; i < out.size(); ++i)
    if (c.d.seq_lens[i / (uint64_t(D) * c.d.p.num_q_heads)] > 0 && pick(uint32_t(i % D), vec)) out[i] ^= 2;
  return out;
}

// Would catch: dims attributed to the wrong lane or VEC slot (lane = dim / VEC, VEC = HDIM/32),
// or a sentence that does not say what is exact: the issue's example, "dims 0-7 exact, dims
// 8-255 wrong in every row with L > 0: suspect per-lane V addressing", on an HDIM=256 case.
BOOST_AUTO_TEST_CASE(lane_and_vec_slot_patterns) {
  const GoldenCase& c = decode_case(256);
  Explanation e = explain(c, result_of(bumped(c, [](uint32_t d, uint32_t) { return d >= 8; })));
  BOOST_TEST(e.sentence.find("dims 8-255 (lanes 1-31, all VEC slots) wrong in every row with L > 0") == 0u, e.sentence);
  BOOST_TEST(e.sentence.find("dims 0-7 exact") != std::string::npos, e.sentence);
  BOOST_TEST(e.sentence.find("suspect per-lane addressing of q, K or V") != std::string::npos, e.sentence);
  e = explain(c, result_of(bumped(c, [](uint32_t d, uint32_t vec) { return d % vec == 3; })));
  BOOST_TEST(e.sentence.find("(VEC slot 3 of every lane, VEC = 8)") != std::string::npos, e.sentence);
  BOOST_TEST(e.sentence.find("each one bit off") != std::string::npos, e.sentence);
  BOOST_TEST(e.diagnosis == "pattern:single-bit");
}

// --- kernels built here, independently of hypotheses.cpp --------------------------------------

std::vector<uint16_t> model_out(const GoldenCase& c, const DecodeParams& p, const std::vector<uint8_t>& v,
                                const std::vector<uint16_t>& q) {
  std::vector<uint16_t> out(c.d.out_init);
  DecodeParams pp = p;
  pp.threshold = c.threshold;
  paged_decode_model(c.format, q, c.d.k_init, v, out, c.d.block_tables, c.d.seq_lens, pp, *smoke().ex2);
  return out;
}

const GoldenCase* find_case(CaseKind k, bool (*ok)(const GoldenCase&)) {
  for (const GoldenCase& c : smoke().cases)
    if (c.kind == k && ok(c)) return &c;
  return nullptr;
}

// Would catch: a hypothesis that does not model the mutant it names (docs/mutants.md): each
// kernel below is the model with the mutant's change made by other means (its parameters or
// its input bytes), and the verdict must name exactly that hypothesis.
BOOST_AUTO_TEST_CASE(hypotheses_reproduce_their_mutants) {
  // mutant 12: window one position longer = the model with sliding_window + 1, on the sequences
  // of the smoke window case whose longer window stays inside their valid block-table entries
  // (seq 1, L 19, W 5, B 7 would read the unused entry of block 1)
  const GoldenCase* wc = find_case(CaseKind::decode, [](const GoldenCase& c) { return c.d.p.sliding_window > 0; });
  BOOST_REQUIRE(wc);
  GoldenCase w = select_sequences(*wc, {0, 2}, {wc->d.seq_lens[0], wc->d.seq_lens[2]}, "window");
  w.d.out_expected = model_out(w, w.d.p, w.d.v_init, w.d.q);
  DecodeParams p = w.d.p;
  p.sliding_window += 1;
  BOOST_TEST(explain(w, result_of(model_out(w, p, w.d.v_init, w.d.q))).diagnosis == "hypothesis:window-plus1");
  // mutant 8: the V block stride assumed tight = the pool read at tight strides
  const GoldenCase* b = find_case(CaseKind::decode, [](const GoldenCase& c) {
    return c.d.p.v_block_stride_bytes > pool_geometry(c.d).min_v_block_stride_bytes();
  });
  BOOST_REQUIRE(b);
  p = b->d.p;
  p.v_block_stride_bytes = pool_geometry(b->d).min_v_block_stride_bytes();
  BOOST_TEST(explain(*b, result_of(model_out(*b, p, b->d.v_init, b->d.q))).diagnosis == "hypothesis:tight-block-stride");
  // mutant 6: scale of group g^1 = the model on a pool whose scale pairs are swapped
  const GoldenCase* g = find_case(CaseKind::decode, [](const GoldenCase& c) { return c.distribution == "gaussian"; });
  BOOST_REQUIRE(g);
  std::vector<uint8_t> v(g->d.v_init);
  const CacheGeometry geo = pool_geometry(g->d);
  for (uint64_t blk = 0; blk < geo.num_blocks; ++blk)
    for (uint64_t slot = 0; slot < geo.block_size; ++slot) {
      uint8_t* row = v.data() + blk * geo.v_block_stride_bytes + geo.v_data_section_bytes + slot * geo.v_scale_row_bytes();
      for (uint32_t k = 0; k < geo.v_scale_row_bytes(); k += 2) std::swap(row[k], row[k + 1]);
    }
  BOOST_TEST(explain(*g, result_of(model_out(*g, g->d.p, v, g->d.q))).diagnosis == "hypothesis:neighbour-scale");
  // q read with the tight stride: q rows packed together
  const GoldenCase* q = find_case(CaseKind::decode, [](const GoldenCase& c) {
    return c.d.p.q_stride > c.d.p.num_q_heads * c.d.p.head_dim && c.distribution == "adversarial_skip";
  });
  BOOST_REQUIRE(q);
  std::vector<uint16_t> qt(q->d.q);
  const uint64_t row = uint64_t(q->d.p.num_q_heads) * q->d.p.head_dim;
  for (uint64_t s = 0; s < q->d.p.num_seqs; ++s)
    std::memcpy(qt.data() + s * q->d.p.q_stride, q->d.q.data() + s * row, row * 2);
  BOOST_TEST(explain(*q, result_of(model_out(*q, q->d.p, q->d.v_init, qt))).diagnosis == "hypothesis:q-tight-stride");
  // mutant 1 on the writer: every slot + 1
  const GoldenCase* wr = find_case(CaseKind::writer, [](const GoldenCase& c) {  // room for slot + 1
    return *std::max_element(c.w.slot_mapping.begin(), c.w.slot_mapping.end()) + 1 <
           int64_t(c.w.num_blocks) * c.w.p.block_size;
  });
  BOOST_REQUIRE(wr);
  std::vector<int64_t> slots(wr->w.slot_mapping);
  for (int64_t& s : slots) s += s >= 0;
  std::vector<uint8_t> k(wr->w.k_init), vv(wr->w.v_init);
  reshape_and_cache_model(wr->format, wr->w.key, wr->w.value, k, vv, slots, wr->w.p);
  CaseResult r;
  r.buffers["k_cache"] = GuardedBuffer::with_guards(k);
  r.buffers["v_cache"] = GuardedBuffer::with_guards(vv);
  CaseVerdict cv = compare_case(*wr, r);
  explain_failure(*wr, r, cv, ExplainOptions{});
  BOOST_TEST(cv.explanation.diagnosis == "hypothesis:slot-plus1", cv.explanation.verdict);
  const std::string& st = cv.explanation.sentence;
  BOOST_TEST((st.find("left at their initial bytes") != std::string::npos || st.find("left unwritten") != std::string::npos), st);
  BOOST_TEST(cv.explanation.sentence.find("each one slot after a written slot") != std::string::npos,
             cv.explanation.sentence);
}

// Would catch: a large case whose hypotheses silently run on everything (minutes per case on the
// standard suite) or on nothing: with a tiny budget the verdict still names the hypothesis and
// says on which sequences it was tested.
BOOST_AUTO_TEST_CASE(budget_cuts_to_wrong_sequences) {
  const GoldenCase* c = find_case(CaseKind::decode, [](const GoldenCase& x) { return x.distribution == "adversarial_skip"; });
  BOOST_REQUIRE(c);
  DecodeParams p = c->d.p;
  p.threshold = -1.0f;  // the skip disabled (mutant 15)
  std::vector<uint16_t> out(c->d.out_init);
  paged_decode_model(c->format, c->d.q, c->d.k_init, c->d.v_init, out, c->d.block_tables, c->d.seq_lens, p, *smoke().ex2);
  const CaseResult r = result_of(out);
  CaseVerdict v = compare_case(*c, r);
  ExplainOptions o;
  o.ex2 = &*smoke().ex2;
  o.budget = 1;
  explain_failure(*c, r, v, o);
  BOOST_TEST(names_first(v.explanation.diagnosis, "hypothesis:skip-disabled"), v.explanation.verdict);
  BOOST_TEST(v.explanation.verdict.find("(on sequences ") != std::string::npos, v.explanation.verdict);
  BOOST_TEST(report_text(v, 2).find("reproduced bit for bit by") != std::string::npos);
}

}  // namespace
