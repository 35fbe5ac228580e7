#include "capture/checkpoint.h"

#include <cmath>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "io/file_bytes.h"
#include "io/sha256.h"

namespace tqref::trace {

namespace {

constexpr int kHeaderInts = 7;

void check_range(const std::string& where, const char* field, int64_t v, int64_t lo, int64_t hi,
                 const std::string& extra = "") {
  if (v < lo || v > hi)
    throw std::invalid_argument(where + ": header field " + field + " = " + std::to_string(v) +
                                "; allowed " + std::to_string(lo) + ".." + std::to_string(hi) +
                                extra);
}

}  // namespace

uint64_t checkpoint_float_count(const ModelConfig& c) {
  uint64_t L = uint64_t(c.n_layers), d = uint64_t(c.dim), h = uint64_t(c.hidden_dim),
           kv = uint64_t(c.kv_dim()), v = uint64_t(c.vocab_size);
  uint64_t n = v * d;                          // token embedding
  n += L * d + L * d * d + 2 * L * kv * d;     // rms_att, wq, wk, wv
  n += L * d * d + L * d + 3 * L * h * d;      // wo, rms_ffn, w1, w2, w3
  n += d;                                      // rms_final
  n += uint64_t(c.seq_len) * uint64_t(c.head_dim());  // freq_cis real + imag: 2 * seq * hd/2
  if (!c.shared_classifier) n += v * d;
  return n;
}

void validate_config(const ModelConfig& c, const std::string& where) {
  // Limits keep every product below 2^31 elements per matrix and far above any small model.
  check_range(where, "dim", c.dim, 2, 16384);
  check_range(where, "hidden_dim", c.hidden_dim, 1, 65536);
  check_range(where, "n_layers", c.n_layers, 1, 1024);
  check_range(where, "n_heads", c.n_heads, 1, c.dim);
  if (c.dim % c.n_heads != 0)
    throw std::invalid_argument(where + ": header dim = " + std::to_string(c.dim) +
                                " is not a multiple of n_heads = " + std::to_string(c.n_heads));
  if (c.head_dim() % 2 != 0)
    throw std::invalid_argument(where + ": head_dim = dim/n_heads = " + std::to_string(c.head_dim()) +
                                " is odd; RoPE rotates pairs, so it must be even");
  check_range(where, "n_kv_heads", c.n_kv_heads, 1, c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0)
    throw std::invalid_argument(where + ": header n_heads = " + std::to_string(c.n_heads) +
                                " is not a multiple of n_kv_heads = " + std::to_string(c.n_kv_heads));
  check_range(where, "|vocab_size|", c.vocab_size, 259, 1 << 20,
              " (the byte-fallback tokens alone need 259)");
  check_range(where, "seq_len", c.seq_len, 1, 1 << 16);
}

Checkpoint load_checkpoint(const std::string& path) {
  std::string where = "checkpoint " + path;
  std::vector<uint8_t> bytes = read_file_bytes(path, "checkpoint");
  if (bytes.size() < kHeaderInts * 4)
    throw std::invalid_argument(where + ": " + std::to_string(bytes.size()) +
                                " bytes, shorter than the 28-byte header");
  int32_t h[kHeaderInts];
  std::memcpy(h, bytes.data(), sizeof h);
  Checkpoint ck;
  ck.path = path;
  ModelConfig& c = ck.cfg;
  c.dim = h[0]; c.hidden_dim = h[1]; c.n_layers = h[2]; c.n_heads = h[3]; c.n_kv_heads = h[4];
  c.shared_classifier = h[5] > 0;
  c.vocab_size = h[5] == INT32_MIN ? 0 : std::abs(h[5]);
  c.seq_len = h[6];
  validate_config(c, where);

  uint64_t floats = checkpoint_float_count(c);
  uint64_t want = kHeaderInts * 4 + floats * 4;
  if (bytes.size() != want)
    throw std::invalid_argument(where + ": file is " + std::to_string(bytes.size()) +
                                " bytes; the header (dim " + std::to_string(c.dim) + ", hidden " +
                                std::to_string(c.hidden_dim) + ", layers " +
                                std::to_string(c.n_layers) + ", heads " + std::to_string(c.n_heads) +
                                "/" + std::to_string(c.n_kv_heads) + ", vocab " +
                                std::to_string(c.vocab_size) + ", seq_len " +
                                std::to_string(c.seq_len) + ") implies " + std::to_string(want));
  ck.sha256 = sha256_hex(bytes.data(), bytes.size());
  ck.weights.resize(floats);
  std::memcpy(ck.weights.data(), bytes.data() + kHeaderInts * 4, floats * 4);
  for (uint64_t i = 0; i < floats; ++i)
    if (!std::isfinite(ck.weights[i]))
      throw std::invalid_argument(where + ": weight " + std::to_string(i) + " (byte offset " +
                                  std::to_string(kHeaderInts * 4 + 4 * i) + ") is not finite");

  uint64_t L = uint64_t(c.n_layers), d = uint64_t(c.dim), hd = uint64_t(c.hidden_dim),
           kv = uint64_t(c.kv_dim()), v = uint64_t(c.vocab_size), off = 0;
  auto take = [&](uint64_t n) { uint64_t o = off; off += n; return o; };
  ck.tok_emb = take(v * d);
  ck.rms_att = take(L * d);
  ck.wq = take(L * d * d);
  ck.wk = take(L * kv * d);
  ck.wv = take(L * kv * d);
  ck.wo = take(L * d * d);
  ck.rms_ffn = take(L * d);
  ck.w1 = take(L * hd * d);
  ck.w2 = take(L * d * hd);
  ck.w3 = take(L * hd * d);
  ck.rms_final = take(d);
  take(uint64_t(c.seq_len) * uint64_t(c.head_dim()));  // freq_cis_real, freq_cis_imag
  ck.classifier = c.shared_classifier ? ck.tok_emb : take(v * d);
  return ck;
}

}  // namespace tqref::trace
