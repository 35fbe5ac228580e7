// `tqref calibrate approx --from-raw DIR ...`: the approximate reciprocal and square root measured
// by harness/gpu/approx_explore.cu, written as data/hw/<arch>/approx.h5 (docs/approx-units.md).
#pragma once
#include <string>
#include <vector>

namespace tqref::cli {

// args: what follows `tqref calibrate approx`.
int calibrate_approx(const std::vector<std::string>& args);

}  // namespace tqref::cli
