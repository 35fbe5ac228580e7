// The BF16-K / Turbo-V KV-cache format: the one place where it is described (SPEC v1 sections 2-3).
// Included by the CPU model (C++20) and by the CUDA kernels (nvcc), so everything here is
// constexpr data or TQREF_HD inline functions; the algorithms that use it live on each side.
#pragma once
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define TQREF_HD __host__ __device__ __forceinline__
#else
#define TQREF_HD inline
#endif

namespace tqref {

// Values are quantised in groups of this many consecutive elements of a token's H*D values;
// each group has one fp8 E4M3 scale byte.
inline constexpr uint32_t kGroupSize = 16;
// Default sparse-V threshold: a position whose softmax factor is <= this is skipped.
inline constexpr float kSparseVThreshold = 1e-3f;
// Threads per CTA of every kernel, and warps of the decoder.
inline constexpr uint32_t kThreadsPerBlock = 256;
inline constexpr uint32_t kDecodeWarps = 8;
inline constexpr uint32_t kWarpSize = 32;

enum class Format : uint8_t { turbo2v = 0, turbo3v = 1, turbo4v = 2 };
inline constexpr int kNumFormats = 3;

// Lloyd-Max codebooks and decision bounds exactly as docs/spec.md section 2 writes them (fp32 literals).
// The writer uses CB as fp32; the decoder rounds CB to fp16 first.
inline constexpr float kCodebook2[4] = {-1.5104f, -0.4528f, 0.4528f, 1.5104f};
inline constexpr float kBounds2[3] = {-0.9816f, 0.0f, 0.9816f};
inline constexpr float kCodebook3[8] = {-2.1520f, -1.3440f, -0.7560f, -0.2451f,
                                        0.2451f,  0.7560f,  1.3440f,  2.1520f};
inline constexpr float kBounds3[7] = {-1.748f, -1.050f, -0.501f, 0.0f, 0.501f, 1.050f, 1.748f};
inline constexpr float kCodebook4[16] = {-2.7326f, -2.0690f, -1.6180f, -1.2562f, -0.9423f, -0.6568f,
                                         -0.3880f, -0.1284f, 0.1284f,  0.3880f,  0.6568f,  0.9423f,
                                         1.2562f,  1.6180f,  2.0690f,  2.7326f};
inline constexpr float kBounds4[15] = {-2.4008f, -1.8435f, -1.4371f, -1.0993f, -0.7996f,
                                       -0.5224f, -0.2582f, 0.0f,     0.2582f,  0.5224f,
                                       0.7996f,  1.0993f,  1.4371f,  1.8435f,  2.4008f};

// One row of the traits table. Tests, the generator and the CLI loop over kFormats.
struct FormatTraits {
  Format format;
  const char* name;            // "turbo2v" ...: also the kernel-name suffix
  uint32_t bits;               // b: bits per code
  uint32_t levels;             // 2^b codebook entries
  const float* codebook;       // [levels] ascending, fp32
  const float* bounds;         // [levels-1] ascending, fp32
  float max;                   // MAX = largest codebook magnitude
  uint32_t group_code_bytes;   // 16*b/8 bytes of packed codes per group
};

inline constexpr FormatTraits kFormats[kNumFormats] = {
    {Format::turbo2v, "turbo2v", 2, 4, kCodebook2, kBounds2, 1.5104f, 4},
    {Format::turbo3v, "turbo3v", 3, 8, kCodebook3, kBounds3, 2.1520f, 6},
    {Format::turbo4v, "turbo4v", 4, 16, kCodebook4, kBounds4, 2.7326f, 8},
};
static_assert(kFormats[0].group_code_bytes * 8 == kGroupSize * kFormats[0].bits);
static_assert(kFormats[1].group_code_bytes * 8 == kGroupSize * kFormats[1].bits);
static_assert(kFormats[2].group_code_bytes * 8 == kGroupSize * kFormats[2].bits);

constexpr const FormatTraits& traits(Format f) { return kFormats[static_cast<int>(f)]; }

// Compile-time traits for kernels (templated on the format).
template <Format F> struct FormatConst;
template <> struct FormatConst<Format::turbo2v> {
  static constexpr uint32_t bits = 2, levels = 4;
  static constexpr float max = 1.5104f;
};
template <> struct FormatConst<Format::turbo3v> {
  static constexpr uint32_t bits = 3, levels = 8;
  static constexpr float max = 2.1520f;
};
template <> struct FormatConst<Format::turbo4v> {
  static constexpr uint32_t bits = 4, levels = 16;
  static constexpr float max = 2.7326f;
};

// ---- Packing of one group's 16 codes (docs/spec.md section 2) ----------------------------------------
// turbo4v: byte i = c[2i] | c[2i+1] << 4                      (8 bytes)
// turbo2v: byte i = c[4i] | c[4i+1] << 2 | c[4i+2] << 4 | c[4i+3] << 6   (4 bytes)
// turbo3v: LSB-first bit stream, code k at bits 3k..3k+2 of the 6 bytes (straddles bytes)
//   byte:   |   0    |    1    |   2    |   3    |    4    |   5    |
//   codes:  0 0 0 1 1 1 2 2 | 2 3 3 3 4 4 4 5 | 5 5 6 6 6 7 7 7 | (codes 8..15 repeat in bytes 3..5)
TQREF_HD void pack_group_codes(uint32_t bits, const uint8_t (&c)[kGroupSize], uint8_t* out) {
  for (uint32_t i = 0; i < bits * 2; ++i) out[i] = 0;
  for (uint32_t k = 0; k < kGroupSize; ++k) {
    uint32_t bit = k * bits;
    uint32_t v = static_cast<uint32_t>(c[k]) << (bit % 8);
    out[bit / 8] = static_cast<uint8_t>(out[bit / 8] | (v & 0xFFu));
    if ((bit % 8) + bits > 8) out[bit / 8 + 1] = static_cast<uint8_t>(out[bit / 8 + 1] | (v >> 8));
  }
}

// Code k (0..15) of a group whose packed bytes start at `in`.
TQREF_HD uint32_t unpack_group_code(uint32_t bits, const uint8_t* in, uint32_t k) {
  uint32_t bit = k * bits;
  uint32_t w = in[bit / 8];
  if ((bit % 8) + bits > 8) w |= static_cast<uint32_t>(in[bit / 8 + 1]) << 8;
  return (w >> (bit % 8)) & ((1u << bits) - 1u);
}

// ---- Cache geometry (docs/spec.md section 3) ---------------------------------------------------------
// K pool: bf16 [num_blocks, block_size, num_kv_heads, head_dim], dense.
// V pool: block k at byte k * v_block_stride_bytes; inside a block
//   [0, B*n*b/8)                       index section: [block_size][n*b/8] packed codes
//   [v_data_section_bytes, +B*n/16)    scale section: [block_size][n/16] fp8 E4M3 scales
// with n = num_kv_heads * head_dim; element e = h*D + d of a row belongs to group e/16.
struct CacheGeometry {
  uint32_t num_kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t block_size = 0;
  uint32_t num_blocks = 0;
  uint64_t v_block_stride_bytes = 0;  // >= engine value: padding allowed
  uint64_t v_data_section_bytes = 0;  // >= engine value: padding allowed

