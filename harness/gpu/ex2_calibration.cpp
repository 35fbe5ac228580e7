#include "gpu/ex2_calibration.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "io/ex2_profile_io.h"
#include "tqref/builtin_kernels.h"
#include "tqref/ex2.h"
#include "tqref/numeric.h"

namespace tqref {

namespace {

constexpr uint32_t kChunk = 1u << 26;  // inputs per launch: 256 MiB of results
constexpr size_t kExamples = 8;

// Input classes, as in docs/conformance/ex2-calibration-<arch>.md.
enum Class : int { kNegNan, kPosNan, kNegZero, kPosZero, kSubnormal, kNegInf, kUnit, kScaled, kBelow, kClasses };
constexpr const char* kClassName[kClasses] = {
    "NaN, negative sign", "NaN, positive sign", "-0.0", "+0.0", "subnormal (negative)", "-Inf",
    "[-1, 0) normal", "[-126, -1)", "below -126"};

int classify(uint32_t b) {
  const uint32_t e = (b >> 23) & 0xFFu, m = b & 0x7FFFFFu;
  const bool neg = (b >> 31) != 0;
  if (e == 0xFFu) return m ? (neg ? kNegNan : kPosNan) : kNegInf;  // +Inf is never swept
  if (e == 0) return m == 0 ? (neg ? kNegZero : kPosZero) : kSubnormal;
  if (e < 127u || b == 0xBF800000u) return kUnit;  // down to and including -1.0
  if (b <= 0xC2FC0000u) return kScaled;            // down to and including -126.0
  return kBelow;
}

// k when the input is exactly -k * 2^-23 with k in [0, 2^23], else -1.
int64_t fraction_index(uint32_t b) {
  if (b == 0x80000000u) return 0;
  if (b == 0xBF800000u) return int64_t(1) << 23;
  const uint32_t e = (b >> 23) & 0xFFu;
  if ((b >> 31) == 0 || e == 0 || e > 126u) return -1;
  const uint32_t shift = 127u - e, sig = (b & 0x7FFFFFu) | 0x800000u;
  if (shift > 23u || (sig & ((1u << shift) - 1u)) != 0) return -1;
  return sig >> shift;
}

// The probe kernel over contiguous input bit patterns, results poisoned before each launch so an
// unwritten entry (0xFFFFFFFF, a negative NaN the unit never returns) shows as a mismatch.
class Probe {
 public:
  Probe() : module_(load()), fn_(module_.function("tqref_ex2_probe")), dev_(size_t(kChunk) * 4), host_(kChunk) {}

  const uint32_t* run(uint32_t first, uint32_t count) {
    dev_.fill(0xFF, size_t(count) * 4);
    uint64_t out = dev_.ptr();
    void* params[] = {&first, &count, &out};  // (uint32 first_bits, uint32 count, uint32* out)
    start_.record();
    fn_.launch({(count + 255) / 256, 1, 1}, {256, 1, 1}, params);
    stop_.record();
    stop_.synchronize();
    kernel_ms += stop_.elapsed_ms_since(start_);
    dev_.download(host_.data(), size_t(count) * 4);
    return host_.data();
  }
  double kernel_ms = 0;

