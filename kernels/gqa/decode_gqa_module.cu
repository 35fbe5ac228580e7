// Module TU of the GQA decoders of one HDIM build (-DHDIM=128 or 256): modules
// decode_gqa_hdim128 / decode_gqa_hdim256, entry points paged_decode_attn_bf16k_turbo{2,3,4}v_gqa
// and their _stats twins.
#include "paged_decode_attn_bf16k_turbo2v_gqa.cu"
#include "paged_decode_attn_bf16k_turbo3v_gqa.cu"
#include "paged_decode_attn_bf16k_turbo4v_gqa.cu"
