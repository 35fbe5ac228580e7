// Lane permutes of GCC vector types with run-time indices, for both compilers the project builds
// with: GCC's __builtin_shuffle, and under clang (the fuzz and sanitizer builds, which have no
// run-time-index shuffle builtin) a lane loop with the same result. Indices wrap as GCC's do:
// modulo the lane count (one source) or twice it (two sources). Always inlined, so the callers
// compile them for their own instruction set (fast_isa_includes.h). Internal to model/.
#pragma once

namespace tqref::vec {

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
