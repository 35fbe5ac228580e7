// `tqref check FILE --backend NAME`: re-runs every golden case on a backend and compares every
// byte of what it produced (and the guard bands around it) with the stored expectation.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <tuple>

#include <boost/program_options.hpp>

#include "command.h"
#include "options.h"
#include "io/atomic_output.h"
#include "io/case_io.h"
#include "io/report_doc.h"
#include "anatomy/anatomy.h"
#include "judge/ex2_for_file.h"
#include "testing/faults.h"
#include "judge/judge_case.h"
#include "judge/level_i.h"
#include "judge/level_t.h"
#include "judge/report.h"
#include "tqref/build_info.h"

namespace po = boost::program_options;

namespace {

using namespace tqref;
using namespace tqref::cli;
using namespace tqref::golden;
using namespace tqref::judge;
using namespace tqref::anatomy;
using namespace tqref::testing;

// Whole or not at all: a temporary renamed into place (io/atomic_output.h). "" or why not.
std::string write_text(const std::string& path, const std::string& text) {
  try {
    common::write_file_atomic(path, text);
    return "";
  } catch (const common::OutputError& e) {
    return e.what();
  }
}

// --t-margin: flip candidates lie in (THRESH*(1-margin), THRESH*(1+margin)]; a wide window admits
// so many candidates that their allowance passes real faults (docs/gpu-harness.md).
constexpr double kMaxTMargin = 0.1;


// --level, parsed once: exact (W for writers, D for decoders), T or I.
enum class CheckLevel { exact, T, I };
constexpr const char* kLevelNames[] = {"exact", "T", "I"};
bool parse_check_level(const std::string& s, CheckLevel* l) {
  if (s == "exact" || s == "W" || s == "D") *l = CheckLevel::exact;
  else if (s == "T") *l = CheckLevel::T;
  else if (s == "I") *l = CheckLevel::I;
  else return false;
  return true;
}

struct CheckArgs {
  std::string file, backend_name = "model", report, junit, only, repro_dir, inject = "none";
  std::string level = "exact", filter, kind_filter, dispatch = "published", out_of_contract = "T", model;
  std::string model_variant;  // --model-variant; "" = the file's recorded variant
  size_t show = 8;
  bool no_explain = false;
  CheckLevel check_level = CheckLevel::exact;
  DispatchRule rule = DispatchRule::published;
  OutOfContractLevel ooc = OutOfContractLevel::T;
  BackendOptions ga;  // --backend gpu options (docs/gpu-harness.md)
  LevelTOptions topt;
  LevelIOptions iopt;
  Fault fault;
  bool selected(const std::string& name) const {
    return filter.empty() || name.find(filter) != std::string::npos;
  }
};

po::options_description check_options(CheckArgs& a) {
  po::options_description desc(
      "usage: tqref check FILE --backend model|gpu [options]\n"
      "Exit 0: all cases pass; 1: a mismatch; 2: usage; 3: bad input file or module; 4: no GPU;\n"
      "6: a kernel faulted the GPU. Options");
  desc.add_options()("help,h", "this text")("file", po::value(&a.file), "golden HDF5 file")(
      "backend", po::value(&a.backend_name), "model (default) or a registered backend")(
      "case", po::value(&a.only), "check only this case")(
      "report", po::value(&a.report), "write a JSON report here")(
      "junit", po::value(&a.junit), "write JUnit XML here")(
      "reproducer-dir", po::value(&a.repro_dir), "write each failing case alone to DIR/<case>.h5")(
      "inject", po::value(&a.inject),
      ("damage the backend's bytes before comparison (tests): " + fault_names_list()).c_str())(
      "show", po::value(&a.show), "mismatch lines printed per failing case (default 8)")(
      "filter", po::value(&a.filter), "check only cases whose name contains this text")(
      "kind", po::value(&a.kind_filter), "check only writer or decode cases")(
      "level", po::value(&a.level),
      "exact (W for writers, D for decoders; default), T (decoders: tolerance report, "
      "docs/gpu-harness.md) or I (invariance: the kernel against itself, no EX2 profile needed)")(
      "no-explain", po::bool_switch(&a.no_explain),
      "no failure anatomy (its hypotheses re-run the model for each failing case)")(
      "t-margin", po::value(&a.topt.margin), "level T: relative margin around THRESH (default 1e-3)")(
      "dispatch", po::value(&a.dispatch),
      "decoder build per head_dim: published (HDIM=128 up to 128, 256 above; default) or exact "
      "(only head_dim == HDIM)")(
      "out-of-contract", po::value(&a.out_of_contract),
      "launches with head_dim != HDIM: T (against fp64; default) or D (bit for bit against "
      "docs/spec.md section 5.1, the extension tqref's decoders implement)")(
      "device", po::value(&a.ga.device), "gpu: CUDA device ordinal (default 0)")(
      "module", po::value(&a.ga.module), "gpu: kernel module file (cubin, PTX or fatbin) instead of "
      "the built-in fatbins")(
      "hdim", po::value(&a.ga.hdim), "gpu --module: HDIM its decoders were built with (128 or 256)")(
      "launch-timeout", po::value(&a.ga.launch_timeout),
      "gpu: seconds one kernel launch may run before it is reported as hung (default 60)")(
      "threshold", po::value(&a.ga.threshold),
      threshold_help("gpu --module: TQ_PLUS_SPARSE_V_THRESHOLD its decoders were built with").c_str())(
      "variant", po::value(&a.ga.variant),
      "gpu: decode cases through the built-in GQA decoders (gqa; docs/gqa-decoders.md) instead of "
      "the reference-order ones");
  add_model_option(desc, &a.model);
  add_model_variant_option(desc, &a.model_variant);
  return desc;
}

// The command line's values against their allowed ranges, before any file is read: an exit code
// (with its message on stderr), or nothing when the check may go on.
std::optional<int> check_arguments(CheckArgs& a, const po::variables_map& vm) {
  const auto usage = [](const std::string& msg) {
    std::fprintf(stderr, "tqref check: %s\n", msg.c_str());
    return std::optional<int>(kExitUsage);
  };
  if (a.file.empty()) return usage("give the golden FILE");
  if (!parse_check_level(a.level, &a.check_level))
    return usage("--level " + a.level + "; allowed: exact (W/D), T or I");
  if (!a.kind_filter.empty() && a.kind_filter != "writer" && a.kind_filter != "decode")
    return usage("--kind " + a.kind_filter + "; allowed: writer, decode");
  if (!parse_dispatch_rule(a.dispatch, &a.rule)) return usage("--dispatch " + a.dispatch + "; allowed: published, exact");
  if (!parse_out_of_contract_level(a.out_of_contract, &a.ooc))
    return usage("--out-of-contract " + a.out_of_contract + "; allowed: T, D");
  // Outputs: never an input (the golden file, the module) nor each other; directories that take a
  // file.
  for (const auto& [opt, path, other] : {std::tuple<const char*, std::string, std::string>{"report", a.report, a.junit},
                                         {"junit", a.junit, a.report}})
    if (!path.empty())
      if (const std::string why = common::output_path_problem(path, {a.file, a.ga.module, other}); !why.empty())
        return usage(std::string("--") + opt + " " + why);
  if (!a.repro_dir.empty())
    if (const std::string why = common::output_dir_problem(a.repro_dir); !why.empty())
      return usage("--reproducer-dir " + why);
  if (!(a.topt.margin >= 0 && a.topt.margin <= kMaxTMargin)) {
    char b[96];
    std::snprintf(b, sizeof b, "--t-margin %g; allowed: 0 .. %g", a.topt.margin, kMaxTMargin);
    return usage(b);
  }
  if (!(std::isfinite(a.ga.threshold) && a.ga.threshold > 0.0f && a.ga.threshold < 1.0f)) {
    char b[112];
    std::snprintf(b, sizeof b, "--threshold %g; allowed: a finite float with 0 < threshold < 1", double(a.ga.threshold));
    return usage(b);
  }
  if (!(a.ga.launch_timeout > 0 && a.ga.launch_timeout <= 86400)) {
    char b[96];
    std::snprintf(b, sizeof b, "--launch-timeout %g; allowed: 0 < seconds <= 86400", a.ga.launch_timeout);
    return usage(b);
  }
  if (a.backend_name != "gpu" && (vm.count("module") || vm.count("hdim") || vm.count("threshold")))
    return usage("--module, --hdim and --threshold need --backend gpu");
  if (vm.count("variant")) {
    if (a.backend_name != "gpu") return usage("--variant needs --backend gpu");
    if (vm.count("module")) return usage("--variant runs the built-in decoders: not with --module");
    if (a.ga.variant != "gqa") return usage("--variant " + a.ga.variant + "; allowed: gqa");
  }
  if (a.backend_name == "gpu" && !require_gpu("tqref check: --backend gpu")) return kExitNoDevice;
  if (!parse_fault(a.inject, &a.fault)) return usage("--inject " + a.inject + "; allowed: " + fault_names_list());
  return std::nullopt;
}

// The backend named on the command line (judge/backend.h registry; the GPU registers itself where
// CUDA is built), or an exit code after its message.
struct OpenedBackend {
  std::unique_ptr<Backend> backend;
  int exit_code = kExitOk;
};

OpenedBackend open_backend(const CheckArgs& a, const Ex2Profile* ex2p) {
  OpenedBackend o;
  try {
    o.backend = make_backend(a.backend_name, a.ga, ex2p);
  } catch (const BackendError& e) {
    std::fprintf(stderr, "tqref check: %s\n", e.what());
    o.exit_code = e.code;
    return o;
  }
  if (!o.backend) {
    std::string names;
    for (const auto& n : backend_names()) names += " " + n;
    std::fprintf(stderr, "tqref check: unknown backend '%s'; available:%s\n", a.backend_name.c_str(),
                 names.c_str());
    o.exit_code = kExitUsage;
  } else if (const std::string d = o.backend->description(); !d.empty()) {
    std::printf("%s\n", d.c_str());
  }
  return o;
}

struct Tally {
  std::vector<CaseVerdict> verdicts;
  std::vector<LevelTVerdict> tverdicts;
  std::vector<LevelIVerdict> iverdicts;
  size_t failed = 0, skipped = 0;
};

// Every selected case, run once and judged exactly or at level T (judge/judge_case.h), or run
// with its level I variants (judge/level_i.h), both shared with conform; failures printed with
// their anatomy, and a reproducer each when asked for.
Tally run_cases(const CheckArgs& a, h5::Node& cases, const std::vector<std::string>& names,
                const Provenance& prov, const Backend& raw, Backend& backend, const Ex2Source& ex2_src,
                const Ex2Profile* ex2p) {
  const bool level_t = a.check_level == CheckLevel::T;
  Tally t;
  for (const std::string& name : names) {
    if (!a.selected(name)) continue;
    // the kind attribute first: --kind skips the other cases without reading their pools
    if (!a.kind_filter.empty() && cases.group(name).attr_string("kind") != a.kind_filter) continue;
    // diagnostics hold the fp64 references: level T, and launches outside the contract
    GoldenCase c = read_case(cases, name, level_t || a.ooc == OutOfContractLevel::T);
    std::string cannot = dispatch_skip_reason(a.rule, c);
    if (cannot.empty()) cannot = raw.cannot_run(c);
    if (!cannot.empty()) {
      ++t.skipped;
      std::printf("SKIP %s: %s\n", name.c_str(), cannot.c_str());
      continue;
    }
    CaseVerdict v;
    bool printed = false;
    if (a.check_level == CheckLevel::I) {
      t.iverdicts.push_back(judge_level_i(c, backend, a.iopt));
      std::fputs(level_i_text(t.iverdicts.back()).c_str(), stdout);
      v = level_i_case_verdict(t.iverdicts.back());
      printed = true;
    } else {
      JudgedCase j = run_and_judge(c, backend, ex2_src, ex2p, level_t, a.topt, a.ooc,
                                   a.no_explain ? nullptr : explain_with_known_units);
      v = std::move(j.verdict);
      if (j.tolerance) {
        t.tverdicts.push_back(std::move(*j.tolerance));
        const std::string note = v.note.empty() ? "" : "    " + v.note + "\n";
        std::fputs((level_t_text(t.tverdicts.back()) + note + explanation_text(v.explanation)).c_str(), stdout);
        printed = true;
      } else if (v.pass && !v.note.empty()) {
        std::fputs(report_text(v, a.show).c_str(), stdout);
      }
    }
    if (!v.pass) {
      ++t.failed;
      if (!printed) std::fputs(report_text(v, a.show).c_str(), stdout);
      if (!a.repro_dir.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(a.repro_dir, ec);
        if (ec) throw common::OutputError("--reproducer-dir " + a.repro_dir + ": cannot create: " + ec.message());
        const std::string path = write_reproducer(a.repro_dir, a.file, prov, read_case(cases, name, true));
        std::printf("    reproducer: %s\n", path.c_str());
      }
    }
    t.verdicts.push_back(std::move(v));
  }
  return t;
}

// No case checked: exit 3 and no report. Else the JSON and JUnit reports, then the exit code:
// faulted cases, a mismatch.
int finish(const CheckArgs& a, const Tally& t, const RunInfo& run, const Backend& backend) {
  // Leaves the command; after a launch timeout without any CUDA teardown: a kernel may still
  // run, and destructors or libcuda's exit handlers could wait for it. The driver kills the
  // kernel when the process's device files close.
  const auto leave = [&](int code) {
    if (backend.abandoned()) {
      std::fprintf(stderr, "tqref check: exiting without CUDA teardown (a kernel may still run)\n");
      std::fflush(nullptr);
      _exit(code);
    }
    return code;
  };
  // A run that checked no case is a refusal, not a result: no report saying "0 cases, 0
  // failures" (CI shows that as green), whatever the filters or the backend skipped.
  const std::vector<std::string> faulted_cases = backend.faulted_cases();
  const bool faulted = !faulted_cases.empty();
  if (t.verdicts.empty() && !faulted) {
    std::fprintf(stderr, "tqref check: no case of %s was checked (%zu skipped, filters: --case "
                 "'%s' --filter '%s' --kind '%s'); no report written\n", a.file.c_str(), t.skipped,
                 a.only.c_str(), a.filter.c_str(), a.kind_filter.c_str());
    return leave(kExitBadInput);
  }
  report::Json json = report_json(run, t.verdicts);
  if (a.check_level == CheckLevel::T) json = {{"level", "T"}, {"summary", std::move(json)}, {"tolerance", level_t_json(t.tverdicts, a.topt)}};
  if (a.check_level == CheckLevel::I) json = {{"level", "I"}, {"summary", std::move(json)}, {"invariance", level_i_json(t.iverdicts)}};
  for (const auto& [opt, path, text] : {std::tuple<const char*, std::string, std::string>{"report", a.report, report::json_text(json)},
                                         {"junit", a.junit, a.junit.empty() ? "" : report::junit_text(report_junit(run, t.verdicts))}}) {
    if (path.empty()) continue;
    if (const std::string why = write_text(path, text); !why.empty()) {
      std::fprintf(stderr, "tqref check: cannot write --%s: %s\n", opt, why.c_str());
      return leave(kExitBadInput);
    }
  }
  if (faulted) {
    std::string names;
    for (const auto& n : faulted_cases) names += (names.empty() ? "" : ", ") + n;
    const std::string stop = backend.fault_case();
    std::fprintf(stderr, "tqref check: %zu case(s) faulted the GPU: %s; %s\n",
                 faulted_cases.size(), names.c_str(),
                 stop.empty() ? "the context was reset after each fault and every later case was run"
                              : ("cases after " + stop + " were not launched").c_str());
    return leave(kExitGpuFault);
  }
  return t.failed ? kExitMismatch : kExitOk;
}

int cmd_check(const std::vector<std::string>& args) {
  CheckArgs a;
  const po::options_description desc = check_options(a);
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (const auto rc = parse_options("tqref check", args, desc, vm, &pos)) return *rc;
  if (const auto rc = check_arguments(a, vm)) return *rc;
  if (!apply_model_option("tqref check", a.model)) return kExitUsage;
  h5::Node root = open_golden_file(a.file);
  const Provenance prov = read_provenance(root);
  // The model backend computes the file's variant of the contract unless told otherwise.
  const std::string variant = a.model_variant.empty() ? prov.model_variant : a.model_variant;
  if (!apply_model_variant("tqref check", variant))  // a bad name of the file's: bad input
    return a.model_variant.empty() ? kExitBadInput : kExitUsage;
  if (!variant.empty() || !prov.model_variant.empty())
    std::printf("model variant: %s (file: %s)\n", variant.empty() ? "contract" : variant.c_str(),
                prov.model_variant.empty() ? "contract" : prov.model_variant.c_str());
  const std::optional<Ex2Profile> ex2 = ex2_for_file(prov, a.file);
  const Ex2Profile* ex2p = ex2 ? &*ex2 : nullptr;
  OpenedBackend opened = open_backend(a, ex2p);
  if (!opened.backend) return opened.exit_code;
  // The model backend took the variant to compute; the anatomy's hypotheses change the file's
  // expectations, so from here on the model computes the file's variant.
  if (!apply_model_variant("tqref check", prov.model_variant)) return kExitBadInput;
  // Asked before the fault decorator wraps the backend (it forwards run() only).
  const Ex2Source ex2_src = opened.backend->decode_ex2();
  if (!ex2_src.same_as_file) std::printf("EX2: %s\n", ex2_src.why.c_str());
  const Backend* raw = opened.backend.get();
  std::unique_ptr<Backend> backend = make_fault_backend(std::move(opened.backend), a.fault, ex2p);
  h5::Node cases = root.group("cases");
  std::vector<std::string> names = cases.children();
  if (!a.only.empty()) {
    if (!cases.has(a.only)) {
      std::fprintf(stderr, "tqref check: %s has no case '%s' (tqref inspect lists them)\n", a.file.c_str(),
                   a.only.c_str());
      return kExitBadInput;
    }
    names = {a.only};
  }
  // Every selected case is checked (io/case_checks.h; its bulk data by checksum, read_case_summary)
  // before the first one runs: a bad case late in a file refuses the run up front, not after the
  // others were launched. Then each case is read whole when it is judged, one at a time.
  for (const std::string& name : names)
    if (a.selected(name)) read_case_summary(cases, name);
  const Tally t = run_cases(a, cases, names, prov, *raw, *backend, ex2_src, ex2p);
  std::printf("%zu cases, %zu passed, %zu failed, %zu skipped (backend %s, level %s)\n", t.verdicts.size(),
              t.verdicts.size() - t.failed, t.failed, t.skipped, backend->name().c_str(), kLevelNames[int(a.check_level)]);
  const RunInfo run{a.file, backend->name(), a.inject, kGitCommit, prov.ex2_profile_id};
  return finish(a, t, run, *raw);
}

}  // namespace

TQREF_COMMAND("check", "re-run golden cases on a backend and compare every byte", cmd_check);
