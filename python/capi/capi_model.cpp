// The model behind the C ABI: format traits, one group at a time, the writer, the decoder with
// its diagnostics, the fp64 reference and the EX2 unit. Each function only checks what the model
// itself cannot (null pointers, counts that do not fit a span) and forwards to it: the contract's
// rules (tqref/contract.h) are checked there, with the same messages.
#include <cstring>

#include "capi_call.h"
#include "io/ex2_profile_io.h"
#include "tqref/contract.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"
#include "tqref/reference.h"
#include "tqref/writer.h"

using namespace tqref;
using tqref::capi::c_call;
using tqref::capi::require;

using tqref::capi::decode_params;
using tqref::capi::span_of;

namespace {
// Groups are counted in 32 bits by quantize_groups; larger requests go in pieces.
constexpr uint64_t kGroupsPerCall = uint64_t(1) << 24;
}  // namespace

extern "C" {

int tqref_format_traits_get(int format, tqref_format_traits* out) {
  return c_call([&] {
    const FormatTraits& t = traits(capi::format_of(format));
    require(out, "out");
    *out = {};
    std::strncpy(out->name, t.name, sizeof out->name - 1);
    out->bits = t.bits;
    out->levels = t.levels;
    out->group_code_bytes = t.group_code_bytes;
    out->max = t.max;
    for (uint32_t i = 0; i < t.levels; ++i) {
      out->codebook[i] = t.codebook[i];
      out->codebook_fp16[i] = f32_to_f16(t.codebook[i]);
    }
    for (uint32_t i = 0; i + 1 < t.levels; ++i) out->bounds[i] = t.bounds[i];
  });
}

int tqref_convert(int conversion, const void* in, uint64_t n, void* out) {
  return c_call([&] {
    if (n > 0) {
      require(in, "in");
      require(out, "out");
    }
    const auto each = [&](auto from, auto to, auto f) {
      const auto* src = static_cast<decltype(from)>(in);
      auto* dst = static_cast<decltype(to)>(out);
      for (uint64_t i = 0; i < n; ++i) dst[i] = f(src[i]);
    };
    switch (conversion) {
      case TQREF_F32_TO_BF16: return each((const float*)nullptr, (uint16_t*)nullptr, f32_to_bf16);
      case TQREF_BF16_TO_F32: return each((const uint16_t*)nullptr, (float*)nullptr, bf16_to_f32);
      case TQREF_F32_TO_FP8:
        return each((const float*)nullptr, (uint8_t*)nullptr, f32_to_fp8e4m3_satfinite);
      case TQREF_FP8_TO_F32: return each((const uint8_t*)nullptr, (float*)nullptr, fp8e4m3_to_f32);
      case TQREF_F32_TO_F16: return each((const float*)nullptr, (uint16_t*)nullptr, f32_to_f16);
      case TQREF_F16_TO_F32: return each((const uint16_t*)nullptr, (float*)nullptr, f16_to_f32);
      default:
        throw capi::BadArgument("conversion = " + std::to_string(conversion) + "; allowed: 0 .. 5");
    }
  });
}

int tqref_quantize_groups(int format, const uint16_t* x, uint64_t n_groups, uint8_t* codes,
                          uint8_t* packed, uint8_t* scale_bytes, float* steps) {
  return c_call([&] {
    const FormatTraits& t = traits(capi::format_of(format));
    if (n_groups > 0) require(x, "x");
    std::vector<QuantizedGroup> q;
    for (uint64_t g0 = 0; g0 < n_groups; g0 += kGroupsPerCall) {
      const uint64_t n = std::min(kGroupsPerCall, n_groups - g0);
      q.assign(n, QuantizedGroup{});
      quantize_groups(t, x + g0 * kGroupSize, uint32_t(n), q.data());
      for (uint64_t i = 0; i < n; ++i) {
        const QuantizedGroup& g = q[i];
        const uint64_t k = g0 + i;
        if (codes) std::memcpy(codes + k * kGroupSize, g.codes, kGroupSize);
        if (packed) pack_group_codes(t.bits, g.codes, packed + k * t.group_code_bytes);
        if (scale_bytes) scale_bytes[k] = g.scale_byte;
        if (steps) {
          const float s[6] = {g.nsq, g.amax, g.inv, g.rsq, g.rn, g.scale};
          std::memcpy(steps + k * 6, s, sizeof s);
        }
      }
    }
  });
}

int tqref_dequantize_groups(int format, const uint8_t* packed, const uint8_t* scale_bytes,
                            uint64_t n_groups, float* out) {
  return c_call([&] {
    const FormatTraits& t = traits(capi::format_of(format));
    if (n_groups > 0) {
      require(packed, "packed");
      require(scale_bytes, "scale_bytes");
      require(out, "out");
    }
    for (uint64_t g = 0; g < n_groups; ++g)
      for (uint32_t k = 0; k < kGroupSize; ++k)
        out[g * kGroupSize + k] = dequantize_code(
            t, unpack_group_code(t.bits, packed + g * t.group_code_bytes, k), scale_bytes[g]);
  });
}

int tqref_reshape_and_cache(int format, const uint16_t* key, uint64_t key_elems,
                            const uint16_t* value, uint64_t value_elems, uint8_t* k_cache,
                            uint64_t k_cache_bytes, uint8_t* v_cache, uint64_t v_cache_bytes,
                            const int64_t* slot_mapping, uint64_t num_tokens,
                            const tqref_writer_params* p) {
  return c_call([&] {
    const Format f = capi::format_of(format);
    const WriterParams wp = capi::writer_params(p);
    reshape_and_cache_model(f, span_of(key, key_elems, "key"), span_of(value, value_elems, "value"),
                            span_of(k_cache, k_cache_bytes, "k_cache"),
                            span_of(v_cache, v_cache_bytes, "v_cache"),
                            span_of(slot_mapping, num_tokens, "slot_mapping"), wp);
  });
}

int tqref_paged_decode(int format, const uint16_t* q, uint64_t q_elems, const uint8_t* k_cache,
                       uint64_t k_cache_bytes, const uint8_t* v_cache, uint64_t v_cache_bytes,
                       uint16_t* output, uint64_t output_elems, const int32_t* block_tables,
                       uint64_t block_tables_elems, const int32_t* seq_lens,
                       uint64_t seq_lens_elems, const tqref_decode_params* params,
                       const tqref_ex2* ex2, tqref_decode_diag** diag) {
  if (diag) *diag = nullptr;
  return c_call([&] {
    const Format f = capi::format_of(format);
    const DecodeParams p = decode_params(params);
    require(ex2, "ex2 (an EX2 profile)");
    auto d = diag ? std::make_unique<tqref_decode_diag>() : nullptr;
    paged_decode_model(f, span_of(q, q_elems, "q"), span_of(k_cache, k_cache_bytes, "k_cache"),
                       span_of(v_cache, v_cache_bytes, "v_cache"),
                       span_of(output, output_elems, "output"),
                       span_of(block_tables, block_tables_elems, "block_tables"),
                       span_of(seq_lens, seq_lens_elems, "seq_lens"), p, ex2->profile,
                       d ? &d->d : nullptr);
    if (d) {
      d->head_dim = p.head_dim;
      *diag = d.release();
    }
  });
}

uint64_t tqref_decode_diag_rows(const tqref_decode_diag* d) { return d ? d->d.heads.size() : 0; }

uint64_t tqref_decode_diag_mask_len(const tqref_decode_diag* d) {
  uint64_t n = 0;
  if (d)
    for (const DecodeHeadDiag& h : d->d.heads) n += h.skipped.size();
  return n;
}

int tqref_decode_diag_copy(const tqref_decode_diag* d, float* m, float* l, uint32_t* skip_count,
                           float* out_f32, uint64_t* skip_offsets, uint8_t* skip_mask) {
  return c_call([&] {
    require(d, "diag");
    uint64_t off = 0;
    const uint64_t D = d->head_dim;
    for (size_t r = 0; r < d->d.heads.size(); ++r) {
      const DecodeHeadDiag& h = d->d.heads[r];
      if (m) m[r] = h.m;
      if (l) l[r] = h.l;
      if (skip_count) skip_count[r] = h.skip_count;
      if (out_f32) {
        for (uint64_t i = 0; i < D; ++i) out_f32[r * D + i] = i < h.out_f32.size() ? h.out_f32[i] : 0.0f;
      }
      if (skip_offsets) skip_offsets[r] = off;
      // an empty vector's data() may be null, and memcpy's source must never be (UBSan)
      if (skip_mask && !h.skipped.empty())
        std::memcpy(skip_mask + off, h.skipped.data(), h.skipped.size());
      off += h.skipped.size();
    }
    if (skip_offsets) skip_offsets[d->d.heads.size()] = off;
  });
}

void tqref_decode_diag_free(tqref_decode_diag* d) { delete d; }

int tqref_reference_attention(int format, const uint16_t* q, uint64_t q_elems,
                              const uint8_t* k_cache, uint64_t k_cache_bytes,
                              const uint8_t* v_cache, uint64_t v_cache_bytes,
                              const uint16_t* v_values, uint64_t v_values_elems,
                              const int32_t* block_tables, uint64_t block_tables_elems,
                              const int32_t* seq_lens, uint64_t seq_lens_elems,
                              const tqref_decode_params* params, int which, double* out,
                              uint64_t out_elems) {
  return c_call([&] {
    const Format f = capi::format_of(format);
    const DecodeParams p = decode_params(params);
    if (which != 0 && which != 1)
      throw capi::BadArgument("which = " + std::to_string(which) +
                              "; allowed: 0 (unquantised V), 1 (dequantised V)");
    const ReferenceV rv = which == 0 ? ReferenceV::unquantised : ReferenceV::dequantised;
    std::vector<double> r = reference_attention(
        f, span_of(q, q_elems, "q"), span_of(k_cache, k_cache_bytes, "k_cache"),
        span_of(v_cache, v_cache_bytes, "v_cache"), span_of(v_values, v_values_elems, "v_values"),
        span_of(block_tables, block_tables_elems, "block_tables"),
        span_of(seq_lens, seq_lens_elems, "seq_lens"), p, rv);
    if (out_elems != r.size())
      throw capi::BadArgument("out holds " + std::to_string(out_elems) +
                              " elements; allowed: num_seqs*num_q_heads*head_dim = " +
                              std::to_string(r.size()));
    require(out, "out");
    std::memcpy(out, r.data(), r.size() * sizeof(double));
  });
}

int tqref_ex2_load_arch(const char* arch, tqref_ex2** out) {
  return c_call([&] {
    require(arch, "arch");
    require(out, "out");
    std::lock_guard<std::mutex> lock(capi::hdf5_lock());
    *out = new tqref_ex2{load_ex2_profile_for_arch(arch)};
  });
}

int tqref_ex2_load_file(const char* path, tqref_ex2** out) {
  return c_call([&] {
    require(path, "path");
    require(out, "out");
    std::lock_guard<std::mutex> lock(capi::hdf5_lock());
    *out = new tqref_ex2{load_ex2_profile(path)};
  });
}

const char* tqref_ex2_id(const tqref_ex2* e) { return e ? e->profile.id().c_str() : ""; }
const char* tqref_ex2_arch(const tqref_ex2* e) { return e ? e->profile.arch().c_str() : ""; }

int tqref_ex2_eval(const tqref_ex2* e, int expf, const float* x, uint64_t n, float* out) {
  return c_call([&] {
    require(e, "ex2");
    if (n > 0) {
      require(x, "x");
      require(out, "out");
    }
    for (uint64_t i = 0; i < n; ++i) {
      const float v = x[i];
      if (v > 0)  // the unit is modelled for x <= 0 and NaN only (docs/ex2.md)
        throw capi::BadArgument("x[" + std::to_string(i) + "] = " + capi::float_str(v) +
                                "; allowed: <= 0 or NaN");
      out[i] = expf ? e->profile.expf(v) : e->profile.ex2(v);
    }
  });
}

void tqref_ex2_free(tqref_ex2* e) { delete e; }

}  // extern "C"
