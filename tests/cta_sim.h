// Host simulation of one GQA decode CTA (test_gqa_decode_sim): 256 host threads per CTA (one per
// GPU thread), barriers standing in for __syncwarp and __syncthreads, an exchange array for the
// shuffles, EXPF from the measured sm_90 EX2 profile.
// HostOps is the host Ops policy of kernels/gqa/gqa_decode_core.h.
#pragma once
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "../kernels/gqa/gqa_decode_core.h"
#include "io/ex2_profile_io.h"
#include "tqref/numeric.h"

namespace tqref::test {

inline const Ex2Profile& ex2() {
  static const Ex2Profile prof = load_ex2_profile_for_arch("sm_90");
  return prof;
}

// Lock-step state of one simulated CTA.
struct CtaSim {
  std::barrier<> cta{256};
  std::vector<std::unique_ptr<std::barrier<>>> warp;
  float xchg[256];
  CtaSim() {
    for (int w = 0; w < 8; ++w) warp.push_back(std::make_unique<std::barrier<>>(32));
  }
};

inline thread_local CtaSim* t_cta = nullptr;
// The K pool of the case being simulated (read by every simulated thread).
inline const uint8_t* g_k_lo = nullptr;
inline const uint8_t* g_k_hi = nullptr;
inline thread_local uint32_t t_tid = 0;
// THRESH of the simulated build (a compile-time constant on the GPU): tests of other thresholds
// set it together with DecodeParams::threshold of the model.
inline float g_thresh = kSparseVThreshold;

// Host Ops: IEEE binary32 arithmetic (-ffp-contract=off), CUDA fmaxf semantics, the profile's
// EXPF, shuffles through the exchange array between two warp barriers.
struct HostOps {
  static float add(float a, float b) { return a + b; }
  static float sub(float a, float b) { return a - b; }
  static float mul(float a, float b) { return a * b; }
  static float div(float a, float b) { return a / b; }
  static float fmax(float a, float b) { return std::fmax(a, b); }
  static float thresh() { return g_thresh; }
  float expf(float x) const { return ex2().expf(x); }
  static float exchange(float v, uint32_t src_lane) {
    const uint32_t w = t_tid / 32;
    t_cta->xchg[t_tid] = v;
    t_cta->warp[w]->arrive_and_wait();
    const float r = t_cta->xchg[w * 32 + src_lane];
    t_cta->warp[w]->arrive_and_wait();
    return r;
  }
  static float shfl_xor(float v, uint32_t off) { return exchange(v, (t_tid % 32) ^ off); }
  static float shfl_idx(float v, uint32_t src) { return exchange(v, src); }
  void sync_warp() const { t_cta->warp[t_tid / 32]->arrive_and_wait(); }
  void sync_cta() const { t_cta->cta.arrive_and_wait(); }
  void atomic_add(unsigned long long* p, unsigned long long v) const {
    std::atomic_ref<unsigned long long>(*p).fetch_add(v);
  }
  static int32_t load_i32(const int32_t* p) { return *p; }
  static uint8_t load_u8(const uint8_t* p) { return *p; }
  static uint16_t load_u16(const uint16_t* p) { return *p; }
  static uint32_t load_u32(const uint8_t* p) {
    if ((reinterpret_cast<uintptr_t>(p) & 3u) != 0) {  // the GPU would fault (misaligned)
      std::fprintf(stderr, "load_u32 of a misaligned address\n");
      std::abort();
    }
    uint32_t w;
    std::memcpy(&w, p, 4);
    return w;
  }
  // Prefetches must stay inside the K pool (catches a next-tile address built from the wrong
  // block, slot or head: on the GPU a hint to a wild address would pass unnoticed).
  static void prefetch_l2(const void* p) {
    const auto* b = static_cast<const uint8_t*>(p);
    if (b < g_k_lo || b + 8 > g_k_hi) {
      std::fprintf(stderr, "prefetch outside the K pool\n");
      std::abort();
    }
  }
  static bool aligned4(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 3u) == 0; }
  static void store_u16(uint16_t* p, uint16_t v) { *p = v; }
  static bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
  static float bf16(uint16_t h) { return bf16_to_f32(h); }
  static uint16_t to_bf16(float x) { return f32_to_bf16(x); }
  static float fp8(uint32_t b) { return fp8e4m3_to_f32(static_cast<uint8_t>(b)); }
  template <Format F> static float codebook16(uint32_t i) {
    return f16_to_f32(f32_to_f16(traits(F).codebook[i]));
  }
  // The q read as one vector access: on the GPU it needs 16-byte alignment, so a misaligned one
  // aborts here.
  static void lds4(const float* p, float* out) {
    if ((reinterpret_cast<uintptr_t>(p) & 15u) != 0) {
      std::fprintf(stderr, "misaligned 16-byte shared-memory vector access\n");
      std::abort();
    }
    std::memcpy(out, p, 16);
  }
  template <uint32_t VEC> static void load_k_raw(const uint16_t* p, bool, uint32_t (&w)[VEC / 2]) {
    for (uint32_t i = 0; i < VEC / 2; ++i) w[i] = uint32_t(p[2 * i]) | (uint32_t(p[2 * i + 1]) << 16);
  }
};

}  // namespace tqref::test
