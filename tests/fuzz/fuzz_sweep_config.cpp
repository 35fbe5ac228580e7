// libFuzzer target: YAML sweep files (`tqref generate --config`, harness/cases/config.cpp) from
// arbitrary text. config_specs must either throw std::invalid_argument naming the file and key,
// or return specs that pass the spec checks (cases/spec_checks.h), so the generator can build
// them within bounded memory. Any other exception, crash or sanitizer report is a finding.
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "cases/spec_checks.h"
#include "cases/suites.h"

using namespace tqref;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::vector<cases::CaseSpec> specs = cases::config_specs(text, "fuzz.yaml");
    for (const auto& s : specs)
      if (!cases::check_spec(s).empty()) std::abort();  // config_specs must have refused it
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
