// Launch checks for golden cases, run before any work: after a case is read from a file
// (io/case_io.cpp) and before a backend launches it. The contract's rules (docs/spec.md
// sections 3-5) come from their one home, model/tqref/contract.h; this file adds what a golden
// case must satisfy besides: the harness's size limits (pools and buffers of at most 2^40, so no
// product overflows), dataset sizes exactly as the parameters imply, and the stored diagnostics.
// Without them a launch would read or write outside its buffers (a GPU would fault or corrupt
// memory; the model would refuse late, after other cases ran). Returns "" when the case is
// launchable, else the first problem as "<parameter> = <value>; allowed: <range>"; the caller
// prefixes the file and object. docs/contract-checks.md lists the rules in order.
#pragma once
#include <string>

#include "io/golden_case.h"

namespace tqref::common {

// Largest pool the harness accepts (bytes per K or V pool): far beyond any SPEC test geometry,
// small enough that products of the parameters below cannot overflow 64 bits.
inline constexpr uint64_t kMaxPoolBytes = uint64_t(1) << 40;

// Parameters only (attributes of a case, before its datasets are read): the contract's parameter
// and launch rules, then the harness's pool and buffer limits, so the dataset shapes they imply
// are safe to read.
std::string check_writer_params(Format f, const golden::WriterCase& w);
std::string check_decode_params(Format f, const golden::DecodeCase& d);
// Everything: parameters, buffer sizes, slots, block-table entries in use, sequence lengths.
std::string check_writer_case(Format f, const golden::WriterCase& w);
// `diagnostics`: also check the stored model diagnostics (skip masks per row) when present.
std::string check_decode_case(Format f, const golden::DecodeCase& d, bool diagnostics = true);
std::string check_case(const golden::GoldenCase& c);
// check_case without the sizes of the bulk buffers (key, value, q, pools, outputs), for a case
// read by golden::read_case_summary: those datasets were checked against the shapes the
// parameters imply and not kept.
std::string check_case_contents(const golden::GoldenCase& c);

}  // namespace tqref::common
