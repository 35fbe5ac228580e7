// libFuzzer target: trace files (docs/trace-schema.md) from arbitrary bytes. validate_trace must
// report problems as messages (never throw), and read_trace, called only on a file it accepted,
// must succeed with shapes that agree with the metadata. Anything else is a finding. The
// validating pass runs in this process (fuzz_common.h).
#include <cstdlib>
#include <stdexcept>

#include "fuzz_common.h"
#include "io/trace_file.h"

using namespace tqref;

TQREF_FUZZ_VALIDATE_IN_PROCESS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_path(".trace.h5");
  if (!fuzz::write_input(path, data, size)) std::abort();
  const std::vector<std::string> problems = trace::validate_trace(path);
  if (!problems.empty()) {
    for (const std::string& p : problems) fuzz::refused(p);
    return 0;
  }
  const trace::Trace t = trace::read_trace(path);  // must not throw on a validated file
  const trace::TraceMeta& m = t.meta;
  for (const auto& s : t.sequences) {
    const size_t layers = size_t(m.num_layers);
    if (s.q.size() != layers || s.k.size() != layers || s.v.size() != layers) std::abort();
    for (size_t l = 0; l < layers; ++l) {
      const size_t T = size_t(s.num_tokens), D = size_t(m.head_dim);
      if (s.q[l].size() != T * size_t(m.num_q_heads) * D || s.k[l].size() != T * size_t(m.num_kv_heads) * D ||
          s.v[l].size() != s.k[l].size())
        std::abort();
    }
  }
  return 0;
}
