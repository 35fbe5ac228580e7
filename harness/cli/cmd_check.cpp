// `tqref check FILE --backend NAME`: re-runs every golden case on a backend and compares every
// byte of what it produced (and the guard bands around it) with the stored expectation.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <boost/program_options.hpp>

#include "command.h"
#include "options.h"
#include "io/atomic_output.h"
#include "io/case_io.h"
#include "judge/ex2_for_file.h"
#include "judge/faults.h"
#include "judge/judge_case.h"
#include "judge/level_t.h"
#include "judge/report.h"
#include "tqref/build_info.h"
#if TQREF_HAVE_GPU
#include "gpu/gpu_backend.h"
#endif

namespace po = boost::program_options;

namespace {

using namespace tqref;
using namespace tqref::cli;
using namespace tqref::golden;

// Whole or not at all: a temporary renamed into place (io/atomic_output.h).
bool write_text(const std::string& path, const std::string& text) {
  try {
    common::write_file_atomic(path, text);
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

// --backend gpu options (docs/gpu-harness.md).
struct GpuArgs {
  int device = 0;
  std::string module;
  uint32_t hdim = 0;
  float threshold = kSparseVThreshold;
  double launch_timeout = 60.0;  // gpu::kDefaultLaunchTimeoutS (gpu/watchdog.h)
};

// Whether a GPU can be used at all, before any file is read: "" or the reason (exit 4).
std::string gpu_unavailable() {
#if TQREF_HAVE_GPU
  std::string why;
  const gpu::Driver* d = gpu::Driver::get(&why);
  if (!d) return why + "; 0 devices";
  if (d->device_count() == 0)
    return "CUDA driver " + d->api_version_string() + " loaded, but it reports 0 devices";
  return "";
#else
  return "this tqref was built without CUDA (no nvcc at configure time): no GPU backend";
#endif
}

int cmd_check(const std::vector<std::string>& args) {
  std::string file, backend_name = "model", report, junit, only, repro_dir, inject = "none";
  std::string level = "exact", filter, kind_filter;
  size_t show = 8;
  GpuArgs ga;
  LevelTOptions topt;
  po::options_description desc(
      "usage: tqref check FILE --backend model|gpu [options]\n"
      "Exit 0: all cases pass; 1: a mismatch; 2: usage; 3: bad input file or module; 4: no GPU;\n"
      "6: a kernel faulted the GPU. Options");
  desc.add_options()("help,h", "this text")("file", po::value(&file), "golden HDF5 file")(
      "backend", po::value(&backend_name), "model (default) or a registered backend")(
      "case", po::value(&only), "check only this case")(
      "report", po::value(&report), "write a JSON report here")(
      "junit", po::value(&junit), "write JUnit XML here")(
      "reproducer-dir", po::value(&repro_dir), "write each failing case alone to DIR/<case>.h5")(
      "inject", po::value(&inject),
      ("damage the backend's bytes before comparison (tests): " + fault_names_list()).c_str())(
      "show", po::value(&show), "mismatch lines printed per failing case (default 8)")(
      "filter", po::value(&filter), "check only cases whose name contains this text")(
      "kind", po::value(&kind_filter), "check only writer or decode cases")(
      "level", po::value(&level),
      "exact (W for writers, D for decoders; default) or T (decoders: tolerance report, "
      "docs/gpu-harness.md)")(
      "t-margin", po::value(&topt.margin), "level T: relative margin around THRESH (default 1e-3)")(
      "device", po::value(&ga.device), "gpu: CUDA device ordinal (default 0)")(
      "module", po::value(&ga.module), "gpu: kernel module file (cubin, PTX or fatbin) instead of "
      "the built-in fatbins")(
      "hdim", po::value(&ga.hdim), "gpu --module: HDIM its decoders were built with (128 or 256)")(
      "launch-timeout", po::value(&ga.launch_timeout),
      "gpu: seconds one kernel launch may run before it is reported as hung (default 60)")(
      "threshold", po::value(&ga.threshold),
      "gpu --module: TQ_PLUS_SPARSE_V_THRESHOLD its decoders were built with (default 1e-3)");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (const auto rc = parse_options("tqref check", args, desc, vm, &pos)) return *rc;
  if (file.empty()) {
    std::fprintf(stderr, "tqref check: give the golden FILE\n");
    return kExitUsage;
  }
  if (level == "W" || level == "D") level = "exact";
  if (level != "exact" && level != "T") {
    std::fprintf(stderr, "tqref check: --level %s; allowed: exact (W/D) or T\n", level.c_str());
    return kExitUsage;
  }
  if (!kind_filter.empty() && kind_filter != "writer" && kind_filter != "decode") {
    std::fprintf(stderr, "tqref check: --kind %s; allowed: writer, decode\n", kind_filter.c_str());
    return kExitUsage;
  }
  for (const auto& [opt, path] : {std::pair<const char*, std::string>{"report", report}, {"junit", junit}})
    if (!path.empty())
      if (const std::string why = common::output_path_problem(path); !why.empty()) {
        std::fprintf(stderr, "tqref check: --%s %s\n", opt, why.c_str());
        return kExitUsage;
      }
  if (!repro_dir.empty() && std::filesystem::exists(repro_dir) && !std::filesystem::is_directory(repro_dir)) {
    std::fprintf(stderr, "tqref check: --reproducer-dir %s exists and is not a directory\n", repro_dir.c_str());
    return kExitUsage;
  }
  if (!(ga.launch_timeout > 0 && ga.launch_timeout <= 86400)) {
    std::fprintf(stderr, "tqref check: --launch-timeout %g; allowed: 0 < seconds <= 86400\n", ga.launch_timeout);
    return kExitUsage;
  }
  if (backend_name != "gpu" && (vm.count("module") || vm.count("hdim") || vm.count("threshold"))) {
    std::fprintf(stderr, "tqref check: --module, --hdim and --threshold need --backend gpu\n");
    return kExitUsage;
  }
  if (backend_name == "gpu") {
    const std::string why = gpu_unavailable();
    if (!why.empty()) {
      std::fprintf(stderr, "tqref check: --backend gpu: no usable GPU: %s\n", why.c_str());
      return kExitNoDevice;
    }
  }
  Fault fault;
  if (!parse_fault(inject, &fault)) {
    std::fprintf(stderr, "tqref check: --inject %s; allowed: %s\n", inject.c_str(),
                 fault_names_list().c_str());
    return kExitUsage;
  }
  try {
    h5::Node root = h5::Node::open_file(file);
    const Provenance prov = read_provenance(root);
    const std::optional<Ex2Profile> ex2 = ex2_for_file(prov, file);
    const Ex2Profile* ex2p = ex2 ? &*ex2 : nullptr;
    std::unique_ptr<Backend> backend;
#if TQREF_HAVE_GPU
    gpu::GpuBackend* gpu_backend = nullptr;
    if (backend_name == "gpu") {
      try {
        auto g = std::make_unique<gpu::GpuBackend>(
            gpu::GpuOptions{ga.device, ga.module, ga.hdim, ga.threshold, ga.launch_timeout,
                            /*reset_after_fault=*/true},
            ex2p);
        std::printf("GPU %d: %s\n", ga.device, gpu::describe_device(g->device()).c_str());
        gpu_backend = g.get();
        backend = std::move(g);
      } catch (const gpu::ModuleError& e) {
        std::fprintf(stderr, "tqref check: %s\n", e.what());
        return kExitBadInput;
      } catch (const gpu::Error& e) {
        std::fprintf(stderr, "tqref check: --backend gpu: no usable GPU: %s\n", e.what());
        return e.fault ? kExitGpuFault : kExitNoDevice;
      }
    }
#endif
    if (!backend) backend = make_backend(backend_name, ex2p);
    if (!backend) {
      std::string names;
      for (const auto& n : backend_names()) names += " " + n;
      std::fprintf(stderr, "tqref check: unknown backend '%s'; available:%s\n",
                   backend_name.c_str(), names.c_str());
      return kExitUsage;
    }
    // Asked before the fault decorator wraps the backend (it forwards run() only).
    const Ex2Source ex2_src = backend->decode_ex2();
    if (!ex2_src.same_as_file) std::printf("EX2: %s\n", ex2_src.why.c_str());
    const Backend* raw = backend.get();
    backend = make_fault_backend(std::move(backend), fault, ex2p);
    h5::Node cases = root.group("cases");
    std::vector<std::string> names = cases.children();
    if (!only.empty()) {
      if (!cases.has(only)) {
        std::fprintf(stderr, "tqref check: %s has no case '%s' (tqref inspect lists them)\n",
                     file.c_str(), only.c_str());
        return kExitBadInput;
      }
      names = {only};
    }
    // Every selected case is read and checked (io/case_checks.h) before the first one runs:
    // a bad case late in a file refuses the run up front, not after the others were launched.
    for (const std::string& name : names)
      if (filter.empty() || name.find(filter) != std::string::npos) read_case(cases, name, false);
    std::vector<CaseVerdict> verdicts;
    std::vector<LevelTVerdict> tverdicts;
    size_t failed = 0, skipped = 0;
    for (const std::string& name : names) {
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      // the kind attribute first: --kind skips the other cases without reading their pools
      if (!kind_filter.empty() && cases.group(name).attr_string("kind") != kind_filter) continue;
      GoldenCase c = read_case(cases, name, level == "T");
      const std::string cannot = raw->cannot_run(c);
      if (!cannot.empty()) {
        ++skipped;
        std::printf("SKIP %s: %s\n", name.c_str(), cannot.c_str());
        continue;
      }
      // Launched once and judged exactly, or at level T (judge/judge_case.h, shared with conform).
      JudgedCase j = run_and_judge(c, *backend, ex2_src, ex2p, level == "T", topt);
      const bool tolerance = j.tolerance.has_value();
      CaseVerdict v = std::move(j.verdict);
      if (tolerance) {
        tverdicts.push_back(std::move(*j.tolerance));
        std::fputs(level_t_text(tverdicts.back()).c_str(), stdout);
      }
      if (!v.pass) {
        ++failed;
        if (!tolerance) std::fputs(report_text(v, show).c_str(), stdout);
        if (!repro_dir.empty()) {
          std::filesystem::create_directories(repro_dir);
          const std::string path = write_reproducer(repro_dir, file, prov, read_case(cases, name, true));
          std::printf("    reproducer: %s\n", path.c_str());
        }
      }
      verdicts.push_back(std::move(v));
    }
    std::printf("%zu cases, %zu passed, %zu failed, %zu skipped (backend %s, level %s)\n",
                verdicts.size(), verdicts.size() - failed, failed, skipped, backend->name().c_str(),
                level.c_str());
    const RunInfo run{file, backend->name(), inject, kGitCommit, prov.ex2_profile_id};
    const std::string json = level == "T" ? "{\"level\":\"T\",\"summary\":" + report_json(run, verdicts) +
                                                ",\"tolerance\":" + level_t_json(tverdicts, topt) + "}\n"
                                          : report_json(run, verdicts);
    // Leaves the command; after a launch timeout without any CUDA teardown: a kernel may still
    // run, and destructors or libcuda's exit handlers could wait for it. The driver kills the
    // kernel when the process's device files close.
    const auto leave = [&](int code) {
#if TQREF_HAVE_GPU
      if (gpu_backend && gpu_backend->abandoned()) {
        std::fprintf(stderr, "tqref check: exiting without CUDA teardown (a kernel may still run)\n");
        std::fflush(nullptr);
        _exit(code);
      }
#endif
      return code;
    };
    if (!report.empty() && !write_text(report, json)) {
      std::fprintf(stderr, "tqref check: cannot write --report %s\n", report.c_str());
      return leave(kExitInternal);
    }
    if (!junit.empty() && !write_text(junit, report_junit(run, verdicts))) {
      std::fprintf(stderr, "tqref check: cannot write --junit %s\n", junit.c_str());
      return leave(kExitInternal);
    }
#if TQREF_HAVE_GPU
    if (gpu_backend && !gpu_backend->faulted_cases().empty()) {
      std::string names;
      for (const auto& n : gpu_backend->faulted_cases()) names += (names.empty() ? "" : ", ") + n;
      const std::string& stop = gpu_backend->fault_case();
      std::fprintf(stderr, "tqref check: %zu case(s) faulted the GPU: %s; %s\n",
                   gpu_backend->faulted_cases().size(), names.c_str(),
                   stop.empty() ? "the context was reset after each fault and every later case was run"
                                : ("cases after " + stop + " were not launched").c_str());
      return leave(kExitGpuFault);
    }
#endif
    if (verdicts.empty()) {
      std::fprintf(stderr, "tqref check: no case of %s was checked (%zu skipped, filters: --case "
                   "'%s' --filter '%s' --kind '%s')\n", file.c_str(), skipped, only.c_str(),
                   filter.c_str(), kind_filter.c_str());
      return kExitBadInput;
    }
    return failed ? kExitMismatch : kExitOk;
  } catch (const BadCase& e) {
    std::fprintf(stderr, "tqref check: %s\n", e.what());
    return kExitBadInput;
  } catch (const h5::Error& e) {
    std::fprintf(stderr, "tqref check: %s\n", e.what());
    return kExitBadInput;
  }
}

}  // namespace

TQREF_COMMAND("check", "re-run golden cases on a backend and compare every byte", cmd_check);
