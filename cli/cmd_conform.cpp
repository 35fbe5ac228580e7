// `tqref conform --modules PATH...`: one command that tells the owner of an engine's kernel
// modules whether they honour the contract (SPEC), with a report to attach to a pull request
// (docs/conform-guide.md). Finds the six kernels in the given modules, establishes each decoder
// module's HDIM, uses (or with --calibrate measures) this GPU's EX2 profile, runs the golden
// suites at level W / D (or T without a profile) and I (invariance), and writes conform.md,
// conform.json, conform.junit.xml and reproducers into --out. This file is the command line and
// the pre-check without the GPU; the run on the device is gpu/conform_session.h. Exit codes:
// conform/result.h (exit_code) and docs/cli.md.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "command.h"
#include "options.h"
#include "conform/module_file.h"
#include "conform/options.h"
#include "conform/result.h"
#include "conform/suite_files.h"
#include "gpu/conform_session.h"
#include "io/utc_time.h"
#include "judge/dispatch.h"
#include "tqref/build_info.h"

namespace po = boost::program_options;

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
  judge::LevelTOptions topt;
  std::string dispatch = "published", out_of_contract = "T";
};

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

int run(const Args& a, const std::string& command_line) {
  const auto t0 = std::chrono::steady_clock::now();
  ConformResult res;
  res.command_line = command_line;
  res.started_utc = utc_timestamp();
  res.tqref_version = kVersion;
  res.git_commit = kGitCommit;
  res.threshold = a.threshold;
  res.topt = a.topt;
  res.invariance = !a.no_invariance;
  judge::parse_dispatch_rule(a.dispatch, &res.dispatch);  // checked by cmd_conform
  judge::parse_out_of_contract_level(a.out_of_contract, &res.out_of_contract);
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
  SessionOptions o;
  o.run.device = a.device;
  o.run.threshold = a.threshold;
  o.run.hdims = hdims;
  o.run.suites = suites;
  o.run.out_dir = a.out;
  o.run.show = a.show;
  o.run.topt = a.topt;
  o.run.invariance = !a.no_invariance;
  o.run.dispatch = res.dispatch;
  o.run.out_of_contract = res.out_of_contract;
  o.calibrate = a.calibrate;
  o.coverage = !a.no_coverage;
  o.started = t0;
  return run_conform_session(res, o);
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
  judge::DispatchRule rule;
  judge::OutOfContractLevel ooc;
  if (!judge::parse_dispatch_rule(a.dispatch, &rule) || !judge::parse_out_of_contract_level(a.out_of_contract, &ooc)) {
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
