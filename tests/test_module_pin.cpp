// Pinning across a module (conform/module_pin.h) on synthetic results over the committed smoke
// file: a case-level tie between two variants is broken when one of them would change a case the
// module passed, and a module whose failures no single variant explains is not pinned.
#define BOOST_TEST_MODULE test_module_pin
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <optional>
#include <string>

#include "cases/observe.h"
#include "conform/module_pin.h"
#include "io/case_io.h"
#include "judge/ex2_for_file.h"

using namespace tqref;
using namespace tqref::conform;

namespace {

const std::string kSmoke = std::string(TQREF_SOURCE_DIR) + "/data/golden/smoke.h5";

// A module result over smoke: the cases `fails` says fail carry `diagnosis`, the others pass.
template <class F>
ModuleResult module_over_smoke(F fails, const std::string& diagnosis) {
  ModuleResult m;
  SuiteRun su;
  su.suite = "smoke";
  su.file = kSmoke;
  h5::Node root = h5::Node::open_file(kSmoke);
  const std::optional<Ex2Profile> ex2 = judge::ex2_for_file(golden::read_provenance(root), kSmoke);
  h5::Node cases = root.group("cases");
  for (const std::string& name : cases.children()) {
    judge::CaseVerdict v;
    v.name = name;
    v.pass = !fails(golden::read_case(cases, name, false), ex2 ? &*ex2 : nullptr);
    if (!v.pass) v.explanation.diagnosis = diagnosis;
    su.verdicts.push_back(v);
  }
  m.suites.push_back(su);
  return m;
}

}  // namespace

// Catches an aggregation that reports a case-level tie as the module's verdict although the
// passing cases refute one side: nvcc-fmad changes smoke's fma_sensitive writer cases only; ftz
// also changes cases the module passed (subnormal groups, tiny_rescale).
BOOST_AUTO_TEST_CASE(a_tie_is_broken_by_passing_cases) {
  const Variant fmad = parse_variant("nvcc-fmad");
  const ModuleResult m = module_over_smoke(
      [&](const golden::GoldenCase& c, const Ex2Profile* ex2) { return cases::variant_observed(c, fmad, ex2); },
      "tie:variant:nvcc-fmad|variant:ftz");
  const ModulePin p = pin_module(m);
  BOOST_TEST(p.failing > 0u);
  BOOST_TEST(p.consistent.size() == 1u);
  BOOST_TEST(p.consistent.at(0) == "variant:nvcc-fmad");
  BOOST_TEST(p.refuted.size() == 1u);
  BOOST_TEST(p.verdict.find("pinned across the module: variant:nvcc-fmad") == 0u, p.verdict);
}

// Catches a pin claimed where the failing cases name different causes.
BOOST_AUTO_TEST_CASE(different_causes_pin_nothing) {
  int k = 0;
  const ModuleResult m = module_over_smoke(
      [&](const golden::GoldenCase&, const Ex2Profile*) { return k++ < 2; }, "");
  ModuleResult n = m;
  n.suites[0].verdicts[0].explanation.diagnosis = "hypothesis:variant:no-batch";
  n.suites[0].verdicts[1].explanation.diagnosis = "hypothesis:variant:merge-sequential";
  const ModulePin p = pin_module(n);
  BOOST_TEST(p.failing == 2u);
  BOOST_TEST(p.reproduce_all.empty());
  BOOST_TEST(p.verdict.find("not pinned") == 0u, p.verdict);
}

// Catches a pin claimed while a hypothesis outside the variant model reproduces the same failing
// cases: the passing cases cannot refute it, so the module stays not pinned and says so.
BOOST_AUTO_TEST_CASE(a_rival_outside_the_variant_model_keeps_the_pin_open) {
  const Variant ftz = parse_variant("ftz");
  const ModuleResult m = module_over_smoke(
      [&](const golden::GoldenCase& c, const Ex2Profile* ex2) { return cases::variant_observed(c, ftz, ex2); },
      "tie:gqa-modulo|variant:ftz");
  const ModulePin p = pin_module(m);
  BOOST_TEST(p.failing > 0u);
  BOOST_TEST(p.consistent.size() == 1u);
  BOOST_TEST(p.unchecked.size() == 1u);
  BOOST_TEST(p.verdict.find("not pinned: variant:ftz reproduces all") == 0u, p.verdict);
  BOOST_TEST(p.verdict.find("gqa-modulo (outside the variant model") != std::string::npos, p.verdict);
}

// Catches the module pin leaving mutant 14's hypothesis out (the H200, 2026-12-05: it named ftz):
// expf-no-split is run as the variant of that name on the passing cases, like any variant, so on
// smoke, where no case tells it from ftz, the two are a tie.
BOOST_AUTO_TEST_CASE(expf_no_split_is_weighed_as_a_variant) {
  const Variant ftz = parse_variant("ftz"), unsplit = parse_variant("expf-no-split");
  const ModuleResult m = module_over_smoke(
      [&](const golden::GoldenCase& c, const Ex2Profile* ex2) {
        return cases::variant_observed(c, unsplit, ex2) && cases::variant_observed(c, ftz, ex2);
      },
      "tie:expf-no-split|variant:ftz");
  const ModulePin p = pin_module(m);
  BOOST_TEST(p.failing > 0u);
  BOOST_TEST(p.unchecked.empty());
  BOOST_TEST(std::count(p.consistent.begin(), p.consistent.end(), "expf-no-split") == 1);
}
