// The writer's group quantiser on kW groups at a time (docs/performance.md, "Writer model").
// Part of simd_isa_impl.h (included inside an ISA namespace; no includes of its own).
//
// Lane g holds group g: every step of docs/spec.md section 4 is then the scalar step per lane, in the
// same order (the sums over the 16 elements stay sequential), as quantize_groups computes it.
// Codes are counted as the spec defines them (bounds <= y); quantize.cpp's binary search equals
// that count. The per-group square roots, the scale and its fp8 encoding stay scalar.

void writer_v_row(const FormatTraits& t, const uint16_t* vrow, uint32_t n, uint8_t* codes,
                  uint8_t* scales) {
  const uint32_t groups = n / kGroupSize, b = t.bits;
  alignas(64) float cb[16] = {};  // fp32 codebook, zero past `levels` (never selected)
  std::copy_n(t.codebook, t.levels, cb);
  for (uint32_t g0 = 0; g0 < groups; g0 += kW) {
    const uint32_t count = std::min<uint32_t>(kW, groups - g0);
    // x[i] lane g = element i of group g0 + g, as f32; lanes past `count` are zeros.
    alignas(64) uint32_t tr[kGroupSize][kW] = {};
    for (uint32_t g = 0; g < count; ++g)
      for (uint32_t i = 0; i < kGroupSize; ++i) tr[i][g] = uint32_t(vrow[(g0 + g) * kGroupSize + i]) << 16;
    VF x[kGroupSize];
    for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = tqref::vec::bit_cast<VF>(vload<VU>(tr[i]));
    VF nsq{}, amax{};
    for (uint32_t i = 0; i < kGroupSize; ++i) nsq = nsq + x[i] * x[i];  // 1. --fmad=false
    for (uint32_t i = 0; i < kGroupSize; ++i) {                      // 2. fmaxf from 0
      const VF a = tqref::vec::bit_cast<VF>(tqref::vec::bit_cast<VU>(x[i]) & 0x7FFFFFFFu);  // fabs
      amax = (a > amax) ? a : amax;  // a NaN a fails the compare, as fmaxf drops it
    }
    const VF inv = (amax > 1e-12f) ? vsplat<VF>(t.max) / amax : vsplat<VF>(1.0f);  // 3.
    VU c[kGroupSize];
    VF rsq{};
    for (uint32_t i = 0; i < kGroupSize; ++i) {
      const VF y = x[i] * inv;                                    // 4. index of y
      VU k{};
      for (uint32_t j = 0; j + 1 < t.levels; ++j) k -= VU(t.bounds[j] <= y);  // true is -1
      c[i] = k;
      const VF cv = lookup16(cb, k);                              // 5. CB[c]^2, in order
      rsq = rsq + cv * cv;
    }
    for (uint32_t g = 0; g < count; ++g) {                        // 6.-7. as quantize_groups
      const float rn = std::sqrt(rsq[g]);
      float s = rn > 1e-10f ? std::sqrt(nsq[g]) / rn : amax[g] / t.max;
      if (s > 448.0f) s = 448.0f;
      scales[g0 + g] = f32_to_fp8e4m3_satfinite(s);
    }
    VU lo{}, hi{};  // code k at bits k*b of the group's little-endian 2b bytes
    for (uint32_t i = 0; i < 8; ++i) {
      lo |= c[i] << (i * b);
      hi |= c[8 + i] << (i * b);
    }
    for (uint32_t g = 0; g < count; ++g) {
      const uint64_t word = uint64_t(lo[g]) | uint64_t(hi[g]) << (8 * b);
      std::memcpy(codes + uint64_t(g0 + g) * 2 * b, &word, 2 * b);
    }
  }
}