  TQREF_HD uint32_t elems_per_token() const { return num_kv_heads * head_dim; }
  TQREF_HD uint64_t k_row_bytes() const { return uint64_t(elems_per_token()) * 2; }
  TQREF_HD uint64_t k_block_bytes() const { return k_row_bytes() * block_size; }
  TQREF_HD uint64_t k_pool_bytes() const { return k_block_bytes() * num_blocks; }
  TQREF_HD uint64_t v_code_row_bytes(uint32_t bits) const {
    return uint64_t(elems_per_token()) * bits / 8;
  }
  TQREF_HD uint64_t v_scale_row_bytes() const { return elems_per_token() / kGroupSize; }
  TQREF_HD uint64_t v_pool_bytes() const { return v_block_stride_bytes * num_blocks; }
  // The engine's tight values, which kernels must accept as a lower bound.
  TQREF_HD uint64_t min_v_data_section_bytes(uint32_t bits) const {
    return v_code_row_bytes(bits) * block_size;
  }
  TQREF_HD uint64_t min_v_block_stride_bytes() const {
    return v_data_section_bytes + v_scale_row_bytes() * block_size;
  }
  // Byte offsets of slot `s` (s >= 0) in the pools.
  TQREF_HD uint64_t k_row_offset(int64_t s) const {
    return uint64_t(s / block_size) * k_block_bytes() + uint64_t(s % block_size) * k_row_bytes();
  }
  TQREF_HD uint64_t v_code_row_offset(int64_t s, uint32_t bits) const {
    return uint64_t(s / block_size) * v_block_stride_bytes +
           uint64_t(s % block_size) * v_code_row_bytes(bits);
  }
  TQREF_HD uint64_t v_scale_row_offset(int64_t s) const {
    return uint64_t(s / block_size) * v_block_stride_bytes + v_data_section_bytes +
           uint64_t(s % block_size) * v_scale_row_bytes();
  }
};

}  // namespace tqref
