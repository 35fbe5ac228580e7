// `tqref study`: the quantisation-error studies (docs/studies.md). Writes tidy CSV files (one
// per table) into a directory, or one HDF5 file when --out ends in .h5.
#include <omp.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "analysis/study/decode_study.h"
#include "analysis/study/study.h"
#include "command.h"
#include "options.h"
#include "io/atomic_output.h"
#include "io/ex2_profile_io.h"

namespace {

namespace po = boost::program_options;
using namespace tqref::study;
using tqref::cli::parse_options;

int cmd_study(const std::vector<std::string>& args) {
  StudyOptions o;
  std::string out = "study-results", only;
  int threads = 0;
  bool quiet = false;
  po::options_description desc(
      "usage: tqref study [--out results.h5|csv-dir] [--quick] [--threads N] [--seed N]\n"
      "  Quantisation-error studies of the Turbo-V formats (docs/studies.md); progress on stderr");
  desc.add_options()("help,h", "this text")
      ("out", po::value(&out)->default_value(out), "CSV directory, or a file ending in .h5")
      ("quick", po::bool_switch(&o.quick), "seconds-long smoke run (fewer samples and lengths)")
      ("threads", po::value(&threads)->default_value(0), "OpenMP threads (0 = OpenMP default)")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed of every random source")
      ("traces", po::value(&o.traces_dir)->default_value("data/traces"),
       "directory of real traces (*.h5); missing or empty: real-trace parts are skipped")
      ("ex2-arch", po::value(&o.ex2_arch)->default_value(o.ex2_arch),
       "EX2 profile for the decode model")
      ("only", po::value(&only)->default_value(""),
       "comma list of parts to run: theory,vq,decode,traces (default: all)")
      ("quiet", po::bool_switch(&quiet), "no progress lines");
  po::variables_map vm;
  if (const auto rc = parse_options("tqref study", args, desc, vm)) return *rc;
  if (threads < 0 || threads > 1024) {
    std::fprintf(stderr, "tqref study: --threads %d outside 0..1024\n", threads);
    return tqref::kExitUsage;
  }
  // Checked before hours of sampling: an .h5 output needs an existing, writable directory; a CSV
  // directory may be created, so its nearest existing ancestor must be a writable directory
  // (FILE/sub: "FILE exists and is not a directory", not a filesystem error at the end).
  const bool out_h5 = out.size() > 3 && out.substr(out.size() - 3) == ".h5";
  const std::string out_problem =
      out_h5 ? tqref::common::output_path_problem(out) : tqref::common::output_dir_problem(out);
  if (!out_problem.empty()) {
    std::fprintf(stderr, "tqref study: --out %s\n", out_problem.c_str());
    return tqref::kExitUsage;
  }
  if (threads > 0) omp_set_num_threads(threads);
  o.progress = !quiet;
  auto wants = [&](const char* part) {
    if (only.empty()) return true;
    std::string list = "," + only + ",";
    return list.find("," + std::string(part) + ",") != std::string::npos;
  };
  for (size_t b = 0; !only.empty() && b <= only.size();) {
    size_t e = std::min(only.find(',', b), only.size());
    std::string p = only.substr(b, e - b);
    if (p != "theory" && p != "vq" && p != "decode" && p != "traces") {
      std::fprintf(stderr, "tqref study: --only part '%s' unknown (allowed: theory,vq,decode,traces)\n",
                   p.c_str());
      return tqref::kExitUsage;
    }
    b = e + 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Table> tables;
  if (wants("theory")) run_theory(o, tables);
  if (wants("vq")) run_vquant_synthetic(o, tables);
  if (wants("decode") || wants("traces")) {
    // A missing/invalid EX2 profile or trace file is bad input (exit 3), not an internal error.
    try {
      progress(o, "loading the EX2 profile for %s", o.ex2_arch.c_str());
      const tqref::Ex2Profile ex2 = tqref::load_ex2_profile_for_arch(o.ex2_arch);
      if (wants("decode")) run_decode_synthetic(o, ex2, tables);
      if (wants("traces")) run_traces(o, &ex2, tables);
    } catch (const tqref::Ex2ProfileError& e) {
      std::fprintf(stderr, "tqref study: --ex2-arch %s: %s\n", o.ex2_arch.c_str(), e.what());
      return tqref::kExitBadInput;
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "tqref study: --traces %s: %s\n", o.traces_dir.c_str(), e.what());
      return tqref::kExitBadInput;
    }
  }
  if (out_h5) write_h5(out, tables);
  else write_csv_dir(out, tables);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress(o, "wrote %zu tables to %s in %.1f s", tables.size(), out.c_str(), secs);
  return tqref::kExitOk;
}

}  // namespace

TQREF_COMMAND("study", "quantisation-error studies: CSV/HDF5 tables for analysis/", cmd_study);
