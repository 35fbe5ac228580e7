// `tqref check FILE --backend NAME`: re-runs every golden case on a backend and compares every
// byte of what it produced (and the guard bands around it) with the stored expectation.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <boost/program_options.hpp>

#include "command.h"
#include "golden/case_io.h"
#include "golden/ex2_for_file.h"
#include "golden/faults.h"
#include "golden/report.h"
#include "tqref/build_info.h"

namespace po = boost::program_options;

namespace {

using namespace tqref;
using namespace tqref::cli;
using namespace tqref::golden;

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return bool(out);
}

int cmd_check(const std::vector<std::string>& args) {
  std::string file, backend_name = "model", report, junit, only, repro_dir, inject = "none";
  size_t show = 8;
  po::options_description desc(
      "usage: tqref check FILE --backend model [options]\n"
      "Exit 0: all cases pass; 1: a mismatch; 3: bad input file. Options");
  desc.add_options()("help,h", "this text")("file", po::value(&file), "golden HDF5 file")(
      "backend", po::value(&backend_name), "model (default) or a registered backend")(
      "case", po::value(&only), "check only this case")(
      "report", po::value(&report), "write a JSON report here")(
      "junit", po::value(&junit), "write JUnit XML here")(
      "reproducer-dir", po::value(&repro_dir), "write each failing case alone to DIR/<case>.h5")(
      "inject", po::value(&inject),
      "damage the backend's bytes before comparison (tests): none, flip-code-bit, wrong-scale, "
      "neighbour-slot, guard, flip-skip, unwritten-row")(
      "show", po::value(&show), "mismatch lines printed per failing case (default 8)");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "tqref check: %s\n", e.what());
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return kExitOk;
  }
  if (file.empty()) {
    std::fprintf(stderr, "tqref check: give the golden FILE\n");
    return kExitUsage;
  }
  Fault fault;
  if (!parse_fault(inject, &fault)) {
    std::fprintf(stderr, "tqref check: --inject %s; allowed: none, flip-code-bit, wrong-scale, "
                 "neighbour-slot, guard, flip-skip, unwritten-row\n", inject.c_str());
    return kExitUsage;
  }
  try {
    h5::Node root = h5::Node::open_file(file);
    const Provenance prov = read_provenance(root);
    const std::optional<Ex2Profile> ex2 = ex2_for_file(prov, file);
    const Ex2Profile* ex2p = ex2 ? &*ex2 : nullptr;
    std::unique_ptr<Backend> backend = make_backend(backend_name, ex2p);
    if (!backend) {
      std::string names;
      for (const auto& n : backend_names()) names += " " + n;
      std::fprintf(stderr, "tqref check: unknown backend '%s'; available:%s\n",
                   backend_name.c_str(), names.c_str());
      return kExitUsage;
    }
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
    std::vector<CaseVerdict> verdicts;
    size_t failed = 0;
    for (const std::string& name : names) {
      const GoldenCase c = read_case(cases, name, false);
      const auto t0 = std::chrono::steady_clock::now();
      const CaseResult r = backend->run(c);
      CaseVerdict v = compare_case(c, r);
      v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!v.pass) {
        ++failed;
        std::fputs(report_text(v, show).c_str(), stdout);
        if (!repro_dir.empty()) {
          std::filesystem::create_directories(repro_dir);
          const std::string path = write_reproducer(repro_dir, file, prov, read_case(cases, name, true));
          std::printf("    reproducer: %s\n", path.c_str());
        }
      }
      verdicts.push_back(std::move(v));
    }
    std::printf("%zu cases, %zu passed, %zu failed (backend %s)\n", verdicts.size(),
                verdicts.size() - failed, failed, backend->name().c_str());
    const RunInfo run{file, backend->name(), inject, kGitCommit, prov.ex2_profile_id};
    if (!report.empty() && !write_text(report, report_json(run, verdicts))) {
      std::fprintf(stderr, "tqref check: cannot write --report %s\n", report.c_str());
      return kExitInternal;
    }
    if (!junit.empty() && !write_text(junit, report_junit(run, verdicts))) {
      std::fprintf(stderr, "tqref check: cannot write --junit %s\n", junit.c_str());
      return kExitInternal;
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
