// EX2, EXPF and the fraction map on kW lanes: ex2_eval.h's functions on VU / VF. Part of
// simd_isa_impl.h (included inside an ISA namespace; no includes of its own).

// fn on every kW-lane block of x[0 .. n) into y; the last partial block is padded with +0.0,
// an input every function here accepts.
template <class Fn> void over_lanes(const float* x, float* y, size_t n, Fn fn) {
  size_t i = 0;
  for (; i + kW <= n; i += kW) vstore(y + i, fn(vload<VF>(x + i)));
  if (i == n) return;
  float in[kW] = {}, out[kW];
  std::memcpy(in, x + i, (n - i) * sizeof(float));
  vstore(out, fn(vload<VF>(in)));
  std::memcpy(y + i, out, (n - i) * sizeof(float));
}

void ex2_lanes(const Ex2EvalData& d, const float* x, float* y, size_t n) {
  over_lanes(x, y, n, [&](VF v) { return tqref::vec::bit_cast<VF>(ex2_eval::ex2_bits(d, tqref::vec::bit_cast<VU>(v))); });
}

void expf_lanes(const Ex2EvalData& d, const float* x, float* y, size_t n) {
  over_lanes(x, y, n, [&](VF v) { return ex2_eval::expf<VF, VU>(d, v); });
}

void fraction_lanes(const Ex2EvalData& d, uint32_t first, uint32_t n, uint32_t* out) {
  uint32_t i = 0;
  for (; i + kW <= n; i += kW)
    vstore(out + i, ex2_eval::fraction(d, VU(kLaneIndex) + (first + i)));
  for (; i < n; ++i) out[i] = ex2_eval::fraction(d, first + i);
}
