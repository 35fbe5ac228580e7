// Observability coverage of golden files (docs/variants.md, "Coverage"): for every kernel of the
// contract (writer x format, decoder x format x HDIM), every coverage entry (cases/observe.h: each
// rounding step one step off either way, every named variant) with the cases whose output or pool
// bytes it changes. `tqref coverage` prints it; `tqref conform` reports its summary ("this run
// could have seen").
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "io/case_io.h"
#include "io/golden_case.h"
#include "tqref/variant.h"

namespace tqref::judge {

// A kernel of the contract: the writer of a format (HDIM 0), or the decoder of a format at an HDIM.
using KernelKey = std::tuple<golden::CaseKind, Format, uint32_t>;
std::vector<KernelKey> contract_kernel_keys();
std::string kernel_label(const KernelKey& k);

struct EntryCases {
  std::string name;
  std::vector<std::string> cases;  // "<file>:<case>" that observe it, in file order
};

struct KernelCoverage {
  std::vector<EntryCases> entries;  // coverage_entries(kind), in that order
  uint64_t cases = 0;               // cases of this kernel in the files
};

struct Coverage {
  std::map<KernelKey, KernelCoverage> kernels;  // every kernel, with or without cases
  uint64_t observable() const;
  uint64_t total() const;
  std::vector<std::string> blind() const;       // "<kernel>: <entry>"
};

// Every kernel with its entries, none observed yet.
Coverage empty_coverage();
// Adds one golden file's cases (launches inside the contract only). With `first`, an entry
// already observed is not run again (one case per entry; much faster). Throws BadCase for a file
// generated with --model-variant (its expectations are not the contract's).
void add_coverage(Coverage& cov, const std::string& file, bool first);
// The same for a file already opened (golden::open_golden_file) with its provenance and the EX2
// profile its decode cases were generated with (ex2_for_file; null for writer-only files); cases
// are named "<label>:<case>".
void add_coverage(Coverage& cov, const h5::Node& root, const golden::Provenance& prov, const Ex2Profile* ex2,
                  const std::string& label, bool first);

// For every pair "a|b" of rivals (cases/observe.h rival_pairs), the cases of the file ("<file>:
// <case>") on which the two variants write different bytes; a pair no case tells apart maps to an
// empty list. Throws BadCase for a file generated with --model-variant.
std::map<std::string, std::vector<std::string>> told_apart_in_file(const std::string& file,
                                                                   const std::vector<Variant>& rivals);

}  // namespace tqref::judge
