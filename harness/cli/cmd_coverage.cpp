// `tqref coverage FILE... [--first] [--list N] [--require-all]`: for every kernel (writer x format,
// decoder x format x HDIM), every rounding step of the contract one step off in either direction
// and every named variant of docs/variants.md, the cases of the files in which it changes at least
// one output or pool byte; then `coverage: N of M observable`. An entry no case sees is a blind
// spot; entries that provably change no byte are listed apart and left out of M.
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <tuple>

#include <boost/program_options.hpp>

#include "cases/observe.h"
#include "command.h"
#include "io/case_io.h"
#include "judge/ex2_for_file.h"
#include "tqref/contract.h"
#include "options.h"

namespace po = boost::program_options;

namespace {

using namespace tqref;
using namespace tqref::cli;
using namespace tqref::golden;

// A kernel of the contract: the writer of a format, or the decoder of a format at an HDIM.
using KernelKey = std::tuple<CaseKind, Format, uint32_t>;

struct EntryCases {
  std::string name;
  std::vector<std::string> cases;  // cases that observe it, in file order
};

struct KernelCoverage {
  std::vector<EntryCases> entries;
  uint64_t cases = 0;
};

std::vector<KernelKey> all_kernels() {
  std::vector<KernelKey> k;
  for (const FormatTraits& t : kFormats) k.emplace_back(CaseKind::writer, t.format, 0);
  for (uint32_t hdim : {128u, 256u})
    for (const FormatTraits& t : kFormats) k.emplace_back(CaseKind::decode, t.format, hdim);
  return k;
}

KernelKey key_of(const GoldenCase& c) {
  return {c.kind, c.format, c.kind == CaseKind::decode ? c.d.p.hdim : 0};
}

std::string kernel_label(const KernelKey& k) {
  const auto& [kind, format, hdim] = k;
  std::string s = kernel_name(kind, format);
  if (kind == CaseKind::decode) s += " HDIM " + std::to_string(hdim);
  return s;
}

std::map<KernelKey, KernelCoverage> empty_coverage() {
  std::map<KernelKey, KernelCoverage> m;
  for (const KernelKey& k : all_kernels())
    for (const Variant& v : coverage_entries(std::get<0>(k)))
      m[k].entries.push_back({v.name, {}});
  return m;
}

// Adds one file's cases. With `first`, an entry already observed is not run again.
void add_file(const std::string& file, bool first, std::map<KernelKey, KernelCoverage>& cov) {
  h5::Node root = h5::Node::open_file(file);
  const Provenance prov = read_provenance(root);
  const std::optional<Ex2Profile> ex2 = ex2_for_file(prov, file);
  h5::Node cases = root.group("cases");
  for (const std::string& name : cases.children()) {
    const GoldenCase c = read_case(cases, name, false);
    if (c.kind == CaseKind::decode && !decode_in_contract(c.d.p.head_dim, c.d.p.hdim)) continue;
    KernelCoverage& kc = cov[key_of(c)];
    ++kc.cases;
    const std::vector<Variant> entries = coverage_entries(c.kind);
    const std::vector<uint8_t> expected = expected_bytes(c);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (first && !kc.entries[i].cases.empty()) continue;
      if (run_variant(c, entries[i], ex2 ? &*ex2 : nullptr) != expected)
        kc.entries[i].cases.push_back(file + ":" + name);
    }
  }
}

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
  std::map<KernelKey, KernelCoverage> cov = empty_coverage();
  for (const std::string& f : files) add_file(f, first, cov);
  uint64_t seen = 0, total = 0;
  for (const KernelKey& k : all_kernels()) {
    const KernelCoverage& kc = cov[k];
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
