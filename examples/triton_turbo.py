"""Triton kernels for the BF16-K / Turbo-V cache, written the way an engine developer writes them
(docs/spec.md sections 4-5), with the kernel ABI's parameters, and checked by tqref on the GPU
(`scripts/device-run.sh python`):

- reshape_and_cache_flash_bf16k_turbo: the writer, one program per token, the groups of a token
  as the vector axis. It must match the model bit for bit (level W), so every operation of
  docs/spec.md section 4 is written in the contract's order, one rounding each:
    * Triton lets ptxas contract a*b + c into an FMA by default: the launch passes
      enable_fp_fusion=False (the Triton counterpart of nvcc --fmad=false);
    * Triton's `/` on fp32 is div.full.f32 (approximate, up to 2 ulp): tl.div_rn is used;
    * tl.sqrt is sqrt.approx.f32: tl.sqrt_rn is used;
    * the sums nsq and rsq run over the 16 elements in order (a static loop), not a tree
      reduction (tl.sum would reassociate them);
    * fmaxf is written as a compare-and-select (the running |x| maximum never sees a NaN
      operand on its left, and a NaN |x| must leave it unchanged, as fmaxf does);
    * the fp8 scale is `.to(tl.float8e4nv, fp_downcast_rounding="rtne")`, which Triton lowers
      to cvt.rn.satfinite.e4m3x2.f32 on sm_89+: the writer's encode (docs/spec.md section 1);
    * constants (MAX, 1e-12f, 1e-10f, 448) arrive as fp32 kernel arguments, converted from the
      model's own binary32 values, not re-parsed from decimals.
  variant="naive" writes the same kernel the way one would without the contract in mind
  (`/`, tl.sqrt, FMA contraction on): tqref's level W is expected to catch it.
- paged_decode_attn_bf16k_turbo: the decoder, one program per (q head, sequence). It follows the
  format and the sparse-V rule (a position is skipped, its V never read, when its factor relative
  to its warp's running maximum is <= THRESH; the running maximum follows the contract's 8-way
  split and its batches of 4 inside a cache block), but not the operation order: scores are a
  tree sum, exp is tl.exp, warps are merged one after another. So it is judged at level T and I.
"""
import numpy as np
import torch
import triton
import triton.language as tl

import tqref

_TINY_AMAX = float(np.float32(1e-12))  # the writer's amax > 1e-12f (test_triton_constants)
_TINY_RN = float(np.float32(1e-10))
_FP8_MAX = 448.0


