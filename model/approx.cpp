#include "tqref/approx.h"

#include <cmath>
#include <mutex>
#include <stdexcept>

#include "tqref/numeric.h"

namespace tqref {

namespace {

constexpr uint32_t kSign = 0x80000000u, kNaN = 0x7FFFFFFFu, kInf = 0x7F800000u;
constexpr float k2p24 = 16777216.0f;

bool is_subnormal(float f) { return f != 0.0f && std::fabs(f) < 0x1p-126f; }
// .ftz: a subnormal reads (and is written) as zero of its sign.
float flush(float f) { return is_subnormal(f) ? f32_from_bits(f32_bits(f) & kSign) : f; }
// f * 2^k rounded once (double holds every such product exactly; the cast rounds to nearest
// even, into the subnormals where needed, as the hardware's scaling does).
float scaled(uint32_t f_bits, int k) { return float(std::ldexp(double(f32_from_bits(f_bits)), k)); }
// The hardware writes one NaN for every NaN result.
float canonical(float f) { return f != f ? f32_from_bits(kNaN) : f; }

}  // namespace

ApproxUnits ApproxUnits::from_deltas(std::string arch, const std::vector<int8_t>& rcp_delta,
                                     const std::vector<int8_t>& sqrt_delta) {
  if (rcp_delta.size() != kRcpEntries || sqrt_delta.size() != kSqrtEntries)
    throw std::invalid_argument("approximate units of " + arch + ": tables of " +
                                std::to_string(rcp_delta.size()) + " and " +
                                std::to_string(sqrt_delta.size()) + " entries; need 2^23 and 2^24");
  ApproxUnits u;
  u.arch_ = std::move(arch);
  u.rcp_.resize(kRcpEntries);
  u.sqrt_.resize(kSqrtEntries);
  for (uint32_t m = 0; m < kRcpEntries; ++m) {
    const float x = f32_from_bits(0x3F800000u | m);
    u.rcp_[m] = f32_bits(1.0f / x) + uint32_t(int32_t(rcp_delta[m]));
    const float r = f32_from_bits(u.rcp_[m]);
    if (!(r > 0.5f && r <= 1.0f))
      throw std::invalid_argument("approximate units of " + u.arch_ + ": R[" + std::to_string(m) +
                                  "] is outside (0.5, 1]");
  }
  for (uint32_t i = 0; i < kSqrtEntries; ++i) {
    u.sqrt_[i] = f32_bits(std::sqrt(f32_from_bits(0x3F800000u + i))) + uint32_t(int32_t(sqrt_delta[i]));
    const float s = f32_from_bits(u.sqrt_[i]);
    if (!(s >= 1.0f && s < 2.0f))
      throw std::invalid_argument("approximate units of " + u.arch_ + ": S[" + std::to_string(i) +
                                  "] is outside [1, 2)");
  }
  return u;
}

float ApproxUnits::rcp(float x, bool ftz) const {
  const uint32_t b = f32_bits(x), sign = b & kSign, e = (b >> 23) & 0xFFu, m = b & 0x7FFFFFu;
  if (e == 0xFFu) return m ? f32_from_bits(kNaN) : f32_from_bits(sign);
  if (e == 0 && (m == 0 || ftz)) return f32_from_bits(sign | kInf);
  if (e == 0) return rcp(x * k2p24, false) * k2p24;  // both products exact or overflowing
  const float y = f32_from_bits(f32_bits(scaled(rcp_[m], 127 - int(e))) | sign);
  return ftz ? flush(y) : y;
}

float ApproxUnits::sqrt(float x, bool ftz) const {
  const uint32_t b = f32_bits(x), sign = b & kSign, e = (b >> 23) & 0xFFu, m = b & 0x7FFFFFu;
  if (e == 0xFFu && m) return f32_from_bits(kNaN);
  if (e == 0 && (m == 0 || ftz)) return f32_from_bits(sign);
  if (sign) return f32_from_bits(kNaN);
  if (e == 0xFFu) return x;
  if (e == 0) return sqrt(x * k2p24, false) * 0x1p-12f;  // exact: the root is normal
  const int E = int(e) - 127;
  const int k = E >= 0 ? E / 2 : -((1 - E) / 2);  // floor(E / 2)
  return scaled(sqrt_[(uint32_t(E - 2 * k) << 23) | m], k);
}

float ApproxUnits::div(Division d, float a, float b, bool ftz) const {
  if (d == Division::rn) return ftz ? flush(flush(a) / flush(b)) : a / b;
  // The SASS ptxas writes for sm_90 (docs/approx-units.md): both operands scaled by one power of
  // two, each product rounded, so that MUFU.RCP (the .ftz reciprocal) sees a normal divisor, then
  // one FMUL. div.full scales a huge divisor down; the non-.ftz forms scale a subnormal one up.
  const auto mul = [ftz](float x, float y) { return ftz ? flush(flush(x) * flush(y)) : x * y; };
  const float mag = std::fabs(b);
  float s = 1.0f;
  if (d == Division::full && mag > 0x1p126f) s = 0.25f;
  if (!ftz && mag < 0x1p-126f) s = k2p24;
  if (s != 1.0f) a = mul(a, s), b = mul(b, s);
  return canonical(mul(a, rcp(b, true)));
}

namespace {
std::mutex g_mutex;
ApproxUnitsSource g_source = nullptr;
std::shared_ptr<const ApproxUnits> g_units;
}  // namespace

void set_approx_units_source(ApproxUnitsSource source) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_source = source;
  g_units.reset();
}

const ApproxUnits& approx_units() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_units) {
    if (!g_source)
      throw std::runtime_error(
          "the approximate division and square root (variants prec-div, prec-sqrt, fast-math) "
          "need measured tables, and no source is installed (harness/io/approx_units_io.h)");
    g_units = g_source();
  }
  return *g_units;
}

}  // namespace tqref
