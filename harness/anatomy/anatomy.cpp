#include "anatomy/anatomy.h"

#include <set>

#include "anatomy/anatomy_parts.h"
#include "anatomy/hypotheses.h"
#include "judge/ex2_for_file.h"

namespace tqref::anatomy {

using namespace golden;  // the cases the anatomy reads (harness/io)
using namespace judge;   // their results and verdicts (harness/judge)

std::string ranges_text(const std::vector<uint32_t>& v, size_t max_ranges) {
  std::string t;
  size_t n = 0;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (n++ == max_ranges) return t + ", ...";
    if (!t.empty()) t += ", ";
    t += std::to_string(v[i]);
    if (j > i) t += '-' + std::to_string(v[j]);
    i = j + 1;
  }
  return t.empty() ? "none" : t;
}

std::string join_and(const std::vector<std::string>& p) {
  std::string t;
  for (size_t i = 0; i < p.size(); ++i) t += (i == 0 ? "" : i + 1 == p.size() ? " and " : ", ") + p[i];
  return t;
}

std::string count_of(uint64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string named_ranges(const std::string& noun, const std::vector<uint32_t>& v) {
  return noun + (v.size() == 1 ? " " : "s ") + ranges_text(v);
}

namespace {

// Categories that say where bytes were written, not what value they got.
bool structural(const std::string& cat) {
  return cat == "guard" || cat == "untouched-modified" || cat == "row-not-written" || cat == "input-modified";
}

std::string what_of(const HypothesisReport& h, const std::string& id) {
  for (const HypothesisResult& r : h.results)
    if (r.id == id) return r.what;
  return "";
}

report::Json hypotheses_json(const HypothesisReport& h) {
  report::Json results = report::Json::array();
  for (const HypothesisResult& r : h.results) {
    report::Json x = {{"id", r.id}, {"tested", r.tested}};
    if (r.tested) x["differing"] = r.differing, x["effect"] = r.effect;
    else x["why_not"] = r.why_not;
    results.push_back(std::move(x));
  }
  return {{"unit", h.unit},
          {"compared", h.compared},
          {"spec_differing", h.spec_differing},
          {"scope", h.scope},
          {"closest", h.closest},
          {"reproduced", h.reproduced},
          {"results", std::move(results)}};
}

// A verdict from a handful of differing elements rests on little: said so, with the count.
std::string few_note(const HypothesisReport& h) {
  constexpr uint64_t kFew = 8;
  if (h.spec_differing > kFew) return "";
  return "; rests on " + count_of(h.spec_differing, h.unit) + " that differ from the contract";
}

// What settles a tie of variants: the tell-apart command for this case's kernel, which the
// anatomy cannot run itself (it would need the kernel under test on the new cases). Rivals that
// are not all variants (mutant models, EX2 units) get the general advice.
std::string tell_apart_hint(const GoldenCase& c, const std::vector<std::string>& ids) {
  std::string rivals;
  for (const std::string& id : ids) {
    if (id.rfind("variant:", 0) != 0)
      return "; a case on which they differ tells them apart (the flags suite's searched cases "
             "observe each variant: tqref coverage names them)";
    if (!rivals.empty()) rivals += ',';
    rivals += id.substr(8);
  }
  std::string hint = "; to tell them apart, generate cases on which they differ and check them on "
                     "this kernel: tqref tell-apart --kernel ";
  hint += c.kind == CaseKind::decode ? "decode:" : "writer:";
  hint += traits(c.format).name;
  if (c.kind == CaseKind::decode) {
    hint += ':';
    hint += std::to_string(c.d.p.hdim);
  }
  hint += " --rivals ";
  hint += rivals;
  hint += " --out apart.h5";
  return hint;
}

}  // namespace

void explain_failure(const GoldenCase& c, const CaseResult& r, CaseVerdict& v, const ExplainOptions& o) {
  if (!o.enabled || v.pass || !v.error.empty()) return;
  for (const std::string& b : output_buffers(c.kind))
    if (!r.buffers.count(b)) return;
  const AnatomyFacts a = c.kind == CaseKind::decode ? decode_anatomy(c, r, o) : writer_anatomy(c, r);
  // Hypotheses re-run the model: only worth it when a value (decoder) or a pool byte (writer)
  // differs; a decoder's writes to L == 0 rows are no hypothesis's doing.
  HypothesisReport h;
  const bool tested = a.values_wrong || a.pools_differ;
  if (tested) h = test_hypotheses(c, r, o);
  std::string first_structural;
  bool only_structural = true;
  for (const auto& [cat, n] : v.categories) {
    if (!structural(cat)) only_structural = false;
    else if (first_structural.empty() || cat == "guard") first_structural = cat;
  }
  Explanation& e = v.explanation;
  std::string what = a.what, suspect = a.suspect;
  for (const char* cat : {"guard", "input-modified"}) {
    auto it = v.categories.find(cat);
    if (it == v.categories.end()) continue;
    std::string where;
    for (const Mismatch& m : v.first)
      if (m.category == cat) {
        where = m.where;
        break;
      }
    what += "; " + count_of(it->second, cat[0] == 'g' ? "guard byte" : "input byte") + " changed (" + where + ")";
    if (only_structural && first_structural == cat)
      suspect = cat[0] == 'g' ? "a write outside the buffer (an index past its end or before its start)"
                              : "a write into a buffer the kernel may only read";
  }
  const std::string scope = h.scope.empty() ? "" : " (on " + h.scope + ")";
  if (h.reproduced.size() == 1) {  // pinned: one hypothesis, no rival
    e.diagnosis = "hypothesis:" + h.reproduced[0];
    suspect = what_of(h, h.reproduced[0]);
    e.verdict = "pinned: reproduced bit for bit by " + h.reproduced[0] + " alone: " + suspect;
    e.verdict += few_note(h) + scope;
  } else if (!h.reproduced.empty()) {  // a tie is not a pin: every rival is named
    e.diagnosis = "tie:";
    for (size_t i = 0; i < h.reproduced.size(); ++i) e.diagnosis += (i ? "|" : "") + h.reproduced[i];
    suspect = what_of(h, h.reproduced[0]);
    e.verdict = "not pinned: reproduced bit for bit by " + std::to_string(h.reproduced.size()) +
                " hypotheses alike: " + h.reproduced[0] + " (" + suspect + ")";
    for (size_t i = 1; i < h.reproduced.size(); ++i)
      e.verdict += "; " + h.reproduced[i] + " (" + what_of(h, h.reproduced[i]) + ")";
    e.verdict += tell_apart_hint(c, h.reproduced) + few_note(h) + scope;
  } else {
    if (only_structural && !first_structural.empty()) e.diagnosis = "structural:" + first_structural;
    else if (!a.pattern.empty()) e.diagnosis = "pattern:" + a.pattern;
    else if (!h.closest.empty()) e.diagnosis = "closest:" + h.closest;
    else e.diagnosis = "unexplained";
    if (!tested) {
      e.verdict = c.kind == CaseKind::decode ? "no output value differs: hypotheses not tested"
                                             : "no pool byte differs: hypotheses not tested";
    } else if (h.results.empty()) {
      e.verdict = "hypotheses " + h.scope;
    } else if (h.closest.empty()) {
      e.verdict = "no hypothesis reproduces it or halves the spec's " + count_of(h.spec_differing, h.unit) +
                  " that differ" + scope;
    } else {
      uint64_t n = 0;
      for (const auto& x : h.results)
        if (x.id == h.closest) n = x.differing;
      e.verdict = "no hypothesis reproduces it; closest: " + h.closest + " (" + what_of(h, h.closest) + "), " +
                  std::to_string(n) + " of " + count_of(h.compared, h.unit) + " differ (the spec: " +
                  std::to_string(h.spec_differing) + ")" + scope;
    }
  }
  e.sentence = what + ": suspect " + suspect;
  e.json = {{"diagnosis", e.diagnosis}, {"sentence", e.sentence}, {"verdict", e.verdict}, {"facts", a.json}};
  if (tested) e.json["hypotheses"] = hypotheses_json(h);
}

void explain_with_known_units(const GoldenCase& c, const CaseResult& r, CaseVerdict& v,
                              const Ex2Profile* model_ex2) {
  ExplainOptions eo;
  eo.ex2 = model_ex2;
  for (const Ex2Profile& p : known_ex2_units()) eo.other_ex2.push_back(&p);
  explain_failure(c, r, v, eo);
}

}  // namespace tqref::anatomy
