// Module TU for the decoder: the three paged_decode_attn_bf16k_turbo{2,3,4}v kernels of one HDIM
// build (-DHDIM=128 or -DHDIM=256). The two HDIM builds share kernel names, so each becomes its
// own fatbin (decode_hdim128, decode_hdim256).
#include "paged_decode_attn_bf16k_turbo2v.cu"
#include "paged_decode_attn_bf16k_turbo3v.cu"
#include "paged_decode_attn_bf16k_turbo4v.cu"
