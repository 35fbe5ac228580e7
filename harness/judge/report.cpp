#include "judge/report.h"

namespace tqref::judge {

using report::Json;

namespace {

std::string mismatch_line(const Mismatch& m) {
  return m.category + ": " + m.buffer + " byte " + std::to_string(m.offset) + " (" + m.where +
         "): expected " + hex(m.expected, m.width) + " got " + hex(m.got, m.width) + " initial " +
         hex(m.initial, m.width);
}

std::string categories_str(const CaseVerdict& v) {
  std::string r;
  for (const auto& [k, n] : v.categories) r += (r.empty() ? "" : ", ") + k + " x" + std::to_string(n);
  return r;
}

}  // namespace

std::string report_text(const CaseVerdict& v, size_t max_lines) {
  std::string r = (v.pass ? "PASS " : "FAIL ") + v.name;
  const std::string note = v.note.empty() ? "" : "    " + v.note + "\n";
  if (!v.error.empty()) return r + ": " + v.error + "\n" + note;
  if (v.pass) return r + "\n" + note;
  r += ": " + std::to_string(v.bytes_differing) + " of " + std::to_string(v.bytes_compared) +
       " bytes differ [" + categories_str(v) + "]\n";
  for (size_t i = 0; i < v.first.size() && i < max_lines; ++i) r += "    " + mismatch_line(v.first[i]) + "\n";
  return r + note + explanation_text(v.explanation);
}

std::string explanation_text(const Explanation& e) {
  std::string r;
  if (!e.sentence.empty()) r += "    anatomy: " + e.sentence + "\n";
  if (!e.verdict.empty()) r += "    hypotheses: " + e.verdict + "\n";
  return r;
}

Json report_json(const RunInfo& run, const std::vector<CaseVerdict>& verdicts) {
  size_t failed = 0;
  for (const auto& v : verdicts) failed += !v.pass;
  Json results = Json::array();
  for (const CaseVerdict& v : verdicts) {
    Json mismatches = Json::array();
    for (const Mismatch& m : v.first)
      mismatches.push_back({{"buffer", m.buffer},
                            {"offset", m.offset},
                            {"category", m.category},
                            {"where", m.where},
                            {"expected", hex(m.expected, m.width)},
                            {"got", hex(m.got, m.width)},
                            {"initial", hex(m.initial, m.width)}});
    Json r = {{"name", v.name},
              {"kernel", v.kernel},
              {"kind", v.kind},
              {"pass", v.pass},
              {"error", v.error},
              {"note", v.note},
              {"bytes_compared", v.bytes_compared},
              {"bytes_differing", v.bytes_differing},
              {"categories", Json::object()},
              {"mismatches", std::move(mismatches)}};
    for (const auto& [cat, n] : v.categories) r["categories"][cat] = n;
    if (!v.explanation.json.is_null()) r["anatomy"] = v.explanation.json;
    else if (!v.explanation.sentence.empty())
      r["anatomy"] = {{"diagnosis", v.explanation.diagnosis}, {"sentence", v.explanation.sentence}};
    r["seconds"] = report::json_number(v.seconds, "%.6f");
    results.push_back(std::move(r));
  }
  return {{"file", run.file},
          {"backend", run.backend},
          {"inject", run.inject},
          {"git_commit", run.git_commit},
          {"ex2_profile_id", run.ex2_profile_id},
          {"cases", verdicts.size()},
          {"failed", failed},
          {"results", std::move(results)}};
}

report::JunitSuite report_junit(const RunInfo& run, const std::vector<CaseVerdict>& verdicts) {
  report::JunitSuite s{"tqref-check-" + run.backend, {{"file", run.file}, {"inject", run.inject}}, {}};
  for (const CaseVerdict& v : verdicts) {
    report::JunitCase c{v.kernel, v.name, v.seconds, v.pass, v.error, "", ""};
    if (!v.pass && v.error.empty()) {
      c.message = std::to_string(v.bytes_differing) + " bytes differ [" + categories_str(v) + "]";
      for (const auto& m : v.first) c.text += mismatch_line(m) + "\n";
      c.text += explanation_text(v.explanation);
    }
    s.cases.push_back(std::move(c));
  }
  return s;
}

}  // namespace tqref::judge
