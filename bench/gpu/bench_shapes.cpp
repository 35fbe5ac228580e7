#include "bench/gpu/bench_shapes.h"

#include <stdexcept>

namespace tqref::bench {

namespace {

DecodeShape decode_shape(Format f, uint32_t hdim, uint32_t seqs, uint32_t qh, uint32_t kvh, uint32_t L,
                         float q_sigma, std::string model = "") {
  DecodeShape s;
  s.format = f;
  s.hdim = hdim;
  s.num_seqs = seqs;
  s.num_q_heads = qh;
  s.num_kv_heads = kvh;
  s.seq_len = L;
  s.q_sigma = q_sigma;
  s.model = std::move(model);
  return s;
}

WriterShape writer_shape(Format f, uint32_t hdim, uint32_t kvh, uint32_t tokens) {
  WriterShape w;
  w.format = f;
  w.hdim = hdim;
  w.num_kv_heads = kvh;
  w.tokens = tokens;
  return w;
}

std::vector<WriterShape> quick_writers() {
  std::vector<WriterShape> v{writer_shape(Format::turbo3v, 128, 8, 32), writer_shape(Format::turbo3v, 128, 8, 16384)};
  for (const FormatTraits& t : kFormats) v.push_back(writer_shape(t.format, 128, 8, 65536));
  return v;
}

// Head counts (q heads / kv heads, head_dim) from the models' published configurations. Models
// with head_dim 64 (SmolLM, Qwen2.5-0.5B, Llama-3.2-1B) have no decode shape: the contract's
// decoders exist for HDIM 128 and 256 only, and the engine's HDIM=128 build on head_dim 64 is a
// mismatched launch (docs/spec.md section 5), not something to time.
struct ModelHeads {
  const char* name;
  uint32_t q_heads, kv_heads, head_dim;
};
// Every geometry of data/models/attention.yaml with a contract HDIM is here (Llama-3.1-8B stands
// for Qwen3-8B and Mistral-7B, which share 32/8/128), plus Qwen2.5-3B and StarCoder-15B.
constexpr ModelHeads kModels[] = {
    {"Llama-3.2-3B", 24, 8, 128},   // GQA 3
    {"Llama-3.1-8B", 32, 8, 128},   // GQA 4
    {"Qwen2.5-1.5B", 12, 2, 128},   // GQA 6
    {"Qwen2.5-7B", 28, 4, 128},     // GQA 7
    {"Qwen2.5-3B", 16, 2, 128},     // GQA 8
    {"Gemma-2-9B", 16, 8, 256},     // GQA 2, HDIM 256
    {"StarCoder-15B", 48, 1, 128},  // MQA
    {"Qwen3-0.6B", 16, 8, 128},     // GQA 2
    {"gemma-2b-it", 8, 1, 256},     // GQA 8 (MQA), HDIM 256
    {"gemma-2-2b", 8, 4, 256},      // GQA 2, HDIM 256
    {"gemma-3-270m", 4, 1, 256},    // GQA 4 (MQA), HDIM 256
};

std::vector<DecodeShape> full_decode(float q_sigma) {
  std::vector<DecodeShape> v;
  for (const FormatTraits& t : kFormats)
    for (uint32_t hdim : {128u, 256u})
      for (uint32_t L : {1024u, 4096u, 16384u}) v.push_back(decode_shape(t.format, hdim, 32, 32, 8, L, q_sigma));
  for (uint32_t nkv : {32u, 4u, 1u}) v.push_back(decode_shape(Format::turbo3v, 128, 32, 32, nkv, 16384, q_sigma));
  v.push_back(decode_shape(Format::turbo3v, 128, 8, 32, 8, 32768, q_sigma));
  v.push_back(decode_shape(Format::turbo3v, 128, 32, 32, 8, 16384, 4.0f * q_sigma));
  return v;
}

}  // namespace

ShapeSet shape_set(const std::string& name, float q_sigma) {
  ShapeSet s;
  if (name == "quick") {
    for (auto [S, L] : {std::pair{32u, 4096u}, {32u, 16384u}, {8u, 32768u}})
      s.decode.push_back(decode_shape(Format::turbo3v, 128, S, 32, 8, L, q_sigma));
    s.writer = quick_writers();
  } else if (name == "full") {
    s.decode = full_decode(q_sigma);
    s.writer = quick_writers();
    for (uint32_t tokens : {32u, 16384u})
      for (Format f : {Format::turbo2v, Format::turbo4v}) s.writer.push_back(writer_shape(f, 128, 8, tokens));
    s.writer.push_back(writer_shape(Format::turbo3v, 256, 8, 16384));
  } else if (name == "models") {
    for (const ModelHeads& m : kModels)
      s.decode.push_back(decode_shape(Format::turbo3v, m.head_dim, 32, m.q_heads, m.kv_heads, 16384, q_sigma, m.name));
  } else if (name == "writers") {
    s.writer = quick_writers();
    // kv heads x head_dim of Qwen2.5-7B, Qwen2.5-1.5B, SmolLM-135M (3 x 64: the writer has no HDIM),
    // Gemma-2-9B and StarCoder-15B.
    for (auto [kvh, hd] : {std::pair{4u, 128u}, {2u, 128u}, {3u, 64u}, {8u, 256u}, {1u, 128u}})
      s.writer.push_back(writer_shape(Format::turbo3v, hd, kvh, 65536));
  } else {
    throw std::invalid_argument("--set " + name + ": unknown shape set; allowed: " + kShapeSetNames);
  }
  return s;
}

}  // namespace tqref::bench