@triton.jit
def _writer_kernel(key_ptr, value_ptr, k_cache_ptr, v_cache_ptr, slot_ptr, cb_ptr, bd_ptr,
                   key_stride, value_stride, block_size, v_block_stride_bytes,
                   v_data_section_bytes, fmt_max, tiny_amax, tiny_rn, fp8_max,
                   N: tl.constexpr, BLOCK_N: tl.constexpr, G: tl.constexpr,
                   BLOCK_G: tl.constexpr, BITS: tl.constexpr, LEVELS: tl.constexpr,
                   NAIVE: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_ptr + t)
    live = slot >= 0                        # slot < 0: padding token, nothing is written
    s = tl.where(live, slot, 0)
    blk = s // block_size
    sib = s % block_size
    # K: the token's N bf16 values, copied as 16-bit integers (bit for bit)
    e = tl.arange(0, BLOCK_N)
    em = (e < N) & live
    k = tl.load(key_ptr + t * key_stride + e, mask=em)
    tl.store(k_cache_ptr + s * N + e, k, mask=em)   # dense K pool: (blk*B + sib)*N = slot*N
    # V: group g of the token holds elements 16g .. 16g+15
    g = tl.arange(0, BLOCK_G)
    gm = (g < G) & live
    row = value_ptr + t * value_stride + g * 16
    nsq = tl.zeros([BLOCK_G], tl.float32)
    amax = tl.zeros([BLOCK_G], tl.float32)
    for i in tl.static_range(16):           # steps 1-2, element by element in order
        x = tl.load(row + i, mask=gm, other=0.0).to(tl.float32)
        nsq = nsq + x * x                   # two roundings (no FMA: enable_fp_fusion=False)
        ax = tl.abs(x)
        amax = tl.where(ax > amax, ax, amax)  # fmaxf(amax, |x|): a NaN |x| leaves amax
    if NAIVE:
        inv = tl.where(amax > tiny_amax, fmt_max / amax, 1.0)
    else:
        inv = tl.where(amax > tiny_amax, tl.div_rn(tl.zeros_like(amax) + fmt_max, amax), 1.0)
    rsq = tl.zeros([BLOCK_G], tl.float32)
    word = tl.zeros([BLOCK_G], tl.int64)
    for i in tl.static_range(16):           # steps 4-5, and the packing of code i
        x = tl.load(row + i, mask=gm, other=0.0).to(tl.float32)
        y = x * inv
        code = tl.zeros([BLOCK_G], tl.int32)
        for j in tl.static_range(LEVELS - 1):   # index = #bounds <= y (a NaN y gives 0)
            code += (y >= tl.load(bd_ptr + j)).to(tl.int32)
        c = tl.load(cb_ptr + code)
        rsq = rsq + c * c
        word = word | (code.to(tl.int64) << (BITS * i))
    if NAIVE:
        scale = tl.where(tl.sqrt(rsq) > tiny_rn, tl.sqrt(nsq) / tl.sqrt(rsq), amax / fmt_max)
    else:
        rn = tl.sqrt_rn(rsq)
        scale = tl.where(rn > tiny_rn, tl.div_rn(tl.sqrt_rn(nsq), rn),
                         tl.div_rn(amax, tl.zeros_like(amax) + fmt_max))
    scale = tl.where(scale > fp8_max, fp8_max, scale)   # a NaN scale stays NaN
    sbyte = scale.to(tl.float8e4nv, fp_downcast_rounding="rtne").to(tl.uint8, bitcast=True)
    vblock = v_cache_ptr + blk * v_block_stride_bytes
    tl.store(vblock + v_data_section_bytes + sib * G + g, sbyte, mask=gm)
    codes = vblock + sib * (N * BITS // 8) + g * (2 * BITS)
    for j in tl.static_range(2 * BITS):     # LSB-first: byte j holds bits 8j .. 8j+7
        tl.store(codes + j, ((word >> (8 * j)) & 0xFF).to(tl.uint8), mask=gm)


def reshape_and_cache_flash_bf16k_turbo(key, value, k_cache, v_cache, slot_mapping, num_kv_heads,
                                        head_dim, block_size, key_stride, value_stride,
                                        k_block_stride_bytes, v_block_stride_bytes,
                                        v_data_section_bytes, *, format, variant="careful"):
    """reshape_and_cache_flash_bf16k_turbo{2,3,4}v: key/value [T, stride] bf16, k_cache bf16 pool,
    v_cache uint8 pool, slot_mapping int64, all on one CUDA device."""
    fmt = tqref.get_format(format)
    n = num_kv_heads * head_dim
    dev = key.device
    cb = torch.tensor(fmt.codebook, dtype=torch.float32, device=dev)
    bd = torch.tensor(fmt.bounds, dtype=torch.float32, device=dev)
    T = slot_mapping.numel()
    if T == 0:
        return
    _writer_kernel[(T,)](
        key.view(torch.int16), value, k_cache.view(torch.int16), v_cache, slot_mapping, cb, bd,
        key_stride, value_stride, block_size, v_block_stride_bytes, v_data_section_bytes,
        fmt.max, _TINY_AMAX, _TINY_RN, _FP8_MAX,
        N=n, BLOCK_N=triton.next_power_of_2(n), G=n // 16,
        BLOCK_G=triton.next_power_of_2(n // 16), BITS=fmt.bits, LEVELS=fmt.levels,
        NAIVE=variant == "naive", enable_fp_fusion=variant == "naive", num_warps=4)


@triton.jit
def _decode_kernel(q_ptr, k_ptr, v_ptr, out_ptr, bt_ptr, sl_ptr, cb16_ptr,
                   max_blocks_per_seq, num_q_heads, num_kv_heads, block_size, inv_sqrt_d,
                   q_stride, v_block_stride_bytes, v_data_section_bytes, sliding_window,
                   threshold, D: tl.constexpr, BLOCK_D: tl.constexpr, BITS: tl.constexpr):
    qh = tl.program_id(0)
    s = tl.program_id(1)
    L = tl.load(sl_ptr + s)
    start = tl.where((sliding_window > 0) & (L > sliding_window), L - sliding_window, 0)
    kvh = qh // (num_q_heads // num_kv_heads)
    d = tl.arange(0, BLOCK_D)
    dm = d < D
    qv = tl.load(q_ptr + s.to(tl.int64) * q_stride + qh * D + d, mask=dm, other=0.0).to(tl.float32)
    n_elems = num_kv_heads * D
    e = kvh * D + d                          # element of a V row, group e // 16
    bit = e * BITS
    straddle = (bit % 8) + BITS > 8          # turbo3v codes that cross a byte boundary
    A = L - start
    chunk = (A + 7) // 8
    big_m = tl.full([1], -1e30, tl.float32)  # the merged state of the warps done so far
    big_l = tl.zeros([1], tl.float32)
    big_o = tl.zeros([BLOCK_D], tl.float32)
    b4 = tl.arange(0, 4)
    for w in range(0, 8):                    # the contract's 8 warp ranges, one after another
        lo = start + w * chunk
        hi = tl.minimum(start + (w + 1) * chunk, L)
        m = tl.full([1], -1e30, tl.float32)
        l = tl.zeros([1], tl.float32)
        o = tl.zeros([BLOCK_D], tl.float32)
        p = lo
        while p < hi:                        # a batch of 4 inside one block, else one position
            block_end = tl.minimum(hi, (p // block_size + 1) * block_size)
            n = tl.where(block_end - p >= 4, 4, 1)
            pos = p + b4
            valid = b4 < n
            blk = tl.load(bt_ptr + s * max_blocks_per_seq + pos // block_size, mask=valid,
                          other=0).to(tl.int64)
            slot = (pos % block_size).to(tl.int64)
            krow = ((blk * block_size + slot) * num_kv_heads + kvh) * D
            kt = tl.load(k_ptr + krow[:, None] + d[None, :], mask=valid[:, None] & dm[None, :],
                         other=0.0).to(tl.float32)
            sc = tl.sum(kt * qv[None, :], axis=1) * inv_sqrt_d
            sc = tl.where(valid, sc, -float("inf"))
            mn = tl.maximum(m, tl.max(sc, axis=0))
            eo = tl.exp(m - mn)
            ef = tl.where(valid, tl.exp(sc - mn), 0.0)
            o = o * eo
            l = l * eo + tl.sum(ef, axis=0)
            use = valid & (ef > threshold)   # sparse V: skipped V bytes are never loaded
            vbase = blk * v_block_stride_bytes
            cm = use[:, None] & dm[None, :]
            cptr = v_ptr + (vbase + slot * (n_elems * BITS // 8))[:, None] + (bit // 8)[None, :]
            w0 = tl.load(cptr, mask=cm, other=0).to(tl.int32)
            w1 = tl.load(cptr + 1, mask=cm & straddle[None, :], other=0).to(tl.int32)
            code = ((w0 | (w1 << 8)) >> (bit % 8)[None, :]) & ((1 << BITS) - 1)
            sptr = v_ptr + (vbase + v_data_section_bytes + slot * (n_elems // 16))[:, None] + (e // 16)[None, :]
            sb = tl.load(sptr, mask=cm, other=0)
            gs = sb.to(tl.float8e4nv, bitcast=True).to(tl.float32)
            vt = tl.where(cm, tl.load(cb16_ptr + code, mask=cm, other=0.0) * gs, 0.0)
            o = o + tl.sum(ef[:, None] * vt, axis=0)
            m = mn
            p = p + n
        merge = l > 0                        # a warp that saw no position adds nothing
        mn = tl.where(merge, tl.maximum(big_m, m), big_m)
        a = tl.exp(big_m - mn)
        c = tl.where(merge, tl.exp(m - mn), 0.0)
        big_l = big_l * a + l * c
        big_o = big_o * a + o * c
        big_m = mn
    inv = tl.where(big_l > 0, 1.0 / big_l, 0.0)
    res = (big_o * inv).to(tl.bfloat16)
    tl.store(out_ptr + (s * num_q_heads + qh).to(tl.int64) * D + d, res, mask=dm & (L > 0))


def paged_decode_attn_bf16k_turbo(q, k_cache, v_cache, output, block_tables, seq_lens,
                                  max_blocks_per_seq, num_q_heads, num_kv_heads, head_dim,
                                  block_size, inv_sqrt_d, q_stride, v_block_stride_bytes,
                                  v_data_section_bytes, sliding_window, *, format,
                                  threshold=tqref.SPARSE_V_THRESHOLD):
    """paged_decode_attn_bf16k_turbo{2,3,4}v on CUDA tensors; output written in place."""
    fmt = tqref.get_format(format)
    dev = q.device
    cb16 = torch.tensor(fmt.codebook_fp16.view(np.float16).astype(np.float32), device=dev)
    S = seq_lens.numel()
    if S == 0:
        return
    _decode_kernel[(num_q_heads, S)](
        q, k_cache, v_cache, output, block_tables, seq_lens, cb16, max_blocks_per_seq,
        num_q_heads, num_kv_heads, block_size, inv_sqrt_d, q_stride, v_block_stride_bytes,
        v_data_section_bytes, sliding_window, threshold,
        D=head_dim, BLOCK_D=triton.next_power_of_2(head_dim), BITS=fmt.bits, num_warps=4)
