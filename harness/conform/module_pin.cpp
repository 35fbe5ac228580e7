#include "conform/module_pin.h"

#include <algorithm>
#include <optional>

#include "cases/observe.h"
#include "io/case_io.h"
#include "judge/ex2_for_file.h"
#include "tqref/variant.h"

namespace tqref::conform {

namespace {

// The hypotheses a case-level diagnosis names as reproducing the kernel ("hypothesis:x",
// "tie:x|y"); empty for any other diagnosis.
std::vector<std::string> reproducers(const std::string& diagnosis) {
  std::vector<std::string> ids;
  std::string rest;
  if (diagnosis.rfind("hypothesis:", 0) == 0) return {diagnosis.substr(11)};
  if (diagnosis.rfind("tie:", 0) != 0) return ids;
  rest = diagnosis.substr(4);
  for (size_t from = 0;;) {
    const size_t bar = rest.find('|', from);
    ids.push_back(rest.substr(from, bar - from));
    if (bar == std::string::npos) break;
    from = bar + 1;
  }
  return ids;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The first passing case of the module's suites that variant v changes, "" when none does.
std::string passing_case_changed(const ModuleResult& m, const Variant& v) {
  for (const SuiteRun& su : m.suites) {
    std::vector<std::string> passing;
    for (const judge::CaseVerdict& c : su.verdicts)
      if (c.pass) passing.push_back(c.name);
    if (passing.empty()) continue;
    h5::Node root = h5::Node::open_file(su.file);
    const std::optional<Ex2Profile> ex2 = judge::ex2_for_file(golden::read_provenance(root), su.file);
    h5::Node cases = root.group("cases");
    for (const std::string& name : passing) {
      const golden::GoldenCase c = golden::read_case(cases, name, false);
      if (cases::variant_observed(c, v, ex2 ? &*ex2 : nullptr)) return su.suite + "/" + name;
    }
  }
  return "";
}

}  // namespace

ModulePin pin_module(const ModuleResult& m) {
  ModulePin p;
  bool first = true, unexplained = false;
  for (const SuiteRun& su : m.suites)
    for (const judge::CaseVerdict& c : su.verdicts) {
      if (c.pass || !c.error.empty()) continue;
      std::vector<std::string> ids = reproducers(c.explanation.diagnosis);
      unexplained |= ids.empty();
      ++p.failing;
      if (first) {
        p.reproduce_all = ids;
        first = false;
        continue;
      }
      std::erase_if(p.reproduce_all, [&](const std::string& id) {
        return std::find(ids.begin(), ids.end(), id) == ids.end();
      });
    }
  if (p.failing == 0) return p;
  for (const std::string& id : p.reproduce_all) {
    // writer-fma is the writer's FMA variants (equal on the writer: a fused nsq changes no byte);
    // the hypothesis expf-no-split is the variant of that name (the anatomy tests it once)
    const std::string variant = id == "writer-fma"                ? "fma:rsq"
                                : id == "expf-no-split"           ? id
                                : id.rfind("variant:", 0) == 0    ? id.substr(8)
                                                                  : "";
    if (variant.empty()) {  // an older hypothesis: no variant model runs it on the passing cases
      p.unchecked.push_back(id);
      continue;
    }
    const std::string changed = passing_case_changed(m, parse_variant(variant));
    if (changed.empty()) p.consistent.push_back(id);
    else p.refuted.push_back(id + " (changes passing case " + changed + ")");
  }
  const std::string n = std::to_string(p.failing) + " failing case" + (p.failing == 1 ? "" : "s");
  if (p.reproduce_all.empty())
    p.verdict = "not pinned: no hypothesis reproduces all " + n +
                (unexplained ? " (some have none)" : "");
  else if (p.consistent.size() == 1 && p.unchecked.empty())
    p.verdict = "pinned across the module: " + p.consistent[0] + " reproduces all " + n +
                " and changes none of its passing cases";
  else if (p.consistent.size() > 1)
    p.verdict = "not pinned: " + join(p.consistent) + " each reproduce all " + n +
                " and change no passing case (a tie; `tqref tell-apart`, which the failing cases' "
                "verdicts spell out, makes cases that settle it)";
  else if (p.consistent.size() == 1)
    p.verdict = "not pinned: " + p.consistent[0] + " reproduces all " + n +
                " and changes none of its passing cases, and so do, on the failing cases, " +
                join(p.unchecked) + " (outside the variant model: not run on the passing cases)";
  else
    p.verdict = "not pinned by a variant: " + join(p.reproduce_all) + " reproduce all " + n;
  if (!p.unchecked.empty() && p.consistent.size() > 1)
    p.verdict += "; also reproducing them: " + join(p.unchecked) + " (outside the variant model)";
  if (!p.refuted.empty()) p.verdict += "; refuted by passing cases: " + join(p.refuted);
  return p;
}

}  // namespace tqref::conform
