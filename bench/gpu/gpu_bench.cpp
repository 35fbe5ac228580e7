#include "bench/gpu/gpu_bench.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>

#include "gpu/launch.h"
#include "io/ex2_profile_io.h"
#include "tqref/builtin_kernels.h"
#include "tqref/decode.h"
#include "tqref/writer.h"

namespace tqref::bench {

std::string format_name(Format f) { return traits(f).name; }

std::string DecodeShape::label() const {
  char b[160];
  std::snprintf(b, sizeof b, "%s hdim%u %ux%u/%u L%u B%u qs%g", format_name(format).c_str(), hdim,
                num_seqs, num_q_heads, num_kv_heads, seq_len, block_size, double(q_sigma));
  return b;
}

namespace {

Timing summarize(std::vector<float> ms) {
  Timing t;
  t.runs = int(ms.size());
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return double(ms[size_t(q * double(ms.size() - 1) + 0.5)]); };
  t.min_ms = ms.front();
  t.median_ms = ms.size() % 2 ? ms[ms.size() / 2]
                              : 0.5 * (double(ms[ms.size() / 2 - 1]) + double(ms[ms.size() / 2]));
  t.p10_ms = at(0.1);
  t.p90_ms = at(0.9);
  return t;
}

// cuMemcpyDtoDAsync_v2, looked up in the driver that gpu::Driver already loaded (the handle is
// reference-counted; driver.h exposes no copy between device buffers).
using MemcpyDtoDAsync = int (*)(uint64_t dst, uint64_t src, size_t bytes, void* stream);

MemcpyDtoDAsync load_memcpy() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) throw gpu::Error("dlopen libcuda.so.1 for cuMemcpyDtoDAsync_v2 failed", -1, false);
  auto f = reinterpret_cast<MemcpyDtoDAsync>(dlsym(h, "cuMemcpyDtoDAsync_v2"));
  if (!f) throw gpu::Error("cuMemcpyDtoDAsync_v2 not found in libcuda.so.1", -1, false);
  return f;
}

uint32_t ceil_div(uint64_t a, uint64_t b) { return uint32_t((a + b - 1) / b); }

}  // namespace

struct GpuBench::Impl {
  const gpu::Context& ctx;
  Settings s;
  gpu::Stream stream;
  MemcpyDtoDAsync memcpy_dd = load_memcpy();
  std::map<std::string, std::unique_ptr<gpu::Module>> modules;

  Impl(const gpu::Context& c, Settings st) : ctx(c), s(st) {}

  gpu::Function fn(const std::string& module, const std::string& name) {
    auto it = modules.find(module);
    if (it == modules.end()) {
      const auto image = kernels::builtin_fatbin(module);
      if (image.empty()) throw gpu::Error("no built-in module " + module, -1, false);
      it = modules.emplace(module, std::make_unique<gpu::Module>(gpu::Module::from_image(image, module))).first;
    }
    return it->second->function(name);
  }

  void copy_dd(uint64_t dst, uint64_t src, size_t bytes) {
    gpu::Driver::require().check(memcpy_dd(dst, src, bytes, stream.handle()), "cuMemcpyDtoDAsync_v2");
  }

  void fill_bf16(uint64_t dst, uint64_t n, uint64_t seed, float sigma) {
    gpu::KernelArgs a;
    a.ptr("dst", dst).u64("n", n).u64("seed", seed).f32("sigma", sigma);
    fn("bench_util", "tqref_bench_fill_bf16").launch({1024, 1, 1}, {256, 1, 1}, a.params(), 0, &stream);
  }

  // Times `launch(i)` (i = run index, for rotating inputs): warm-up, then one event pair per run,
  // all runs queued back to back, synchronised once at the end.
  template <class F> Timing time_runs(F&& launch) {
    for (int i = 0; i < s.warmup; ++i) launch(i);
    std::vector<gpu::Event> start(size_t(s.runs)), stop(size_t(s.runs));
    for (int i = 0; i < s.runs; ++i) {
      start[size_t(i)].record(&stream);
      launch(i);
      stop[size_t(i)].record(&stream);
    }
    stream.synchronize();
    std::vector<float> ms;
    for (int i = 0; i < s.runs; ++i) ms.push_back(stop[size_t(i)].elapsed_ms_since(start[size_t(i)]));
    return summarize(ms);
  }

