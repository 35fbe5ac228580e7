// libFuzzer target: golden files (docs/golden-schema.md) from arbitrary bytes. The reader must
// either refuse the file with h5::Error / BadCase (exit 3 in the CLI) or return cases that pass
// the launch checks, which the CPU model must then run without refusing them: a validated case
// the model rejects means the checks in harness/io/case_checks.cpp miss a rule. Any other
// exception, crash or sanitizer report is a finding (docs/reliability.md lists them). The
// validating pass runs in this process (fuzz_common.h): the isolation has its own target,
// fuzz_isolated_reader. The data are read as tqref's process reads them, through the description
// and tqref's chunk decoder (which has its own target too, fuzz_chunk_decoder).
#include <cstdlib>
#include <string>

#include "fuzz_common.h"
#include "io/case_checks.h"
#include "io/case_io.h"
#include "io/ex2_profile_io.h"
#include "judge/backend.h"

using namespace tqref;

TQREF_FUZZ_VALIDATE_IN_PROCESS

namespace {

// The model, made on first use: an input the reader refuses (most of them, and every crash a
// triage replays) never pays for expanding the EX2 profile's table.
judge::Backend& model() {
  static const Ex2Profile ex2 = load_ex2_profile_for_arch("sm_90");
  static const auto backend = judge::make_model_backend(&ex2);
  return *backend;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_path(".h5");
  if (!fuzz::write_input(path, data, size)) std::abort();
  try {
    h5::Node root = golden::open_golden_file(path);
    golden::read_provenance(root);
    h5::Node cases = root.group("cases");
    for (const std::string& name : cases.children()) {
      const golden::GoldenCase c = golden::read_case(cases, name, true);
      if (!common::check_case(c).empty()) std::abort();  // read_case must have refused it
      // Bounded work per input: the model runs only small cases.
      const uint64_t work = c.kind == golden::CaseKind::writer
                                ? uint64_t(c.w.num_tokens) * c.w.p.num_kv_heads * c.w.p.head_dim
                                : uint64_t(c.d.diag.skip_mask.size()) * c.d.p.head_dim;
      if (work > (1u << 16)) continue;
      const judge::CaseResult r = model().run(c);
      if (!r.error.empty()) {
        std::fprintf(stderr, "validated case %s refused by the model: %s\n", name.c_str(), r.error.c_str());
        std::abort();
      }
    }
  } catch (const h5::Error& e) {
    fuzz::refused(e.what());
  } catch (const golden::BadCase& e) {
    fuzz::refused(e.what());
  }
  return 0;
}
