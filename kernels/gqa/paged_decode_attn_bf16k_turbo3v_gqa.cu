// paged_decode_attn_bf16k_turbo3v_gqa and its _stats twin: the GQA decoder (same bits as
// paged_decode_attn_bf16k_turbo3v); implementation in paged_decode_attn_gqa.cuh.
#include "paged_decode_attn_gqa.cuh"

TQREF_DEFINE_GQA_DECODER(paged_decode_attn_bf16k_turbo3v_gqa, turbo3v)
