// `tqref conform --modules PATH...`: one command that tells the owner of an engine's kernel
// modules whether they honour the contract (SPEC), with a report to attach to a pull request
// (docs/conform-guide.md). Finds the six kernels in the given modules, establishes each decoder
// module's HDIM, uses (or with --calibrate measures) this GPU's EX2 profile, runs the golden
// suites at level W / D (or T without a profile) and I (invariance), and writes conform.md,
// conform.json, conform.junit.xml and reproducers into --out. Exit codes: conform/result.h
// (exit_code) and docs/cli.md.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>

#include <boost/program_options.hpp>

#include "command.h"
#include "judge/coverage.h"
#include "options.h"
#include "conform/module_file.h"
#include "conform/options.h"
#include "conform/report.h"
#include "conform/result.h"
#include "conform/suite_files.h"
#include "cases/generate.h"
#include "io/atomic_output.h"
#include "io/ex2_profile_io.h"
#include "judge/dispatch.h"
#include "tqref/build_info.h"
#if TQREF_HAVE_GPU
#include "gpu/calibrate_ex2.h"
#include "gpu/conform_run.h"
#include "gpu/gpu_backend.h"
#endif

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

using namespace tqref;
using namespace tqref::cli;
using namespace tqref::conform;

struct Args {
  std::vector<std::string> modules, hdim;
  std::string suites = "smoke,standard,real", out = "conform-report";
  float threshold = kSparseVThreshold;
  bool calibrate = false;
  int device = 0;
  size_t show = 4;
  bool no_invariance = false;
  bool no_coverage = false;
  golden::LevelTOptions topt;
  std::string dispatch = "published", out_of_contract = "T";
};

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char s[32];
  std::strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return s;
}

void print_precheck(const std::vector<ModuleResult>& mods) {
  std::printf("modules (pre-check, without the GPU):\n");
  for (const auto& m : mods) {
    std::string k;
    for (const auto& name : contract_kernels())
      if (m.inspection.entries.count(name)) k += " " + name;
    std::printf("  %s: %s, %s; contract kernels:%s%s\n", m.tag.c_str(), module_kind_name(m.file.kind),
                m.inspection.targets_text().c_str(), k.empty() ? " none seen" : k.c_str(),
                m.inspection.complete ? "" : " (not every image could be read)");
    if (!m.inspection.problem.empty()) std::printf("    %s\n", m.inspection.problem.c_str());
  }
}

#if TQREF_HAVE_GPU
// --calibrate: measure this GPU's EX2 unit (gpu/calibrate_ex2.h). A new profile goes where later
// runs find it; an existing one is never replaced: the measurement goes to --out and is compared
// with it, and a differing measurement is what this run judges with (prefer_ex2_profile).
// Returns a note for the report, or sets *rc when calibration could not run at all.
std::string calibrate(const Args& a, const std::string& arch, int* rc) {
  std::string existing;
  try {
    existing = find_ex2_profile(arch);
  } catch (const Ex2ProfileError&) {
  }
  gpu::CalibrateEx2Options c;
  c.device = a.device;
  c.command_line = "tqref conform --calibrate --device " + std::to_string(a.device);
  c.out = existing.empty() ? default_ex2_profile_path(arch) : a.out + "/ex2-measured-" + arch + ".h5";
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
      golden::generate_suite_file(s.name, s.path, &gen_ex2);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tqref conform: generating the %s suite failed: %s\n", s.name.c_str(), e.what());
      return false;
    }
  }
  return true;
}
#endif

// What the suites could have seen (judge/coverage.h): the flags suite first, since its searched
// cases observe most entries and `first` then skips them in the larger suites.
conform::RunCoverage suites_coverage(const std::vector<SuiteFile>& suites) {
  std::vector<const SuiteFile*> order;
  for (const SuiteFile& s : suites)
    if (s.name == "flags") order.insert(order.begin(), &s);
    else order.push_back(&s);
  golden::Coverage cov = golden::empty_coverage();
  for (const SuiteFile* s : order) golden::add_coverage(cov, s->path, true);
  return {cov.observable(), cov.total(), cov.blind()};
}

