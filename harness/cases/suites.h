// The named suites of `tqref generate` and the YAML sweep of --config (docs/golden-schema.md).
// A suite is a deterministic list of CaseSpec; spec i becomes case(s) with seed case_seed(seed, i).
#pragma once
#include <string>
#include <vector>

#include "cases/case_spec.h"

namespace tqref::cases {

// "smoke", "standard", "stress", "models" (the built-in model table), "pools", "flags"; throws
// std::invalid_argument on an unknown name.
std::vector<CaseSpec> suite_specs(const std::string& name);
// The flags suite's specs of one kernel (a writer: hdim 0), each searched over `attempts` seeds
// for a case that tells every pair of `rivals` (variant names, tqref/variant.h) apart: the case
// that settles a tie of the failure anatomy (`tqref generate --tell-apart`).
std::vector<CaseSpec> tell_apart_specs(const std::vector<std::string>& rivals,
                                       golden::CaseKind kind, Format format, uint32_t hdim,
                                       uint32_t attempts);
struct ModelGeometry;
// The models suite of a model table (model_table.h, docs/models.md): per model a writer spec, a
// decode spec with its head counts, one per sliding window, and for some a long full-attention one.
std::vector<CaseSpec> models_suite(const std::vector<ModelGeometry>& table);
// The cross product a YAML sweep file describes; errors name the file, the key and the value.
std::vector<CaseSpec> config_specs(const std::string& yaml_text, const std::string& file);

}  // namespace tqref::cases
