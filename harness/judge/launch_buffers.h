// Every device buffer of one launch of a golden case, in SPEC's parameter order, with the bytes it
// holds before the launch. The GPU backend uploads exactly these (each between guard bands);
// compare_case checks that the inputs among them come back unchanged (docs/spec.md section 6: "inputs the
// kernel must not read" and the guards around every device buffer).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/golden_case.h"

namespace tqref::judge {

struct LaunchBuffer {
  std::string name;                  // SPEC's parameter name: "key", "k_cache", "output", ...
  std::span<const uint8_t> bytes;    // contents before the launch (little-endian element bytes)
  bool output = false;               // written by the kernel (judged by level W/D); else input
};

// Writer: key, value, k_cache (out), v_cache (out), slot_mapping.
// Decode: q, k_cache, v_cache, output (out), block_tables, seq_lens.
// The bytes are views of c's own vectors, not copies (a launch's buffers are read several times
// per launch, and a writer case's pools are megabytes): valid while c lives and is not changed.
std::vector<LaunchBuffer> launch_buffers(const golden::GoldenCase& c);

}  // namespace tqref::judge
