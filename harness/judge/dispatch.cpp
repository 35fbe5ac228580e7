#include "judge/dispatch.h"

#include "tqref/contract.h"

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)

bool parse_dispatch_rule(const std::string& s, DispatchRule* r) {
  if (s == "published") *r = DispatchRule::published;
  else if (s == "exact") *r = DispatchRule::exact;
  else return false;
  return true;
}

const char* dispatch_rule_name(DispatchRule r) { return r == DispatchRule::published ? "published" : "exact"; }

uint32_t dispatch_hdim(DispatchRule r, uint32_t head_dim) {
  if (r == DispatchRule::exact) return is_decode_hdim(head_dim) ? head_dim : 0;
  return check_engine_head_dim(head_dim) ? 0 : engine_hdim(head_dim);
}

std::string dispatch_skip_reason(DispatchRule r, const GoldenCase& c) {
  if (c.kind != CaseKind::decode) return "";
  const uint32_t D = c.d.p.head_dim, want = dispatch_hdim(r, D);
  if (want == 0)
    return "--dispatch " + std::string(dispatch_rule_name(r)) + " launches no build for head_dim " +
           std::to_string(D);
  if (want != c.d.p.hdim)
    return "--dispatch " + std::string(dispatch_rule_name(r)) + " launches head_dim " + std::to_string(D) +
           " on the HDIM=" + std::to_string(want) + " build; the case's expectation is for HDIM=" +
           std::to_string(c.d.p.hdim);
  return "";
}

bool parse_out_of_contract_level(const std::string& s, OutOfContractLevel* l) {
  if (s == "T") *l = OutOfContractLevel::T;
  else if (s == "D") *l = OutOfContractLevel::D;
  else return false;
  return true;
}

bool out_of_contract(const GoldenCase& c) {
  return c.kind == CaseKind::decode && !decode_in_contract(c.d.p.head_dim, c.d.p.hdim);
}

std::string out_of_contract_note(const GoldenCase& c, OutOfContractLevel l) {
  if (!out_of_contract(c)) return "";
  return "head_dim " + std::to_string(c.d.p.head_dim) + " launched on an HDIM=" + std::to_string(c.d.p.hdim) +
         " build: outside the contract, " +
         (l == OutOfContractLevel::T ? "judged against fp64"
                                     : "judged bit for bit against the extension of docs/spec.md section 5.1");
}

}  // namespace tqref::judge
