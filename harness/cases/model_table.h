// The attention geometry of public open-weight models (data/models/attention.yaml, docs/models.md):
// what the `models` suite builds its cases from. The committed table is compiled into tqref; a
// user's own table in the same format can be given to `tqref generate --suite models --models FILE`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tqref::cases {

// One model's attention layer as a serving engine launches the cache kernels for it.
struct ModelGeometry {
  std::string name;            // e.g. "Llama-3.2-1B"
  std::string source;          // the published config the numbers come from
  std::string checked;         // which stored copy they were read from
  uint32_t num_q_heads = 0;    // num_attention_heads
  uint32_t num_kv_heads = 0;   // num_key_value_heads
  uint32_t head_dim = 0;       // head_dim, or hidden_size / num_attention_heads (head_dim_field)
  std::string head_dim_field;  // "head_dim" or "hidden_size/num_attention_heads"
  uint32_t hidden_size = 0;
  std::vector<uint32_t> sliding_windows;  // window sizes in tokens; empty = full attention only
  std::string layer_pattern;   // none | all | alternating | "<sliding>:<full>"
  uint32_t context = 0;        // max_position_embeddings
  std::string notes;           // what could not be verified, what the kernels do not model

  uint32_t gqa_ratio() const { return num_q_heads / num_kv_heads; }
};

// Parses a table in the format of data/models/attention.yaml and checks every entry (fields
// present and typed, heads >= 1 dividing, head_dim a multiple of 16 up to 256, head_dim equal to
// hidden_size / num_q_heads when that is its field, windows in 1 .. context, names unique).
// Throws std::invalid_argument naming the file, the model and the field.
std::vector<ModelGeometry> parse_model_table(const std::string& yaml_text, const std::string& file);

// The committed table, parsed once (data/models/attention.yaml as compiled in).
const std::vector<ModelGeometry>& builtin_model_table();
// Its text, for provenance (a golden file records the table its cases came from).
const std::string& builtin_model_table_text();

}  // namespace tqref::cases
