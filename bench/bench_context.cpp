#include "bench_context.h"

#include <benchmark/benchmark.h>

#include <string>

#include "io/ex2_profile_io.h"
#include "tqref/build_info.h"
#include "tqref/model_path.h"

namespace tqref::bench {

int run_benchmarks(int argc, char** argv) {
  benchmark::AddCustomContext("git_commit", kGitCommit);
  std::string isas;
  for (const std::string& s : simd_isas()) isas += (isas.empty() ? "" : ",") + s;
  benchmark::AddCustomContext("simd_isas", isas);
  benchmark::AddCustomContext("simd_isa_default", simd_isa());
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

const Ex2Profile& sm90_datapath() {
  static const Ex2Profile p = load_ex2_profile(TQREF_SOURCE_DIR "/data/hw/sm_90/ex2.h5");
  return p;
}

const Ex2Profile& sm90_measured_table() {
  static const Ex2Profile p = load_ex2_profile(TQREF_SOURCE_DIR "/data/hw/sm_90/ex2_measured_table.h5");
  return p;
}

}  // namespace tqref::bench
