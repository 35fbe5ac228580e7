// The shape sets of `tqref bench --set NAME` (docs/gpu-performance.md): which decode problems and
// which writer problems one run measures.
#pragma once
#include <string>
#include <vector>

#include "bench/gpu/gpu_bench.h"

namespace tqref::bench {

struct ShapeSet {
  std::vector<DecodeShape> decode;
  std::vector<WriterShape> writer;
};

// quick: the main decode shapes (turbo3v, HDIM 128, GQA 4: 32x4k, 32x16k, 8x32k), the writer at
//        32 and 16384 tokens (turbo3v) and at 65536 tokens (every format), 8 kv heads x 128;
// full: every format x HDIM 128/256 x L 1k/4k/16k at GQA 4, GQA 1/8/MQA at 16k, 8x32k, a peaked
//       q, and the quick writers plus turbo2v/turbo4v at 32/16384 tokens and turbo3v at HDIM 256;
// models: the head counts of real models at 32 seqs x 16k (turbo3v), no writers;
// writers: the quick writers plus the kv-head shapes of those models at 65536 tokens.
// Throws std::invalid_argument naming the allowed names for any other name.
ShapeSet shape_set(const std::string& name, float q_sigma);
inline constexpr const char* kShapeSetNames = "quick, full, models, writers";

}  // namespace tqref::bench
