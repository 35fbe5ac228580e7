// Runtime choice of the SIMD path's instruction set and of the model path (tqref/model_path.h).
#include <array>
#include <atomic>
#include <stdexcept>

#include "simd_kernels.h"
#include "tqref/model_path.h"

namespace tqref {

namespace simd {

extern const SimdKernels kPortable;
#if defined(__x86_64__) && defined(__GNUC__)
extern const SimdKernels kAvx512, kAvx2;
#endif

namespace {

// Whether this CPU (and its OS, which must save the wide registers) can run a table.
bool runnable(const SimdKernels* k) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (k == &kAvx512)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (k == &kAvx2) return __builtin_cpu_supports("avx2");
#endif
  return k == &kPortable;
}

std::atomic<const SimdKernels*>& chosen() {
  static std::atomic<const SimdKernels*> k{[] {
    for (const SimdKernels* c : built_kernels())
      if (runnable(c)) return c;
    return &kPortable;
  }()};
  return k;
}

}  // namespace

std::span<const SimdKernels* const> built_kernels() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const std::array<const SimdKernels*, 3> all = {&kAvx512, &kAvx2, &kPortable};
#else
  static const std::array<const SimdKernels*, 1> all = {&kPortable};
#endif
  return all;
}

const SimdKernels& kernels() { return *chosen().load(std::memory_order_relaxed); }

}  // namespace simd

namespace {
std::atomic<ModelPath> g_path{ModelPath::simd};
}  // namespace

void set_model_path(ModelPath p) { g_path.store(p, std::memory_order_relaxed); }
ModelPath model_path() { return g_path.load(std::memory_order_relaxed); }
const char* model_path_name(ModelPath p) { return p == ModelPath::simd ? "simd" : "scalar"; }

ModelPath parse_model_path(const std::string& s) {
  if (s == "simd" || s == "fast") return ModelPath::simd;  // "fast": the former name
  if (s == "scalar") return ModelPath::scalar;
  throw std::invalid_argument("model path '" + s +
                              "'; allowed: simd (or its former name fast), scalar");
}

std::vector<std::string> simd_isas() {
  std::vector<std::string> r;
  for (const simd::SimdKernels* k : simd::built_kernels())
    if (simd::runnable(k)) r.push_back(k->isa);
  return r;
}

void set_simd_isa(const std::string& isa) {
  for (const simd::SimdKernels* k : simd::built_kernels())
    if (isa == k->isa && simd::runnable(k)) {
      simd::chosen().store(k, std::memory_order_relaxed);
      return;
    }
  std::string allowed;
  for (const std::string& s : simd_isas()) allowed += (allowed.empty() ? "" : ", ") + s;
  throw std::invalid_argument("SIMD-path instruction set '" + isa + "' is not built in or not "
                              "supported by this CPU; allowed: " + allowed);
}

std::string simd_isa() { return simd::kernels().isa; }

}  // namespace tqref
