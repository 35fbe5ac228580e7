// Value and poison generators for golden cases. All draws go through Rng (rng.h), so a case's
// bytes depend only on its seed.
#pragma once
#include <cstdint>
#include <span>

#include "cases/case_spec.h"
#include "cases/rng.h"

namespace tqref::cases {

// bf16 of a double, rounded twice (double -> float -> bf16), both correctly rounded.
uint16_t to_bf16(double x);

// Exact split of a binary32 x into three bf16 values whose sum in any order is exactly x (so a
// score q.k with q one-hot on three dims is x). Throws std::logic_error if x is not such a sum.
void split3(float x, uint16_t out[3]);

// A token row of n = H*D values for K (or q) / V under `dist`. `row` indexes the token so that
// structured distributions (ties, outliers) are reproducible per row. special_groups and the
// score-constructing distributions (adversarial_skip, threshold, ties) are handled by the decode
// builder for K and q; here they fall back to Gaussian except where noted.
void fill_k_row(Rng& rng, Dist dist, uint32_t row, std::span<uint16_t> out);
void fill_v_row(Rng& rng, Dist dist, uint32_t row, std::span<uint16_t> out);

// Poison that makes any read visible: K elements become +-Inf or NaN bf16 patterns; V code bytes
// are random and scale bytes NaN (0x7F / 0xFF), so a dequantised poisoned value is NaN.
void poison_k(Rng& rng, std::span<uint8_t> bytes);               // whole bf16 elements
void poison_v_codes(Rng& rng, std::span<uint8_t> bytes);
void poison_v_scales(Rng& rng, std::span<uint8_t> bytes);
// A V pool with code sections, scale sections and padding all poisoned.
void poison_v_pool(Rng& rng, std::span<uint8_t> pool, const CacheGeometry& g, uint32_t bits);
// Padding elements of strided bf16 rows (key/value/q beyond n): NaN patterns.
void poison_bf16(Rng& rng, std::span<uint16_t> elems);

}  // namespace tqref::cases
