// The reference-order kernels written with plain operators, as the published kernels are
// (docs/mutants.md, "Build-flag mutants"): every arithmetic step of ContractRules is `a * b`,
// `a + b`, `a / b`, `sqrtf(a)` or `__expf(x)`, so nvcc's flags decide the instructions. Built with
// the contract's flags (--fmad=false -ftz=false -prec-div=true -prec-sqrt=true) it must give
// the reference bits (mutant 27, the control, which proves this source itself right); built with
// nvcc's default (FMA contraction), --use_fast_math, -ftz=true, -prec-div=false or
// -prec-sqrt=false (mutants 22-26) it ships different bits, which conformance must catch.
#pragma once
#include <cstdint>

#include "../../reference/contract_rules.cuh"

namespace tqref::gpu::mutant {

struct plain_operators : ContractRules {
  static __device__ __forceinline__ float f32_mul(float a, float b) { return a * b; }
  static __device__ __forceinline__ float f32_add(float a, float b) { return a + b; }
  static __device__ __forceinline__ float f32_sub(float a, float b) { return a - b; }
  static __device__ __forceinline__ float f32_div(float a, float b) { return a / b; }
  static __device__ __forceinline__ float f32_sqrt(float a) { return sqrtf(a); }
  // The composite steps, as a published kernel writes them (nvcc contracts each `a*b + c`
  // into an FMA unless --fmad=false).
  static __device__ __forceinline__ float add_square(float acc, float x) { return acc + x * x; }
  static __device__ __forceinline__ float add_pair_products(float part, float q0, float k0,
                                                            float q1, float k1) {
    return part + (q0 * k0 + q1 * k1);
  }
  static __device__ __forceinline__ float butterfly_sum(float part) {
#pragma unroll
    for (uint32_t off = 16; off >= 1; off >>= 1) part += __shfl_xor_sync(0xFFFFFFFFu, part, off);
    return part;
  }
  // EXPF is the published kernel's __expf (docs/spec.md section 5; common/expf.cuh writes out
  // what nvcc makes of it without -ftz: the product, then EX2 with the split below -126).
  // -ftz=true and --use_fast_math drop the split.
  static __device__ __forceinline__ float expf(float x) { return __expf(x); }
  static __device__ __forceinline__ float batch_accumulate(float o, float ef, float v) {
    return o + ef * v;
  }
  static __device__ __forceinline__ float single_update(float o, float eo, float en, float v) {
    return o * eo + en * v;
  }
};

// One name per build (mutants.tsv: the flags column says which nvcc flags it is built with).
using plain_nvcc_default = plain_operators;  // 22: no flags: --fmad=true contracts a*b + c
using plain_fast_math = plain_operators;     // 23: --use_fast_math
using plain_ftz = plain_operators;           // 24: -ftz=true
using plain_prec_div = plain_operators;      // 25: -prec-div=false
using plain_prec_sqrt = plain_operators;     // 26: -prec-sqrt=false
using plain_ieee = plain_operators;          // 27: the contract's flags (control: must pass)

}  // namespace tqref::gpu::mutant