// Every --suites item as a golden file; false after the message when one that is not generated
// on demand has none.
bool find_suites(const std::vector<std::string>& items, std::vector<SuiteFile>& suites) {
  for (const auto& item : items) {
    SuiteFile f = find_suite_file(item);
    if (f.path.empty() && !is_generated_suite(item)) {
      std::string where;
      for (const auto& p : f.looked_in) where += " " + p;
      std::fprintf(stderr, "tqref conform: suite %s: no golden file (looked in:%s)%s\n", item.c_str(),
                   where.c_str(), item == "real" ? "; it is made from a trace by `tqref trace-golden` "
                   "(docs/traces.md), or leave it out of --suites" : "");
      return false;
    }
    suites.push_back(f);
  }
  return true;
}

#if TQREF_HAVE_GPU
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

// conform.md, conform.json and conform.junit.xml into --out, each whole or not at all.
bool write_reports(const Args& a, const ConformResult& res) {
  try {
    common::write_file_atomic(a.out + "/conform.md", report_markdown(res, a.show));
    common::write_file_atomic(a.out + "/conform.json", report_json(res));
    common::write_file_atomic(a.out + "/conform.junit.xml", report_junit(res));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tqref conform: cannot write the reports into %s: %s\n", a.out.c_str(), e.what());
    return false;
  }
  return true;
}
#endif

int run(const Args& a, const std::string& command_line) {
  const auto t0 = std::chrono::steady_clock::now();
  ConformResult res;
  res.command_line = command_line;
  res.started_utc = utc_now();
  res.tqref_version = kVersion;
  res.git_commit = kGitCommit;
  res.threshold = a.threshold;
  res.topt = a.topt;
  res.invariance = !a.no_invariance;
  golden::parse_dispatch_rule(a.dispatch, &res.dispatch);  // checked by cmd_conform
  golden::parse_out_of_contract_level(a.out_of_contract, &res.out_of_contract);
  std::vector<ModuleFile> files;
  std::map<std::string, uint32_t> hdims;
  std::vector<std::string> suite_items;
  try {
    files = scan_module_paths(a.modules);
    hdims = parse_hdim_args(a.hdim);
    check_hdim_names(hdims, files);
    for (const auto& f : files) hdim_for(hdims, f);  // a module named twice with different values
    suite_items = parse_suites(a.suites);
  } catch (const ModulePathError& e) {
    std::fprintf(stderr, "tqref conform: %s\n", e.what());
    return kExitBadInput;
  } catch (const OptionError& e) {
    std::fprintf(stderr, "tqref conform: %s\n", e.what());
    return kExitUsage;
  }
  if (files.empty()) {
    std::fprintf(stderr, "tqref conform: no .cubin, .ptx or .fatbin file under --modules\n");
    return kExitBadInput;
  }
  for (size_t i = 0; i < files.size(); ++i) res.modules.push_back(new_module_result(files[i], i + 1));
  print_precheck(res.modules);
  std::vector<SuiteFile> suites;
  if (!find_suites(suite_items, suites)) return kExitBadInput;
  if (!require_gpu("tqref conform", " The pre-check above is all that can be done without one; run "
                   "this command on the GPU the kernels are for."))
    return kExitNoDevice;
#if TQREF_HAVE_GPU
  const gpu::Driver* drv = gpu::Driver::get();
  if (a.device < 0 || a.device >= drv->device_count()) {
    std::fprintf(stderr, "tqref conform: --device %d; allowed: 0 to %d\n", a.device, drv->device_count() - 1);
    return kExitUsage;
  }
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec || !fs::is_directory(a.out)) {
    std::fprintf(stderr, "tqref conform: --out %s: cannot create the report directory (%s)\n",
                 a.out.c_str(), ec ? ec.message().c_str() : "not a directory");
    return kExitBadInput;
  }
  int rc = 0;
  {
    gpu::Context ctx(a.device);
    res.device = gpu::describe_device(ctx.device());
    res.arch = ctx.device().arch();
  }
  std::printf("GPU %d: %s\n", a.device, res.device.c_str());
  if (a.calibrate) {
    res.ex2_note = calibrate(a, res.arch, &rc);
    std::printf("EX2: %s\n", res.ex2_note.c_str());
    if (rc) return rc;
  }
  const std::optional<Ex2Profile> dev_ex2 = device_ex2_profile(res);
  if (!generate_missing_suites(suites, a.out, dev_ex2 ? &*dev_ex2 : nullptr)) return kExitInternal;
  for (const auto& s : suites) res.suites.emplace_back(s.name, s.path);
  GpuRunOptions o;
  o.device = a.device;
  o.threshold = a.threshold;
  o.hdims = hdims;
  o.suites = suites;
  o.out_dir = a.out;
  o.show = a.show;
  o.topt = a.topt;
  o.invariance = !a.no_invariance;
  o.dispatch = res.dispatch;
  o.out_of_contract = res.out_of_contract;
  o.device_ex2 = dev_ex2 ? &*dev_ex2 : nullptr;
  for (auto& m : res.modules) {
    try {
      run_module(m, o);
    } catch (const gpu::Error& e) {
      m.error = e.what();
      if (e.fault) m.fault = "(module setup)";
    }
  }
  if (!a.no_coverage) res.coverage = suites_coverage(suites);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!write_reports(a, res)) return kExitInternal;
  std::printf("\n%s\nreports: %s/conform.md, conform.json, conform.junit.xml\n", verdict_line(res).c_str(),
              a.out.c_str());
  return exit_code(res);
