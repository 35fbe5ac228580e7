// Misbehaving decoder modules for the GPU fault path (scripts/device-run.sh faults,
// docs/reliability.md "GPU faults"). Never embedded in the built-in fatbin and kept out of
// build/kernels/modules (tqref conform scans that directory): CMake writes them to
// build/kernels/testing/faulty/faulty_<kind>.*. Each module has the three decoder entry points
// of docs/spec.md section 5 with the reference kernels' parameters, built with HDIM=128: turbo2v and
// turbo4v are the real reference-order decoders (so a run shows cases judged normally before and
// after the fault), turbo3v misbehaves as TQREF_FAULT says:
//   1 trap      every CTA executes `trap`: the launch fails with a sticky CUDA_ERROR_LAUNCH_FAILED
//   2 runaway   every CTA spins on a volatile load of a global nothing ever writes: it never ends
//   3 illegal   every CTA stores far outside every allocation: sticky CUDA_ERROR_ILLEGAL_ADDRESS
#include "../../reference/paged_decode_attn_bf16k_turbo2v.cu"
#include "../../reference/paged_decode_attn_bf16k_turbo4v.cu"

#if !defined(TQREF_FAULT) || TQREF_FAULT < 1 || TQREF_FAULT > 3
#error "TQREF_FAULT must be 1 (trap), 2 (runaway) or 3 (illegal address)"
#endif

// Written by nobody (not even the host): the runaway loop below reads it through a volatile
// pointer, so the compiler must keep every load and cannot prove the loop finite.
__device__ uint32_t tqref_fault_release_flag = 0;

extern "C" __global__ void __launch_bounds__(256) paged_decode_attn_bf16k_turbo3v(
    const __nv_bfloat16* q, const __nv_bfloat16* k_cache, const uint8_t* v_cache,
    __nv_bfloat16* output, const int32_t* block_tables, const int32_t* seq_lens,
    uint32_t max_blocks_per_seq, uint32_t num_q_heads, uint32_t num_kv_heads, uint32_t head_dim,
    uint32_t block_size, float inv_sqrt_d, uint32_t q_stride, uint64_t v_block_stride_bytes,
    uint64_t v_data_section_bytes, uint32_t sliding_window) {
#if TQREF_FAULT == 1
  __trap();
#elif TQREF_FAULT == 2
  const volatile uint32_t* flag = &tqref_fault_release_flag;
  while (*flag == 0) __nanosleep(1000);  // 1 us per poll: spins without saturating the SM
#else
  // 2^45 bytes (32 TiB) past the output buffer: beyond any allocation on a 141 GB GPU.
  volatile uint32_t* wild =
      reinterpret_cast<volatile uint32_t*>(reinterpret_cast<uintptr_t>(output) + (uintptr_t(1) << 45));
  *wild = threadIdx.x;
#endif
}
