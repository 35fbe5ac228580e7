// Module `writers`: the reference-order writers reshape_and_cache_flash_bf16k_turbo{2,3,4}v
// (docs/spec.md section 4) with the contract's rules.
#include "reshape_and_cache_turbo.cuh"

TQREF_DEFINE_WRITERS(tqref::gpu::ContractRules)
