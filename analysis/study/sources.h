// Synthetic V sources for the quantisation studies: unit-variance distributions scaled by a
// magnitude sigma, rounded to bf16 as the writer consumes them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tqref::study {

enum class Dist { gaussian, student_t3, student_t5, laplace, outlier_channels };
inline constexpr Dist kAllDists[] = {Dist::gaussian, Dist::student_t3, Dist::student_t5,
                                     Dist::laplace, Dist::outlier_channels};

const char* dist_name(Dist d);

// Every distribution has mean 0 and variance 1 before the magnitude scale:
//   student_t{3,5}: t_nu * sqrt((nu-2)/nu); laplace: scale 1/sqrt(2);
//   outlier_channels: Gaussian whose channels d with d % 32 == 7 (per head) are kOutlierGain
//   times larger, the whole renormalised so the average variance over channels is 1.
inline constexpr double kOutlierGain = 10.0;

// Values for `tokens` tokens of `heads * head_dim` elements, row-major [tokens][heads][head_dim],
// each sigma * (unit-variance draw) rounded to bf16. Deterministic in (seed, stream): generated in
// chunks of tokens that each own an RNG stream, so the thread count does not matter.
std::vector<uint16_t> make_source(Dist d, double sigma, uint32_t tokens, uint32_t heads,
                                  uint32_t head_dim, uint64_t seed, uint64_t stream);

// The exact variance of the source before bf16 rounding (sigma^2 for every distribution).
inline double source_variance(double sigma) { return sigma * sigma; }

}  // namespace tqref::study
