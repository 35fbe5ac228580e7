// The GPU half of `tqref conform` (CUDA builds only): one module at a time, loaded on the device,
// its contract kernels looked up by name, its decoders' HDIM established (--hdim or the probe of
// hdim_probe.h, from what the decoders write), then every case of every suite whose kernel it
// holds launched through the golden GPU backend (harness/gpu/gpu_backend.h), judged by
// judge::run_and_judge (with the failure anatomy) and, unless switched off, at level I
// (judge::judge_level_i), the same machinery as `tqref check --backend gpu --module`. Each module runs in its own retained primary context,
// released before the next module, so a fault in one module does not poison the next.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "conform/result.h"
#include "conform/suite_files.h"
#include "judge/level_i.h"
#include "judge/dispatch.h"
#include "judge/level_t.h"
#include "tqref/ex2.h"

namespace tqref::conform {

struct GpuRunOptions {
  int device = 0;
  float threshold = kSparseVThreshold;
  std::map<std::string, uint32_t> hdims;  // --hdim
  std::vector<SuiteFile> suites;          // found files
  std::string out_dir;                    // reproducers go to <out>/reproducers/<tag>/<suite>/
  size_t show = 4;                        // mismatch lines printed per failing case
  judge::LevelTOptions topt;
  bool invariance = true;                 // level I on every case judged (level_i.h)
  judge::LevelIOptions iopt;
  judge::DispatchRule dispatch = judge::DispatchRule::published;     // --dispatch
  judge::OutOfContractLevel out_of_contract = judge::OutOfContractLevel::T;    // --out-of-contract
  const Ex2Profile* device_ex2 = nullptr; // this GPU's profile; null: decoders at level T
};

// Fills m (created by new_module_result) with the load result, the kernels found, the HDIM and
// the suites' verdicts; progress and failures go to stdout.
void run_module(ModuleResult& m, const GpuRunOptions& o);

}  // namespace tqref::conform