  uint32_t copies_for(uint64_t bytes, uint32_t cap) const {
    const uint64_t want = (s.rotate_bytes + bytes - 1) / std::max<uint64_t>(bytes, 1);
    return uint32_t(std::clamp<uint64_t>(want, 2, cap));
  }
};

GpuBench::GpuBench(const gpu::Context& ctx, Settings s) : impl_(new Impl(ctx, s)) {}
GpuBench::~GpuBench() { delete impl_; }

CopyResult GpuBench::copy(uint64_t bytes) {
  Impl& I = *impl_;
  gpu::DeviceBuffer src(bytes), dst(bytes);
  src.fill(0x5A, bytes);
  I.ctx.synchronize();  // fill runs on the legacy stream, which a non-blocking stream ignores
  CopyResult r;
  r.bytes = bytes;
  r.t = I.time_runs([&](int) { I.copy_dd(dst.ptr(), src.ptr(), bytes); });
  return r;
}

std::vector<DecodeResult> GpuBench::decode(const DecodeShape& sh, const std::vector<uint32_t>& hts,
                                           uint32_t model_check_seqs) {
  Impl& I = *impl_;
  const uint32_t D = sh.hdim, H = sh.num_kv_heads, B = sh.block_size, S = sh.num_seqs, L = sh.seq_len;
  const uint32_t bits = traits(sh.format).bits, n = H * D;
  if (sh.num_q_heads % H != 0) throw std::invalid_argument("bench: num_q_heads must be a multiple of num_kv_heads");
  const uint32_t nb_seq = ceil_div(L, B), num_blocks = nb_seq * S;
  DecodeParams p;
  p.max_blocks_per_seq = nb_seq;
  p.num_q_heads = sh.num_q_heads;
  p.num_kv_heads = H;
  p.head_dim = D;
  p.block_size = B;
  p.inv_sqrt_d = 1.0f / std::sqrt(float(D));
  p.q_stride = sh.num_q_heads * D;
  p.v_data_section_bytes = uint64_t(B) * n * bits / 8;
  p.v_block_stride_bytes = p.v_data_section_bytes + uint64_t(B) * n / kGroupSize;
  p.sliding_window = 0;
  p.num_seqs = S;
  p.hdim = D;
  const uint64_t k_pool = uint64_t(num_blocks) * B * n * 2, v_pool = uint64_t(num_blocks) * p.v_block_stride_bytes;

  // Shuffled physical blocks, as a paged cache after some churn.
  std::mt19937_64 rng(I.s.seed);
  std::vector<int32_t> tables(num_blocks);
  std::iota(tables.begin(), tables.end(), 0);
  std::shuffle(tables.begin(), tables.end(), rng);
  std::vector<int32_t> lens(S, int32_t(L));
  gpu::DeviceBuffer d_tables(tables.size() * 4), d_lens(lens.size() * 4);
  d_tables.upload(tables.data(), tables.size() * 4);
  d_lens.upload(lens.data(), lens.size() * 4);
  I.ctx.synchronize();  // uploads/fills go through the legacy stream: finish them first

  // Pool copy 0 written by the seed writer from generated K/V, in chunks of tokens.
  const uint32_t copies = I.copies_for(k_pool + v_pool, 8);
  std::vector<gpu::DeviceBuffer> kp, vp;
  for (uint32_t c = 0; c < copies; ++c) {
    kp.emplace_back(k_pool);
    vp.emplace_back(v_pool);
  }
  {
    const uint32_t chunk = std::min<uint32_t>(S * L, std::max<uint32_t>(1, uint32_t((64ull << 20) / (n * 2))));
    gpu::DeviceBuffer key(uint64_t(chunk) * n * 2), value(uint64_t(chunk) * n * 2), slots(uint64_t(chunk) * 8);
    std::vector<int64_t> sm(chunk);
    const gpu::Function wr = I.fn("writers", "reshape_and_cache_flash_bf16k_" + format_name(sh.format));
    WriterParams wp{H, D, B, n, n, uint64_t(B) * n * 2, p.v_block_stride_bytes, p.v_data_section_bytes};
    const uint64_t total = uint64_t(S) * L;
    for (uint64_t t0 = 0, ci = 0; t0 < total; t0 += chunk, ++ci) {
      const uint32_t nt = uint32_t(std::min<uint64_t>(chunk, total - t0));
      for (uint32_t i = 0; i < nt; ++i) {
        const uint64_t tok = t0 + i, seq = tok / L, pos = tok % L;
        sm[i] = int64_t(tables[seq * nb_seq + pos / B]) * B + int64_t(pos % B);
      }
      slots.upload(sm.data(), uint64_t(nt) * 8);
      I.ctx.synchronize();
      I.fill_bf16(key.ptr(), uint64_t(nt) * n, I.s.seed * 1000003 + 2 * ci, 1.0f);
      I.fill_bf16(value.ptr(), uint64_t(nt) * n, I.s.seed * 1000003 + 2 * ci + 1, 1.0f);
      gpu::KernelArgs a;
      gpu::pack_writer_args(a, {key.ptr(), value.ptr(), kp[0].ptr(), vp[0].ptr(), slots.ptr()}, wp);
      wr.launch({nt, 1, 1}, {256, 1, 1}, a.params(), 0, &I.stream);
      I.stream.synchronize();  // the chunk buffers are reused
    }
  }
  for (uint32_t c = 1; c < copies; ++c) {
    I.copy_dd(kp[c].ptr(), kp[0].ptr(), k_pool);
    I.copy_dd(vp[c].ptr(), vp[0].ptr(), v_pool);
  }
  const uint64_t q_elems = uint64_t(S) * p.q_stride, out_elems = uint64_t(S) * sh.num_q_heads * D;
  gpu::DeviceBuffer d_q(q_elems * 2), d_out(out_elems * 2), d_stats(3 * 8);
  I.fill_bf16(d_q.ptr(), q_elems, I.s.seed * 7919 + 17, sh.q_sigma);
  I.stream.synchronize();

  const std::string fmt = format_name(sh.format);
  const std::string seed_mod = D == 128 ? "decode_hdim128" : "decode_hdim256";
  const std::string fast_mod = D == 128 ? "decode_fast_hdim128" : "decode_fast_hdim256";
  auto launch_decode = [&](const gpu::Function& f, uint32_t grid_x, uint32_t c, uint64_t stats) {
    gpu::KernelArgs a;
    gpu::pack_decode_args(a, {d_q.ptr(), kp[c].ptr(), vp[c].ptr(), d_out.ptr(), d_tables.ptr(), d_lens.ptr()}, p);
    if (stats) a.ptr("stats", stats);
    f.launch({grid_x, S, 1}, {256, 1, 1}, a.params(), 0, &I.stream);
  };
  auto run_once = [&](const gpu::Function& f, uint32_t grid_x, uint64_t stats) {
    d_out.fill(0xFF, out_elems * 2);  // poison: unwritten elements show
    I.ctx.synchronize();
    launch_decode(f, grid_x, 0, stats);
    I.stream.synchronize();
    std::vector<uint16_t> out(out_elems);
    d_out.download(out.data(), out_elems * 2);
    return out;
  };

  std::vector<DecodeResult> results;
  DecodeResult base;
  base.shape = sh;
  base.k_bytes = uint64_t(S) * L * n * 2;
  const uint64_t v_row = uint64_t(D) * bits / 8 + D / kGroupSize;  // one kv head, one position
  base.v_bytes_full = uint64_t(S) * L * H * v_row;
  base.qo_bytes = 2 * out_elems * 2;

  // Seed kernel: reference output, optionally checked against the CPU model on a subset.
  const gpu::Function seed_fn = I.fn(seed_mod, "paged_decode_attn_bf16k_" + fmt);
  const std::vector<uint16_t> ref = run_once(seed_fn, sh.num_q_heads, 0);
  DecodeResult seed_r = base;
  seed_r.kernel = "paged_decode_attn_bf16k_" + fmt;
  seed_r.conformant = true;
  for (uint16_t v : ref) seed_r.conformant &= v != 0xFFFFu;  // every element written
  if (model_check_seqs > 0) {
    const uint32_t ms = std::min(model_check_seqs, S);
    std::vector<uint8_t> hk(k_pool), hv(v_pool);
    kp[0].download(hk.data(), k_pool);
    vp[0].download(hv.data(), v_pool);
    std::vector<uint16_t> hq(q_elems);
    d_q.download(hq.data(), q_elems * 2);
    DecodeParams mp = p;
    mp.num_seqs = ms;
    std::vector<uint16_t> mout(uint64_t(ms) * sh.num_q_heads * D, 0xFFFF);
    const Ex2Profile ex2 = load_ex2_profile_for_arch(I.ctx.device().arch());
    paged_decode_model(sh.format, std::span<const uint16_t>(hq.data(), uint64_t(ms) * p.q_stride), hk, hv, mout,
                       std::span<const int32_t>(tables.data(), uint64_t(ms) * nb_seq),
                       std::span<const int32_t>(lens.data(), ms), mp, ex2);
    seed_r.model_checked = true;
    seed_r.model_equal = std::equal(mout.begin(), mout.end(), ref.begin());
    seed_r.conformant &= seed_r.model_equal;
  }

  // Statistics (skip rate, V rows needed by any head of a CTA) from the widest valid HT.
  uint32_t stats_ht = 0;
  for (uint32_t ht : {4u, 2u, 1u})
    if (!stats_ht && std::find(hts.begin(), hts.end(), ht) != hts.end() &&
        ht * (sh.num_q_heads / ht) == sh.num_q_heads && (sh.num_q_heads / H) % ht == 0)
      stats_ht = ht;
  uint64_t stats_mismatch = 0;
  if (stats_ht) {
    const unsigned long long zero[3] = {0, 0, 0};
    d_stats.upload(zero, sizeof zero);
    I.ctx.synchronize();
    const std::vector<uint16_t> out =
        run_once(I.fn(fast_mod, "paged_decode_attn_bf16k_" + fmt + "_gqa_stats"), sh.num_q_heads / stats_ht, d_stats.ptr());
    for (size_t i = 0; i < out.size(); ++i) stats_mismatch += out[i] != ref[i];
    unsigned long long st[3];
    d_stats.download(st, sizeof st);
    base.skip_rate = st[0] ? double(st[1]) / double(st[0]) : 0.0;
    base.v_bytes_needed = uint64_t(st[2]) * v_row;
  }
  seed_r.skip_rate = base.skip_rate;
  seed_r.v_bytes_needed = base.v_bytes_needed;
  seed_r.t = I.time_runs([&](int i) { launch_decode(seed_fn, sh.num_q_heads, uint32_t(i) % copies, 0); });
  results.push_back(seed_r);

  for (uint32_t ht : hts) {
    if (sh.num_q_heads % ht != 0 || (sh.num_q_heads / H) % ht != 0) continue;  // invalid geometry
    const gpu::Function f = I.fn(fast_mod, "paged_decode_attn_bf16k_" + fmt + "_gqa");
    DecodeResult r = base;
    r.kernel = "paged_decode_attn_bf16k_" + fmt + "_gqa";
    r.heads_per_cta = ht;
    const std::vector<uint16_t> out = run_once(f, sh.num_q_heads / ht, 0);
    for (size_t i = 0; i < out.size(); ++i) r.mismatches += out[i] != ref[i];
    if (ht == stats_ht) r.mismatches += stats_mismatch;
    r.conformant = r.mismatches == 0 && seed_r.conformant;
    r.t = I.time_runs([&](int i) { launch_decode(f, sh.num_q_heads / ht, uint32_t(i) % copies, 0); });
    results.push_back(r);
  }
  return results;
}

