// paged_decode_attn_bf16k_turbo4v (docs/spec.md section 5) with the contract's rules; the implementation
// is paged_decode_attn.cuh.
#include "paged_decode_attn.cuh"

TQREF_DEFINE_DECODER(paged_decode_attn_bf16k_turbo4v, turbo4v, tqref::gpu::ContractRules)
