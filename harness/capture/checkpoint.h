// A llama2.c checkpoint ("model.bin") held in memory, validated on load.
//
// File layout (little-endian):
//   int32 header[7] = dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
//     (vocab_size < 0 means the classifier is stored separately after the other weights)
//   fp32 token_embedding [vocab, dim]
//   fp32 rms_att [L, dim], wq [L, dim, dim], wk [L, kv_dim, dim], wv [L, kv_dim, dim],
//        wo [L, dim, dim], rms_ffn [L, dim], w1 [L, hidden, dim], w2 [L, dim, hidden],
//        w3 [L, hidden, dim], rms_final [dim]
//   fp32 freq_cis_real [seq_len, head_dim/2], freq_cis_imag [seq_len, head_dim/2] (unused: RoPE
//        is recomputed, see transformer.h)
//   fp32 classifier [vocab, dim] only when vocab_size < 0; otherwise it is token_embedding.
// Matrices are row-major [out, in]: y[i] = sum_j W[i*in + j] * x[j].
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tqref::trace {

struct ModelConfig {
  int dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0,
      seq_len = 0;
  bool shared_classifier = true;
  int head_dim() const { return dim / n_heads; }
  int kv_dim() const { return head_dim() * n_kv_heads; }
};

// Number of fp32 values the file must hold after the header for this configuration.
uint64_t checkpoint_float_count(const ModelConfig& c);

// Checks header values (each positive, within limits that keep every size in int range, heads
// dividing dim, kv heads dividing heads, even head_dim for RoPE pairs). Throws std::invalid_argument
// naming `where`, the field, its value and the allowed range.
void validate_config(const ModelConfig& c, const std::string& where);

struct Checkpoint {
  std::string path;
  std::string sha256;  // of the whole file
  ModelConfig cfg;
  std::vector<float> weights;  // everything after the header
  // Offsets (in floats) into `weights`; per-layer tensors are contiguous over layers.
  uint64_t tok_emb = 0, rms_att = 0, wq = 0, wk = 0, wv = 0, wo = 0, rms_ffn = 0, w1 = 0, w2 = 0,
           w3 = 0, rms_final = 0, classifier = 0;
  const float* at(uint64_t off) const { return weights.data() + off; }
};

// Reads and validates a checkpoint: header values, file size equal to what the header implies, and
// every weight finite. Throws std::invalid_argument with a message naming the file.
Checkpoint load_checkpoint(const std::string& path);

}  // namespace tqref::trace
