// Exploration of the GPU's approximate reciprocal, square root and division (PTX rcp.approx,
// sqrt.approx, div.full, div.approx, each with and without .ftz), the instructions nvcc emits for
// `1.0f / x`, `sqrtf` and `a / b` under -prec-div=false, -prec-sqrt=false and --use_fast_math
// (docs/approx-units.md). Standalone (CUDA runtime only) so it builds on a bare device machine.
//
// It measures the two fraction tables the model reads (data/hw/<arch>/approx.h5):
//   R[m] = rcp.approx.f32(1 + m * 2^-23),  m in [0, 2^23)
//   S[i] = sqrt.approx.f32(bits 0x3F800000 + i), i in [0, 2^24)   (x in [1, 4))
// each stored as the signed difference of its bits from the correctly rounded result, and then
// tests, on the GPU, the structure the model assumes against every one of the 2^32 inputs of each
// unary instruction and 2^31 pseudo-random operand pairs of each division, printing per input class
// the count of mismatches and the first counter-examples. The structure (the model's, written again
// here as the hypothesis under test) is:
//   rcp:  +-0 -> +-Inf, +-Inf -> +-0, NaN -> canonical; normal x = 1.m * 2^E -> R[m] * 2^-E,
//         rounded once into the subnormals; subnormal x (no ftz) -> rcp(x * 2^24) * 2^24.
//   sqrt: -0 -> -0, +Inf -> +Inf, x < 0 -> canonical NaN; normal x = f * 4^k, f in [1, 4) ->
//         S[f] * 2^k; subnormal x (no ftz) -> sqrt(x * 2^24) * 2^-12.
//   .ftz: subnormal inputs read as signed zero, subnormal results flush to signed zero.
//   div:  a' * rcp.ftz(b'), one rounding (.ftz flushes a' and the product), with (a', b') =
//         (a, b) * s, each product rounded: s = 1/4 for div.full when |b| > 2^126, s = 2^24
//         without .ftz when |b| < 2^-126, else 1 (the SASS ptxas writes for sm_90).
// Usage: approx_explore OUTDIR   (writes rcp_delta.i8 and sqrt_delta.i8, the log to stdout; exit 0
// when the structure held for every input, 1 on a mismatch or a CUDA error, 2 usage)
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                                   \
  do {                                                                          \
    cudaError_t e_ = (x);                                                       \
    if (e_ != cudaSuccess) {                                                    \
      std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e_));      \
      return 1;                                                                 \
    }                                                                           \
  } while (0)

enum Op : int { RCP, RCP_FTZ, SQRT, SQRT_FTZ, DIV_FULL, DIV_FULL_FTZ, DIV_APPROX, DIV_APPROX_FTZ, NUM_OPS };
static const char* kOpNames[NUM_OPS] = {"rcp.approx.f32",     "rcp.approx.ftz.f32",
                                        "sqrt.approx.f32",    "sqrt.approx.ftz.f32",
                                        "div.full.f32",       "div.full.ftz.f32",
                                        "div.approx.f32",     "div.approx.ftz.f32"};

