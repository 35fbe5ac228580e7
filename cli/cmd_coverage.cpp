// `tqref coverage FILE... [--first] [--list N] [--require-all]`: for every kernel (writer x format,
// decoder x format x HDIM), every rounding step of the contract one step off in either direction
// and every named variant of docs/variants.md, the cases of the files in which it changes at least
// one output or pool byte; then `coverage: N of M observable`. An entry no case sees is a blind
// spot; entries that provably change no byte are listed apart and left out of M.
#include <cstdio>
#include <iostream>

#include <boost/program_options.hpp>

#include "cases/observe.h"
#include "command.h"
#include "judge/coverage.h"
#include "options.h"

namespace po = boost::program_options;

namespace {

using namespace tqref;
using namespace tqref::cli;
using namespace tqref::cases;
using namespace tqref::judge;

std::string case_list(const std::vector<std::string>& cases, size_t max) {
  std::string s;
  for (size_t i = 0; i < cases.size() && i < max; ++i) s += (i ? ", " : "") + cases[i];
  if (cases.size() > max) s += ", ... (" + std::to_string(cases.size()) + ")";
  return s;
}

int cmd_coverage(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  bool first = false, require_all = false;
  size_t list = 3;
  po::options_description desc(
      "usage: tqref coverage FILE... [--first] [--list N] [--require-all]\nOptions");
  desc.add_options()("help,h", "this text")("file", po::value(&files), "golden HDF5 files")(
      "first", po::bool_switch(&first),
      "stop running an entry once a case observes it (faster; lists one case per entry)")(
      "list", po::value(&list), "cases named per entry (default 3)")(
      "require-all", po::bool_switch(&require_all), "exit 1 unless every entry is observable");
  po::positional_options_description pos;
  pos.add("file", -1);
  po::variables_map vm;
  if (const auto rc = parse_options("tqref coverage", args, desc, vm, &pos)) return *rc;
  if (files.empty()) {
    std::cout << desc << "\n";
    return kExitUsage;
  }
  Coverage cov = empty_coverage();
  for (const std::string& f : files) add_coverage(cov, f, first);
  uint64_t seen = 0, total = 0;
  for (const KernelKey& k : contract_kernel_keys()) {
    const KernelCoverage& kc = cov.kernels.at(k);
    uint64_t n = 0;
    for (const EntryCases& e : kc.entries) n += !e.cases.empty();
    std::printf("%s: %llu of %zu observable (%llu cases)\n", kernel_label(k).c_str(),
                (unsigned long long)n, kc.entries.size(), (unsigned long long)kc.cases);
    for (const EntryCases& e : kc.entries)
      if (e.cases.empty())
        std::printf("  BLIND     %s\n", e.name.c_str());
      else
        std::printf("  seen      %-26s %s\n", e.name.c_str(), case_list(e.cases, list).c_str());
    for (const ExcludedEntry& x : excluded_entries(std::get<0>(k)))
      std::printf("  excluded  %-26s %s\n", x.name.c_str(), x.why.c_str());
    seen += n;
    total += kc.entries.size();
  }
  std::printf("coverage: %llu of %llu observable\n", (unsigned long long)seen,
              (unsigned long long)total);
  return require_all && seen != total ? kExitMismatch : kExitOk;
}

}  // namespace

TQREF_COMMAND("coverage", "which rounding steps and variants of the contract the cases can see",
              cmd_coverage);
