// Branch-free evaluation of the EX2 unit (tqref/ex2.h, tqref/ex2_datapath.h), written once for any lane
// type U: uint32_t in the scalar model, a GCC vector of uint32_t (F: of float) in the SIMD decode
// path (ex2_batch_impl.h). Everything is integer arithmetic on bit patterns, plus the two float
// multiplies of EXPF, so every lane type gives the same bits. Internal to model/.
// Every function is always inlined: the SIMD code includes this header outside its
// `#pragma GCC target` region (simd_kernels.h), so its callers compile the bodies for their own
// instruction set and no out-of-line copy exists for a vector type.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>

#include "tqref/ex2.h"
#include "tqref/numeric.h"
#include "vec_ops.h"

#define TQREF_EX2_INLINE [[gnu::always_inline]] inline

namespace tqref::ex2_eval {

template <class U> TQREF_EX2_INLINE U splat(uint32_t v) { return U{} + v; }

// t[i] per lane. The scalar overload is the plain load; vectors gather lane by lane.
TQREF_EX2_INLINE uint32_t lookup(const uint32_t* t, uint32_t i) { return t[i]; }
template <class U> TQREF_EX2_INLINE U lookup(const uint32_t* t, U i) {
  U r;
  for (unsigned j = 0; j < sizeof(U) / 4; ++j) r[j] = t[i[j]];
  return r;
}

// t[i] per lane for a table of kEx2Segments = 64 entries (i < 64): with 8 or 16 lanes, from
// two-table shuffles over the table held in registers (one permute instruction each on AVX2 /
// AVX-512) instead of a load per lane.
// Entries q*2L .. q*2L+2L-1 of t (L lanes) picked by i mod 2L: one two-table shuffle.
template <class U> TQREF_EX2_INLINE U lookup64_part(const uint32_t* t, U i, uint32_t q) {
  constexpr uint32_t kLanes = sizeof(U) / 4, kPair = 2 * kLanes;
  typedef int32_t I __attribute__((vector_size(sizeof(U))));
  U a, b;
  std::memcpy(&a, t + q * kPair, sizeof a);
  std::memcpy(&b, t + q * kPair + kLanes, sizeof b);
  return tqref::vec::permute2(a, b, I(i & (kPair - 1)));
}
TQREF_EX2_INLINE uint32_t lookup64(const uint32_t* t, uint32_t i) { return t[i]; }
template <class U> TQREF_EX2_INLINE U lookup64(const uint32_t* t, U i) {
  constexpr unsigned kLanes = sizeof(U) / 4;
  if constexpr (kLanes == 8 || kLanes == 16) {
    constexpr uint32_t kPair = 2 * kLanes;  // entries one two-table shuffle covers
    U r = lookup64_part(t, i, 0);
    for (uint32_t q = 1; q < kEx2Segments / kPair; ++q)
      r = ((i / kPair) == q) ? lookup64_part(t, i, q) : r;
    return r;
  } else {
    return lookup(t, i);
  }
}

// One row of the part of X^2's folded partial-product array below the cut: X_i at column 2i (if
// 2i < cut) and X_i*X_j, j > i, at column i + j + 1 (if j <= cut - 2 - i).
template <class U> TQREF_EX2_INLINE U dropped_row(U X, uint32_t i, uint32_t cut) {
  const uint32_t lo = i + 1, hi = cut >= i + 2 ? cut - 2 - i : 0;  // j in [lo, hi] dropped
  const uint32_t mask = hi >= lo ? ((2u << hi) - 1u) & ~((1u << lo) - 1u) : 0u;
  const U row = (1u << (2 * i)) + ((X & mask) << lo);
  return (0u - ((X >> i) & 1u)) & row;
}

// Step 3 of the datapath: S = (sum of the partial-product bits of X^2 in columns >= cut) >> cut.
// Every kept bit has weight >= 2^cut, so with `dropped` the sum of the bits below the cut,
// X^2 = S * 2^cut + dropped exactly and S = floor(X^2 / 2^cut) - floor(dropped / 2^cut).
// X < 2^17 makes X^2 a 34-bit number, so floor(X^2 / 2^9) is built from X = xh * 2^9 + xl in 32
// bits; dropped < 2^32 for every cut <= kEx2MaxCut. sm_90's cut 19 (the only one measured) gets
// rows with constant masks and shifts; other cuts loop.
template <class U> TQREF_EX2_INLINE U truncated_square(U X, uint32_t cut) {
  const U xh = X >> 9, xl = X & 511u;
  const U sq9 = ((xh * xh) << 9) + 2u * xh * xl + ((xl * xl) >> 9);  // floor(X^2 / 2^9)
  U dropped = splat<U>(0);
  if (cut == 19) {
    for (uint32_t i = 0; i < 10; ++i) dropped += dropped_row(X, i, 19);
    return (sq9 >> 10) - (dropped >> 19);
  }
  for (uint32_t i = 0; 2 * i < cut; ++i) dropped += dropped_row(X, i, cut);
  return (sq9 >> (cut - 9)) - (dropped >> cut);
}

// The datapath's coefficients in the form datapath_fraction reads (see there).
TQREF_EX2_INLINE Ex2EvalData prepare(const Ex2Datapath& d) {
  Ex2EvalData e;
  e.cut = d.cut;
  for (uint32_t s = 0; s < kEx2Segments; ++s) {
    e.hi[s] = d.seg[s].c0 >> 2;
    e.lo[s] = ((d.seg[s].c0 & 3u) << kEx2C0Shift) + d.bias;
    e.c1[s] = d.seg[s].c1;
    e.c2[s] = d.seg[s].c2;
  }
  return e;
}

// F[k], k in [0, 2^23], by the datapath (steps 1-6 of tqref/ex2_datapath.h). Y is a 39-bit sum,
// so Y >> 15 is taken in 32 bits with C0 * 2^13 = (C0 >> 2) * 2^15 + (C0 & 3) * 2^13 and
// C1 * X = C1 * (X >> 15) * 2^15 + C1 * (X & 0x7FFF): eval.hi[s] = C0 >> 2, eval.lo[s] =
// ((C0 & 3) << 13) + bias, and lo + C1 * (X & 0x7FFF) + C2 * S < 2^32 for every admitted cut.
template <class U> TQREF_EX2_INLINE U datapath_fraction(const Ex2EvalData& d, U k) {
  const U jp = ~k & 0x7FFFFFu;
  const U seg = jp >> 17, X = jp & 0x1FFFFu;
  const U S = truncated_square(X, d.cut);
  const U c1 = lookup64(d.c1.data(), seg);
  const U low = lookup64(d.lo.data(), seg) + c1 * (X & 0x7FFFu) + lookup64(d.c2.data(), seg) * S;
  const U M = lookup64(d.hi.data(), seg) + c1 * (X >> 15) + (low >> 15);
  U r = 0x3F000000u | M;
  r = (k == 0u) ? splat<U>(0x3F800000u) : r;         // fraction 0: exactly 1.0
  return (k == 0x800000u) ? splat<U>(0x3F000000u) : r;  // k = 2^23: exactly 0.5
}

// F[k] from the profile: the datapath, or the measured table.
template <class U> TQREF_EX2_INLINE U fraction(const Ex2EvalData& d, U k) {
  return d.table ? lookup(d.table, k) : datapath_fraction(d, k);
}

// EX2 on bit patterns, branch-free (the structure rules of tqref/ex2.h; Ex2Profile::ex2 is the
// readable form). |x| * 2^23 as a fixed-point number fx (exact for |x| >= 1, truncated below):
// integer part q scales the result's exponent, the 23-bit fraction k indexes F. Inputs must be
// non-positive or NaN (callers check).
template <class U> TQREF_EX2_INLINE U ex2_bits(const Ex2EvalData& d, U b) {
  const U e = (b >> 23) & 0xFFu, m = b & 0x7FFFFFu, sig = m | 0x800000u;
  const U up = e - 127u, down = 127u - e;                       // shift counts, wrapped
  const U fx = (e >= 127u) ? sig << (up < 7u ? up : splat<U>(7u))
                           : sig >> (down < 31u ? down : splat<U>(31u));
  U r = fraction(d, fx & 0x7FFFFFu) - ((fx >> 23) << 23);
  r = ((e > 133u) | (fx > (126u << 23))) ? splat<U>(0u) : r;   // below -126, -Inf: +0
  r = (e == 0u) ? splat<U>(0x3F800000u) : r;                    // +-0, subnormals (ftz): 1.0
  return ((e == 0xFFu) & (m != 0u)) ? splat<U>(0x7FFFFFFFu) : r;  // NaN: canonical
}

// EXPF of docs/spec.md section 5 on lanes of F (float or a float vector; U the matching uint32 lanes):
// y = f32(x * log2 e); EX2(y) for y >= -126 or NaN, else f32(r * r) with r = EX2(f32(y * 0.5)).
template <class F, class U> TQREF_EX2_INLINE F expf(const Ex2EvalData& d, F x) {
  const F y = x * f32_from_bits(0x3FB8AA3Bu);  // log2(e) as the kernel's literal
  const auto small = y < -126.0f;  // false for NaN
  const F r = tqref::vec::bit_cast<F>(ex2_bits(d, tqref::vec::bit_cast<U>(small ? y * 0.5f : y)));
  return small ? r * r : r;
}

}  // namespace tqref::ex2_eval
