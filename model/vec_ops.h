// Operations on GCC vector types that the SIMD paths use from headers included outside their
// `#pragma GCC target` regions (simd_isa_includes.h). Each is always inlined, so it is compiled
// for its caller's instruction set: a function of the baseline target that takes or returns a
// vector wider than the baseline's registers has another ABI than its caller in the region, and
// calling it (as unoptimised builds do, e.g. the asan preset) passes garbage. For that reason
// std::bit_cast (not always inlined) and lambdas defined outside the regions must not see such
// vectors. Internal to model/.
//  - bit_cast: std::bit_cast's result, always inlined;
//  - permute / permute2: lane permutes with run-time indices, for both compilers the project
//    builds with: GCC's __builtin_shuffle, and under clang (the fuzz build, which has no
//    run-time-index shuffle builtin) a lane loop with the same result. Indices wrap as GCC's do:
//    modulo the lane count (one source) or twice it (two sources).
#pragma once
#include <cstring>

namespace tqref::vec {

template <class To, class From> [[gnu::always_inline]] inline To bit_cast(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of one size");
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}

template <class V, class I> [[gnu::always_inline]] inline V permute(V a, I idx) {
#if defined(__clang__)
  constexpr int n = sizeof(V) / sizeof(a[0]);
  V r;
  for (int j = 0; j < n; ++j) r[j] = a[idx[j] & (n - 1)];
  return r;
#else
  return __builtin_shuffle(a, idx);
#endif
}

template <class V, class I> [[gnu::always_inline]] inline V permute2(V a, V b, I idx) {
#if defined(__clang__)
  constexpr int n = sizeof(V) / sizeof(a[0]);
  V r;
  for (int j = 0; j < n; ++j) {
    const int k = idx[j] & (2 * n - 1);
    r[j] = k < n ? a[k] : b[k - n];
  }
  return r;
#else
  return __builtin_shuffle(a, b, idx);
#endif
}

}  // namespace tqref::vec
