// tqref_kernels_selftest: a one-command GPU check of our kernels against the CPU model,
// independent of the golden-file harness (useful before the harness runs, and for mutants).
//   1. measures the EX2 fraction table with the ex2_probe module and builds an Ex2Profile;
//   2. writer: every format, several geometries with padded strides, padding tokens and special
//      groups; the whole K and V pools (poisoned beforehand) must equal the model's bytes;
//   3. decoder: every format, HDIM 128 and 256, block sizes 16 and 13, GQA 4, lengths
//      0..1031, windows 0 and 50, q scales 1 and 4 (4 makes the sparse-V skip frequent); every
//      output byte (poisoned beforehand; L == 0 rows must keep the poison) must equal the model.
// Usage: tqref_kernels_selftest [--module NAME=PATH ...] [--seed N]
//   --module replaces a builtin module (writers, decode_hdim128, decode_hdim256, ex2_probe) by a
//   fatbin/cubin/PTX file, e.g. a mutant from build/kernels/testing/mutants/.
// Exit: 0 all equal, 1 a mismatch or kernel fault, 2 no GPU or bad arguments.
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tqref/builtin_kernels.h"
#include "tqref/decode.h"
#include "tqref/ex2.h"
#include "tqref/format.h"
#include "tqref/numeric.h"
#include "tqref/writer.h"

