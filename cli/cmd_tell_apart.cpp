// `tqref tell-apart --kernel K --rivals A,B[,...] --out FILE`: golden cases on which the rival
// variants of a tie write different bytes (docs/variants.md, "Pinning"). The failure anatomy
// names such a command when several variants reproduce a failure alike; checking the file on the
// same kernel then pins one of them.
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include <boost/program_options.hpp>

#include "cases/generate.h"
#include "cases/suites.h"
#include "command.h"
#include "io/atomic_output.h"
#include "io/case_io.h"
#include "io/ex2_profile_io.h"
#include "judge/coverage.h"
#include "options.h"
#include "tqref/build_info.h"
#include "tqref/variant.h"

namespace po = boost::program_options;

namespace {

using namespace tqref;
using namespace tqref::cli;
using namespace tqref::golden;
using namespace tqref::cases;
using namespace tqref::judge;

struct KernelArg {
  CaseKind kind = CaseKind::writer;
  Format format = Format::turbo2v;
  uint32_t hdim = 0;
};

// "writer:FORMAT" or "decode:FORMAT:HDIM" (HDIM 128 or 256); empty string when it parses.
std::string parse_kernel(const std::string& s, KernelArg& k) {
  const std::string allowed = "; allowed: writer:FORMAT or decode:FORMAT:HDIM with FORMAT turbo2v, "
                              "turbo3v or turbo4v and HDIM 128 or 256";
  std::vector<std::string> parts;
  std::istringstream in(s);
  for (std::string p; std::getline(in, p, ':');) parts.push_back(p);
  const bool writer = parts.size() == 2 && parts[0] == "writer";
  const bool decode = parts.size() == 3 && parts[0] == "decode" && (parts[2] == "128" || parts[2] == "256");
  if ((!writer && !decode) || !parse_format(parts[1], &k.format)) return "--kernel " + s + allowed;
  k.kind = writer ? CaseKind::writer : CaseKind::decode;
  k.hdim = decode ? uint32_t(std::stoul(parts[2])) : 0;
  return "";
}

// Comma-separated variant names; a hypothesis id "variant:NAME" of the anatomy is taken as NAME.
std::string parse_rivals(const std::string& s, std::vector<std::string>& names, std::vector<Variant>& v) {
  std::istringstream in(s);
  for (std::string n; std::getline(in, n, ',');) {
    if (n.rfind("variant:", 0) == 0) n = n.substr(8);
    try {
      v.push_back(parse_variant(n));
    } catch (const std::invalid_argument& e) {
      return "--rivals: " + std::string(e.what());
    }
    names.push_back(n);
  }
  if (names.size() < 2) return "--rivals " + s + "; allowed: two or more variant names, comma-separated";
  return "";
}

// Prints every pair with the cases that tell it apart; true when every pair has one.
bool report_pairs(const std::string& out, const std::vector<Variant>& rivals) {
  size_t apart = 0;
  const auto by_pair = told_apart_in_file(out, rivals);
  for (const auto& [pair, cases] : by_pair) {
    if (cases.empty()) {
      std::printf("  NOT told apart  %s\n", pair.c_str());
      continue;
    }
    ++apart;
    std::printf("  told apart      %-40s %s%s\n", pair.c_str(), cases.front().c_str(),
                cases.size() > 1 ? (" (+" + std::to_string(cases.size() - 1) + " more)").c_str() : "");
  }
  std::printf("tell-apart: %zu of %zu pairs\n", apart, by_pair.size());
  return apart == by_pair.size();
}

int cmd_tell_apart(const std::vector<std::string>& args) {
  std::string kernel, rivals_arg, out, ex2_arch = "sm_90";
  uint64_t seed = 1;
  uint32_t attempts = 16;
  int threads = omp_get_max_threads();
  po::options_description desc(
      "usage: tqref tell-apart --kernel K --rivals A,B[,...] --out FILE [options]\n"
      "Golden cases of the flags suite's specs for one kernel, each searched for seeds on which\n"
      "the rival variants write different bytes (docs/variants.md, \"Pinning\"). Exit 0 when every\n"
      "pair is told apart, 1 when some pair is not (the file is written either way). Options");
  desc.add_options()("help,h", "this text")(
      "kernel", po::value(&kernel), "writer:FORMAT or decode:FORMAT:HDIM (e.g. decode:turbo3v:128)")(
      "rivals", po::value(&rivals_arg), "variant names, comma-separated (the anatomy's tie:a|b)")(
      "out", po::value(&out), "output HDF5 file (written as OUT.partial-PID, then renamed)")(
      "seed", po::value(&seed), "base seed (< 2^63), default 1")(
      "attempts", po::value(&attempts), "seeds tried per spec, 1 .. 1000 (default 16)")(
      "threads", po::value(&threads), "OpenMP threads across specs (default: all)")(
      "ex2-arch", po::value(&ex2_arch), "EX2 profile used for decode cases (default sm_90)");
  po::variables_map vm;
  if (const auto rc = parse_options("tqref tell-apart", args, desc, vm)) return *rc;
  KernelArg k;
  std::vector<std::string> names;
  std::vector<Variant> rivals;
  std::string why = kernel.empty() || rivals_arg.empty() || out.empty()
                        ? "give --kernel, --rivals and --out"
                        : parse_kernel(kernel, k);
  if (why.empty()) why = parse_rivals(rivals_arg, names, rivals);
  if (why.empty() && (seed >> 63)) why = "--seed " + std::to_string(seed) + "; allowed: 0 .. 2^63-1";
  if (why.empty() && (attempts < 1 || attempts > 1000))
    why = "--attempts " + std::to_string(attempts) + "; allowed: 1 .. 1000";
  if (why.empty() && (threads < 1 || threads > 1024))
    why = "--threads " + std::to_string(threads) + "; allowed: 1 .. 1024";
  if (const std::string p = why.empty() ? common::output_path_problem(out) : ""; !p.empty())
    why = "--out " + p;
  if (!why.empty()) {
    std::fprintf(stderr, "tqref tell-apart: %s\n", why.c_str());
    return kExitUsage;
  }
  std::optional<Ex2Profile> ex2;
  if (k.kind == CaseKind::decode) {
    try {
      ex2 = load_ex2_profile_for_arch(ex2_arch);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tqref tell-apart: decode cases need the EX2 profile: %s\n", e.what());
      return kExitBadInput;
    }
  }
  GenerateOptions opt;
  opt.out = out;
  opt.seed = seed;
  opt.threads = threads;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<CaseSpec> specs = tell_apart_specs(names, k.kind, k.format, k.hdim, attempts);
  opt.provenance = new_provenance(specs, "flags", "tqref tell-apart --kernel " + kernel + " --rivals " +
                                  rivals_arg + " --seed " + std::to_string(seed) + " --attempts " +
                                  std::to_string(attempts));
  generate_file(specs, opt, ex2 ? &*ex2 : nullptr);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s: %zu specs, %.1f s\n", out.c_str(), specs.size(), s);
  return report_pairs(out, rivals) ? kExitOk : kExitMismatch;
}

}  // namespace

TQREF_COMMAND("tell-apart", "golden cases on which rival variants of a tie differ", cmd_tell_apart);
