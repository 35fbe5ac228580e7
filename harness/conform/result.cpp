#include "conform/result.h"

#include <cstdio>
#include <filesystem>

#include "io/exit_code.h"
#include "io/file_bytes.h"
#include "io/sha256.h"

namespace tqref::conform {

ModuleResult new_module_result(const ModuleFile& f, size_t index) {
  ModuleResult m;
  m.file = f;
  char tag[16];
  std::snprintf(tag, sizeof tag, "m%02zu-", index);
  m.tag = tag + std::filesystem::path(f.path).filename().string();
  std::vector<uint8_t> bytes;
  std::string problem;
  try {
    bytes = read_file_bytes(f.path, "module");
  } catch (const std::invalid_argument& e) {  // not a regular file, too large, unreadable
    problem = e.what();
  }
  m.bytes = bytes.size();
  m.sha256 = trace::sha256_hex(bytes.data(), bytes.size());
  m.inspection = inspect_module_bytes(bytes, f.kind);
  if (!problem.empty()) m.inspection.problem = problem;
  return m;
}

bool may_hold_contract_kernels(const ModuleInspection& i) {
  if (!i.complete) return true;
  for (const auto& k : contract_kernels())
    if (i.entries.count(k)) return true;
  return false;
}

std::map<std::string, KernelTotals> kernel_totals(const ModuleResult& m) {
  std::map<std::string, KernelTotals> t;
  for (const std::string& k : m.found) t[k].level = is_decoder_kernel(k) ? m.decoder_level : judge::Level::W;
  for (const SuiteRun& s : m.suites) {
    for (const auto& [k, n] : s.skipped_per_kernel) t[k].skipped += n;
    for (const judge::CaseVerdict& v : s.verdicts) {
      KernelTotals& k = t[v.kernel];
      ++k.cases;
      ++(v.pass ? k.passed : k.failed);
      for (const char* cat : {"guard", "input-modified"}) {
        const auto it = v.categories.find(cat);
        if (it != v.categories.end()) k.guard_violations += it->second;
      }
    }
    for (const judge::LevelIVerdict& v : s.invariance) {
      KernelTotals& k = t[v.kernel];
      ++k.i_cases;
      ++(v.pass ? k.i_passed : k.i_failed);
    }
  }
  return t;
}

namespace {

// The reason behind exit_code(), "" for 0.
std::string reason(const ConformResult& r, int* code) {
  for (const auto& m : r.modules)
    if (!m.fault.empty()) {
      *code = kExitGpuFault;
      return "case " + m.fault + " faulted the GPU (module " + m.file.path + ")";
    }
  uint64_t failed = 0, i_failed = 0, kernels_failing = 0;
  for (const auto& m : r.modules)
    for (const auto& [k, t] : kernel_totals(m)) {
      failed += t.failed;
      i_failed += t.i_failed;
      kernels_failing += t.failed + t.i_failed > 0;
    }
  if (failed + i_failed) {
    *code = kExitMismatch;
    return std::to_string(failed) + " case(s) failed" +
           (i_failed ? " and " + std::to_string(i_failed) + " failed level I" : "") + " in " +
           std::to_string(kernels_failing) + " kernel(s)";
  }
  *code = kExitBadInput;
  size_t checked = 0;
  for (const auto& m : r.modules) {
    if (!m.load_error.empty()) {
      if (may_hold_contract_kernels(m.inspection))
        return "module " + m.file.path + " could not be loaded on this GPU";
      continue;  // an unrelated module of the engine (the file shows no contract kernel)
    }
    if (!m.error.empty()) return "module " + m.file.path + ": " + m.error;
    if (m.found.empty()) continue;  // no contract kernel: listed in the report, not judged
    for (const auto& [k, t] : kernel_totals(m)) {
      if (t.cases == 0) return "kernel " + k + " of module " + m.file.path + " was given no case";
      ++checked;
    }
  }
  if (checked == 0) return "no module holds any of the six contract kernels, so nothing was checked";
  *code = kExitOk;
  return "";
}

}  // namespace

int exit_code(const ConformResult& r) {
  int code = 0;
  reason(r, &code);
  return code;
}

std::string verdict_line(const ConformResult& r) {
  int code = 0;
  const std::string why = reason(r, &code);
  if (code == 0) {
    bool level_t = false;
    for (const auto& m : r.modules)
      for (const auto& [k, t] : kernel_totals(m)) level_t = level_t || t.level == judge::Level::T;
    const std::string inv = r.invariance ? " and level I (invariance)" : "";
    return level_t ? "PASS (exit 0): every kernel passed every case" + inv +
                         "; some decoders only at level T (tolerance), not bit for bit"
                   : "PASS (exit 0): every kernel found passed every case, bit for bit" + inv;
  }
  return "FAIL (exit " + std::to_string(code) + "): " + why;
}

}  // namespace tqref::conform
