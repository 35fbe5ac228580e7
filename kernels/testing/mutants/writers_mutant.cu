// Module source of a writer mutant (docs/mutants.md): the reference-order writers, same entry
// points, instantiated with the rules policy TQREF_MUTANT_RULES, a type of mutant_rules.cuh that
// CMake names from mutants.tsv (e.g. -DTQREF_MUTANT_RULES=tqref::gpu::mutant::bound_strict).
#ifndef TQREF_MUTANT_RULES
#error "TQREF_MUTANT_RULES must name a policy of mutant_rules.cuh"
#endif
#include "mutant_rules.cuh"
#include "../../reference/reshape_and_cache_turbo.cuh"

TQREF_DEFINE_WRITERS(TQREF_MUTANT_RULES)