namespace {

struct CuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void cu(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  throw CuError(std::string(call) + ": " + (name ? name : "unknown CUDA error"));
}
#define CU(x) cu((x), #x)

// Device buffer holding a copy of a host vector.
struct DevBuf {
  CUdeviceptr p = 0;
  size_t bytes = 0;
  template <class T> explicit DevBuf(const std::vector<T>& h) : bytes(h.size() * sizeof(T)) {
    CU(cuMemAlloc(&p, bytes ? bytes : 1));
    if (bytes) CU(cuMemcpyHtoD(p, h.data(), bytes));
  }
  ~DevBuf() { if (p) cuMemFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  template <class T> std::vector<T> read() const {
    std::vector<T> h(bytes / sizeof(T));
    if (bytes) CU(cuMemcpyDtoH(h.data(), p, bytes));
    return h;
  }
};

std::map<std::string, std::string> g_module_files;  // --module overrides
std::map<std::string, CUmodule> g_modules;

CUfunction kernel(const std::string& module, const std::string& name) {
  auto it = g_modules.find(module);
  if (it == g_modules.end()) {
    CUmodule m = nullptr;
    auto file = g_module_files.find(module);
    if (file != g_module_files.end()) {
      std::ifstream in(file->second, std::ios::binary);
      if (!in) throw std::runtime_error("--module " + module + "=" + file->second + ": cannot open");
      std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
      bytes.push_back(0);  // PTX must be NUL-terminated; cubin/fatbin ignore the tail
      CU(cuModuleLoadData(&m, bytes.data()));
    } else {
      auto image = tqref::kernels::builtin_fatbin(module);
      if (image.empty()) throw std::runtime_error("no builtin module '" + module + "'");
      CU(cuModuleLoadData(&m, image.data()));
    }
    it = g_modules.emplace(module, m).first;
  }
  CUfunction f = nullptr;
  CU(cuModuleGetFunction(&f, it->second, name.c_str()));
  return f;
}

// EX2 fraction table F[k] = EX2(-k * 2^-23), k = 0 .. 2^23, from contiguous probe sweeps: for
// exponent e in [-23, -1], the patterns -2^e * (1 + m 2^-23) hold k = 2^(e+23) + m >> (-e).
std::vector<uint32_t> measure_ex2_table() {
  CUfunction f = kernel("ex2_probe", "tqref_ex2_probe");
  const uint32_t band = 1u << 23;
  std::vector<uint32_t> table(tqref::kEx2FractionEntries, 0);
  std::vector<uint32_t> zero(band);
  DevBuf out(zero);
  auto sweep = [&](uint32_t first, uint32_t count) {
    void* args[] = {&first, &count, &out.p};
    CU(cuLaunchKernel(f, (count + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
    CU(cuCtxSynchronize());
    std::vector<uint32_t> h(count);
    CU(cuMemcpyDtoH(h.data(), out.p, count * sizeof(uint32_t)));
    return h;
  };
  for (int e = -23; e <= -1; ++e) {
    const uint32_t first = 0x80000000u | (uint32_t(e + 127) << 23);
    const std::vector<uint32_t> h = sweep(first, band);
    const uint32_t step = 1u << (-e);
    for (uint32_t m = 0; m < band; m += step) table[(1u << (e + 23)) + (m >> (-e))] = h[m];
  }
  table[0] = sweep(0x80000000u, 1)[0];             // EX2(-0) = 1
  table[band] = sweep(0xBF800000u, 1)[0];          // EX2(-1) = 0.5
  return table;
}

uint16_t bf16(float x) { return tqref::f32_to_bf16(x); }

// ---- writer ------------------------------------------------------------------------------------

struct WriterCase {
  tqref::Format format;
  uint32_t H, D, B, tokens, padding, key_pad, value_pad, v_data_pad, v_block_pad;
};

// Values for one token row: gaussian, with special groups mixed in (docs/spec.md section 7).
void fill_values(std::mt19937_64& rng, uint16_t* row, uint32_t n) {
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 15);
  for (uint32_t g = 0; g < n / 16; ++g) {
    uint16_t* x = row + g * 16;
    const int k = kind(rng);
    for (int i = 0; i < 16; ++i) x[i] = bf16(gauss(rng));
    if (k == 0) for (int i = 0; i < 16; ++i) x[i] = 0;                        // all zero
    if (k == 1) x[rng() % 16] = 0x7FC0;                                        // NaN
    if (k == 2) x[rng() % 16] = (rng() & 1) ? 0x7F80 : 0xFF80;                 // +-Inf
    if (k == 3) x[rng() % 16] = bf16(3e4f);                                    // one huge
    if (k == 4) for (int i = 0; i < 16; ++i) x[i] = bf16(gauss(rng) * 1e-6f);  // underflows fp8
    if (k == 5) for (int i = 0; i < 16; ++i) x[i] = bf16(gauss(rng) * 1e4f);   // saturates
    if (k == 6) for (int i = 0; i < 16; ++i) x[i] = bf16(0.5f);                // constant
  }
}

bool run_writer(const WriterCase& c, uint64_t seed) {
  const tqref::FormatTraits& t = tqref::traits(c.format);
  const uint32_t n = c.H * c.D;
  const uint32_t num_blocks = (c.tokens + c.B - 1) / c.B + 2;
  tqref::WriterParams p;
  p.num_kv_heads = c.H;
  p.head_dim = c.D;
  p.block_size = c.B;
  p.key_stride = n + c.key_pad;
  p.value_stride = n + c.value_pad;
  p.k_block_stride_bytes = uint64_t(c.B) * n * 2;
  p.v_data_section_bytes = uint64_t(c.B) * n * t.bits / 8 + c.v_data_pad;
  p.v_block_stride_bytes = p.v_data_section_bytes + uint64_t(c.B) * n / 16 + c.v_block_pad;
  std::mt19937_64 rng(seed);
  const uint32_t rows = c.tokens + c.padding;
  std::vector<uint16_t> key(uint64_t(rows) * p.key_stride), value(uint64_t(rows) * p.value_stride);
  for (auto& k : key) k = bf16(std::normal_distribution<float>(0, 1)(rng));
  for (uint32_t r = 0; r < rows; ++r) fill_values(rng, value.data() + uint64_t(r) * p.value_stride, n);
  std::vector<int64_t> slots(uint64_t(num_blocks) * c.B);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(c.tokens);
  for (uint32_t i = 0; i < c.padding; ++i) slots.insert(slots.begin() + rng() % (slots.size() + 1), -1);
  std::vector<uint8_t> kpool(uint64_t(num_blocks) * p.k_block_stride_bytes, 0xA5);
  std::vector<uint8_t> vpool(uint64_t(num_blocks) * p.v_block_stride_bytes, 0x5A);
  DevBuf dk(key), dv(value), dkp(kpool), dvp(vpool), ds(slots);
  tqref::reshape_and_cache_model(c.format, key, value, kpool, vpool, slots, p);
  CUfunction f = kernel("writers", std::string("reshape_and_cache_flash_bf16k_") + t.name);
  void* args[] = {&dk.p, &dv.p, &dkp.p, &dvp.p, &ds.p, &p.num_kv_heads, &p.head_dim,
                  &p.block_size, &p.key_stride, &p.value_stride, &p.k_block_stride_bytes,
                  &p.v_block_stride_bytes, &p.v_data_section_bytes};
  CU(cuLaunchKernel(f, uint32_t(slots.size()), 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CU(cuCtxSynchronize());
  const auto gk = dkp.read<uint8_t>(), gv = dvp.read<uint8_t>();
  uint64_t bad_k = 0, bad_v = 0, first_v = UINT64_MAX;
  for (size_t i = 0; i < gk.size(); ++i) bad_k += gk[i] != kpool[i];
  for (size_t i = 0; i < gv.size(); ++i)
    if (gv[i] != vpool[i]) { ++bad_v; if (first_v == UINT64_MAX) first_v = i; }
  std::printf("writer %s H=%u D=%u B=%u tokens=%u pad=%u strides+%u/%u v_pads %u/%u: %s",
              t.name, c.H, c.D, c.B, c.tokens, c.padding, c.key_pad, c.value_pad, c.v_data_pad,
              c.v_block_pad, bad_k + bad_v ? "MISMATCH" : "equal");
  if (bad_k + bad_v)
    std::printf(" (K bytes %llu, V bytes %llu; first V byte %llu: gpu 0x%02X model 0x%02X)",
                (unsigned long long)bad_k, (unsigned long long)bad_v,
                (unsigned long long)first_v, first_v < gv.size() ? gv[first_v] : 0,
                first_v < gv.size() ? vpool[first_v] : 0);
  std::printf("\n");
  return bad_k + bad_v == 0;
}

// ---- decoder -----------------------------------------------------------------------------------

struct DecodeCase {
  tqref::Format format;
  uint32_t hdim, B, window;
  float q_scale;
};

bool run_decode(const DecodeCase& c, const tqref::Ex2Profile& ex2, uint64_t seed) {
  const tqref::FormatTraits& t = tqref::traits(c.format);
  const uint32_t H = 2, gqa = 4, D = c.hdim, n = H * D, nqh = H * gqa;
  const std::vector<int32_t> lens = {0, 1, 3, 5, 37, 64, 1031};
  const uint32_t S = uint32_t(lens.size());
  uint32_t max_blocks = 0, used = 0;
  for (int32_t L : lens) {
    max_blocks = std::max<uint32_t>(max_blocks, (L + c.B - 1) / c.B + 1);  // one spare entry
    used += (L + c.B - 1) / c.B;
  }
  const uint32_t num_blocks = used + 3;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  // V pool written by the model writer for every slot (gaussian values), K pool random bf16.
  tqref::WriterParams wp;
  wp.num_kv_heads = H;
  wp.head_dim = D;
  wp.block_size = c.B;
  wp.key_stride = n;
  wp.value_stride = n;
  wp.k_block_stride_bytes = uint64_t(c.B) * n * 2;
  wp.v_data_section_bytes = uint64_t(c.B) * n * t.bits / 8 + 5;   // odd padding
  wp.v_block_stride_bytes = wp.v_data_section_bytes + uint64_t(c.B) * n / 16 + 11;
  const uint32_t slots_total = num_blocks * c.B;
  std::vector<uint16_t> key(uint64_t(slots_total) * n), value(uint64_t(slots_total) * n);
  for (auto& k : key) k = bf16(gauss(rng));
  for (auto& v : value) v = bf16(gauss(rng));
  std::vector<int64_t> slots(slots_total);
  std::iota(slots.begin(), slots.end(), 0);
  std::vector<uint8_t> kpool(uint64_t(num_blocks) * wp.k_block_stride_bytes, 0);
  std::vector<uint8_t> vpool(uint64_t(num_blocks) * wp.v_block_stride_bytes, 0x5A);
  tqref::reshape_and_cache_model(c.format, key, value, kpool, vpool, slots, wp);
  // Block tables: a shuffled assignment of physical blocks; unused entries out of range.
  std::vector<int32_t> phys(num_blocks);
  std::iota(phys.begin(), phys.end(), 0);
  std::shuffle(phys.begin(), phys.end(), rng);
  std::vector<int32_t> tables(uint64_t(S) * max_blocks, 0x7FFFFFFF);
  uint32_t next = 0;
  for (uint32_t s = 0; s < S; ++s)
    for (uint32_t j = 0; j < (lens[s] + c.B - 1) / c.B; ++j) tables[s * max_blocks + j] = phys[next++];
  tqref::DecodeParams p;
  p.max_blocks_per_seq = max_blocks;
  p.num_q_heads = nqh;
  p.num_kv_heads = H;
  p.head_dim = D;
  p.block_size = c.B;
  p.inv_sqrt_d = 1.0f / std::sqrt(float(D));
  p.q_stride = nqh * D + 8;
  p.v_block_stride_bytes = wp.v_block_stride_bytes;
  p.v_data_section_bytes = wp.v_data_section_bytes;
  p.sliding_window = c.window;
  p.num_seqs = S;
  p.hdim = c.hdim;
  std::vector<uint16_t> q(uint64_t(S) * p.q_stride);
  for (auto& x : q) x = bf16(gauss(rng) * c.q_scale);
  std::vector<uint16_t> out(uint64_t(S) * nqh * D, 0x7FBF);  // poison: a NaN no kernel writes
  DevBuf dq(q), dk(kpool), dv(vpool), dout(out), dt(tables), dl(lens);
  tqref::DecodeDiagnostics diag;
  tqref::paged_decode_model(c.format, q, kpool, vpool, out, tables, lens, p, ex2, &diag);
  const std::string module = c.hdim == 128 ? "decode_hdim128" : "decode_hdim256";
  CUfunction f = kernel(module, std::string("paged_decode_attn_bf16k_") + t.name);
  void* args[] = {&dq.p, &dk.p, &dv.p, &dout.p, &dt.p, &dl.p, &p.max_blocks_per_seq,
                  &p.num_q_heads, &p.num_kv_heads, &p.head_dim, &p.block_size, &p.inv_sqrt_d,
                  &p.q_stride, &p.v_block_stride_bytes, &p.v_data_section_bytes,
                  &p.sliding_window};
  CU(cuLaunchKernel(f, nqh, S, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CU(cuCtxSynchronize());
  const auto g = dout.read<uint16_t>();
  uint64_t bad = 0, first = UINT64_MAX, skipped = 0, positions = 0;
  for (const auto& h : diag.heads) { skipped += h.skip_count; positions += h.skipped.size(); }
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] != out[i]) { ++bad; if (first == UINT64_MAX) first = i; }
  std::printf("decode %s HDIM=%u B=%u window=%u q*%g (skipped %llu of %llu positions): %s",
              t.name, c.hdim, c.B, c.window, double(c.q_scale), (unsigned long long)skipped,
              (unsigned long long)positions, bad ? "MISMATCH" : "equal");
  if (bad)
    std::printf(" (%llu of %zu elements; first: seq %llu head %llu dim %llu gpu 0x%04X model 0x%04X)",
                (unsigned long long)bad, g.size(), (unsigned long long)(first / (nqh * D)),
                (unsigned long long)(first / D % nqh), (unsigned long long)(first % D), g[first],
                out[first]);
  std::printf("\n");
  return bad == 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = 20240611;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--module" && i + 1 < argc) {
      std::string v = argv[++i];
      const auto eq = v.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "--module %s: expected NAME=PATH (NAME: writers, decode_hdim128, "
                             "decode_hdim256, ex2_probe)\n", v.c_str());
        return 2;
      }
      g_module_files[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 0);
    } else {
      std::fprintf(stderr, "usage: tqref_kernels_selftest [--module NAME=PATH ...] [--seed N]\n");
      return 2;
    }
  }
  CUcontext ctx = nullptr;
  try {
    CU(cuInit(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
  } catch (const std::exception& e) {
    std::printf("no usable GPU: %s\n", e.what());
    return 2;
  }
  bool ok = true;
  try {
    int major = 0, minor = 0;
    CUdevice dev;
    CU(cuCtxGetDevice(&dev));
    CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    const std::string arch = "sm_" + std::to_string(major * 10 + minor);
    const auto ex2 = tqref::Ex2Profile::from_table("selftest", arch, measure_ex2_table());
    std::printf("EX2 table measured on %s\n", arch.c_str());
    uint64_t s = seed;
    for (const auto& t : tqref::kFormats) {
      ok &= run_writer({t.format, 2, 128, 16, 37, 3, 4, 16, 8, 24}, s++);
      ok &= run_writer({t.format, 1, 256, 7, 20, 0, 0, 3, 0, 0}, s++);
      ok &= run_writer({t.format, 4, 64, 13, 200, 5, 8, 1, 5, 7}, s++);
      ok &= run_writer({t.format, 3, 16, 1, 9, 2, 0, 0, 0, 1}, s++);  // 48 elems: odd rows
    }
    for (const auto& t : tqref::kFormats)
      for (uint32_t hdim : {128u, 256u})
        for (uint32_t B : {16u, 13u})
          for (uint32_t window : {0u, 50u})
            for (float qs : {1.0f, 4.0f}) ok &= run_decode({t.format, hdim, B, window, qs}, ex2, s++);
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    ok = false;
  }
  std::printf("%s\n", ok ? "ALL EQUAL" : "MISMATCHES FOUND");
  return ok ? 0 : 1;
}
