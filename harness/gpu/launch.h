// Kernel arguments for cuLaunchKernel, packed in exactly SPEC's declaration order with exactly
// SPEC's types (sections 4 and 5): pointers as CUdeviceptr (8 bytes), u32, u64 and f32. A wrong
// order or width here is silent on the GPU (the kernel reads garbage strides), so the layout the
// kernel sees is also computed on the host (param_bytes) and unit-tested against SPEC
// (tests/test_cuda_build.cpp). No cuda.h here: host-only code and tests compile without it.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tqref/decode.h"
#include "tqref/writer.h"

namespace tqref::gpu {

enum class ArgType { ptr, u32, u64, f32 };

// Device-side size of each parameter type (CUdeviceptr is checked to be 8 bytes in launch.cpp).
constexpr size_t arg_size(ArgType t) { return t == ArgType::u32 || t == ArgType::f32 ? 4 : 8; }
static_assert(sizeof(uint32_t) == 4 && sizeof(uint64_t) == 8 && sizeof(float) == 4);

struct ArgSlot {
  ArgType type;
  std::string name;  // SPEC's parameter name
  size_t offset;     // byte offset in the kernel's parameter space (natural alignment)
};

// Up to kMaxArgs values; params() gives the kernelParams array (one pointer per parameter, each
// pointing at a value of exactly arg_size bytes). Not copyable: params() points into *this.
class KernelArgs {
 public:
  static constexpr size_t kMaxArgs = 24;
  KernelArgs() = default;
  KernelArgs(const KernelArgs&) = delete;
  KernelArgs& operator=(const KernelArgs&) = delete;

  KernelArgs& ptr(const std::string& name, uint64_t device_ptr);
  KernelArgs& u32(const std::string& name, uint32_t v);
  KernelArgs& u64(const std::string& name, uint64_t v);
  KernelArgs& f32(const std::string& name, float v);

  size_t size() const { return slots_.size(); }
  const std::vector<ArgSlot>& slots() const { return slots_; }
  void** params() { return params_.data(); }
  // The parameter space as the kernel sees it: each value at its naturally aligned offset,
  // little-endian, padding bytes zero. Its size is the kernel's total parameter bytes.
  std::vector<uint8_t> param_bytes() const;
  // "key=0x7f0000001000 value=... num_kv_heads=2 ..." for error messages and logs.
  std::string describe() const;

 private:
  KernelArgs& add(ArgType t, const std::string& name, const void* v);
  std::vector<ArgSlot> slots_;
  size_t end_ = 0;                              // parameter-space bytes used so far
  std::array<uint64_t, kMaxArgs> storage_{};    // one 8-byte cell per value, value in low bytes
  std::array<void*, kMaxArgs> params_{};
};

// Device addresses of the writer's buffers (the start of the data, after the guard band).
struct WriterPointers {
  uint64_t key = 0, value = 0, k_cache = 0, v_cache = 0, slot_mapping = 0;
};
// reshape_and_cache_flash_bf16k_turbo{2,3,4}v: 13 parameters (docs/spec.md section 4).
inline constexpr size_t kWriterArgCount = 13;
void pack_writer_args(KernelArgs& a, const WriterPointers& ptrs, const WriterParams& p);

struct DecodePointers {
  uint64_t q = 0, k_cache = 0, v_cache = 0, output = 0, block_tables = 0, seq_lens = 0;
};
// paged_decode_attn_bf16k_turbo{2,3,4}v: 16 parameters (docs/spec.md section 5).
inline constexpr size_t kDecodeArgCount = 16;
void pack_decode_args(KernelArgs& a, const DecodePointers& ptrs, const DecodeParams& p);

}  // namespace tqref::gpu
