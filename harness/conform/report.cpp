#include "conform/report.h"

#include <cstdio>

#include "conform/result.h"
#include "judge/report.h"

namespace tqref::conform {

using report::Json;

namespace {

std::string fmt_float(float f) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", double(f));
  return b;
}

std::string seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f s", s);
  return b;
}

// Markdown table cells must not hold '|' or newlines.
std::string cell(std::string s) {
  for (char& c : s)
    if (c == '|') c = '/';
    else if (c == '\n') c = ' ';
  return s;
}

std::string level_name(judge::Level l) {
  return l == judge::Level::W ? "W (exact)" : l == judge::Level::D ? "D (exact)" : "T (tolerance)";
}

std::string kernel_verdict(const KernelTotals& t) {
  if (t.failed || t.i_failed) return "**FAIL**";
  if (t.cases == 0) return "not checked";
  return t.level == judge::Level::T ? "pass (T only)" : "pass";
}

std::string invariance_cell(const ConformResult& r, const KernelTotals& t) {
  if (!r.invariance) return "not run";
  if (t.i_cases == 0) return "-";
  return std::to_string(t.i_passed) + "/" + std::to_string(t.i_cases) + (t.i_failed ? " **FAIL**" : "");
}

std::string module_header_md(const ModuleResult& m) {
  std::string s = "### " + m.tag + "\n\n";
  s += "- file: `" + m.file.path + "` (" + module_kind_name(m.file.kind) + ", " + std::to_string(m.bytes) +
       " bytes)\n- sha256: `" + m.sha256 + "`\n";
  s += "- images (pre-check): " + m.inspection.targets_text() +
       (m.inspection.problem.empty() ? "" : " — " + m.inspection.problem) + "\n";
  if (!m.load_error.empty()) {
    s += "- **cannot be loaded on this GPU**" +
         (m.load_explanation.empty() ? std::string() : ": " + m.load_explanation) + "\n\n```\n" +
         m.load_error + "\n```\n";
    std::string pre;
    for (const auto& k : contract_kernels())
      if (m.inspection.entries.count(k)) pre += (pre.empty() ? "" : ", ") + k;
    s += "- contract kernels in the file (pre-check, not loaded): " + (pre.empty() ? "none" : pre) + "\n";
    return s + "\n";
  }
  std::string found, missing;
  for (const auto& k : contract_kernels()) {
    std::string& list = m.found.count(k) ? found : missing;
    list += (list.empty() ? "" : ", ") + k;
  }
  s += "- kernels found (cuModuleGetFunction): " + (found.empty() ? "none" : found) + "\n";
  s += "- not in this module: " + (missing.empty() ? "none" : missing) + "\n";
  if (m.hdim) {
    s += "- decoders' HDIM: " + std::to_string(m.hdim) + " (evidence: " +
         (m.hdim_evidence.empty() ? std::string("stated") : m.hdim_evidence) + ") — " + m.hdim_why + "\n";
    s += "- decoder level: " + level_name(m.decoder_level) +
         (m.decoder_level_why.empty() ? "" : " — " + m.decoder_level_why) + "\n";
  }
  uint64_t ooc = 0, ooc_passed = 0;  // launches outside the contract carry a note (judge/dispatch.h)
  for (const auto& su : m.suites)
    for (const auto& v : su.verdicts)
      if (!v.note.empty()) ooc += 1, ooc_passed += v.pass;
  if (ooc)
    s += "- decode launches outside the contract (head_dim != HDIM, docs/spec.md section 5.1): " +
         std::to_string(ooc) + " cases, " + std::to_string(ooc_passed) + " passed; each case's note says how it "
         "was judged\n";
  if (ooc && m.builtin.rfind("decode_hdim", 0) == 0)
    s += "- this is tqref's own `" + m.builtin + "` build (its bytes are the embedded module's): on a launch "
         "with head_dim != HDIM it implements docs/spec.md section 5.1 (lanes above head_dim inactive, the "
         "HDIM build's bits on zero-padded q and K; bf16 NaN rows for a head_dim it cannot compute), so "
         "these launches also pass bit for bit with `--out-of-contract D`\n";
  if (!m.error.empty()) s += "- **not fully checked**: " + m.error + "\n";
  if (!m.fault.empty()) s += "- **GPU fault** in case `" + m.fault + "`: later cases of this module were not launched\n";
  return s + "\n";
}

