// Which implementation the model's entry points run (paged_decode_model, reshape_and_cache_model,
// Ex2Profile's batch calls): the readable scalar reference, or the SIMD path, which equals it
// bit for bit (tests/test_simd_paths.cpp; docs/performance.md). Process-wide: set it before
// running models, not while one runs. The CLI's --model option sets it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tqref/variant.h"

namespace tqref {

enum class ModelPath : uint8_t { simd, scalar };

void set_model_path(ModelPath p);  // default: simd
ModelPath model_path();
const char* model_path_name(ModelPath p);  // "simd", "scalar"
// "simd" or "scalar"; "fast", the path's former name, still means simd. Anything else:
// std::invalid_argument.
ModelPath parse_model_path(const std::string& s);

// The instruction sets of the SIMD path built into this binary that this CPU can run, best
// first ("avx512", "avx2", "portable"; only "portable" off x86-64), and the one in use: the
// first, unless set_simd_isa chose another (tests run every one the CPU can execute).
std::vector<std::string> simd_isas();
void set_simd_isa(const std::string& isa);  // std::invalid_argument when not in simd_isas()
std::string simd_isa();

// The variant of the contract (tqref/variant.h) that the entry points without a Variant argument
// compute: the contract unless set_model_variant chose another (golden data of a build, `tqref
// generate/check --model-variant`). Process-wide, like the path; a variant runs on the scalar path.
void set_model_variant(const Variant& v);
const Variant& model_variant();

}  // namespace tqref