WriterResult GpuBench::writer(Format f, uint32_t hdim, uint32_t num_kv_heads, uint32_t tokens) {
  Impl& I = *impl_;
  WriterResult r;
  r.format = f;
  r.hdim = hdim;
  r.num_kv_heads = num_kv_heads;
  r.tokens = tokens;
  const uint32_t D = hdim, H = num_kv_heads, B = r.block_size, n = H * D, bits = traits(f).bits;
  const uint32_t num_blocks = ceil_div(tokens, B);
  WriterParams wp{H, D, B, n, n, uint64_t(B) * n * 2, 0, uint64_t(B) * n * bits / 8};
  wp.v_block_stride_bytes = wp.v_data_section_bytes + uint64_t(B) * n / kGroupSize;
  const uint64_t k_pool = uint64_t(num_blocks) * B * n * 2, v_pool = uint64_t(num_blocks) * wp.v_block_stride_bytes;
  const uint64_t in_bytes = uint64_t(tokens) * n * 2;
  std::mt19937_64 rng(I.s.seed + 99);
  std::vector<int64_t> slots(tokens);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  const uint32_t copies = I.copies_for(2 * in_bytes + k_pool + v_pool, 64);
  struct Set {
    gpu::DeviceBuffer key, value, kc, vc;
  };
  std::vector<Set> sets;
  gpu::DeviceBuffer d_slots(uint64_t(tokens) * 8);
  d_slots.upload(slots.data(), uint64_t(tokens) * 8);
  for (uint32_t c = 0; c < copies; ++c) {
    sets.push_back({gpu::DeviceBuffer(in_bytes), gpu::DeviceBuffer(in_bytes), gpu::DeviceBuffer(k_pool),
                    gpu::DeviceBuffer(v_pool)});
    I.fill_bf16(sets.back().key.ptr(), uint64_t(tokens) * n, I.s.seed * 31 + c, 1.0f);
    I.fill_bf16(sets.back().value.ptr(), uint64_t(tokens) * n, I.s.seed * 37 + c, 1.0f);
    sets.back().kc.fill(0xA5, k_pool);
    sets.back().vc.fill(0x5A, v_pool);
  }
  I.ctx.synchronize();
  const gpu::Function wr = I.fn("writers", "reshape_and_cache_flash_bf16k_" + format_name(f));
  auto launch = [&](uint32_t c) {
    gpu::KernelArgs a;
    gpu::pack_writer_args(a, {sets[c].key.ptr(), sets[c].value.ptr(), sets[c].kc.ptr(), sets[c].vc.ptr(), d_slots.ptr()}, wp);
    wr.launch({tokens, 1, 1}, {256, 1, 1}, a.params(), 0, &I.stream);
  };
  // Conformance on copy 0 before timing: whole pools against the CPU writer model.
  launch(0);
  I.stream.synchronize();
  std::vector<uint16_t> key(uint64_t(tokens) * n), value(uint64_t(tokens) * n);
  sets[0].key.download(key.data(), in_bytes);
  sets[0].value.download(value.data(), in_bytes);
  std::vector<uint8_t> gk(k_pool), gv(v_pool), mk(k_pool, 0xA5), mv(v_pool, 0x5A);
  sets[0].kc.download(gk.data(), k_pool);
  sets[0].vc.download(gv.data(), v_pool);
  reshape_and_cache_model(f, key, value, mk, mv, slots, wp);
  for (size_t i = 0; i < gk.size(); ++i) r.mismatches += gk[i] != mk[i];
  for (size_t i = 0; i < gv.size(); ++i) r.mismatches += gv[i] != mv[i];
  r.conformant = r.mismatches == 0;
  r.t = I.time_runs([&](int i) { launch(uint32_t(i) % copies); });
  r.bytes = 2 * in_bytes + uint64_t(tokens) * (uint64_t(n) * 2 + uint64_t(n) * bits / 8 + n / kGroupSize);
  return r;
}

}  // namespace tqref::bench