// "## Modules": each module's header, its suites' counts and skips, and its pin across cases.
std::string modules_md(const ConformResult& r) {
  std::string s;
  for (const auto& m : r.modules) {
    s += module_header_md(m);
    for (const auto& su : m.suites) {
      size_t failed = 0;
      for (const auto& v : su.verdicts) failed += !v.pass;
      size_t i_failed = 0;
      for (const auto& v : su.invariance) i_failed += !v.pass;
      s += "- suite **" + su.suite + "**: " + std::to_string(su.verdicts.size()) + " cases run, " +
           std::to_string(su.verdicts.size() - failed) + " passed, " + std::to_string(failed) + " failed" +
           (su.invariance.empty() ? "" : "; level I: " + std::to_string(su.invariance.size() - i_failed) + " of " +
                                             std::to_string(su.invariance.size()) + " invariant") + "\n";
      for (const auto& [why, n] : su.skipped) s += "  - skipped " + std::to_string(n) + ": " + why + "\n";
    }
    if (!m.pin.empty()) s += "- across the module: " + m.pin + "\n";
    if (const judge::LaunchTimes& t = m.launch_times; t.launches)
      s += "- GPU time: " + std::to_string(t.launches) + " launches; buffers to the device " + seconds(t.upload_s) +
           ", kernels " + seconds(t.kernel_s) + ", buffers back " + seconds(t.download_s) + "\n";
    s += "\n";
  }
  return s;
}

// "What this run could have seen" (judge/coverage.h): N of M and every blind entry; "" when
// coverage was not computed.
std::string coverage_md(const RunCoverage& c) {
  if (!c.total) return "";
  std::string s = "## What this run could have seen\n\n`tqref coverage` over the suites "
                  "(docs/variants.md): " + std::to_string(c.observable) + " of " +
                  std::to_string(c.total) +
                  " coverage entries (rounding steps one step off, variants of the contract) "
                  "change some case of these suites.";
  if (c.blind.empty()) return s + " No blind spot.\n\n";
  s += " Blind spots (no case of these suites would fail a kernel that differs only so):\n\n";
  for (const std::string& b : c.blind) s += "- " + b + "\n";
  return s + "\n";
}

}  // namespace

std::string replay_command(const ConformResult& r, const ModuleResult& m, const std::string& reproducer,
                           judge::Level level) {
  std::string c = "tqref check " + reproducer + " --backend gpu --module " + m.file.path;
  if (m.hdim) c += " --hdim " + std::to_string(m.hdim);
  if (r.threshold != kSparseVThreshold) c += " --threshold " + fmt_float(r.threshold);
  if (level == judge::Level::T || level == judge::Level::I) c += " --level " + judge::level_letter(level);
  return c;
}

