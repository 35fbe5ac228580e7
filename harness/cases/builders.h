// Turn a CaseSpec and a seed into golden cases, running the CPU model for the expectations.
#pragma once
#include <cstdint>
#include <vector>

#include "cases/case_spec.h"
#include "tqref/ex2.h"

namespace tqref::cases {

// A writer spec gives one case; a decode spec gives the linked pair {writer, decode}: the decode
// case's caches are the writer case's expected pools, with every slot, V group and table entry
// that the decoder must not read poisoned. `ex2` is required for decode specs. Throws
// std::invalid_argument naming the spec field when the spec is inconsistent.
std::vector<golden::GoldenCase> build_cases(const CaseSpec& spec, uint64_t index, uint64_t seed,
                                            const Ex2Profile* ex2);

// Writer-only builder (also used by the decode builder for the linked writer case).
golden::GoldenCase build_writer_case(const CaseSpec& spec, const std::string& name,
                                     uint64_t seed);

golden::GoldenCase build_writer_from_tokens(const CaseSpec& spec, const std::string& name,
                                            uint64_t seed, uint32_t num_blocks,
                                            std::vector<int64_t> slots,
                                            const std::vector<uint16_t>& k_rows,
                                            const std::vector<uint16_t>& v_rows);

}  // namespace tqref::cases
