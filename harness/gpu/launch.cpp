#include "gpu/launch.h"

#include <cuda.h>

#include <cstring>
#include <stdexcept>

namespace tqref::gpu {

// cuLaunchKernel copies arg_size(type) bytes from each kernelParams pointer; a device pointer
// parameter is a CUdeviceptr, so it must be exactly the 8 bytes we store.
static_assert(sizeof(CUdeviceptr) == 8, "CUdeviceptr must be 64-bit for the packed layout");
static_assert(arg_size(ArgType::ptr) == sizeof(CUdeviceptr));
static_assert(sizeof(float) == sizeof(uint32_t));

KernelArgs& KernelArgs::add(ArgType t, const std::string& name, const void* v) {
  if (slots_.size() == kMaxArgs)
    throw std::logic_error("KernelArgs: more than " + std::to_string(kMaxArgs) + " parameters");
  const size_t sz = arg_size(t);
  const size_t off = (end_ + sz - 1) / sz * sz;  // natural alignment, as nvcc lays out params
  const size_t i = slots_.size();
  std::memcpy(&storage_[i], v, sz);  // little-endian host: the value's bytes start the cell
  params_[i] = &storage_[i];
  slots_.push_back({t, name, off});
  end_ = off + sz;
  return *this;
}

KernelArgs& KernelArgs::ptr(const std::string& name, uint64_t device_ptr) {
  return add(ArgType::ptr, name, &device_ptr);
}
KernelArgs& KernelArgs::u32(const std::string& name, uint32_t v) { return add(ArgType::u32, name, &v); }
KernelArgs& KernelArgs::u64(const std::string& name, uint64_t v) { return add(ArgType::u64, name, &v); }
KernelArgs& KernelArgs::f32(const std::string& name, float v) { return add(ArgType::f32, name, &v); }

std::vector<uint8_t> KernelArgs::param_bytes() const {
  std::vector<uint8_t> b(end_, 0);
  for (size_t i = 0; i < slots_.size(); ++i)
    std::memcpy(b.data() + slots_[i].offset, &storage_[i], arg_size(slots_[i].type));
  return b;
}

std::string KernelArgs::describe() const {
  std::string s;
  char buf[64];
  for (size_t i = 0; i < slots_.size(); ++i) {
    const ArgSlot& a = slots_[i];
    switch (a.type) {
      case ArgType::ptr: std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)storage_[i]); break;
      case ArgType::f32: {
        float f;
        std::memcpy(&f, &storage_[i], 4);
        std::snprintf(buf, sizeof buf, "%.9g", double(f));
        break;
      }
      default: std::snprintf(buf, sizeof buf, "%llu", (unsigned long long)storage_[i]); break;
    }
    s += (i ? " " : "") + a.name + "=" + buf;
  }
  return s;
}

void pack_writer_args(KernelArgs& a, const WriterPointers& ptrs, const WriterParams& p) {
  if (a.size() != 0) throw std::logic_error("pack_writer_args: KernelArgs not empty");
  a.ptr("key", ptrs.key)
      .ptr("value", ptrs.value)
      .ptr("k_cache", ptrs.k_cache)
      .ptr("v_cache", ptrs.v_cache)
      .ptr("slot_mapping", ptrs.slot_mapping)
      .u32("num_kv_heads", p.num_kv_heads)
      .u32("head_dim", p.head_dim)
      .u32("block_size", p.block_size)
      .u32("key_stride", p.key_stride)
      .u32("value_stride", p.value_stride)
      .u64("k_block_stride_bytes", p.k_block_stride_bytes)
      .u64("v_block_stride_bytes", p.v_block_stride_bytes)
      .u64("v_data_section_bytes", p.v_data_section_bytes);
  if (a.size() != kWriterArgCount) throw std::logic_error("pack_writer_args: parameter count");
}

void pack_decode_args(KernelArgs& a, const DecodePointers& ptrs, const DecodeParams& p) {
  if (a.size() != 0) throw std::logic_error("pack_decode_args: KernelArgs not empty");
  a.ptr("q", ptrs.q)
      .ptr("k_cache", ptrs.k_cache)
      .ptr("v_cache", ptrs.v_cache)
      .ptr("output", ptrs.output)
      .ptr("block_tables", ptrs.block_tables)
      .ptr("seq_lens", ptrs.seq_lens)
      .u32("max_blocks_per_seq", p.max_blocks_per_seq)
      .u32("num_q_heads", p.num_q_heads)
      .u32("num_kv_heads", p.num_kv_heads)
      .u32("head_dim", p.head_dim)
      .u32("block_size", p.block_size)
      .f32("inv_sqrt_d", p.inv_sqrt_d)
      .u32("q_stride", p.q_stride)
      .u64("v_block_stride_bytes", p.v_block_stride_bytes)
      .u64("v_data_section_bytes", p.v_data_section_bytes)
      .u32("sliding_window", p.sliding_window);
  if (a.size() != kDecodeArgCount) throw std::logic_error("pack_decode_args: parameter count");
}

}  // namespace tqref::gpu
