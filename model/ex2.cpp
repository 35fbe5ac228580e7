#include "tqref/ex2.h"

#include <cstdio>
#include <stdexcept>

#include "ex2_eval.h"
#include "simd_kernels.h"
#include "tqref/numeric.h"

// Everything here works on bit patterns: the unit's result is an entry of the fraction map F,
// possibly with its exponent lowered by an integer (the scaling is exact because every F[k] lies
// in [0.5, 1] and the smallest scaled result, 0.5 * 2^-125, is still normal). No libm, no
// rounding. This is the readable form; ex2_eval.h has the branch-free one the SIMD decoder uses.

namespace tqref {

namespace {

constexpr uint32_t kOneBits = 0x3F800000u;   // 1.0f
constexpr uint32_t kHalfBits = 0x3F000000u;  // 0.5f
constexpr uint32_t kNanBits = 0x7FFFFFFFu;   // the unit's canonical NaN

[[noreturn]] void positive_input(float x) {
  char msg[160];
  std::snprintf(msg, sizeof msg,
                "ex2 model: input %.9g (bits 0x%08X) is positive; the unit is modelled for "
                "x <= 0 and NaN only", double(x), f32_bits(x));
  throw std::domain_error(msg);
}

// The invariants every fraction map must meet: F[0] = EX2(0) = 1 and F[2^23] = EX2(-1) = 0.5
// anchor the integer scaling; every entry in [0.5, 1] keeps scaled results normal and exact.
void check_fraction_table(const std::string& id, const std::vector<uint32_t>& f) {
  if (f.size() != kEx2FractionEntries)
    throw std::invalid_argument("ex2 profile '" + id + "': fraction table has " +
                                std::to_string(f.size()) + " entries; expected 2^23+1 = " +
                                std::to_string(kEx2FractionEntries));
  if (f.front() != kOneBits || f.back() != kHalfBits)
    throw std::invalid_argument("ex2 profile '" + id + "': F[0] must be 1.0 (0x3F800000) and "
                                "F[2^23] must be 0.5 (0x3F000000)");
  for (size_t k = 0; k < f.size(); ++k)
    if (f[k] < kHalfBits || f[k] > kOneBits)
      throw std::invalid_argument("ex2 profile '" + id + "': F[" + std::to_string(k) +
                                  "] is outside [0.5, 1.0] (bits 0x3F000000..0x3F800000)");
}

}  // namespace

Ex2Profile Ex2Profile::from_table(std::string id, std::string arch, std::vector<uint32_t> frac_bits) {
  check_fraction_table(id, frac_bits);
  Ex2Profile p;
  p.id_ = std::move(id);
  p.arch_ = std::move(arch);
  p.frac_ = std::move(frac_bits);
  return p;
}

Ex2Profile Ex2Profile::from_datapath(std::string id, std::string arch, const Ex2Datapath& d) {
  if (const std::string why = ex2_datapath_problem(d); !why.empty())
    throw std::invalid_argument("ex2 profile '" + id + "': " + why);
  check_fraction_table(id, ex2_datapath_table(d));
  Ex2Profile p;
  p.datapath_ = d;
  p.eval_ = ex2_eval::prepare(d);
  p.id_ = std::move(id);
  p.arch_ = std::move(arch);
  return p;
}

uint32_t Ex2Profile::fraction(uint32_t k) const {
  return frac_.empty() ? ex2_eval::datapath_fraction(eval_, k) : frac_[k];
}

std::vector<uint32_t> Ex2Profile::fraction_table() const {
  return frac_.empty() ? ex2_datapath_table(*datapath_) : frac_;
}

void Ex2Profile::ex2_many(const float* x, float* y, size_t n) const {
  for (size_t i = 0; i < n; ++i)
    if (x[i] > 0.0f) positive_input(x[i]);
  simd::kernels().ex2(eval_data(), x, y, n);
}

void Ex2Profile::expf_many(const float* x, float* y, size_t n) const {
  for (size_t i = 0; i < n; ++i)
    if (x[i] > 0.0f) positive_input(x[i]);
  simd::kernels().expf(eval_data(), x, y, n);
}

Ex2EvalData Ex2Profile::eval_data() const {
  Ex2EvalData d = eval_;
  d.table = frac_.empty() ? nullptr : frac_.data();
  return d;
}

float Ex2Profile::ex2(float x) const {
  const uint32_t b = f32_bits(x);
  const uint32_t e = (b >> 23) & 0xFFu;  // biased exponent
  const uint32_t m = b & 0x7FFFFFu;
  if (e == 0xFFu && m != 0) return f32_from_bits(kNanBits);  // any NaN, either sign
  if (e == 0) {                                                // +-0 and subnormals (ftz)
    if ((b >> 31) == 0 && m != 0) positive_input(x);
    return f32_from_bits(kOneBits);
  }
  if ((b >> 31) == 0) positive_input(x);
  // x = -(2^23 + m) * 2^(e - 150). Below -126 (and -Inf) the result is +0.
  if (e > 133u || (e == 133u && m > 0x7C0000u)) return 0.0f;  // 0x42FC0000 = 126.0
  const uint32_t sig = m | 0x800000u;
  if (e <= 126u) {
    // x in (-1, 0): k = trunc(|x| * 2^23) = sig * 2^(e - 127), truncated.
    const uint32_t shift = 127u - e;
    return f32_from_bits(fraction(shift >= 24u ? 0u : sig >> shift));
  }
  // x in [-126, -1]: |x| = q + f * 2^-s with s = 150 - e fraction bits (17..23), so
  // ceil(x) = -q and the fraction index is f * 2^(23 - s) (exact). Scale by 2^-q. (x = -1 gives
  // F[0] * 2^-1 = 0.5 = F[2^23], the same result as the [-1, 0) rule.)
  const uint32_t s = 150u - e;
  const uint32_t q = sig >> s;
  const uint32_t k = (sig & ((1u << s) - 1u)) << (23u - s);
  return f32_from_bits(fraction(k) - (q << 23));
}

float Ex2Profile::expf(float x) const {
  if (x > 0.0f) positive_input(x);
  const float y = x * f32_from_bits(0x3FB8AA3Bu);  // log2(e) as the kernel's literal; one rounding
  if (y >= -126.0f || y != y) return ex2(y);
  // The kernel halves y to keep the unit's input in range, then squares the result: an ordinary
  // IEEE multiply, so subnormal and zero results appear here (not in the unit itself).
  const float r = ex2(y * 0.5f);
  return r * r;
}

}  // namespace tqref
