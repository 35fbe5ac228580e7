// An independent, deliberately naive simulation of one decode CTA for the tests: 8 warps of 32
// explicit lanes, each lane with its own registers (its VEC dims of q and o, and its own copy of
// m and l, as every GPU lane holds them), element reads straight from the pools with
// dequantize_code, and a schedule written as a per-position rule instead of a block walk.
// It shares no code with model/decode.cpp; agreement of the two is evidence for both.
#pragma once
#include <cmath>
#include <cstring>
#include <vector>

#include "decode_case.h"
#include "tqref/contract.h"
#include "tqref/quantize.h"

namespace tqref::test {

struct SimLane {
  float q[8];
  float o[8];
  float m, l;
  float part;
};

class LaneSim {
 public:
  LaneSim(const DecodeCase& dc, const Ex2Profile& ex2, uint32_t s, uint32_t qh)
      : dc_(dc), ex2_(ex2), s_(s), vec_(dc.p.head_dim / 32),
        kvh_(qh / (dc.p.num_q_heads / dc.p.num_kv_heads)) {
    start_ = window_start(uint32_t(dc.lens[s]), dc.p.sliding_window);
    for (auto& w : warps_)
      for (uint32_t ln = 0; ln < 32; ++ln) {
        SimLane& x = w[ln];
        for (uint32_t j = 0; j < vec_; ++j) {
          x.q[j] = bf16_to_f32(dc.q[uint64_t(s) * dc.p.q_stride + qh * dc.p.head_dim + ln * vec_ + j]);
          x.o[j] = 0.0f;
        }
        x.m = -1e30f;
        x.l = 0.0f;
      }
  }

  // Runs the CTA; returns the bf16 row and fills skip[p - start] (1 = V not loaded).
  std::vector<uint16_t> run(std::vector<uint8_t>* skip) {
    const uint32_t L = uint32_t(dc_.lens[s_]);
    skip_.assign(L - start_, 0);
    const uint32_t chunk = (L - start_ + 7) / 8;
    const uint32_t B = dc_.p.block_size;
    for (uint32_t w = 0; w < 8; ++w) {
      const uint32_t lo = start_ + w * chunk;
      const uint32_t hi = std::min(start_ + (w + 1) * chunk, L);
      uint32_t pos = lo;
      while (pos < hi) {
        // A batch starts here iff 4 positions remain both in the range and in this block.
        const uint32_t limit = std::min(hi, (pos / B + 1) * B);
        if (pos + 4 <= limit) {
          batch(w, pos);
          pos += 4;
        } else {
          single(w, pos);
          pos += 1;
        }
      }
    }
    merge();
    std::vector<uint16_t> out(dc_.p.head_dim);
    for (uint32_t ln = 0; ln < 32; ++ln) {
      const SimLane& x = warps_[0][ln];
      const float inv = (x.l > 0.0f) ? 1.0f / x.l : 0.0f;
      for (uint32_t j = 0; j < vec_; ++j) out[ln * vec_ + j] = f32_to_bf16(x.o[j] * inv);
    }
    if (skip) *skip = skip_;
    return out;
  }

 // Dequantised V of the j-th attended position (j = pos - start), head kvh, dim d, read by
  // hand; lets tests weigh V without another pool reader.
  float v_value(uint32_t j, uint32_t d) const { return v_at(start_ + j, d); }

 private:
  int64_t slot(uint32_t pos) const {
    const int32_t blk = dc_.tables[uint64_t(s_) * dc_.p.max_blocks_per_seq + pos / dc_.p.block_size];
    return int64_t(blk) * dc_.p.block_size + pos % dc_.p.block_size;
  }
  float k_at(uint32_t pos, uint32_t d) const {
    const uint64_t e = uint64_t(slot(pos)) * dc_.p.num_kv_heads * dc_.p.head_dim +
                       uint64_t(kvh_) * dc_.p.head_dim + d;
    uint16_t b;
    std::memcpy(&b, dc_.k_cache.data() + e * 2, 2);
    return bf16_to_f32(b);
  }
  float v_at(uint32_t pos, uint32_t d) const {
    const FormatTraits& t = traits(dc_.format);
    const uint64_t n = uint64_t(dc_.p.num_kv_heads) * dc_.p.head_dim;
    const uint64_t e = uint64_t(kvh_) * dc_.p.head_dim + d;
    const int64_t sl = slot(pos);
    const uint64_t blk = uint64_t(sl) / dc_.p.block_size, row = uint64_t(sl) % dc_.p.block_size;
    const uint8_t* base = dc_.v_cache.data() + blk * dc_.p.v_block_stride_bytes;
    const uint8_t* codes = base + row * (n * t.bits / 8) + (e / 16) * t.group_code_bytes;
    const uint8_t sb = base[dc_.p.v_data_section_bytes + row * (n / 16) + e / 16];
    return dequantize_code(t, unpack_group_code(t.bits, codes, uint32_t(e % 16)), sb);
  }