__device__ __forceinline__ float op1(int op, float x) {
  float y;
  switch (op) {
    case RCP: asm volatile("rcp.approx.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
    case RCP_FTZ: asm volatile("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
    case SQRT: asm volatile("sqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
    default: asm volatile("sqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
  }
  return y;
}

__device__ __forceinline__ float op2(int op, float a, float b) {
  float y;
  switch (op) {
    case DIV_FULL: asm volatile("div.full.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b)); break;
    case DIV_FULL_FTZ: asm volatile("div.full.ftz.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b)); break;
    case DIV_APPROX: asm volatile("div.approx.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b)); break;
    default: asm volatile("div.approx.ftz.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b)); break;
  }
  return y;
}

__device__ __forceinline__ float rn1(int op, float x) {
  float y;
  if (op == RCP) asm volatile("rcp.rn.f32 %0, %1;" : "=f"(y) : "f"(x));
  else asm volatile("sqrt.rn.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// ---- the structure under test -------------------------------------------------------------
__device__ const uint32_t* g_R;  // R[m] bits
__device__ const uint32_t* g_S;  // S[i] bits

__device__ __forceinline__ bool is_sub(uint32_t b) { return (b & 0x7F800000u) == 0 && (b & 0x7FFFFFu); }
__device__ __forceinline__ float flush(float y) {
  return is_sub(__float_as_uint(y)) ? __uint_as_float(__float_as_uint(y) & 0x80000000u) : y;
}
// f * 2^k with one rounding (k may take the result into the subnormals; f normal).
__device__ __forceinline__ float scale2(float f, int k) {
  if (k < -126) { f = __fmul_rn(f, __uint_as_float(0x00800000u)); k += 126; }  // exact: f >= 0.5
  if (k > 127) { f = __fmul_rn(f, __uint_as_float(0x7F000000u)); k -= 127; }
  return __fmul_rn(f, __uint_as_float(uint32_t(k + 127) << 23));
}

__device__ float model_rcp(float x, bool ftz) {
  uint32_t b = __float_as_uint(x);
  const uint32_t sign = b & 0x80000000u, e = (b >> 23) & 0xFF, m = b & 0x7FFFFFu;
  if (e == 0xFF) return m ? __uint_as_float(0x7FFFFFFFu) : __uint_as_float(sign);
  if (e == 0 && (m == 0 || ftz)) return __uint_as_float(sign | 0x7F800000u);
  if (e == 0) {  // subnormal: scale into the normals
    float y = model_rcp(__fmul_rn(x, 16777216.0f), false);
    return __fmul_rn(y, 16777216.0f);
  }
  float y = scale2(__uint_as_float(g_R[m]), 127 - int(e));
  y = __uint_as_float(__float_as_uint(y) | sign);
  return ftz ? flush(y) : y;
}

__device__ float model_sqrt(float x, bool ftz) {
  uint32_t b = __float_as_uint(x);
  const uint32_t sign = b & 0x80000000u, e = (b >> 23) & 0xFF, m = b & 0x7FFFFFu;
  if (e == 0xFF && m) return __uint_as_float(0x7FFFFFFFu);
  if (e == 0 && (m == 0 || ftz)) return __uint_as_float(sign);
  if (sign) return __uint_as_float(0x7FFFFFFFu);
  if (e == 0xFF) return x;
  if (e == 0) return __fmul_rn(model_sqrt(__fmul_rn(x, 16777216.0f), false), 1.0f / 4096.0f);
  const int E = int(e) - 127, k = E >= 0 ? E / 2 : -((1 - E) / 2);  // floor(E / 2)
  const uint32_t i = (uint32_t(E - 2 * k) << 23) | m;
  return scale2(__uint_as_float(g_S[i]), k);
}

__device__ float model_mul(float x, float y, bool ftz) {
  return ftz ? flush(__fmul_rn(flush(x), flush(y))) : __fmul_rn(x, y);
}

// a' * rcp.ftz(b') with (a', b') = (a, b) * s, each product rounded (see the structure above).
__device__ float model_div(float a, float b, bool full, bool ftz) {
  const float mag = fabsf(b);
  float s = 1.0f;
  if (full && mag > 0x1p126f) s = 0.25f;
  if (!ftz && mag < 0x1p-126f) s = 16777216.0f;
  if (s != 1.0f) a = model_mul(a, s, ftz), b = model_mul(b, s, ftz);
  return model_mul(a, model_rcp(b, true), ftz);
}

__device__ float model(int op, float a, float b) {
  switch (op) {
    case RCP: return model_rcp(a, false);
    case RCP_FTZ: return model_rcp(a, true);
    case SQRT: return model_sqrt(a, false);
    case SQRT_FTZ: return model_sqrt(a, true);
    case DIV_FULL: return model_div(a, b, true, false);
    case DIV_FULL_FTZ: return model_div(a, b, true, true);
    case DIV_APPROX: return model_div(a, b, false, false);
    default: return model_div(a, b, false, true);
  }
}

// ---- input classes and tallies ------------------------------------------------------------
constexpr int kClasses = 8, kExamples = 6;
struct Tally {
  unsigned long long n[kClasses], bad[kClasses];
  unsigned int ex_count[kClasses];
  uint32_t ex[kClasses][kExamples][4];  // a, b, got, want
};
// "normal in" names the operand classified (the divisor for divisions); NaN out is sqrt of a
// negative, or a division of a NaN dividend (or an infinite one by a divisor whose reciprocal
// is zero).
static const char* kClassNames[kClasses] = {"NaN in", "zero in", "Inf in", "subnormal in",
                                            "normal in, normal out", "normal in, subnormal/zero out",
                                            "normal in, Inf out", "normal in, NaN out"};

__device__ int class_of(float in, float want) {
  const uint32_t b = __float_as_uint(in), e = (b >> 23) & 0xFF, m = b & 0x7FFFFFu;
  if (e == 0xFF) return m ? 0 : 2;
  if (e == 0) return m ? 3 : 1;
  const uint32_t w = __float_as_uint(want), we = (w >> 23) & 0xFF;
  if (we == 0xFF) return (w & 0x7FFFFFu) ? 7 : 6;
  return we == 0 ? 5 : 4;
}

__device__ __forceinline__ bool same(float got, float want) {
  const uint32_t g = __float_as_uint(got), w = __float_as_uint(want);
  return g == w;
}

__device__ __forceinline__ uint32_t hash32(uint64_t i, uint32_t salt) {
  uint64_t z = i * 0x9E3779B97F4A7C15ull + salt * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return uint32_t(z ^ (z >> 31));
}

// Operand pairs: half from raw random bits, half with both exponents within 2^-40 .. 2^40
// (where the kernels divide).
__device__ void pair_of(uint64_t i, float& a, float& b) {
  uint32_t x = hash32(i, 1), y = hash32(i, 2);
  if (i & 1) {
    x = (x & 0x807FFFFFu) | ((87u + hash32(i, 3) % 81u) << 23);
    y = (y & 0x807FFFFFu) | ((87u + hash32(i, 4) % 81u) << 23);
  }
  a = __uint_as_float(x);
  b = __uint_as_float(y);
}

__global__ void check(int op, uint64_t first, uint64_t count, bool binary, Tally* t) {
  unsigned long long n[kClasses] = {}, bad[kClasses] = {};
  for (uint64_t i = first + blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < first + count;
       i += uint64_t(gridDim.x) * blockDim.x) {
    float a, b = 0.0f;
    if (binary) pair_of(i, a, b);
    else a = __uint_as_float(uint32_t(i));
    const float got = binary ? op2(op, a, b) : op1(op, a);
    const float want = model(op, a, b);
    const int c = binary ? class_of(b, want) : class_of(a, want);
    ++n[c];
    if (!same(got, want)) {
      ++bad[c];
      const unsigned k = atomicAdd(&t->ex_count[c], 1u);
      if (k < kExamples) {
        t->ex[c][k][0] = __float_as_uint(a);
        t->ex[c][k][1] = __float_as_uint(b);
        t->ex[c][k][2] = __float_as_uint(got);
        t->ex[c][k][3] = __float_as_uint(want);
      }
    }
  }
  for (int c = 0; c < kClasses; ++c) {
    if (n[c]) atomicAdd(&t->n[c], n[c]);
    if (bad[c]) atomicAdd(&t->bad[c], bad[c]);
  }
}

__global__ void table(int op, uint32_t first_bits, uint32_t count, uint32_t* bits, int8_t* delta,
                      unsigned long long* wide, unsigned long long* ftz_diff) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float x = __uint_as_float(first_bits + i);
  const uint32_t got = __float_as_uint(op1(op, x));
  const int d = int(got) - int(__float_as_uint(rn1(op, x)));
  if (d < -127 || d > 127) atomicAdd(wide, 1ull);
  bits[i] = got;
  delta[i] = int8_t(d < -127 ? -128 : d > 127 ? 127 : d);
  if (got != __float_as_uint(op1(op + 1, x))) atomicAdd(ftz_diff, 1ull);
}

static float bits_f(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }

static int measure(int op, uint32_t first_bits, uint32_t count, uint32_t** d_bits, const char* out,
                   const std::string& dir) {
  int8_t* d_delta;
  unsigned long long* d_cnt;
  CK(cudaMalloc(d_bits, count * 4ull));
  CK(cudaMalloc(&d_delta, count));
  CK(cudaMalloc(&d_cnt, 16));
  CK(cudaMemset(d_cnt, 0, 16));
  table<<<(count + 255) / 256, 256>>>(op, first_bits, count, *d_bits, d_delta, d_cnt, d_cnt + 1);
  CK(cudaGetLastError());
  std::vector<int8_t> delta(count);
  unsigned long long cnt[2];
  CK(cudaMemcpy(delta.data(), d_delta, count, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(cnt, d_cnt, 16, cudaMemcpyDeviceToHost));
  long hist[7] = {};
  for (int8_t d : delta) hist[d < -2 ? 0 : d > 2 ? 6 : d + 3]++;
  std::printf("%s table: %u entries; |delta| > 127: %llu; differs from .ftz: %llu\n"
              "  delta histogram  <-2: %ld  -2: %ld  -1: %ld  0: %ld  1: %ld  2: %ld  >2: %ld\n",
              kOpNames[op], count, cnt[0], cnt[1], hist[0], hist[1], hist[2], hist[3], hist[4],
              hist[5], hist[6]);
  const std::string path = dir + "/" + out;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(delta.data(), 1, count, f) != count) { std::perror(path.c_str()); return 1; }
  std::fclose(f);
  return 0;
}

// Adds the mismatches to *bad; returns 1 on a CUDA error.
static int run_checks(int op, bool binary, uint64_t count, Tally* d_t, unsigned long long* bad) {
  CK(cudaMemset(d_t, 0, sizeof(Tally)));
  const uint64_t step = 1ull << 30;
  for (uint64_t first = 0; first < count; first += step) {
    check<<<264 * 8, 256>>>(op, first, step < count - first ? step : count - first, binary, d_t);
    CK(cudaGetLastError());
  }
  Tally t;
  CK(cudaMemcpy(&t, d_t, sizeof t, cudaMemcpyDeviceToHost));
  std::printf("%s over %llu %s:\n", kOpNames[op], (unsigned long long)count,
              binary ? "operand pairs" : "inputs");
  for (int c = 0; c < kClasses; ++c) {
    if (!t.n[c]) continue;
    std::printf("  %-32s n=%llu mismatches=%llu\n", kClassNames[c], t.n[c], t.bad[c]);
    *bad += t.bad[c];
    for (unsigned k = 0; k < t.ex_count[c] && k < unsigned(kExamples); ++k)
      std::printf("      a=0x%08X (%.9g) b=0x%08X (%.9g) got=0x%08X (%.9g) model=0x%08X (%.9g)\n",
                  t.ex[c][k][0], bits_f(t.ex[c][k][0]), t.ex[c][k][1], bits_f(t.ex[c][k][1]),
                  t.ex[c][k][2], bits_f(t.ex[c][k][2]), t.ex[c][k][3], bits_f(t.ex[c][k][3]));
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: approx_explore OUTDIR\n");
    return 2;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s sm_%d%d\n", prop.name, prop.major, prop.minor);
  uint32_t *d_R, *d_S;
  if (measure(RCP, 0x3F800000u, 1u << 23, &d_R, "rcp_delta.i8", argv[1])) return 1;
  if (measure(SQRT, 0x3F800000u, 1u << 24, &d_S, "sqrt_delta.i8", argv[1])) return 1;
  CK(cudaMemcpyToSymbol(g_R, &d_R, sizeof d_R));
  CK(cudaMemcpyToSymbol(g_S, &d_S, sizeof d_S));
  Tally* d_t;
  CK(cudaMalloc(&d_t, sizeof(Tally)));
  unsigned long long bad = 0;
  for (int op = RCP; op <= SQRT_FTZ; ++op)
    if (run_checks(op, false, 1ull << 32, d_t, &bad)) return 1;
  for (int op = DIV_FULL; op < NUM_OPS; ++op)
    if (run_checks(op, true, 1ull << 31, d_t, &bad)) return 1;
  std::printf("structure: %llu mismatches in all\n", bad);
  return bad == 0 ? 0 : 1;
}
