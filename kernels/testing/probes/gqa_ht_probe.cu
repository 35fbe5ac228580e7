// Per-HT register probe of the GQA decoders (docs/kernels.md, "Static checks"): one entry point
// gqa_ht_probe_<HT> per HT 1..8, each the decode_cta instantiation that the real entry point's
// switch reaches for that HT (no statistics), with the same launch bounds and nvcc flags, so that
// `ptxas -v` reports registers and spills per HT; the real entry points hold all eight HT paths
// and report only their maximum. Built and read by scripts/gqa-ht-registers.sh; not a module, never
// launched. -DTQREF_PROBE_FORMAT=turbo2v|turbo3v|turbo4v (default turbo3v, the most registers).
#include "../../gqa/paged_decode_attn_gqa.cuh"

#ifndef TQREF_PROBE_FORMAT
#define TQREF_PROBE_FORMAT turbo3v
#endif

#define TQREF_GQA_HT_PROBE(HT)                                                                   \
  extern "C" __global__ void __launch_bounds__(256, TQREF_GQA_MIN_CTAS) gqa_ht_probe_##HT(       \
      TQREF_DECODE_PARAMS) {                                                                     \
    const TQREF_GQA_ARGS_FROM_PARAMS(nullptr);                                                  \
    __shared__ tqref::gqa::Shared<HDIM> sm;                                                  \
    tqref::gqa::CudaOps ops;                                                                 \
    tqref::gqa::decode_cta<tqref::gqa::CudaOps, tqref::Format::TQREF_PROBE_FORMAT, HDIM, \
                               HT, false>(a, blockIdx.x * HT, blockIdx.y, threadIdx.x, sm, ops); \
  }

TQREF_GQA_HT_PROBE(1)
TQREF_GQA_HT_PROBE(2)
TQREF_GQA_HT_PROBE(3)
TQREF_GQA_HT_PROBE(4)
TQREF_GQA_HT_PROBE(5)
TQREF_GQA_HT_PROBE(6)
TQREF_GQA_HT_PROBE(7)
TQREF_GQA_HT_PROBE(8)
