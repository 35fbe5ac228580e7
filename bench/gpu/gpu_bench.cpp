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
#include "kernels/gqa/gqa_decode_core.h"
#include "kernels/fast_writer/fast_writer_core.h"
#include "tqref/builtin_kernels.h"
#include "tqref/decode.h"
#include "tqref/writer.h"

namespace tqref::bench {

std::string format_name(Format f) { return traits(f).name; }

std::vector<uint32_t> all_heads_per_cta() {
  std::vector<uint32_t> v;
  for (uint32_t ht = gqa::kMaxHT; ht >= 1; --ht) v.push_back(ht);
  return v;
}

std::string DecodeShape::label() const {
  char b[160];
  std::snprintf(b, sizeof b, "%s hdim%u %ux%u/%u L%u B%u qs%g", format_name(format).c_str(), hdim,
                num_seqs, num_q_heads, num_kv_heads, seq_len, block_size, double(q_sigma));
  return model.empty() ? std::string(b) : model + " " + b;
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

// Everything one decode shape runs on: parameters, block tables, the pools (several copies, so
// timed runs rotate through more memory than the L2 holds), q, the output and the statistics.
struct DecodeState {
  DecodeParams p;
  uint32_t nb_seq = 0;  // blocks per sequence
  std::vector<int32_t> tables, lens;
  uint64_t k_pool = 0, v_pool = 0, q_elems = 0, out_elems = 0;
  uint32_t copies = 0;
  gpu::DeviceBuffer d_tables, d_lens, d_q, d_out, d_stats;
  std::vector<gpu::DeviceBuffer> kp, vp;  // [copies] K and V pools
};

// Launch parameters of a shape: every sequence full length, V sections unpadded.
DecodeParams decode_params(const DecodeShape& sh) {
  const uint32_t D = sh.hdim, H = sh.num_kv_heads, B = sh.block_size, n = H * D;
  DecodeParams p;
  p.max_blocks_per_seq = ceil_div(sh.seq_len, B);
  p.num_q_heads = sh.num_q_heads;
  p.num_kv_heads = H;
  p.head_dim = D;
  p.block_size = B;
  p.inv_sqrt_d = 1.0f / std::sqrt(float(D));
  p.q_stride = sh.num_q_heads * D;
  p.v_data_section_bytes = uint64_t(B) * n * traits(sh.format).bits / 8;
  p.v_block_stride_bytes = p.v_data_section_bytes + uint64_t(B) * n / kGroupSize;
  p.sliding_window = 0;
  p.num_seqs = sh.num_seqs;
  p.hdim = D;
  return p;
}

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

  // Tables over shuffled physical blocks (a paged cache after some churn), pool copy 0 written by
  // the reference-order writer from generated K/V, the other copies copied from it, q generated.
  DecodeState prepare_decode(const DecodeShape& sh) {
    if (sh.num_q_heads % sh.num_kv_heads != 0)
      throw std::invalid_argument("bench: num_q_heads must be a multiple of num_kv_heads");
    DecodeState st;
    st.p = decode_params(sh);
    const uint32_t S = sh.num_seqs, B = sh.block_size, n = sh.num_kv_heads * sh.hdim;
    st.nb_seq = st.p.max_blocks_per_seq;
    const uint32_t num_blocks = st.nb_seq * S;
    st.k_pool = uint64_t(num_blocks) * B * n * 2;
    st.v_pool = uint64_t(num_blocks) * st.p.v_block_stride_bytes;
    std::mt19937_64 rng(s.seed);
    st.tables.resize(num_blocks);
    std::iota(st.tables.begin(), st.tables.end(), 0);
    std::shuffle(st.tables.begin(), st.tables.end(), rng);
    st.lens.assign(S, int32_t(sh.seq_len));
    st.d_tables = gpu::DeviceBuffer(st.tables.size() * 4);
    st.d_lens = gpu::DeviceBuffer(st.lens.size() * 4);
    st.d_tables.upload(st.tables.data(), st.tables.size() * 4);
    st.d_lens.upload(st.lens.data(), st.lens.size() * 4);
    ctx.synchronize();  // uploads/fills go through the legacy stream: finish them first
    st.copies = copies_for(st.k_pool + st.v_pool, 8);
    for (uint32_t c = 0; c < st.copies; ++c) {
      st.kp.emplace_back(st.k_pool);
      st.vp.emplace_back(st.v_pool);
    }
    write_pools(sh, st);
    for (uint32_t c = 1; c < st.copies; ++c) {
      copy_dd(st.kp[c].ptr(), st.kp[0].ptr(), st.k_pool);
      copy_dd(st.vp[c].ptr(), st.vp[0].ptr(), st.v_pool);
    }
    st.q_elems = uint64_t(S) * st.p.q_stride;
    st.out_elems = uint64_t(S) * sh.num_q_heads * sh.hdim;
    st.d_q = gpu::DeviceBuffer(st.q_elems * 2);
    st.d_out = gpu::DeviceBuffer(st.out_elems * 2);
    st.d_stats = gpu::DeviceBuffer(3 * 8);
    fill_bf16(st.d_q.ptr(), st.q_elems, s.seed * 7919 + 17, sh.q_sigma);
    stream.synchronize();
    return st;
  }

  // Pool copy 0 through the reference-order writer, in chunks of tokens of generated K/V.
  void write_pools(const DecodeShape& sh, DecodeState& st) {
    const uint32_t D = sh.hdim, H = sh.num_kv_heads, B = sh.block_size, L = sh.seq_len, n = H * D;
    const uint32_t chunk =
        std::min<uint32_t>(sh.num_seqs * L, std::max<uint32_t>(1, uint32_t((64ull << 20) / (n * 2))));
    gpu::DeviceBuffer key(uint64_t(chunk) * n * 2), value(uint64_t(chunk) * n * 2), slots(uint64_t(chunk) * 8);
    std::vector<int64_t> sm(chunk);
    const gpu::Function wr = fn("writers", "reshape_and_cache_flash_bf16k_" + format_name(sh.format));
    WriterParams wp{H, D, B, n, n, uint64_t(B) * n * 2, st.p.v_block_stride_bytes, st.p.v_data_section_bytes};
    const uint64_t total = uint64_t(sh.num_seqs) * L;
    for (uint64_t t0 = 0, ci = 0; t0 < total; t0 += chunk, ++ci) {
      const uint32_t nt = uint32_t(std::min<uint64_t>(chunk, total - t0));
      for (uint32_t i = 0; i < nt; ++i) {
        const uint64_t tok = t0 + i, seq = tok / L, pos = tok % L;
        sm[i] = int64_t(st.tables[seq * st.nb_seq + pos / B]) * B + int64_t(pos % B);
      }
      slots.upload(sm.data(), uint64_t(nt) * 8);
      ctx.synchronize();
      fill_bf16(key.ptr(), uint64_t(nt) * n, s.seed * 1000003 + 2 * ci, 1.0f);
      fill_bf16(value.ptr(), uint64_t(nt) * n, s.seed * 1000003 + 2 * ci + 1, 1.0f);
      gpu::KernelArgs a;
      gpu::pack_writer_args(a, {key.ptr(), value.ptr(), st.kp[0].ptr(), st.vp[0].ptr(), slots.ptr()}, wp);
      wr.launch({nt, 1, 1}, {256, 1, 1}, a.params(), 0, &stream);
      stream.synchronize();  // the chunk buffers are reused
    }
  }

  void launch_decode(const DecodeState& st, const gpu::Function& f, uint32_t grid_x, uint32_t copy,
                     uint64_t stats) {
    gpu::KernelArgs a;
    gpu::pack_decode_args(a, {st.d_q.ptr(), st.kp[copy].ptr(), st.vp[copy].ptr(), st.d_out.ptr(),
                              st.d_tables.ptr(), st.d_lens.ptr()}, st.p);
    if (stats) a.ptr("stats", stats);
    f.launch({grid_x, st.p.num_seqs, 1}, {256, 1, 1}, a.params(), 0, &stream);
  }

  // One launch on pool copy 0 into a poisoned output (unwritten elements show), downloaded.
  std::vector<uint16_t> run_once(DecodeState& st, const gpu::Function& f, uint32_t grid_x, uint64_t stats) {
    st.d_out.fill(0xFF, st.out_elems * 2);
    ctx.synchronize();
    launch_decode(st, f, grid_x, 0, stats);
    stream.synchronize();
    std::vector<uint16_t> out(st.out_elems);
    st.d_out.download(out.data(), st.out_elems * 2);
    return out;
  }

  // The reference-order kernel's output `ref` on the first `seqs` sequences against the CPU model.
  bool model_equal(const DecodeShape& sh, const DecodeState& st, const std::vector<uint16_t>& ref,
                   uint32_t seqs) {
    const uint32_t ms = std::min(seqs, sh.num_seqs);
    std::vector<uint8_t> hk(st.k_pool), hv(st.v_pool);
    st.kp[0].download(hk.data(), st.k_pool);
    st.vp[0].download(hv.data(), st.v_pool);
    std::vector<uint16_t> hq(st.q_elems);
    st.d_q.download(hq.data(), st.q_elems * 2);
    DecodeParams mp = st.p;
    mp.num_seqs = ms;
    std::vector<uint16_t> mout(uint64_t(ms) * sh.num_q_heads * sh.hdim, 0xFFFF);
    const Ex2Profile ex2 = load_ex2_profile_for_arch(ctx.device().arch());
    paged_decode_model(sh.format, std::span<const uint16_t>(hq.data(), uint64_t(ms) * st.p.q_stride), hk, hv,
                       mout, std::span<const int32_t>(st.tables.data(), uint64_t(ms) * st.nb_seq),
                       std::span<const int32_t>(st.lens.data(), ms), mp, ex2);
    return std::equal(mout.begin(), mout.end(), ref.begin());
  }

  // Skip rate and V rows needed by any head of a CTA, from the statistics build of the GQA kernel
  // at the widest valid heads-per-CTA in `hts` (0: none valid, nothing measured); returns its
  // output elements that differ from `ref`.
  uint64_t measure_skips(const DecodeShape& sh, DecodeState& st, const std::vector<uint32_t>& hts,
                         const std::vector<uint16_t>& ref, uint32_t* stats_ht, DecodeResult& base) {
    const uint32_t QH = sh.num_q_heads;
    *stats_ht = 0;
    for (uint32_t ht : hts)
      if (ht > *stats_ht && QH % ht == 0 &&
          gqa::heads_per_cta(QH, sh.num_kv_heads, QH / ht) == ht)
        *stats_ht = ht;
    if (!*stats_ht) return 0;
    const unsigned long long zero[3] = {0, 0, 0};
    st.d_stats.upload(zero, sizeof zero);
    ctx.synchronize();
    const std::string gqa_mod = sh.hdim == 128 ? "decode_gqa_hdim128" : "decode_gqa_hdim256";
    const std::string name = "paged_decode_attn_bf16k_" + format_name(sh.format) + "_gqa_stats";
    const std::vector<uint16_t> out = run_once(st, fn(gqa_mod, name), QH / *stats_ht, st.d_stats.ptr());
    uint64_t mismatch = 0;
    for (size_t i = 0; i < out.size(); ++i) mismatch += out[i] != ref[i];
    unsigned long long c[3];
    st.d_stats.download(c, sizeof c);
    const uint64_t v_row = uint64_t(sh.hdim) * traits(sh.format).bits / 8 + sh.hdim / kGroupSize;
    base.skip_rate = c[0] ? double(c[1]) / double(c[0]) : 0.0;
    base.v_bytes_needed = uint64_t(c[2]) * v_row;
    return mismatch;
  }

  // The reference-order kernel (the output every other kernel must equal, optionally checked
  // against the CPU model on a subset), then the GQA kernel for every valid heads-per-CTA.
  std::vector<DecodeResult> decode(const DecodeShape& sh, const std::vector<uint32_t>& hts,
                                   uint32_t model_check_seqs) {
    DecodeState st = prepare_decode(sh);
    const uint32_t QH = sh.num_q_heads, n = sh.num_kv_heads * sh.hdim;
    const uint64_t tokens = uint64_t(sh.num_seqs) * sh.seq_len;
    const uint64_t v_row = uint64_t(sh.hdim) * traits(sh.format).bits / 8 + sh.hdim / kGroupSize;
    DecodeResult base;
    base.shape = sh;
    base.k_bytes = tokens * n * 2;
    base.v_bytes_full = tokens * sh.num_kv_heads * v_row;  // v_row: one kv head, one position
    base.qo_bytes = 2 * st.out_elems * 2;
    const std::string fmt = format_name(sh.format);
    const std::string ref_mod = sh.hdim == 128 ? "decode_hdim128" : "decode_hdim256";
    const std::string gqa_mod = sh.hdim == 128 ? "decode_gqa_hdim128" : "decode_gqa_hdim256";
    const gpu::Function ref_fn = fn(ref_mod, "paged_decode_attn_bf16k_" + fmt);
    const std::vector<uint16_t> ref = run_once(st, ref_fn, QH, 0);
    DecodeResult ref_r = base;
    ref_r.kernel = "paged_decode_attn_bf16k_" + fmt;
    ref_r.conformant = true;
    for (uint16_t v : ref) ref_r.conformant &= v != 0xFFFFu;  // every element written
    if (model_check_seqs > 0) {
      ref_r.model_checked = true;
      ref_r.model_equal = model_equal(sh, st, ref, model_check_seqs);
      ref_r.conformant &= ref_r.model_equal;
    }
    uint32_t stats_ht = 0;
    const uint64_t stats_mismatch = measure_skips(sh, st, hts, ref, &stats_ht, base);
    ref_r.skip_rate = base.skip_rate;
    ref_r.v_bytes_needed = base.v_bytes_needed;
    ref_r.t = time_runs([&](int i) { launch_decode(st, ref_fn, QH, uint32_t(i) % st.copies, 0); });
    std::vector<DecodeResult> results{ref_r};
    for (uint32_t ht : hts) {
      // the grids the GQA kernels accept (any other traps)
      if (QH % ht != 0 || gqa::heads_per_cta(QH, sh.num_kv_heads, QH / ht) != ht) continue;
      DecodeResult r = base;
      r.kernel = "paged_decode_attn_bf16k_" + fmt + "_gqa";
      r.heads_per_cta = ht;
      const gpu::Function f = fn(gqa_mod, r.kernel);
      const std::vector<uint16_t> out = run_once(st, f, QH / ht, 0);
      for (size_t i = 0; i < out.size(); ++i) r.mismatches += out[i] != ref[i];
      if (ht == stats_ht) r.mismatches += stats_mismatch;
      r.t = time_runs([&](int i) { launch_decode(st, f, QH / ht, uint32_t(i) % st.copies, 0); });
      r.mismatches += last_output_mismatches(st, ref);
      r.conformant = r.mismatches == 0 && ref_r.conformant;
      results.push_back(r);
    }
    return results;
  }

  // The output of the last timed launch (every pool copy holds the same bytes) against `ref`.
  uint64_t last_output_mismatches(const DecodeState& st, const std::vector<uint16_t>& ref) {
    stream.synchronize();
    std::vector<uint16_t> out(st.out_elems);
    st.d_out.download(out.data(), st.out_elems * 2);
    uint64_t n = 0;
    for (size_t i = 0; i < out.size(); ++i) n += out[i] != ref[i];
    return n;
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
  return impl_->decode(sh, hts, model_check_seqs);
}

std::string WriterShape::label() const {
  char b[120];
  std::snprintf(b, sizeof b, "%s hdim%u H%u tokens%u B%u", format_name(format).c_str(), hdim, num_kv_heads,
                tokens, block_size);
  return b;
}

namespace {

constexpr uint8_t kKPoison = 0xA5, kVPoison = 0x5A;  // pool bytes before a writer runs

// One input set of a writer shape: generated key/value, the pools the kernels write, and the CPU
// model's pools for these inputs (written over the same poison).
struct WriterSet {
  gpu::DeviceBuffer key, value, kc, vc;
  std::vector<uint8_t> want_k, want_v;
};

// Everything a writer shape runs on. Several sets, so that timed runs rotate through more
// memory than the L2 holds.
struct WriterInputs {
  WriterParams wp;
  uint64_t k_pool = 0, v_pool = 0, in_bytes = 0;
  std::vector<int64_t> slots;
  gpu::DeviceBuffer d_slots;
  std::vector<WriterSet> sets;
};

WriterParams writer_params(const WriterShape& ws) {
  const uint32_t n = ws.num_kv_heads * ws.hdim, B = ws.block_size;
  WriterParams wp{ws.num_kv_heads, ws.hdim, B, n, n, uint64_t(B) * n * 2, 0,
                  uint64_t(B) * n * traits(ws.format).bits / 8};
  wp.v_block_stride_bytes = wp.v_data_section_bytes + uint64_t(B) * n / kGroupSize;
  return wp;
}

// Sets [0, copies): inputs generated on the device by `fill(dst, elements, seed)`, the model's pools
// from the downloaded inputs and a slot mapping that shuffles every slot of the pool.
template <class Fill>
WriterInputs make_writer_inputs(const WriterShape& ws, const gpu::Context& ctx, uint64_t seed,
                                uint32_t copies, Fill&& fill) {
  WriterInputs in;
  in.wp = writer_params(ws);
  const uint64_t n = uint64_t(ws.num_kv_heads) * ws.hdim, num_blocks = ceil_div(ws.tokens, ws.block_size);
  in.k_pool = num_blocks * ws.block_size * n * 2;
  in.v_pool = num_blocks * in.wp.v_block_stride_bytes;
  in.in_bytes = uint64_t(ws.tokens) * n * 2;
  std::mt19937_64 rng(seed + 99);
  in.slots.resize(ws.tokens);
  std::iota(in.slots.begin(), in.slots.end(), 0);
  std::shuffle(in.slots.begin(), in.slots.end(), rng);
  in.d_slots = gpu::DeviceBuffer(uint64_t(ws.tokens) * 8);
  in.d_slots.upload(in.slots.data(), uint64_t(ws.tokens) * 8);
  std::vector<uint16_t> key(ws.tokens * n), value(ws.tokens * n);
  for (uint32_t c = 0; c < copies; ++c) {
    WriterSet& st = in.sets.emplace_back();
    st.key = gpu::DeviceBuffer(in.in_bytes);
    st.value = gpu::DeviceBuffer(in.in_bytes);
    st.kc = gpu::DeviceBuffer(in.k_pool);
    st.vc = gpu::DeviceBuffer(in.v_pool);
    fill(st.key.ptr(), ws.tokens * n, seed * 31 + c);
    fill(st.value.ptr(), ws.tokens * n, seed * 37 + c);
    ctx.synchronize();
    st.key.download(key.data(), in.in_bytes);
    st.value.download(value.data(), in.in_bytes);
    st.want_k.assign(in.k_pool, kKPoison);
    st.want_v.assign(in.v_pool, kVPoison);
    reshape_and_cache_model(ws.format, key, value, st.want_k, st.want_v, in.slots, in.wp);
  }
  return in;
}

void poison_pools(WriterInputs& in, const gpu::Context& ctx) {
  for (WriterSet& st : in.sets) {
    st.kc.fill(kKPoison, in.k_pool);
    st.vc.fill(kVPoison, in.v_pool);
  }
  ctx.synchronize();
}

// Pool bytes that differ from the model's, over every set (the whole pools: bytes outside the
// written rows must keep their poison).
uint64_t pool_mismatches(const WriterInputs& in) {
  uint64_t bad = 0;
  std::vector<uint8_t> got;
  for (const WriterSet& st : in.sets) {
    got.resize(in.k_pool);
    st.kc.download(got.data(), in.k_pool);
    for (size_t i = 0; i < got.size(); ++i) bad += got[i] != st.want_k[i];
    got.resize(in.v_pool);
    st.vc.download(got.data(), in.v_pool);
    for (size_t i = 0; i < got.size(); ++i) bad += got[i] != st.want_v[i];
  }
  return bad;
}

}  // namespace

std::vector<WriterResult> GpuBench::writers(const WriterShape& ws) {
  Impl& I = *impl_;
  const uint32_t n = ws.num_kv_heads * ws.hdim, bits = traits(ws.format).bits;
  const uint64_t in_bytes = uint64_t(ws.tokens) * n * 2;
  const uint64_t bytes = 2 * in_bytes + uint64_t(ws.tokens) * (uint64_t(n) * 2 + uint64_t(n) * bits / 8 + n / kGroupSize);
  const uint64_t pools = (ceil_div(ws.tokens, ws.block_size) * uint64_t(ws.block_size)) *
                         (uint64_t(n) * 2 + uint64_t(n) * bits / 8 + n / kGroupSize);
  const uint32_t copies = I.copies_for(2 * in_bytes + pools, 64);
  WriterInputs in = make_writer_inputs(ws, I.ctx, I.s.seed, copies, [&](uint64_t dst, uint64_t elems, uint64_t sd) {
    I.fill_bf16(dst, elems, sd, 1.0f);
  });

  // The copy baseline: the same bytes through DRAM (read + write = bytes), rotating as well.
  std::vector<gpu::DeviceBuffer> csrc, cdst;
  for (uint32_t c = 0; c < copies; ++c) {
    csrc.emplace_back(bytes / 2).fill(0x3C, bytes / 2);
    cdst.emplace_back(bytes / 2);
  }
  I.ctx.synchronize();
  const Timing copy_t = I.time_runs([&](int i) {
    const uint32_t c = uint32_t(i) % copies;
    I.copy_dd(cdst[c].ptr(), csrc[c].ptr(), bytes / 2);
  });

  std::vector<WriterResult> results;
  for (bool fast : {false, true}) {
    WriterResult r;
    r.shape = ws;
    r.fast = fast;
    r.kernel = "reshape_and_cache_flash_bf16k_" + format_name(ws.format) + (fast ? "_fast" : "");
    r.grid_x = fast ? fast_writer::grid_x(ws.tokens, ws.num_kv_heads, ws.hdim) : ws.tokens;
    r.bytes = bytes;
    r.copy = copy_t;
    const gpu::Function f = I.fn(fast ? "writers_fast" : "writers", r.kernel);
    auto launch = [&](uint32_t c) {
      const WriterSet& st = in.sets[c];
      gpu::KernelArgs a;
      gpu::pack_writer_args(a, {st.key.ptr(), st.value.ptr(), st.kc.ptr(), st.vc.ptr(), in.d_slots.ptr()}, in.wp);
      if (fast) a.u32("num_tokens", ws.tokens);
      f.launch({r.grid_x, 1, 1}, {256, 1, 1}, a.params(), 0, &I.stream);
    };
    // Every set written once over poison and checked, then the timed runs, then every set again:
    // the pools the timed launches left must still equal the model's.
    poison_pools(in, I.ctx);
    for (uint32_t c = 0; c < copies; ++c) launch(c);
    I.stream.synchronize();
    r.mismatches = pool_mismatches(in);
    r.t = I.time_runs([&](int i) { launch(uint32_t(i) % copies); });
    r.mismatches += pool_mismatches(in);
    r.conformant = r.mismatches == 0;
    r.launches = copies + uint32_t(I.s.warmup + I.s.runs);
    results.push_back(r);
  }
  return results;
}

}  // namespace tqref::bench
