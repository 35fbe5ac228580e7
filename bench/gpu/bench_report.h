// JSON file and console table of `tqref bench` results (schema "tqref.bench/1", read by
// analysis/plot_bench.py).
#pragma once
#include <string>
#include <vector>

#include "bench/gpu/gpu_bench.h"

namespace tqref::bench {

struct Report {
  std::string device, arch, driver, command_line;
  int sm_count = 0;
  Settings settings;
  CopyResult copy;
  std::vector<DecodeResult> decode;
  std::vector<WriterResult> writer;
};

// Bytes a decode must move: K + V rows used by any head + q + output.
inline uint64_t needed_bytes(const DecodeResult& r) { return r.k_bytes + r.v_bytes_needed + r.qo_bytes; }
inline double gbps(uint64_t bytes, const Timing& t) {
  return t.median_ms > 0 ? double(bytes) / (t.median_ms * 1e6) : 0.0;
}

// Launches of one decode kernel for one result: the conformance run, the warm-up and the timed
// runs (GpuBench::decode); lets a profiler's rows be matched to results (analysis/ncu_join.py).
uint32_t decode_launches(const Settings& s);

void write_json(const std::string& path, const Report& r);
void print_table(const Report& r);

}  // namespace tqref::bench
