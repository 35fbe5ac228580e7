// Golden cases from a real attention trace (docs/traces.md, "Golden cases from a trace").
//
// For each chosen (sequence, layer, format): a writer case that stores every position of the
// sequence through a shuffled slot mapping (plus slot -1 padding tokens), and a linked decode case
// whose "sequences" are queries at chosen positions t, each attending over the causal prefix
// 0..t (seq_len t+1) of the same pool, with all q heads of the layer. Block tables of the queries
// share the physical blocks. head_dim below the kernel's HDIM (128 or 256) is zero-padded in q, k
// and v; the softmax scale stays the model's (attn_scale of the trace), so the padded case computes
// what the model computes, in the HDIM kernel's operation order.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/golden_case.h"
#include "io/trace_file.h"
#include "tqref/ex2.h"

namespace tqref::cases {

// slot -1 tokens per writer case: as many as a sweep's padding_tokens (cases::check_spec).
inline constexpr uint32_t kMaxPaddingTokens = 1u << 16;

// An option outside what this trace and the memory budget allow (a usage error: the CLI's exit 2).
struct TraceOptionError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct TraceGoldenOptions {
  std::vector<std::string> sequences;  // names; empty = all
  std::vector<int> layers;             // empty = all
  // Formats: "rotate" gives (sequence index + layer) % 3 -> turbo2v/3v/4v, so each layer of a
  // multi-sequence trace meets every format; "all" gives all three for every pair.
  std::string formats = "rotate";
  std::vector<int> query_positions;    // empty = the default set (trace_golden.cpp), clipped to T
  uint32_t block_size = 16;
  uint32_t padding_tokens = 2;         // slot -1 tokens mixed into each writer case, <= kMaxPaddingTokens
  uint64_t seed = 1;
};

// The cases, in a deterministic order (sequence, layer, format), writer before its decode case.
// Throws std::invalid_argument naming the option and its allowed values; before anything is built,
// the cases' memory (all of them are held until the file is written) is checked against the
// budget: TraceOptionError when --trace-padding-tokens alone takes it past the budget (naming the
// padding this trace allows), std::invalid_argument when the chosen sequences and layers do.
std::vector<golden::GoldenCase> build_trace_cases(const trace::Trace& t,
                                                  const std::string& trace_name,
                                                  const TraceGoldenOptions& opt,
                                                  const Ex2Profile& ex2);

// Reads `trace_path` (validated), builds the cases and writes a golden file through a temporary
// name. `command_line` is recorded as the provenance command. Returns the number of cases.
size_t generate_trace_golden(const std::string& trace_path, const std::string& out,
                             const TraceGoldenOptions& opt, const Ex2Profile& ex2,
                             const std::string& command_line);

}  // namespace tqref::cases
