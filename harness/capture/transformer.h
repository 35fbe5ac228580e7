// Forward pass of a Llama-2-style decoder (llama2.c checkpoint) in fp32, one token at a time,
// capturing per layer and position the attention inputs as an engine's KV cache sees them.
//
// Per layer: x += Wo * attn(RoPE(Wq*rms(x)), RoPE(Wk*rms(x)), Wv*rms(x)); x += W2*(silu(W1*rms(x)) .*
// W3*rms(x)). RMSNorm: w .* (x / sqrt(mean(x^2) + 1e-5)). Attention is causal, scaled by
// 1/sqrt(head_dim), with GQA head kvh = h / (n_heads / n_kv_heads).
// Every dot product sums j = 0, 1, ... in order, so results do not depend on the thread count
// (OpenMP splits the rows of large matrices only).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "capture/checkpoint.h"
#include "capture/tokenizer.h"

namespace tqref::trace {

constexpr float kRopeTheta = 10000.0f;
constexpr float kRmsEps = 1e-5f;

// Rotates adjacent pairs (x[2i], x[2i+1]) of each of `n_heads` heads of `head_dim` values by the
// angle pos * theta^(-2i/head_dim):  (a, b) -> (a cos - b sin, a sin + b cos), fp32.
void apply_rope(float* x, int n_heads, int head_dim, int pos, float theta = kRopeTheta);

// Captured attention inputs of one sequence, bf16 bits (tqref::f32_to_bf16 of the fp32 values).
// q[l] is [T, n_heads, head_dim]; k[l] and v[l] are [T, n_kv_heads, head_dim]; q and k after RoPE.
struct CapturedSequence {
  std::string prompt;
  std::vector<int> token_ids;       // [T]: the prompt's tokens (BOS first), then generated ones
  int prompt_tokens = 0;            // how many of token_ids came from the prompt
  std::string generated_text;       // decode of the generated tokens (after the prompt)
  std::string stop_reason;          // "max_tokens", or "eos"/"bos" when the model ended early
  std::vector<std::vector<uint16_t>> q, k, v;  // [n_layers][T * heads * head_dim]
  int num_tokens() const { return int(token_ids.size()); }
};

class Transformer {
 public:
  explicit Transformer(const Checkpoint& ck);
  // Runs token `tok` at position `pos` (positions 0, 1, ... in order; pos < seq_len) and returns
  // the logits [vocab]. When `cap` is given, appends this position's q, k, v for every layer.
  const std::vector<float>& forward(int tok, int pos, CapturedSequence* cap);

 private:
  const Checkpoint& ck_;
  ModelConfig c_;
  std::vector<float> x_, xb_, xb2_, hb_, hb2_, q_, att_, logits_;
  std::vector<float> kcache_, vcache_;  // [L, seq_len, kv_dim]
};

// Greedy generation with capture: encodes `prompt` (BOS first), runs every prompt token, then
// appends argmax tokens (lowest id on ties) until `max_new` are generated or the model emits BOS or
// EOS (not appended). Every appended token is also run, so T = prompt tokens + generated tokens and
// q/k/v cover all T positions. Throws std::invalid_argument if T could exceed seq_len.
CapturedSequence generate_greedy(const Checkpoint& ck, const Tokenizer& tok,
                                 const std::string& prompt, int max_new);

}  // namespace tqref::trace
