// GCC vector types of kW lanes and the few lane operations the SIMD paths use. Included by each
// simd_<isa>.cpp inside its own namespace, after every standard header (it includes none), with
// kW defined there: 16 (AVX-512), 8 (AVX2), 4 (portable: SSE2 on x86-64, NEON on aarch64).
// Vector + and * round each lane exactly as the scalar operation (IEEE, -ffp-contract=off).

template <int W> struct VecTypes;
template <> struct VecTypes<16> {
  typedef float f __attribute__((vector_size(64)));
  typedef uint32_t u __attribute__((vector_size(64)));
  typedef int32_t i __attribute__((vector_size(64)));
};
template <> struct VecTypes<8> {
  typedef float f __attribute__((vector_size(32)));
  typedef uint32_t u __attribute__((vector_size(32)));
  typedef int32_t i __attribute__((vector_size(32)));
};
template <> struct VecTypes<4> {
  typedef float f __attribute__((vector_size(16)));
  typedef uint32_t u __attribute__((vector_size(16)));
  typedef int32_t i __attribute__((vector_size(16)));
};
using VF = VecTypes<kW>::f;  // kW floats
using VU = VecTypes<kW>::u;  // kW uint32
using VI = VecTypes<kW>::i;  // kW int32 (shuffle masks, compare results)

template <class V> inline V vload(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V> inline void vstore(void* p, V v) { std::memcpy(p, &v, sizeof v); }
template <class V, class T> inline V vsplat(T x) { return V{} + x; }

template <size_t... K> constexpr VI mask_of(std::index_sequence<K...>, int mul, int add) {
  return VI{int(K) * mul + add...};
}
inline constexpr VI kLaneIndex = mask_of(std::make_index_sequence<kW>{}, 1, 0);  // 0, 1, ..
inline constexpr VI kEvenLanes = mask_of(std::make_index_sequence<kW>{}, 2, 0);  // 0, 2, ..
inline constexpr VI kOddLanes = mask_of(std::make_index_sequence<kW>{}, 2, 1);   // 1, 3, ..

// Lanes 0, 2, 4, .. (even) or 1, 3, 5, .. (odd) of the 2*kW lanes a then b.
inline VF even_lanes(VF a, VF b) { return tqref::vec::permute2(a, b, kEvenLanes); }
inline VF odd_lanes(VF a, VF b) { return tqref::vec::permute2(a, b, kOddLanes); }

// Lane j + half of a in lane j (j < half); the upper lanes repeat them.
template <int Half> inline VF upper_to_lower(VF a) {
  return tqref::vec::permute(a, mask_of(std::make_index_sequence<kW>{}, 1, 0) % Half + Half);
}

// t[i[j]] in lane j for a table of 16 floats (i < 16): one permute where the ISA has it.
inline VF lookup16(const float* t, VU i) {
  if constexpr (kW == 16) {
    return tqref::vec::permute(vload<VF>(t), VI(i));
  } else if constexpr (kW == 8) {
    return tqref::vec::permute2(vload<VF>(t), vload<VF>(t + 8), VI(i));
  } else {
    VF r;
    for (int j = 0; j < kW; ++j) r[j] = t[i[j]];
    return r;
  }
}
