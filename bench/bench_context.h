// What every CPU-model benchmark shares: the build's commit and the SIMD path's instruction sets
// in the JSON context (Google Benchmark adds host, CPU, caches, load average and date), and the
// committed sm_90 EX2 profile in both its forms.
#pragma once
#include <cstdint>
#include <vector>

#include "tqref/ex2.h"
#include "tqref/format.h"

namespace tqref::bench {

// main() of every CPU-model benchmark: the context below, then Google Benchmark's usual run.
int run_benchmarks(int argc, char** argv);
const Ex2Profile& sm90_datapath();       // data/hw/sm_90/ex2.h5 (format 2, the datapath)
const Ex2Profile& sm90_measured_table(); // data/hw/sm_90/ex2_measured_table.h5 (the table)

// The benchmark argument of every format: its index in kFormats (tqref/format.h).
inline std::vector<int64_t> format_indices() {
  std::vector<int64_t> v;
  for (int i = 0; i < kNumFormats; ++i) v.push_back(i);
  return v;
}

}  // namespace tqref::bench
