// The exhaustive EX2 measurement behind `tqref calibrate ex2` (CUDA builds only): runs the probe
// kernel (kernels/testing/probes/ex2_probe.cu, a lone MUFU.EX2) over every non-positive float,
// every NaN and +0, takes the fraction table F from the inputs -k * 2^-23, fits the datapath to F
// (model/tqref/ex2_fit.h), then checks the model against every hardware result, class by class:
// the fitted datapath when one fits, else F itself.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tqref/ex2_fit.h"
#include "gpu/driver.h"

namespace tqref {

struct Ex2ClassResult {
  std::string name;                                      // "[-1, 0)", "NaN, negative", ...
  uint64_t inputs = 0, mismatches = 0;
  std::vector<uint32_t> example_input, example_got, example_model;  // first few mismatches
};

struct Ex2Measurement {
  std::vector<uint32_t> fraction;          // F[0 .. 2^23], hardware results
  uint64_t fraction_missing = 0;           // entries no input produced (must be 0)
  bool fraction_valid = false;             // F passes the model's invariants (from_table)
  std::string fraction_problem;            // why not, when !fraction_valid
  Ex2FitResult fit;                        // the datapath fit of F (only when fraction_valid)
  std::vector<Ex2ClassResult> classes;     // filled by the check pass (only when fraction_valid)
  double kernel_ms = 0;                    // total probe time on the device
  uint64_t total_mismatches() const;
  uint64_t total_inputs() const;
};

// progress(pass, done, total): pass 1 measures F, pass 2 checks the model.
Ex2Measurement measure_ex2(const gpu::Context& ctx, const std::string& arch,
                           const std::function<void(int, uint64_t, uint64_t)>& progress);

}  // namespace tqref