#else
  (void)t0;
  return kExitNoDevice;  // not reached: require_gpu() refuses every build without CUDA
#endif
}

int cmd_conform(const std::vector<std::string>& args) {
  Args a;
  po::options_description desc(
      "usage: tqref conform --modules PATH... [options]\n"
      "Checks an engine's kernel modules (.cubin, .ptx, .fatbin files or directories of them)\n"
      "against the contract on this GPU and writes conform.md/json/junit.xml to --out "
      "(docs/conform-guide.md).\n"
      "Exit 0: every kernel found passed every case; 1: a case failed; 2: usage; 3: a module cannot\n"
      "be loaded or checked; 4: no GPU; 5: internal; 6: a kernel faulted the GPU. Options");
  desc.add_options()("help,h", "this text")(
      "modules", po::value(&a.modules)->multitoken(), "module files and/or directories (required)")(
      "suites", po::value(&a.suites), "comma-separated: smoke, standard, real, or golden PATH.h5 files "
      "(default smoke,standard,real)")(
      "out", po::value(&a.out), "report directory (default ./conform-report)")(
      "hdim", po::value(&a.hdim)->multitoken(), "MODULE=128|256: a decoder module's HDIM (default: probed)")(
      "threshold", po::value(&a.threshold),
      threshold_help("TQ_PLUS_SPARSE_V_THRESHOLD the decoders were built with").c_str())(
      "calibrate", po::bool_switch(&a.calibrate), "measure this GPU's EX2 unit first (tqref calibrate ex2)")(
      "device", po::value(&a.device), "CUDA device ordinal (default 0)")(
      "show", po::value(&a.show), "mismatch lines per failing case (default 4)")(
      "t-margin", po::value(&a.topt.margin), "level T: relative margin around THRESH (default 1e-3)")(
      "no-invariance", po::bool_switch(&a.no_invariance),
      "skip level I (each case is otherwise also run in about 15 variant launches)")(
      "no-coverage", po::bool_switch(&a.no_coverage),
      "skip the coverage of the suites (what this run could have seen; the CPU model, once per run)")(
      "dispatch", po::value(&a.dispatch),
      "decoder build per case head_dim: published (HDIM=128 up to 128, 256 above; default) or exact")(
      "out-of-contract", po::value(&a.out_of_contract),
      "launches with head_dim != HDIM: T (against fp64; default) or D (bit for bit against docs/spec.md "
      "section 5.1)");
  po::variables_map vm;
  if (const auto rc = parse_options("tqref conform", args, desc, vm)) return *rc;
  if (a.modules.empty()) {
    std::fprintf(stderr, "tqref conform: give --modules PATH... (module files or directories)\n");
    return kExitUsage;
  }
  golden::DispatchRule rule;
  golden::OutOfContractLevel ooc;
  if (!golden::parse_dispatch_rule(a.dispatch, &rule) || !golden::parse_out_of_contract_level(a.out_of_contract, &ooc)) {
    std::fprintf(stderr, "tqref conform: --dispatch %s --out-of-contract %s; allowed: --dispatch "
                 "published|exact, --out-of-contract T|D\n", a.dispatch.c_str(), a.out_of_contract.c_str());
    return kExitUsage;
  }
  if (!(a.threshold > 0) || !std::isfinite(a.threshold)) {
    std::fprintf(stderr, "tqref conform: --threshold %g; allowed: a finite value > 0\n", double(a.threshold));
    return kExitUsage;
  }
  std::string line = "tqref conform";
  for (const auto& s : args) line += " " + s;
  return run(a, line);
}

}  // namespace

TQREF_COMMAND("conform", "check an engine's kernel modules against the contract on this GPU", cmd_conform);
