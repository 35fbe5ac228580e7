#include "judge/coverage.h"

#include <optional>

#include "cases/observe.h"
#include "io/case_io.h"
#include "judge/ex2_for_file.h"
#include "tqref/contract.h"

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)
using namespace cases;   // what a case observes (harness/cases)

std::vector<KernelKey> contract_kernel_keys() {
  std::vector<KernelKey> k;
  for (const FormatTraits& t : kFormats) k.emplace_back(CaseKind::writer, t.format, 0);
  for (uint32_t hdim : {128u, 256u})
    for (const FormatTraits& t : kFormats) k.emplace_back(CaseKind::decode, t.format, hdim);
  return k;
}

std::string kernel_label(const KernelKey& k) {
  const auto& [kind, format, hdim] = k;
  std::string s = kernel_name(kind, format);
  if (kind == CaseKind::decode) s += " HDIM " + std::to_string(hdim);
  return s;
}

uint64_t Coverage::observable() const {
  uint64_t n = 0;
  for (const auto& [k, kc] : kernels)
    for (const EntryCases& e : kc.entries) n += !e.cases.empty();
  return n;
}

uint64_t Coverage::total() const {
  uint64_t n = 0;
  for (const auto& [k, kc] : kernels) n += kc.entries.size();
  return n;
}

std::vector<std::string> Coverage::blind() const {
  std::vector<std::string> b;
  for (const KernelKey& k : contract_kernel_keys())
    for (const EntryCases& e : kernels.at(k).entries)
      if (e.cases.empty()) b.push_back(kernel_label(k) + ": " + e.name);
  return b;
}

Coverage empty_coverage() {
  Coverage c;
  for (const KernelKey& k : contract_kernel_keys())
    for (const Variant& v : coverage_entries(std::get<0>(k)))
      c.kernels[k].entries.push_back({v.name, {}});
  return c;
}

namespace {

// Calls fn(case, ex2, "<file>:<case>") for every case of a golden file of the contract whose
// launch lies inside the contract.
template <class Fn>
void for_each_contract_case(const std::string& file, Fn fn) {
  h5::Node root = h5::Node::open_file(file);
  const Provenance prov = read_provenance(root);
  // Entries are changes of the contract: on a file of another variant every case would "see"
  // what that variant already changed.
  if (!prov.model_variant.empty())
    throw BadCase(file + ": coverage is defined for golden files of the contract; this one holds "
                  "expectations of the variant '" + prov.model_variant + "' (model_variant)");
  const std::optional<Ex2Profile> ex2 = ex2_for_file(prov, file);
  h5::Node cases = root.group("cases");
  for (const std::string& name : cases.children()) {
    const GoldenCase c = read_case(cases, name, false);
    if (c.kind == CaseKind::decode && !decode_in_contract(c.d.p.head_dim, c.d.p.hdim)) continue;
    fn(c, ex2 ? &*ex2 : nullptr, file + ":" + name);
  }
}

}  // namespace

void add_coverage(Coverage& cov, const std::string& file, bool first) {
  for_each_contract_case(file, [&](const GoldenCase& c, const Ex2Profile* ex2, const std::string& where) {
    KernelCoverage& kc = cov.kernels[{c.kind, c.format, c.kind == CaseKind::decode ? c.d.p.hdim : 0}];
    ++kc.cases;
    const std::vector<Variant> entries = coverage_entries(c.kind);
    const std::vector<uint8_t> expected = expected_bytes(c);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (first && !kc.entries[i].cases.empty()) continue;
      if (run_variant(c, entries[i], ex2) != expected) kc.entries[i].cases.push_back(where);
    }
  });
}

std::map<std::string, std::vector<std::string>> told_apart_in_file(const std::string& file,
                                                                   const std::vector<Variant>& rivals) {
  std::map<std::string, std::vector<std::string>> by_pair;
  for (const std::string& p : rival_pairs(rivals)) by_pair[p];
  for_each_contract_case(file, [&](const GoldenCase& c, const Ex2Profile* ex2, const std::string& where) {
    for (const std::string& p : told_apart_pairs(c, rivals, ex2)) by_pair[p].push_back(where);
  });
  return by_pair;
}

}  // namespace tqref::judge
