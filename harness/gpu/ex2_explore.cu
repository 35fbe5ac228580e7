// First exploration of the GPU's MUFU.EX2 unit (ex2.approx.ftz.f32) over every non-positive float
// and every NaN. Standalone (CUDA runtime only) so it builds on a bare device machine with nvcc.
// It measures the fraction table T[k] = EX2(-k * 2^-23), k in [0, 2^23], and tests the structure
// hypotheses that `tqref calibrate ex2` later relies on, printing the first counter-examples.
// Usage: ex2_explore OUTDIR   (writes T as four raw little-endian uint32 files plus a text log)
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <vector>
#include <map>
#include <string>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

__device__ __forceinline__ float ex2_unit(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__global__ void ex2_eval(uint32_t first_bits, uint32_t count, uint32_t* out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = __float_as_uint(ex2_unit(__uint_as_float(first_bits + i)));
}

static float bits_f(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
static uint32_t f_bits(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }

int main(int argc, char** argv) {
  if (argc != 2) { std::fprintf(stderr, "usage: ex2_explore OUTDIR\n"); return 2; }
  const uint32_t chunk = 1u << 26;
  uint32_t* d_out = nullptr;
  CK(cudaMalloc(&d_out, chunk * sizeof(uint32_t)));
  std::vector<uint32_t> h(chunk);
  auto eval = [&](uint32_t first, uint32_t n) -> int {
    ex2_eval<<<(n + 255) / 256, 256>>>(first, n, d_out);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h.data(), d_out, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    return 0;
  };
  // Fraction table T[k] = EX2(-k * 2^-23), k in [0, 2^23], filled from the sweep's own inputs.
  const uint32_t tn = (1u << 23) + 1;
  std::vector<uint32_t> T(tn);
  // k*2^-23 are not contiguous bit patterns, so fill T from the full sweep below instead.
  std::vector<uint8_t> have(tn, 0);
  struct Cls { uint64_t n = 0, bad = 0; std::vector<std::pair<uint32_t, uint32_t>> ex; };
  std::map<std::string, Cls> cls;
  std::map<uint32_t, uint64_t> nan_out, tiny_out, below_out;
  // Pass 1: the whole non-positive range [0x80000000, 0xFFFFFFFF], also collecting T.
  for (uint64_t first = 0x80000000ull; first <= 0xFFFFFFFFull; first += chunk) {
    if (eval((uint32_t)first, chunk)) return 1;
#pragma omp parallel for
    for (uint32_t i = 0; i < chunk; ++i) {
      uint32_t b = (uint32_t)first + i;
      float x = bits_f(b);
      if (x >= -1.0f && x <= 0.0f && std::isfinite(x)) {
        double s = -(double)x * 8388608.0;
        if (s == std::floor(s)) { uint32_t k = (uint32_t)s; T[k] = h[i]; have[k] = 1; }
      }
    }
  }
  uint64_t missing = 0;
  for (uint32_t k = 0; k < tn; ++k) missing += !have[k];
  std::printf("fraction table: %u entries, %llu missing\n", tn, (unsigned long long)missing);
  auto note = [&](const char* name, uint32_t b, uint32_t got, bool ok) {
    Cls& c = cls[name];
    ++c.n;
    if (!ok) { ++c.bad; if (c.ex.size() < 8) c.ex.push_back({b, got}); }
  };
  // Pass 2: test hypotheses.
  for (uint64_t first = 0x80000000ull; first <= 0xFFFFFFFFull; first += chunk) {
    if (eval((uint32_t)first, chunk)) return 1;
    for (uint32_t i = 0; i < chunk; ++i) {
      uint32_t b = (uint32_t)first + i, got = h[i];
      float x = bits_f(b);
      uint32_t exp = (b >> 23) & 0xFF;
      if (std::isnan(x)) { nan_out[got]++; continue; }
      if (b == 0x80000000u) { note("-0.0 -> 1.0", b, got, got == 0x3F800000u); continue; }
      if (std::isinf(x)) { note("-inf -> +0", b, got, got == 0u); continue; }
      if (exp == 0) { tiny_out[got]++; note("subnormal -> 1.0", b, got, got == 0x3F800000u); continue; }
      if (x >= -1.0f) {
        double s = std::trunc(-(double)x * 8388608.0);
        note("[-1,0): T[trunc(x*2^23)]", b, got, got == T[(uint32_t)s]);
      } else if (x >= -126.0f) {
        float c = std::ceil(x);
        float r = x - c;  // exact
        uint32_t tr;
        if (r == 0.0f) tr = 0x3F800000u;
        else { double s = std::trunc(-(double)r * 8388608.0); tr = T[(uint32_t)s]; }
        float want = std::ldexp(bits_f(tr), (int)c);
        note("[-126,-1): 2^ceil * T", b, got, got == f_bits(want));
      } else {
        below_out[got]++;
        note("(-inf,-126) -> +0", b, got, got == 0u);
      }
    }
  }
  for (auto& [name, c] : cls) {
    std::printf("%-28s n=%llu mismatches=%llu\n", name.c_str(), (unsigned long long)c.n,
                (unsigned long long)c.bad);
    for (auto& [b, g] : c.ex) std::printf("    x=0x%08X (%.9g) -> 0x%08X (%.9g)\n", b, bits_f(b), g, bits_f(g));
  }
  auto dump = [](const char* name, std::map<uint32_t, uint64_t>& m) {
    std::printf("%s: %zu distinct outputs\n", name, m.size());
    int k = 0;
    for (auto& [o, n] : m) { if (k++ < 12) std::printf("    0x%08X x%llu\n", o, (unsigned long long)n); }
  };
  dump("negative NaN inputs", nan_out);
  dump("subnormal inputs", tiny_out);
  dump("inputs below -126", below_out);
  // Positive NaNs and +0 for completeness.
  if (eval(0x7F800001u, (1u << 23) - 1)) return 1;
  std::map<uint32_t, uint64_t> pnan;
  for (uint32_t i = 0; i < (1u << 23) - 1; ++i) pnan[h[i]]++;
  dump("positive NaN inputs", pnan);
  if (eval(0u, 1)) return 1;
  std::printf("+0.0 -> 0x%08X\n", h[0]);
  // Table out in four 8 MiB pieces plus the last entry in the log.
  for (int p = 0; p < 4; ++p) {
    std::string path = std::string(argv[1]) + "/ex2_T" + std::to_string(p) + ".u32";
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) { std::perror(path.c_str()); return 1; }
    std::fwrite(T.data() + (size_t)p * (1u << 21), 4, 1u << 21, f);
    std::fclose(f);
  }
  std::printf("T[2^23] = 0x%08X\n", T[1u << 23]);
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s sm_%d%d\n", prop.name, prop.major, prop.minor);
  return 0;
}
