// Which decoder build a decode case is launched on, and how a launch outside the contract is
// judged. A serving engine picks the build by the model's head_dim (docs/spec.md section 5: the
// HDIM=128 build for every head_dim up to 128, the HDIM=256 build above), so models with
// head_dim 64, 96, 48, ... run on a build whose HDIM differs from their head_dim. Such a launch is
// outside the contract; it is judged against the fp64 reference over the case's head_dim dims
// (level T), or, for decoders that claim the extension of docs/spec.md section 5.1 (tqref's own),
// bit for bit against it.
#pragma once
#include <cstdint>
#include <string>

#include "io/golden_case.h"

namespace tqref::judge {

enum class DispatchRule {
  published,  // the engine's rule: HDIM=128 for head_dim <= 128, HDIM=256 up to 256 (default)
  exact,      // only head_dim == HDIM: launches outside the contract are not made
};
// "published" or "exact"; false for anything else.
bool parse_dispatch_rule(const std::string& s, DispatchRule* r);
const char* dispatch_rule_name(DispatchRule r);

// HDIM of the build the rule launches a decode of head_dim on; 0 when it launches none.
uint32_t dispatch_hdim(DispatchRule r, uint32_t head_dim);

// For a decode case: "" when the rule launches it on the build its expectation was computed for
// (the case's hdim attribute), else why it is not launched (reported as skipped). Writer cases
// have no HDIM: always "".
std::string dispatch_skip_reason(DispatchRule r, const golden::GoldenCase& c);

// How a decode launch outside the contract is judged.
enum class OutOfContractLevel {
  T,  // against the fp64 reference over head_dim dims (level T; the default)
  D,  // bit for bit against docs/spec.md section 5.1 (decoders that implement the extension)
};
bool parse_out_of_contract_level(const std::string& s, OutOfContractLevel* l);

// True for a decode case whose head_dim differs from the HDIM of its build.
bool out_of_contract(const golden::GoldenCase& c);
// The report's line for such a case, e.g. "head_dim 64 launched on an HDIM=128 build: outside the
// contract, judged against fp64"; "" for every other case.
std::string out_of_contract_note(const golden::GoldenCase& c, OutOfContractLevel l);

}  // namespace tqref::judge
