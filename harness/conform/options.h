// Command-line values of `tqref conform` that need more than Boost's parsing: the --hdim
// assignments and the --suites list. Pure functions, tested without a GPU.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "conform/module_file.h"

namespace tqref::conform {

struct OptionError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// --hdim MODULE=128|256 (repeatable). MODULE names a module by its path as given or found, by
// its file name ("decode.sm_121.cubin") or by its stem without the last suffix
// ("decode.sm_121"). Returns MODULE -> HDIM; throws OptionError naming the value and the allowed
// form for anything else, and for a MODULE given twice with different values.
std::map<std::string, uint32_t> parse_hdim_args(const std::vector<std::string>& args);

// The --hdim value for module f: 0 when none was given. Throws OptionError when an assignment
// names no module in `all` (a typo would otherwise silently fall back to probing).
uint32_t hdim_for(const std::map<std::string, uint32_t>& hdims, const ModuleFile& f);
void check_hdim_names(const std::map<std::string, uint32_t>& hdims, const std::vector<ModuleFile>& all);

// --suites: comma-separated names ("smoke", "standard", "real", "models", "pools", "flags") or paths to golden .h5
// files. Throws OptionError for an empty list, an empty item or an unknown name without ".h5".
std::vector<std::string> parse_suites(const std::string& s);
bool is_named_suite(const std::string& s);
// Named suites that are not committed (too large): when no data folder holds golden/<name>.h5,
// `tqref conform` generates them into --out/golden/ (standard: 324 cases; models: docs/models.md; pools: docs/golden-schema.md; flags: docs/mutants.md).
bool is_generated_suite(const std::string& s);

}  // namespace tqref::conform