std::string report_markdown(const ConformResult& r, size_t per_case) {
  std::string s = "# tqref conformance report\n\n**" + verdict_line(r) + "**\n\n";
  s += "| | |\n| --- | --- |\n";
  s += "| device | " + cell(r.device) + " |\n";
  s += "| EX2 profile | " +
       cell(r.ex2_profile_id.empty() ? "none for " + r.arch + ": decoders judged at level T"
                                     : r.ex2_profile_id + " (`" + r.ex2_profile_path + "`)") + " |\n";
  if (!r.ex2_note.empty()) s += "| EX2 note | " + cell(r.ex2_note) + " |\n";
  s += "| THRESH | " + fmt_float(r.threshold) + " |\n";
  s += "| dispatch | " + cell(judge::dispatch_rule_name(r.dispatch)) + (r.dispatch == judge::DispatchRule::published ? " (HDIM=128 build for head_dim <= 128, "
       "HDIM=256 above)" : " (only head_dim == HDIM)") + "; launches with head_dim != HDIM judged " +
       (r.out_of_contract == judge::OutOfContractLevel::T ? "against fp64 (level T)" : "bit for bit against docs/spec.md section 5.1") + " |\n";
  s += "| tqref | " + cell(r.tqref_version) + " (commit " + cell(r.git_commit) + ") |\n";
  s += "| started | " + r.started_utc + ", " + seconds(r.seconds) + " |\n";
  s += "| command | `" + cell(r.command_line) + "` |\n";
  for (const auto& [name, file] : r.suites) s += "| suite " + name + " | `" + cell(file) + "` |\n";
  s += "\nLevels (docs/spec.md section 6): W = every byte of both pools equals the model's; D = every output "
       "element equals the model's bf16 bits (with this GPU's EX2 profile); T = within the documented "
       "tolerance of the model and the fp64 reference (docs/gpu-harness.md), not bit-exact. Guard "
       "violations count changed guard-band bytes and changed input buffers. I = invariance: the kernel "
       "against itself under other batch placements, block numberings, padded strides, repeats and "
       "lengths of the other sequences (writers: token order, padding tokens, strides, split launches), "
       "no EX2 profile needed; the column counts the cases whose every variant kept the bits. Each "
       "failure carries an anatomy sentence and a hypothesis verdict "
       "(docs/conform-guide.md, section 6).\n\n";

  s += coverage_md(r.coverage);
  s += "## Kernels\n\n| module | kernel | level | cases | passed | failed | skipped | guard violations | I | verdict |\n"
       "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
  std::set<std::string> anywhere;
  for (const auto& m : r.modules) {
    for (const auto& [k, t] : kernel_totals(m)) {
      anywhere.insert(k);
      s += "| " + m.tag + " | " + k + " | " + level_name(t.level) + " | " + std::to_string(t.cases) + " | " +
           std::to_string(t.passed) + " | " + std::to_string(t.failed) + " | " + std::to_string(t.skipped) +
           " | " + std::to_string(t.guard_violations) + " | " + invariance_cell(r, t) + " | " + kernel_verdict(t) + " |\n";
    }
    if (!m.load_error.empty())
      s += "| " + m.tag + " | (not loaded) | | | | | | | | " +
           (may_hold_contract_kernels(m.inspection) ? "**cannot load**" : "cannot load; no contract kernel in the file (ignored)") + " |\n";
    else if (m.found.empty() && m.error.empty())
      s += "| " + m.tag + " | (none of the six) | | | | | | | | ignored |\n";
  }
  std::string never;
  for (const auto& k : contract_kernels())
    if (!anywhere.count(k)) never += (never.empty() ? "" : ", ") + k;
  if (!never.empty()) s += "\nNot found in any loaded module: " + never + ".\n";

  s += "\n## Modules\n\n" + modules_md(r);

  bool any_failure = false;
  for (const auto& m : r.modules)
    for (const auto& su : m.suites) {
      for (const auto& v : su.verdicts) any_failure = any_failure || !v.pass;
      for (const auto& v : su.invariance) any_failure = any_failure || !v.pass;
    }
  if (any_failure) {
    s += "## Failures\n\nEach failing case was written alone to a reproducer file; the command under it "
         "replays just that case on this GPU.\n\n";
    for (const auto& m : r.modules)
      for (const auto& su : m.suites) {
        std::map<std::string, const judge::LevelTVerdict*> tv;
        for (const auto& t : su.tolerance) tv[t.name] = &t;
        for (const auto& v : su.verdicts) {
          if (v.pass) continue;
          s += "### " + m.tag + " / " + su.suite + " / " + v.name + "\n\n```\n";
          const auto t = tv.find(v.name);
          s += t != tv.end() ? judge::level_t_text(*t->second) + judge::explanation_text(v.explanation)
                             : judge::report_text(v, per_case);
          s += "```\n\n";
          const auto rp = su.reproducers.find(v.name);
          if (rp != su.reproducers.end())
            s += "Replay: `" + replay_command(r, m, rp->second, t != tv.end() ? judge::Level::T : judge::Level::D) + "`\n\n";
        }
        for (const auto& l : su.invariance) {
          if (l.pass) continue;
          s += "### " + m.tag + " / " + su.suite + " / " + l.name + " (level I)\n\n```\n" + judge::level_i_text(l) +
               "```\n\n";
          const auto rp = su.reproducers.find(l.name);
          if (rp != su.reproducers.end()) s += "Replay: `" + replay_command(r, m, rp->second, judge::Level::I) + "`\n\n";
        }
      }
  }
  return s;
}

