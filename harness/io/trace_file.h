// Attention traces in HDF5 (schema "tqref.trace" version 1, described in docs/trace-schema.md):
// per sequence and layer the q, k, v rows an attention kernel receives, as bf16 bits.
//
//   /                       attrs: schema, schema_version, model_name, producer, num_layers,
//                                  num_q_heads, num_kv_heads, head_dim, attn_scale, encoding,
//                                  + optional provenance strings
//   /sequences/<name>/      attrs: num_tokens (T) + optional prompt, generated_text, ...
//       token_ids           int32 [T]            (optional)
//       layer_<i>/q         uint16 [T, Hq, D]    encoding "bf16", after RoPE
//       layer_<i>/k         uint16 [T, Hkv, D]   encoding "bf16", after RoPE
//       layer_<i>/v         uint16 [T, Hkv, D]   encoding "bf16"
// Row t holds position t (positions 0..T-1 of the sequence, in order).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tqref::trace {

inline constexpr const char* kTraceSchema = "tqref.trace";
inline constexpr int kTraceSchemaVersion = 1;

struct TraceMeta {
  std::string model_name, producer;
  int num_layers = 0, num_q_heads = 0, num_kv_heads = 0, head_dim = 0;
  double attn_scale = 0.0;  // softmax scale the model applies to q.k (usually 1/sqrt(head_dim))
  // Optional root string attributes (checkpoint_sha256, tqref_commit, command, ...), in order.
  std::vector<std::pair<std::string, std::string>> provenance;
};

struct TraceSequence {
  std::string name;
  int num_tokens = 0;
  std::vector<int32_t> token_ids;  // empty: not stored
  // Optional string attributes (prompt, generated_text, stop_reason, ...), in order.
  std::vector<std::pair<std::string, std::string>> attrs;
  int prompt_tokens = -1;  // < 0: not stored
  std::vector<std::vector<uint16_t>> q, k, v;  // [num_layers][T * heads * head_dim] bf16 bits
};

struct Trace {
  TraceMeta meta;
  std::vector<TraceSequence> sequences;
};

// Writes `t` to `path` through a temporary file in the same directory that is renamed into place,
// so a reader never sees a partial trace. Checks shapes first (std::invalid_argument).
void write_trace(const std::string& path, const Trace& t);

// Checks a file against the schema; returns one message per problem (empty: valid). Each message
// names the file, the object and the expected value or range. Content checks: no bf16 NaN or
// Inf, no all-zero q, k or v dataset (a dump that wrote nothing).
std::vector<std::string> validate_trace(const std::string& path);

// Validates, then reads every sequence (throws std::invalid_argument with the problems).
Trace read_trace(const std::string& path);

}  // namespace tqref::trace
