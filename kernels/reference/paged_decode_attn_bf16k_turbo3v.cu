// paged_decode_attn_bf16k_turbo3v (docs/spec.md section 5) with the contract's rules; the implementation
// is paged_decode_attn.cuh.
#include "paged_decode_attn.cuh"

TQREF_DEFINE_DECODER(paged_decode_attn_bf16k_turbo3v, turbo3v, tqref::gpu::ContractRules)
