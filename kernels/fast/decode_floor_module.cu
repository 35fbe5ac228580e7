// Module TU of the floor decoders of one HDIM build (-DHDIM=128 or 256): modules
// decode_floor_hdim128 / decode_floor_hdim256, entry points
// paged_decode_attn_bf16k_turbo{2,3,4}v_floor (paged_decode_attn_floor.cuh).
#include "paged_decode_attn_floor.cuh"

TQREF_DEFINE_FLOOR_DECODER(paged_decode_attn_bf16k_turbo2v_floor, turbo2v)
TQREF_DEFINE_FLOOR_DECODER(paged_decode_attn_bf16k_turbo3v_floor, turbo3v)
TQREF_DEFINE_FLOOR_DECODER(paged_decode_attn_bf16k_turbo4v_floor, turbo4v)
