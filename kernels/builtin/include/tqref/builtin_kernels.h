// The kernel modules built from kernels/ and embedded in the harness as fatbins (sm_90 and
// sm_121 machine code plus compute_90/compute_121 PTX). Only available when the project was
// configured with CUDA (compile definition TQREF_HAVE_BUILTIN_KERNELS); the bytes are meant for
// cuModuleLoadData / cuModuleLoadFatBinary.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

namespace tqref::kernels {

struct BuiltinModule {
  const char* name;         // module name: also the file stem under build/kernels/modules/
  const char* kernels[6];   // extern "C" entry points it contains (unused slots nullptr)
  const char* description;
};

// Module list. The two decoder builds share kernel names, so each HDIM is its own module.
inline constexpr BuiltinModule kBuiltinModules[] = {
    {"writers",
     {"reshape_and_cache_flash_bf16k_turbo2v", "reshape_and_cache_flash_bf16k_turbo3v",
      "reshape_and_cache_flash_bf16k_turbo4v"},
     "docs/spec.md section 4 writers"},
    {"decode_hdim128",
     {"paged_decode_attn_bf16k_turbo2v", "paged_decode_attn_bf16k_turbo3v",
      "paged_decode_attn_bf16k_turbo4v"},
     "docs/spec.md section 5 decoders, HDIM=128, TQ_PLUS_SPARSE_V_THRESHOLD=1e-3f"},
    {"decode_hdim256",
     {"paged_decode_attn_bf16k_turbo2v", "paged_decode_attn_bf16k_turbo3v",
      "paged_decode_attn_bf16k_turbo4v"},
     "docs/spec.md section 5 decoders, HDIM=256, TQ_PLUS_SPARSE_V_THRESHOLD=1e-3f"},
    {"ex2_probe", {"tqref_ex2_probe", nullptr, nullptr}, "MUFU.EX2 calibration probe"},
    {"decode_gqa_hdim128",
     {"paged_decode_attn_bf16k_turbo2v_gqa", "paged_decode_attn_bf16k_turbo3v_gqa",
      "paged_decode_attn_bf16k_turbo4v_gqa", "paged_decode_attn_bf16k_turbo2v_gqa_stats",
      "paged_decode_attn_bf16k_turbo3v_gqa_stats", "paged_decode_attn_bf16k_turbo4v_gqa_stats"},
     "GQA decoders (same bits as docs/spec.md section 5), HDIM=128, grid [num_q_heads/HT, num_seqs]"},
    {"decode_gqa_hdim256",
     {"paged_decode_attn_bf16k_turbo2v_gqa", "paged_decode_attn_bf16k_turbo3v_gqa",
      "paged_decode_attn_bf16k_turbo4v_gqa", "paged_decode_attn_bf16k_turbo2v_gqa_stats",
      "paged_decode_attn_bf16k_turbo3v_gqa_stats", "paged_decode_attn_bf16k_turbo4v_gqa_stats"},
     "GQA decoders (same bits as docs/spec.md section 5), HDIM=256, grid [num_q_heads/HT, num_seqs]"},
    {"bench_util", {"tqref_bench_fill_bf16", nullptr, nullptr}, "tqref bench input generator"},
    {"writers_fast",
     {"reshape_and_cache_flash_bf16k_turbo2v_fast", "reshape_and_cache_flash_bf16k_turbo3v_fast",
      "reshape_and_cache_flash_bf16k_turbo4v_fast"},
     "bandwidth writers (same bytes as section 4), 14th parameter num_tokens, grid [ceil(num_tokens/TPC)]"},
};

// The embedded fatbin of module `name`; an empty span when no such module exists.
std::span<const unsigned char> builtin_fatbin(std::string_view name);

// The decoder module the engine loads for a launch with this head_dim: the HDIM=128 build for
// head_dim <= 128, the HDIM=256 build otherwise (docs/spec.md section 5; mismatches are deliberate
// real-world cases, not rejected here).
constexpr const char* engine_decode_module(uint32_t head_dim) {
  return head_dim <= 128 ? "decode_hdim128" : "decode_hdim256";
}

}  // namespace tqref::kernels