  // Every lane computes its partial sum, then 5 shuffle-xor rounds; returns each lane's score.
  void scores(uint32_t w, uint32_t pos, float* out) {
    auto& lanes = warps_[w];
    for (uint32_t ln = 0; ln < 32; ++ln) {
      float part = 0.0f;
      for (uint32_t i = 0; i < vec_ / 2; ++i) {
        float x0 = lanes[ln].q[2 * i] * k_at(pos, ln * vec_ + 2 * i);
        float x1 = lanes[ln].q[2 * i + 1] * k_at(pos, ln * vec_ + 2 * i + 1);
        float pair = x0 + x1;
        part = part + pair;
      }
      lanes[ln].part = part;
    }
    for (uint32_t off : {16u, 8u, 4u, 2u, 1u}) {
      float old[32];
      for (uint32_t ln = 0; ln < 32; ++ln) old[ln] = lanes[ln].part;
      for (uint32_t ln = 0; ln < 32; ++ln) lanes[ln].part = old[ln] + old[ln ^ off];
    }
    for (uint32_t ln = 0; ln < 32; ++ln) out[ln] = lanes[ln].part * dc_.p.inv_sqrt_d;
  }

  void batch(uint32_t w, uint32_t pos) {
    float sc[4][32];
    for (uint32_t b = 0; b < 4; ++b) scores(w, pos + b, sc[b]);
    for (uint32_t ln = 0; ln < 32; ++ln) {
      SimLane& x = warps_[w][ln];
      float mn = std::fmax(std::fmax(std::fmax(std::fmax(x.m, sc[0][ln]), sc[1][ln]), sc[2][ln]),
                           sc[3][ln]);
      float eo = ex2_.expf(x.m - mn);
      for (uint32_t j = 0; j < vec_; ++j) x.o[j] = x.o[j] * eo;
      x.l = x.l * eo;
      float ef[4];
      for (uint32_t b = 0; b < 4; ++b) {
        ef[b] = ex2_.expf(sc[b][ln] - mn);
        x.l = x.l + ef[b];
      }
      x.m = mn;
      float v[4][8];
      for (uint32_t b = 0; b < 4; ++b) {
        const bool load = ef[b] > dc_.p.threshold;
        for (uint32_t j = 0; j < vec_; ++j) v[b][j] = load ? v_at(pos + b, ln * vec_ + j) : 0.0f;
        if (!load) skip_[pos + b - start_] = 1;
      }
      for (uint32_t b = 0; b < 4; ++b)
        for (uint32_t j = 0; j < vec_; ++j) {
          float t = ef[b] * v[b][j];
          x.o[j] = x.o[j] + t;
        }
    }
  }

  void single(uint32_t w, uint32_t pos) {
    float sc[32];
    scores(w, pos, sc);
    for (uint32_t ln = 0; ln < 32; ++ln) {
      SimLane& x = warps_[w][ln];
      float mn = std::fmax(x.m, sc[ln]);
      float eo = ex2_.expf(x.m - mn);
      float en = ex2_.expf(sc[ln] - mn);
      float lo = x.l * eo;
      x.l = lo + en;
      const bool load = en > dc_.p.threshold;
      if (!load) skip_[pos - start_] = 1;
      for (uint32_t j = 0; j < vec_; ++j) {
        float v = load ? v_at(pos, ln * vec_ + j) : 0.0f;
        float a = x.o[j] * eo;
        float b = en * v;
        x.o[j] = a + b;
      }
      x.m = mn;
    }
  }

  void merge() {
    for (uint32_t stride : {4u, 2u, 1u})
      for (uint32_t w = 0; w < stride; ++w)
        for (uint32_t ln = 0; ln < 32; ++ln) {
          SimLane& a = warps_[w][ln];
          const SimLane& b = warps_[w + stride][ln];
          if (!(b.l > 0.0f)) continue;
          float mn = std::fmax(a.m, b.m);
          float fa = ex2_.expf(a.m - mn);
          float fb = ex2_.expf(b.m - mn);
          float la = a.l * fa, lb = b.l * fb;
          a.l = la + lb;
          a.m = mn;
          for (uint32_t j = 0; j < vec_; ++j) {
            float x = a.o[j] * fa, y = b.o[j] * fb;
            a.o[j] = x + y;
          }
        }
  }

  const DecodeCase& dc_;
  const Ex2Profile& ex2_;
  uint32_t s_, vec_, kvh_;
  uint32_t start_ = 0;
  std::vector<uint8_t> skip_;
  SimLane warps_[8][32];
};

}  // namespace tqref::test
