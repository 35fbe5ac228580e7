#include "capture/transformer.h"

#include <cmath>
#include <stdexcept>

#include "tqref/numeric.h"

namespace tqref::trace {

namespace {

// Below this many multiply-adds a matmul runs on one thread: a parallel region costs more than
// the work, and a busy machine stalls the barrier (only the classifier, vocab x dim, is above).
constexpr int64_t kParallelMacs = int64_t(1) << 20;

// out[i] = sum_j w[i*n + j] * x[j] for i < d; j ascending (fixed order, see header).
void matmul(float* out, const float* x, const float* w, int n, int d) {
#pragma omp parallel for schedule(static) if (int64_t(n) * d >= kParallelMacs)
  for (int i = 0; i < d; ++i) {
    const float* row = w + int64_t(i) * n;
    float s = 0.0f;
    for (int j = 0; j < n; ++j) s += row[j] * x[j];
    out[i] = s;
  }
}

void rmsnorm(float* out, const float* x, const float* w, int n) {
  float ss = 0.0f;
  for (int j = 0; j < n; ++j) ss += x[j] * x[j];
  ss = 1.0f / std::sqrt(ss / float(n) + kRmsEps);
  for (int j = 0; j < n; ++j) out[j] = w[j] * (ss * x[j]);
}

void softmax(float* x, int n) {
  float mx = x[0];
  for (int i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  for (int i = 0; i < n; ++i) x[i] /= sum;
}

void append_bf16(std::vector<uint16_t>& dst, const float* src, int n) {
  for (int i = 0; i < n; ++i) dst.push_back(f32_to_bf16(src[i]));
}

}  // namespace

void apply_rope(float* x, int n_heads, int head_dim, int pos, float theta) {
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + int64_t(h) * head_dim;
    for (int i = 0; i < head_dim; i += 2) {
      float freq = 1.0f / std::pow(theta, float(i) / float(head_dim));
      float angle = float(pos) * freq;
      float c = std::cos(angle), s = std::sin(angle);
      float a = v[i], b = v[i + 1];
      v[i] = a * c - b * s;
      v[i + 1] = a * s + b * c;
    }
  }
}

Transformer::Transformer(const Checkpoint& ck) : ck_(ck), c_(ck.cfg) {
  x_.resize(size_t(c_.dim));
  xb_.resize(size_t(c_.dim));
  xb2_.resize(size_t(c_.dim));
  hb_.resize(size_t(c_.hidden_dim));
  hb2_.resize(size_t(c_.hidden_dim));
  q_.resize(size_t(c_.dim));
  att_.resize(size_t(c_.n_heads) * size_t(c_.seq_len));
  logits_.resize(size_t(c_.vocab_size));
  size_t cache = size_t(c_.n_layers) * size_t(c_.seq_len) * size_t(c_.kv_dim());
  kcache_.assign(cache, 0.0f);
  vcache_.assign(cache, 0.0f);
}

const std::vector<float>& Transformer::forward(int tok, int pos, CapturedSequence* cap) {
  if (tok < 0 || tok >= c_.vocab_size)
    throw std::invalid_argument("token id " + std::to_string(tok) + " outside 0.." +
                                std::to_string(c_.vocab_size - 1));
  if (pos < 0 || pos >= c_.seq_len)
    throw std::invalid_argument("position " + std::to_string(pos) + " outside 0.." +
                                std::to_string(c_.seq_len - 1) + " (checkpoint seq_len)");
  const int dim = c_.dim, hd = c_.head_dim(), kvd = c_.kv_dim(), hid = c_.hidden_dim;
  const int group = c_.n_heads / c_.n_kv_heads;
  const float scale = 1.0f / std::sqrt(float(hd));
  const float* emb = ck_.at(ck_.tok_emb) + int64_t(tok) * dim;
  std::copy(emb, emb + dim, x_.begin());

  for (int l = 0; l < c_.n_layers; ++l) {
    rmsnorm(xb_.data(), x_.data(), ck_.at(ck_.rms_att) + int64_t(l) * dim, dim);
    float* kc = kcache_.data() + (int64_t(l) * c_.seq_len + pos) * kvd;
    float* vc = vcache_.data() + (int64_t(l) * c_.seq_len + pos) * kvd;
    matmul(q_.data(), xb_.data(), ck_.at(ck_.wq) + int64_t(l) * dim * dim, dim, dim);
    matmul(kc, xb_.data(), ck_.at(ck_.wk) + int64_t(l) * kvd * dim, dim, kvd);
    matmul(vc, xb_.data(), ck_.at(ck_.wv) + int64_t(l) * kvd * dim, dim, kvd);
    apply_rope(q_.data(), c_.n_heads, hd, pos);
    apply_rope(kc, c_.n_kv_heads, hd, pos);
    if (cap) {
      append_bf16(cap->q[size_t(l)], q_.data(), dim);
      append_bf16(cap->k[size_t(l)], kc, kvd);
      append_bf16(cap->v[size_t(l)], vc, kvd);
    }

    for (int h = 0; h < c_.n_heads; ++h) {
      const float* qh = q_.data() + int64_t(h) * hd;
      float* att = att_.data() + int64_t(h) * c_.seq_len;
      const int kvh = h / group;
      const float* kl = kcache_.data() + int64_t(l) * c_.seq_len * kvd + int64_t(kvh) * hd;
      const float* vl = vcache_.data() + int64_t(l) * c_.seq_len * kvd + int64_t(kvh) * hd;
      for (int t = 0; t <= pos; ++t) {
        float s = 0.0f;
        for (int i = 0; i < hd; ++i) s += qh[i] * kl[int64_t(t) * kvd + i];
        att[t] = s * scale;
      }
      softmax(att, pos + 1);
      float* out = xb_.data() + int64_t(h) * hd;
      std::fill(out, out + hd, 0.0f);
      for (int t = 0; t <= pos; ++t)
        for (int i = 0; i < hd; ++i) out[i] += att[t] * vl[int64_t(t) * kvd + i];
    }
    matmul(xb2_.data(), xb_.data(), ck_.at(ck_.wo) + int64_t(l) * dim * dim, dim, dim);
    for (int i = 0; i < dim; ++i) x_[size_t(i)] += xb2_[size_t(i)];

    rmsnorm(xb_.data(), x_.data(), ck_.at(ck_.rms_ffn) + int64_t(l) * dim, dim);
    matmul(hb_.data(), xb_.data(), ck_.at(ck_.w1) + int64_t(l) * hid * dim, dim, hid);
    matmul(hb2_.data(), xb_.data(), ck_.at(ck_.w3) + int64_t(l) * hid * dim, dim, hid);
    for (int i = 0; i < hid; ++i) {
      float a = hb_[size_t(i)];
      hb_[size_t(i)] = a / (1.0f + std::exp(-a)) * hb2_[size_t(i)];  // silu(a) * gate
    }
    matmul(xb_.data(), hb_.data(), ck_.at(ck_.w2) + int64_t(l) * dim * hid, hid, dim);
    for (int i = 0; i < dim; ++i) x_[size_t(i)] += xb_[size_t(i)];
  }
  rmsnorm(x_.data(), x_.data(), ck_.at(ck_.rms_final), dim);
  matmul(logits_.data(), x_.data(), ck_.at(ck_.classifier), dim, c_.vocab_size);
  return logits_;
}

CapturedSequence generate_greedy(const Checkpoint& ck, const Tokenizer& tok,
                                 const std::string& prompt, int max_new) {
  const ModelConfig& c = ck.cfg;
  CapturedSequence s;
  s.prompt = prompt;
  s.token_ids = tok.encode(prompt, /*bos=*/true);
  s.prompt_tokens = int(s.token_ids.size());
  if (max_new < 0)
    throw std::invalid_argument("--tokens = " + std::to_string(max_new) + "; must be >= 0");
  if (int64_t(s.prompt_tokens) + max_new > c.seq_len)
    throw std::invalid_argument("prompt \"" + prompt + "\" has " + std::to_string(s.prompt_tokens) +
                                " tokens; with --tokens " + std::to_string(max_new) + " that is " +
                                std::to_string(s.prompt_tokens + max_new) +
                                " positions, more than the checkpoint's seq_len " +
                                std::to_string(c.seq_len));
  s.q.resize(size_t(c.n_layers));
  s.k.resize(size_t(c.n_layers));
  s.v.resize(size_t(c.n_layers));
  s.stop_reason = "max_tokens";
  Transformer tf(ck);
  for (int pos = 0; pos < int(s.token_ids.size()); ++pos) {
    const std::vector<float>& logits = tf.forward(s.token_ids[size_t(pos)], pos, &s);
    bool last_prompt_or_later = pos + 1 >= s.prompt_tokens;
    if (!last_prompt_or_later || int(s.token_ids.size()) - s.prompt_tokens >= max_new) continue;
    int next = 0;
    for (int i = 1; i < c.vocab_size; ++i)
      if (logits[size_t(i)] > logits[size_t(next)]) next = i;
    if (next == kTokBos || next == kTokEos) {
      s.stop_reason = next == kTokBos ? "bos" : "eos";
      break;
    }
    s.token_ids.push_back(next);
  }
  std::vector<int> gen(s.token_ids.begin() + s.prompt_tokens, s.token_ids.end());
  s.generated_text = tok.decode(gen, s.token_ids[size_t(s.prompt_tokens) - 1]);
  return s;
}

}  // namespace tqref::trace