namespace {

// "this run could have seen" (judge/coverage.h); null when not computed.
Json coverage_json(const RunCoverage& c) {
  if (!c.total) return nullptr;
  return {{"observable", c.observable}, {"total", c.total}, {"blind", c.blind}};
}

Json kernels_json(const ModuleResult& m) {
  Json k = Json::object();
  for (const auto& [name, t] : kernel_totals(m))
    k[name] = {{"level", judge::level_letter(t.level)},
               {"cases", t.cases},
               {"passed", t.passed},
               {"failed", t.failed},
               {"guard_violations", t.guard_violations},
               {"invariance", {{"cases", t.i_cases}, {"passed", t.i_passed}, {"failed", t.i_failed}}}};
  return k;
}

Json suite_json(const ConformResult& r, const ModuleResult& m, const SuiteRun& su) {
  const judge::RunInfo run{su.file, "gpu " + m.file.path, "none", r.git_commit, r.ex2_profile_id};
  Json j = {{"suite", su.suite},
            {"skipped", Json::object()},
            {"reproducers", Json::object()},
            {"check", judge::report_json(run, su.verdicts)}};
  for (const auto& [why, n] : su.skipped) j["skipped"][why] = n;
  for (const auto& [c, p] : su.reproducers) j["reproducers"][c] = p;
  if (!su.tolerance.empty()) j["tolerance"] = judge::level_t_json(su.tolerance, r.topt);
  if (!su.invariance.empty()) j["invariance"] = judge::level_i_json(su.invariance);
  return j;
}

Json module_json(const ConformResult& r, const ModuleResult& m) {
  Json not_found = Json::array();
  for (const auto& name : contract_kernels())
    if (!m.found.count(name)) not_found.push_back(name);
  Json suites = Json::array();
  for (const SuiteRun& su : m.suites) suites.push_back(suite_json(r, m, su));
  return {{"tag", m.tag},
          {"path", m.file.path},
          {"kind", module_kind_name(m.file.kind)},
          {"bytes", m.bytes},
          {"sha256", m.sha256},
          {"images", m.inspection.targets_text()},
          {"load_error", m.load_error},
          {"load_explanation", m.load_explanation},
          {"hdim", m.hdim},
          {"hdim_exact", m.hdim_exact},
          {"hdim_evidence", m.hdim_evidence},
          {"hdim_why", m.hdim_why},
          {"builtin", m.builtin},
          {"pin", m.pin},
          {"launch_times", {{"launches", m.launch_times.launches},
                            {"upload_s", report::json_number(m.launch_times.upload_s, "%.6f")},
                            {"kernel_s", report::json_number(m.launch_times.kernel_s, "%.6f")},
                            {"download_s", report::json_number(m.launch_times.download_s, "%.6f")}}},
          {"decoder_level", judge::level_letter(m.decoder_level)},
          {"fault", m.fault},
          {"error", m.error},
          {"kernels", kernels_json(m)},
          {"not_found", std::move(not_found)},
          {"suites", std::move(suites)}};
}

}  // namespace

std::string report_json(const ConformResult& r) {
  Json suites = Json::object();
  for (const auto& [name, file] : r.suites) suites[name] = file;
  Json modules = Json::array();
  for (const ModuleResult& m : r.modules) modules.push_back(module_json(r, m));
  const Json j = {{"tool", "tqref conform"},
                  {"version", r.tqref_version},
                  {"git_commit", r.git_commit},
                  {"exit_code", exit_code(r)},
                  {"verdict", verdict_line(r)},
                  {"command_line", r.command_line},
                  {"started_utc", r.started_utc},
                  {"seconds", report::json_number(r.seconds, "%.6f")},
                  {"device", r.device},
                  {"arch", r.arch},
                  {"ex2_profile_id", r.ex2_profile_id},
                  {"ex2_profile_path", r.ex2_profile_path},
                  {"ex2_note", r.ex2_note},
                  {"threshold", report::json_number(r.threshold, "%.9g")},
                  {"dispatch", judge::dispatch_rule_name(r.dispatch)},
                  {"out_of_contract", r.out_of_contract == judge::OutOfContractLevel::T ? "T" : "D"},
                  {"coverage", coverage_json(r.coverage)},
                  {"suites", std::move(suites)},
                  {"modules", std::move(modules)}};
  return report::json_text(j);
}

std::string report_junit(const ConformResult& r) {
  // The modules themselves: one testcase each (loaded, holds contract kernels, HDIM established).
  std::vector<judge::CaseVerdict> mods;
  for (const auto& m : r.modules) {
    judge::CaseVerdict v;
    v.name = m.tag;
    v.kernel = "module";
    v.kind = "module";
    // Modules without contract kernels (the engine's other kernels) pass: nothing to judge.
    if (!m.load_error.empty() && may_hold_contract_kernels(m.inspection))
      v.error = "cannot be loaded: " + m.load_explanation + "\n" + m.load_error;
    else if (!m.error.empty()) v.error = m.error;
    else if (!m.fault.empty()) v.error = "GPU fault in case " + m.fault;
    v.pass = v.error.empty();
    mods.push_back(std::move(v));
  }
  std::vector<report::JunitSuite> suites{
      judge::report_junit({"modules", "tqref-conform-modules", "none", r.git_commit, r.ex2_profile_id}, mods)};
  for (const auto& m : r.modules)
    for (const auto& su : m.suites) {
      suites.push_back(judge::report_junit({su.file, m.tag + ":" + su.suite, "none", r.git_commit, r.ex2_profile_id},
                                           su.verdicts));
      if (su.invariance.empty()) continue;
      std::vector<judge::CaseVerdict> iv;
      for (const auto& l : su.invariance) iv.push_back(judge::level_i_case_verdict(l));
      suites.push_back(
          judge::report_junit({su.file, m.tag + ":" + su.suite + ":I", "none", r.git_commit, r.ex2_profile_id}, iv));
    }
  return report::junit_text("tqref-conform", suites);
}

}  // namespace tqref::conform
