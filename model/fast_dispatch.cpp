// Runtime choice of the fast path's instruction set and of the model path (tqref/model_path.h).
#include <array>
#include <atomic>
#include <stdexcept>

#include "fast_kernels.h"
#include "tqref/model_path.h"

namespace tqref {

namespace fast {

extern const FastKernels kPortable;
#if defined(__x86_64__) && defined(__GNUC__)
extern const FastKernels kAvx512, kAvx2;
#endif

namespace {

// Whether this CPU (and its OS, which must save the wide registers) can run a table.
bool runnable(const FastKernels* k) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (k == &kAvx512)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (k == &kAvx2) return __builtin_cpu_supports("avx2");
#endif
  return k == &kPortable;
}

std::atomic<const FastKernels*>& chosen() {
  static std::atomic<const FastKernels*> k{[] {
    for (const FastKernels* c : built_kernels())
      if (runnable(c)) return c;
    return &kPortable;
  }()};
  return k;
}

}  // namespace

std::span<const FastKernels* const> built_kernels() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const std::array<const FastKernels*, 3> all = {&kAvx512, &kAvx2, &kPortable};
#else
  static const std::array<const FastKernels*, 1> all = {&kPortable};
#endif
  return all;
}

const FastKernels& kernels() { return *chosen().load(std::memory_order_relaxed); }

}  // namespace fast

namespace {
std::atomic<ModelPath> g_path{ModelPath::fast};
}  // namespace

void set_model_path(ModelPath p) { g_path.store(p, std::memory_order_relaxed); }
ModelPath model_path() { return g_path.load(std::memory_order_relaxed); }
const char* model_path_name(ModelPath p) { return p == ModelPath::fast ? "fast" : "scalar"; }

ModelPath parse_model_path(const std::string& s) {
  if (s == "fast") return ModelPath::fast;
  if (s == "scalar") return ModelPath::scalar;
  throw std::invalid_argument("model path '" + s + "'; allowed: fast, scalar");
}

std::vector<std::string> fast_isas() {
  std::vector<std::string> r;
  for (const fast::FastKernels* k : fast::built_kernels())
    if (fast::runnable(k)) r.push_back(k->isa);
  return r;
}

void set_fast_isa(const std::string& isa) {
  for (const fast::FastKernels* k : fast::built_kernels())
    if (isa == k->isa && fast::runnable(k)) {
      fast::chosen().store(k, std::memory_order_relaxed);
      return;
    }
  std::string allowed;
  for (const std::string& s : fast_isas()) allowed += (allowed.empty() ? "" : ", ") + s;
  throw std::invalid_argument("fast-path instruction set '" + isa + "' is not built in or not "
                              "supported by this CPU; allowed: " + allowed);
}

std::string fast_isa() { return fast::kernels().isa; }

}  // namespace tqref
