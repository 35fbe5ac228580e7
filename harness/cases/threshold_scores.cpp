#include "cases/threshold_scores.h"

#include <map>

#include "tqref/numeric.h"

namespace tqref::cases {

std::vector<ThresholdProbe> threshold_probes(const Ex2Profile& ex2, float thresh) {
  // ln(1e-3) = -6.9078; bracket the threshold's x by bisection on the monotone EXPF first, so
  // the scan works for any positive threshold well inside the normal range.
  float lo = -87.0f, hi = 0.0f;  // EXPF(lo) < thresh <= EXPF(hi)
  for (int i = 0; i < 60; ++i) {
    const float mid = lo + (hi - lo) * 0.5f;
    if (ex2.expf(mid) < thresh) lo = mid;
    else hi = mid;
  }
  std::map<uint32_t, float> first_x;  // factor bits -> largest x giving it
  // scan down from hi + 0.01 to hi - 0.01, one binary32 step at a time (negative: bits grow)
  for (uint32_t b = f32_bits(hi + 0.01f); f32_from_bits(b) >= hi - 0.01f; ++b) {
    const float x = f32_from_bits(b), f = ex2.expf(x);
    first_x.emplace(f32_bits(f), x);
  }
  std::vector<ThresholdProbe> out;
  const uint32_t tb = f32_bits(thresh);
  auto at = first_x.lower_bound(tb);  // factors are positive: bit order = numeric order
  if (at != first_x.end() && at->first == tb) out.push_back({at->second, thresh, 0});
  auto above = first_x.upper_bound(tb);
  for (int r = 1; r <= 2 && above != first_x.end(); ++r, ++above)
    out.push_back({above->second, f32_from_bits(above->first), r});
  auto below = first_x.lower_bound(tb);
  for (int r = 1; r <= 2 && below != first_x.begin(); ++r) {
    --below;
    out.push_back({below->second, f32_from_bits(below->first), -r});
  }
  return out;
}

}  // namespace tqref::cases