 private:
  static gpu::Module load() {
    auto image = kernels::builtin_fatbin("ex2_probe");
    if (image.empty()) throw std::runtime_error("the ex2_probe module is not embedded in this build");
    return gpu::Module::from_image(image, "builtin ex2_probe");
  }
  gpu::Module module_;
  gpu::Function fn_;
  gpu::DeviceBuffer dev_;
  std::vector<uint32_t> host_;
  gpu::Event start_, stop_;
};

// Keeps the kExamples smallest mismatching inputs of a class (deterministic across threads).
void keep_example(Ex2ClassResult& cls, uint32_t b, uint32_t got, uint32_t want) {
  size_t slot = cls.example_input.size();
  if (slot == kExamples) {
    slot = size_t(std::max_element(cls.example_input.begin(), cls.example_input.end()) -
                  cls.example_input.begin());
    if (cls.example_input[slot] < b) return;
  } else {
    cls.example_input.push_back(0);
    cls.example_got.push_back(0);
    cls.example_model.push_back(0);
  }
  cls.example_input[slot] = b;
  cls.example_got[slot] = got;
  cls.example_model[slot] = want;
}

struct Range {
  uint64_t first, count;
};
// Every non-positive float (-0 .. -NaN), the positive NaNs and +0.
constexpr std::array<Range, 3> kSweep = {{{0x80000000ull, 1ull << 31},
                                          {0x7F800001ull, (1ull << 23) - 1},
                                          {0x00000000ull, 1}}};

}  // namespace

uint64_t Ex2Measurement::total_mismatches() const {
  uint64_t n = 0;
  for (const auto& c : classes) n += c.mismatches;
  return n;
}

uint64_t Ex2Measurement::total_inputs() const {
  uint64_t n = 0;
  for (const auto& c : classes) n += c.inputs;
  return n;
}

Ex2Measurement measure_ex2(const gpu::Context& ctx, const std::string& arch,
                           const std::function<void(int, uint64_t, uint64_t)>& progress) {
  ctx.make_current();
  Probe probe;
  Ex2Measurement r;
  // Pass 1: F[k] from the inputs -k * 2^-23, all in [0x80000000, 0xBF800000].
  r.fraction.assign(kEx2FractionEntries, 0);
  std::vector<uint8_t> have(kEx2FractionEntries, 0);
  const uint64_t p1_end = 0xC0000000ull;
  for (uint64_t first = 0x80000000ull; first < p1_end; first += kChunk) {
    const uint32_t* h = probe.run(uint32_t(first), kChunk);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < int64_t(kChunk); ++i) {
      const int64_t k = fraction_index(uint32_t(first + uint64_t(i)));
      if (k >= 0) {  // each k comes from exactly one input: no two threads write the same entry
        r.fraction[size_t(k)] = h[i];
        have[size_t(k)] = 1;
      }
    }
    progress(1, first + kChunk - 0x80000000ull, p1_end - 0x80000000ull);
  }
  for (uint8_t v : have) r.fraction_missing += v == 0;
  Ex2Profile model;
  try {
    model = Ex2Profile::from_table(ex2_profile_id(arch, r.fraction), arch, r.fraction);
    r.fraction_valid = r.fraction_missing == 0;
    if (r.fraction_valid) {
      r.fit = fit_ex2_datapath(r.fraction);
      if (r.fit.datapath) model = Ex2Profile::from_datapath(model.id(), arch, *r.fit.datapath);
    }
    if (!r.fraction_valid) r.fraction_problem = std::to_string(r.fraction_missing) + " entries of F not measured";
  } catch (const std::invalid_argument& e) {
    r.fraction_problem = e.what();
  }
  if (!r.fraction_valid) {
    r.kernel_ms = probe.kernel_ms;
    return r;
  }
  // Pass 2: the model (the fitted datapath, or F) against every result.
  r.classes.resize(kClasses);
  for (int c = 0; c < kClasses; ++c) r.classes[size_t(c)].name = kClassName[c];
  uint64_t total = 0, done = 0;
  for (const auto& range : kSweep) total += range.count;
  for (const auto& range : kSweep) {
    for (uint64_t off = 0; off < range.count; off += kChunk) {
      const uint32_t n = uint32_t(std::min<uint64_t>(kChunk, range.count - off));
      const uint32_t first = uint32_t(range.first + off);
      const uint32_t* h = probe.run(first, n);
#pragma omp parallel
      {
        std::array<uint64_t, kClasses> inputs{}, bad{};
#pragma omp for schedule(static)
        for (int64_t i = 0; i < int64_t(n); ++i) {
          const uint32_t b = first + uint32_t(i);
          const int c = classify(b);
          ++inputs[size_t(c)];
          const uint32_t want = f32_bits(model.ex2(f32_from_bits(b)));
          if (h[i] != want) {
            ++bad[size_t(c)];
#pragma omp critical(ex2_examples)
            {
              keep_example(r.classes[size_t(c)], b, h[i], want);
            }
          }
        }
#pragma omp critical(ex2_counts)
        for (int c = 0; c < kClasses; ++c) {
          r.classes[size_t(c)].inputs += inputs[size_t(c)];
          r.classes[size_t(c)].mismatches += bad[size_t(c)];
        }
      }
      done += n;
      progress(2, done, total);
    }
  }
  r.kernel_ms = probe.kernel_ms;
  return r;
}

}  // namespace tqref
