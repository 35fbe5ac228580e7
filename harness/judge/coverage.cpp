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

void refuse_variant_file(const Provenance& prov, const std::string& label) {
  // Entries are changes of the contract: on a file of another variant every case would "see"
  // what that variant already changed.
  if (!prov.model_variant.empty())
    throw BadCase(label + ": coverage is defined for golden files of the contract; this one holds "
                  "expectations of the variant '" + prov.model_variant + "' (model_variant)");
}

KernelKey key_of(const GoldenCase& c) {
  return {c.kind, c.format, c.kind == CaseKind::decode ? c.d.p.hdim : 0};
}

// Calls fn(case, "<label>:<case>", read) for every case of an opened golden file of the contract
// whose launch lies inside the contract. need(header) decides from the case's attributes whether
// its data is read at all; a case it declines is passed as its header only (read false, no buffers).
template <class Need, class Fn>
void for_each_contract_case(const h5::Node& root, const std::string& label, Need need, Fn fn) {
  h5::Node cases = root.group("cases");
  for (const std::string& name : cases.children()) {
    bool pooled = false;
    const GoldenCase h = read_case_header(cases, name, &pooled);
    if (h.kind == CaseKind::decode && !decode_in_contract(h.d.p.head_dim, h.d.p.hdim)) continue;
    if (need(h)) fn(read_case(cases, name, false), label + ":" + name, true);
    else fn(h, label + ":" + name, false);
  }
}

}  // namespace

void add_coverage(Coverage& cov, const h5::Node& root, const Provenance& prov, const Ex2Profile* ex2,
                  const std::string& label, bool first) {
  refuse_variant_file(prov, label);
  // With `first`, a case of a kernel whose every entry is already observed adds only to the case
  // count, so its data is never read: a conform run reads the large suites' headers only.
  const auto need = [&](const GoldenCase& h) {
    if (!first) return true;
    for (const EntryCases& e : cov.kernels[key_of(h)].entries)
      if (e.cases.empty()) return true;
    return false;
  };
  for_each_contract_case(root, label, need, [&](const GoldenCase& c, const std::string& where, bool read) {
    KernelCoverage& kc = cov.kernels[key_of(c)];
    ++kc.cases;
    if (!read) return;
    const std::vector<Variant> entries = coverage_entries(c.kind);
    const std::vector<uint8_t> expected = expected_bytes(c);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (first && !kc.entries[i].cases.empty()) continue;
      if (run_variant(c, entries[i], ex2) != expected) kc.entries[i].cases.push_back(where);
    }
  });
}

void add_coverage(Coverage& cov, const std::string& file, bool first) {
  h5::Node root = open_golden_file(file);
  const Provenance prov = read_provenance(root);
  refuse_variant_file(prov, file);
  const std::optional<Ex2Profile> ex2 = ex2_for_file(prov, file);
  add_coverage(cov, root, prov, ex2 ? &*ex2 : nullptr, file, first);
}

std::map<std::string, std::vector<std::string>> told_apart_in_file(const std::string& file,
                                                                   const std::vector<Variant>& rivals) {
  std::map<std::string, std::vector<std::string>> by_pair;
  for (const std::string& p : rival_pairs(rivals)) by_pair[p];
  h5::Node root = open_golden_file(file);
  const Provenance prov = read_provenance(root);
  refuse_variant_file(prov, file);
  const std::optional<Ex2Profile> ex2 = ex2_for_file(prov, file);
  const auto all = [](const GoldenCase&) { return true; };
  for_each_contract_case(root, file, all, [&](const GoldenCase& c, const std::string& where, bool) {
    for (const std::string& p : told_apart_pairs(c, rivals, ex2 ? &*ex2 : nullptr)) by_pair[p].push_back(where);
  });
  return by_pair;
}

}  // namespace tqref::judge
