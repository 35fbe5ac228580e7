#include "judge/report.h"

#include <cstdio>

namespace tqref::golden {

namespace {

std::string json_str(const std::string& s) {
  std::string r = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') r += '\\', r += ch;
    else if (ch == '\n') r += "\\n";
    else if (static_cast<unsigned char>(ch) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", ch);
      r += b;
    } else r += ch;
  }
  return r + "\"";
}

std::string xml_str(const std::string& s) {
  std::string r;
  for (char ch : s) {
    if (ch == '&') r += "&amp;";
    else if (ch == '<') r += "&lt;";
    else if (ch == '>') r += "&gt;";
    else if (ch == '"') r += "&quot;";
    else r += ch;
  }
  return r;
}

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

std::string json_quote(const std::string& s) { return json_str(s); }
std::string xml_escape(const std::string& s) { return xml_str(s); }

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

std::string report_json(const RunInfo& run, const std::vector<CaseVerdict>& verdicts) {
  size_t failed = 0;
  for (const auto& v : verdicts) failed += !v.pass;
  std::string r = "{\n  \"file\": " + json_str(run.file) + ",\n  \"backend\": " +
                  json_str(run.backend) + ",\n  \"inject\": " + json_str(run.inject) +
                  ",\n  \"git_commit\": " + json_str(run.git_commit) +
                  ",\n  \"ex2_profile_id\": " + json_str(run.ex2_profile_id) +
                  ",\n  \"cases\": " + std::to_string(verdicts.size()) +
                  ",\n  \"failed\": " + std::to_string(failed) + ",\n  \"results\": [";
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const CaseVerdict& v = verdicts[i];
    r += std::string(i ? "," : "") + "\n    {\"name\": " + json_str(v.name) +
         ", \"kernel\": " + json_str(v.kernel) + ", \"kind\": " + json_str(v.kind) +
         ", \"pass\": " + (v.pass ? "true" : "false") + ", \"error\": " + json_str(v.error) + ", \"note\": " + json_str(v.note) +
         ", \"bytes_compared\": " + std::to_string(v.bytes_compared) +
         ", \"bytes_differing\": " + std::to_string(v.bytes_differing) + ", \"categories\": {";
    size_t k = 0;
    for (const auto& [cat, n] : v.categories)
      r += std::string(k++ ? ", " : "") + json_str(cat) + ": " + std::to_string(n);
    r += "}, \"mismatches\": [";
    for (size_t j = 0; j < v.first.size(); ++j) {
      const Mismatch& m = v.first[j];
      r += std::string(j ? "," : "") + "\n      {\"buffer\": " + json_str(m.buffer) +
           ", \"offset\": " + std::to_string(m.offset) + ", \"category\": " + json_str(m.category) +
           ", \"where\": " + json_str(m.where) + ", \"expected\": " + json_str(hex(m.expected, m.width)) +
           ", \"got\": " + json_str(hex(m.got, m.width)) +
           ", \"initial\": " + json_str(hex(m.initial, m.width)) + "}";
    }
    r += std::string(v.first.empty() ? "" : "\n    ") + "]";
    if (!v.explanation.json.empty()) r += ",\n     \"anatomy\": " + v.explanation.json;
    else if (!v.explanation.sentence.empty())
      r += ",\n     \"anatomy\": {\"diagnosis\": " + json_str(v.explanation.diagnosis) +
           ", \"sentence\": " + json_str(v.explanation.sentence) + "}";
    r += ", \"seconds\": " + std::to_string(v.seconds) + "}";
  }
  return r + "\n  ]\n}\n";
}

std::string report_junit(const RunInfo& run, const std::vector<CaseVerdict>& verdicts) {
  size_t failed = 0, errors = 0;
  double total = 0;
  for (const auto& v : verdicts) {
    errors += !v.error.empty();
    failed += !v.pass && v.error.empty();
    total += v.seconds;
  }
  std::string r = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"tqref-check-" +
                  xml_str(run.backend) + "\" tests=\"" + std::to_string(verdicts.size()) +
                  "\" failures=\"" + std::to_string(failed) + "\" errors=\"" +
                  std::to_string(errors) + "\" time=\"" + std::to_string(total) + "\">\n";
  r += "  <properties><property name=\"file\" value=\"" + xml_str(run.file) +
       "\"/><property name=\"inject\" value=\"" + xml_str(run.inject) + "\"/></properties>\n";
  for (const auto& v : verdicts) {
    r += "  <testcase classname=\"" + xml_str(v.kernel) + "\" name=\"" + xml_str(v.name) +
         "\" time=\"" + std::to_string(v.seconds) + "\"";
    if (v.pass) {
      r += "/>\n";
      continue;
    }
    r += ">\n";
    if (!v.error.empty()) {
      r += "    <error message=\"" + xml_str(v.error) + "\"/>\n";
    } else {
      std::string body;
      for (const auto& m : v.first) body += mismatch_line(m) + "\n";
      body += explanation_text(v.explanation);
      r += "    <failure message=\"" + xml_str(std::to_string(v.bytes_differing) + " bytes differ [" +
                                           categories_str(v) + "]") +
           "\">" + xml_str(body) + "</failure>\n";
    }
    r += "  </testcase>\n";
  }
  return r + "</testsuite>\n";
}

}  // namespace tqref::golden
