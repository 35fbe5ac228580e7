#include "gpu/conform_session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "cases/generate.h"
#include "conform/report.h"
#include "gpu/calibrate_ex2.h"
#include "gpu/driver.h"
#include "gpu/gpu_backend.h"
#include "io/approx_units_io.h"
#include "io/atomic_output.h"
#include "io/ex2_profile_io.h"
#include "io/exit_code.h"
#include "judge/coverage.h"

namespace fs = std::filesystem;

namespace tqref::conform {

namespace {

// --calibrate: measure this GPU's EX2 unit (gpu/calibrate_ex2.h). A new profile goes where later
// runs find it; an existing one is never replaced: the measurement goes to --out and is compared
// with it, and a differing measurement is what this run judges with (prefer_ex2_profile).
// Returns a note for the report, or sets *rc when calibration could not run at all.
std::string calibrate(const GpuRunOptions& o, const std::string& arch, int* rc) {
  std::string existing;
  try {
    existing = find_ex2_profile(arch);
  } catch (const Ex2ProfileError&) {
  }
  gpu::CalibrateEx2Options c;
  c.device = o.device;
  c.command_line = "tqref conform --calibrate --device " + std::to_string(o.device);
  c.out = existing.empty() ? default_ex2_profile_path(arch) : o.out_dir + "/ex2-measured-" + arch + ".h5";
  c.force = !existing.empty();
  std::printf("  calibrating EX2 into %s\n", c.out.c_str());
  std::fflush(stdout);
  const int r = gpu::calibrate_ex2(c);
  if (r == kExitNoDevice || r == kExitGpuFault || r == kExitInternal) *rc = r;
  if (existing.empty())
    return r == kExitOk ? "measured now by --calibrate and stored as " + c.out
                        : "--calibrate failed (exit " + std::to_string(r) + "); see the log";
  if (r != kExitOk)
    return "--calibrate failed (exit " + std::to_string(r) + "); the stored profile " + existing + " is used";
  const Ex2Profile now = load_ex2_profile(c.out), stored = load_ex2_profile(existing);
  if (now.id() == stored.id()) return "--calibrate measured this GPU again: identical to " + existing;
  prefer_ex2_profile(arch, c.out);
  return "--calibrate measured " + now.id() + ", which DIFFERS from the stored " + stored.id() + " (" +
         existing + "); this run uses the measurement (" + c.out + "); the stored file was not "
         "replaced: compare the two, then replace it with `tqref calibrate ex2 --force --out " +
         existing + "` if this GPU is the reference";
}

// This GPU's EX2 profile, recorded in res; none: the decoders are judged at level T.
std::optional<Ex2Profile> device_ex2_profile(ConformResult& res) {
  try {
    res.ex2_profile_path = find_ex2_profile(res.arch);
    Ex2Profile p = load_ex2_profile_for_arch(res.arch);
    res.ex2_profile_id = p.id();
    return p;
  } catch (const Ex2ProfileError& e) {
    res.ex2_profile_path.clear();
    if (res.ex2_note.empty()) res.ex2_note = e.what();
    std::printf("EX2: no profile for %s: decoders are judged at level T (tolerance), not bit for bit; "
                "`tqref conform --calibrate` measures one\n", res.arch.c_str());
    return std::nullopt;
  }
}

// A generated suite (standard, models, pools, flags) with no file yet is made in --out/golden:
// with this GPU's EX2 profile, else `tqref generate`'s default one (decoders are then judged at
// level T). False after the message when one cannot be made.
bool generate_missing_suites(std::vector<SuiteFile>& suites, const std::string& out, const Ex2Profile* dev_ex2) {
  for (auto& s : suites) {
    if (!s.path.empty()) continue;
    s.path = out + "/golden/" + s.name + ".h5";
    std::printf("suite %s: no golden file in the data directories; generating it (tqref generate "
                "--suite %s --out %s)\n", s.name.c_str(), s.name.c_str(), s.path.c_str());
    std::fflush(stdout);
    if (fs::exists(s.path)) continue;
    try {
      const Ex2Profile gen_ex2 = dev_ex2 ? *dev_ex2 : load_ex2_profile_for_arch("sm_90");
      cases::generate_suite_file(s.name, s.path, &gen_ex2);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tqref conform: generating the %s suite failed: %s\n", s.name.c_str(), e.what());
      return false;
    }
  }
  return true;
}

// What the suites could have seen (judge/coverage.h): the flags suite first, since its searched
// cases observe most entries and `first` then skips them in the larger suites.
RunCoverage suites_coverage(const std::vector<SuiteFile>& suites) {
  std::vector<const SuiteFile*> order;
  for (const SuiteFile& s : suites)
    if (s.name == "flags") order.insert(order.begin(), &s);
    else order.push_back(&s);
  judge::Coverage cov = judge::empty_coverage();
  for (const SuiteFile* s : order)
    if (s->opened)  // validated once for the run (open_suite_files)
      judge::add_coverage(cov, s->opened->root, s->opened->prov, s->opened->ex2 ? &*s->opened->ex2 : nullptr,
                          s->path, true);
    else
      judge::add_coverage(cov, s->path, true);
  return {cov.observable(), cov.total(), cov.blind()};
}

// Whether the coverage summary can run beside the modules (run_conform_session): every suite
// opened, and the approximate units loaded if installed (a failed load is left to the summary).
bool all_open_with_units(const std::vector<SuiteFile>& suites) {
  if (!std::all_of(suites.begin(), suites.end(), [](const SuiteFile& s) { return bool(s.opened); })) return false;
  if (!approx_units_present()) return true;
  try {
    approx_units();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// conform.md, conform.json and conform.junit.xml into --out, each whole or not at all.
bool write_reports(const GpuRunOptions& o, const ConformResult& res) {
  try {
    common::write_file_atomic(o.out_dir + "/conform.md", report_markdown(res, o.show));
    common::write_file_atomic(o.out_dir + "/conform.json", report_json(res));
    common::write_file_atomic(o.out_dir + "/conform.junit.xml", report_junit(res));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tqref conform: cannot write the reports into %s: %s\n", o.out_dir.c_str(), e.what());
    return false;
  }
  return true;
}

}  // namespace

int run_conform_session(ConformResult& res, SessionOptions o) {
  GpuRunOptions& r = o.run;
  const gpu::Driver* drv = gpu::Driver::get();
  if (r.device < 0 || r.device >= drv->device_count()) {
    std::fprintf(stderr, "tqref conform: --device %d; allowed: 0 to %d\n", r.device, drv->device_count() - 1);
    return kExitUsage;
  }
  std::error_code ec;
  fs::create_directories(r.out_dir, ec);
  if (ec || !fs::is_directory(r.out_dir)) {
    std::fprintf(stderr, "tqref conform: --out %s: cannot create the report directory (%s)\n",
                 r.out_dir.c_str(), ec ? ec.message().c_str() : "not a directory");
    return kExitBadInput;
  }
  int rc = 0;
  {
    gpu::Context ctx(r.device);
    res.device = gpu::describe_device(ctx.device());
    res.arch = ctx.device().arch();
  }
  std::printf("GPU %d: %s\n", r.device, res.device.c_str());
  if (o.calibrate) {
    res.ex2_note = calibrate(r, res.arch, &rc);
    std::printf("EX2: %s\n", res.ex2_note.c_str());
    if (rc) return rc;
  }
  const std::optional<Ex2Profile> dev_ex2 = device_ex2_profile(res);
  if (!generate_missing_suites(r.suites, r.out_dir, dev_ex2 ? &*dev_ex2 : nullptr)) return kExitInternal;
  for (const auto& s : r.suites) res.suites.emplace_back(s.name, s.path);
  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  const double before_s = since(o.started);
  auto t = clock::now();
  open_suite_files(r.suites);  // once for every module
  const double open_s = since(t);
  r.device_ex2 = dev_ex2 ? &*dev_ex2 : nullptr;
  // The coverage summary is the CPU model's work on the files alone: it runs beside the modules,
  // whose time is mostly the GPU's and its buffers', when every file is open (their readers are
  // pread-based and hold no state) and the approximate units are loaded (a load forks the
  // validating child; one fork at a time). Otherwise it runs after them, as it always did.
  std::future<RunCoverage> coverage;
  if (o.coverage && all_open_with_units(r.suites))
    coverage = std::async(std::launch::async, suites_coverage, std::cref(r.suites));
  t = clock::now();
  for (auto& m : res.modules) {
    try {
      run_module(m, r);
    } catch (const gpu::Error& e) {
      m.error = e.what();
      if (e.fault) m.fault = "(module setup)";
    }
  }
  const double modules_s = since(t);
  t = clock::now();
  if (o.coverage) res.coverage = coverage.valid() ? coverage.get() : suites_coverage(r.suites);
  const double coverage_wait_s = since(t);
  t = clock::now();
  res.seconds = since(o.started);
  if (!write_reports(r, res)) return kExitInternal;
  std::printf("\ntime: %.1f s before the suites (modules inspected, GPU, EX2 profile), %.1f s opening the suites, "
              "%.1f s running the modules, %.1f s more for the coverage summary, %.1f s writing reports\n",
              before_s, open_s, modules_s, coverage_wait_s, since(t));
  std::printf("\n%s\nreports: %s/conform.md, conform.json, conform.junit.xml\n", verdict_line(res).c_str(),
              r.out_dir.c_str());
  return exit_code(res);
}

}  // namespace tqref::conform
