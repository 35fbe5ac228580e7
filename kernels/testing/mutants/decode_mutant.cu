// Module source of a decoder mutant (docs/mutants.md): the three reference-order decoders of one
// HDIM build (-DHDIM=128 or 256), same entry points, instantiated with the rules policy
// TQREF_MUTANT_RULES, a type of mutant_rules.cuh that CMake names from mutants.tsv
// (e.g. -DTQREF_MUTANT_RULES=tqref::gpu::mutant::no_batch).
#ifndef TQREF_MUTANT_RULES
#error "TQREF_MUTANT_RULES must name a policy of mutant_rules.cuh"
#endif
#include "mutant_rules.cuh"
#include "../../reference/paged_decode_attn.cuh"

TQREF_DEFINE_DECODER(paged_decode_attn_bf16k_turbo2v, turbo2v, TQREF_MUTANT_RULES)
TQREF_DEFINE_DECODER(paged_decode_attn_bf16k_turbo3v, turbo3v, TQREF_MUTANT_RULES)
TQREF_DEFINE_DECODER(paged_decode_attn_bf16k_turbo4v, turbo4v, TQREF_MUTANT_RULES)
