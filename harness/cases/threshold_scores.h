// Scores whose softmax factor EXPF(score - max) lands exactly at, and at the nearest reachable
// values around, the sparse-V threshold, found through the EX2 profile.
#pragma once
#include <vector>

#include "tqref/ex2.h"

namespace tqref::cases {

struct ThresholdProbe {
  float x;       // score - running max (negative)
  float factor;  // EXPF(x) under the profile
  int rank;      // 0: factor == THRESH; -1, -2: the largest, second-largest reachable factor
                 // below; +1, +2: the smallest, second-smallest above
};

// Scans every binary32 x within about 0.01 of ln(thresh). EXPF quantises its input to the 2^-20
// grid of y = x*log2(e) in [-16, -8), so not every factor near THRESH is reachable; rank 0 is
// present only when THRESH itself is. Each returned x is the first (largest) x with its factor.
std::vector<ThresholdProbe> threshold_probes(const Ex2Profile& ex2, float thresh);

}  // namespace tqref::cases
