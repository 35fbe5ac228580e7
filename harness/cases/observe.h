// Which variants of the contract (tqref/variant.h) a golden case can see: the case's kernel run on
// the scalar model under the variant, compared byte for byte with the contract's expectation the
// case holds. Used by `tqref coverage` (docs/variants.md) and by the builders that search for
// cases that see every step (the `flags` suite).
#pragma once
#include <string>
#include <vector>

#include "io/golden_case.h"
#include "tqref/ex2.h"
#include "tqref/variant.h"

namespace tqref::cases {

// The coverage entries of a kernel kind, in report order: "ulp+:<step>" and "ulp-:<step>" for each
// rounding step of that kernel, then every named variant that changes it (the contract and the
// entries of excluded_entries left out).
std::vector<Variant> coverage_entries(golden::CaseKind kind);

// Entries that provably cannot change an output or pool byte, with why (docs/variants.md), and
// variants whose measured tables are missing here (tqref/approx.h), with that reason.
struct ExcludedEntry {
  std::string name, why;
};
std::vector<ExcludedEntry> excluded_entries(golden::CaseKind kind);

// The buffers the case's kernel writes (writer: K pool then V pool; decode: the output as bytes),
// run on the scalar model under v. `ex2` is required for decode cases.
std::vector<uint8_t> run_variant(const golden::GoldenCase& c, const Variant& v,
                                 const Ex2Profile* ex2);

// The case's expectation in the same layout as run_variant.
std::vector<uint8_t> expected_bytes(const golden::GoldenCase& c);

// Whether v changes at least one byte of what the case's kernel writes.
bool variant_observed(const golden::GoldenCase& c, const Variant& v, const Ex2Profile* ex2);

// "a|b" for every pair of `rivals` (in order, a before b): the names of tie:a|b.
std::vector<std::string> rival_pairs(const std::vector<Variant>& rivals);

// The pairs of rival_pairs(rivals) on which the two variants write different bytes in this case.
std::vector<std::string> told_apart_pairs(const golden::GoldenCase& c,
                                          const std::vector<Variant>& rivals,
                                          const Ex2Profile* ex2);

// The names of the entries of `entries` that the case observes.
std::vector<std::string> observed_entries(const golden::GoldenCase& c,
                                          const std::vector<Variant>& entries,
                                          const Ex2Profile* ex2);

}  // namespace tqref::cases
