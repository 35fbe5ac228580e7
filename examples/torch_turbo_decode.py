"""A pure-torch paged decoder for the BF16-K / Turbo-V cache, written the way an inference engine
writes its fallback path (docs/spec.md section 5): dequantise the V rows it needs, then plain
torch attention in fp32. It follows the format and the sparse-V rule but not the kernel's
operation order (torch's exp and sums, not EX2 and the lane butterfly), so tqref judges it at
level T (within tolerance, against the kernel-order model and the fp64 references) and level I
(batch, block numbering, strides, repetition); examples/test_torch_decode.py runs both.

Which V it may read is part of the format: a position whose softmax factor, relative to the
running maximum of the warp that owns it, is at or below THRESH is skipped and its V bytes are
never read (golden files poison exactly those). The running maximum follows the kernel's
partition: 8 warps take ceil(A/8) positions each; a warp walks its range a cache block at a
time, in batches of 4 while 4 remain in the block and the range, then one at a time; a batch's
factors are relative to the maximum including the whole batch. Everything else is ordinary
torch. Works with torch 1.13 (Debian's, CPU) and torch 2.x on any device.
"""
import torch

import tqref

_WARPS = 8
_BATCH = 4


def fp8_e4m3_table(device):
    """Value of each fp8 E4M3 byte (0x7F/0xFF NaN), as float32 [256]."""
    if hasattr(torch, "float8_e4m3fn"):
        return torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).float().to(device)
    b = torch.arange(256, dtype=torch.int64)
    sign = torch.where(b >= 128, -1.0, 1.0)
    e, m = (b >> 3) & 15, (b & 7).double()
    mag = torch.where(e == 0, m * 2.0 ** -9, (1 + m / 8) * torch.pow(2.0, (e - 7).double()))
    val = (sign * mag).float()
    val[(b & 0x7F) == 0x7F] = float("nan")
    return val.to(device)


def step_partition(start, L, block_size):
    """For positions start..L-1 (relative index i): step_end[i], the relative index of the last
    position of the step (batch of 4 or single) holding it; and the warps' [lo, hi) ranges."""
    A = L - start
    chunk = (A + _WARPS - 1) // _WARPS
    step_end, warps = [0] * A, []
    for w in range(_WARPS):
        lo, hi = start + w * chunk, min(start + (w + 1) * chunk, L)
        if lo >= hi:
            continue
        warps.append((lo - start, hi - start))
        p = lo
        while p < hi:
            block_end = min(hi, (p // block_size + 1) * block_size)
            n = _BATCH if block_end - p >= _BATCH else 1
            for i in range(p, p + n):
                step_end[i - start] = p + n - 1 - start
            p += n
    return step_end, warps


def running_max(scores, start, L, block_size):
    """[QH, A]: for each position, its warp's running maximum after the step that holds it."""
    step_end, warps = step_partition(start, L, block_size)
    end = torch.tensor(step_end, device=scores.device)
    # each step's maximum at its last position (-1e30, the kernel's initial m, elsewhere)
    top = torch.full_like(scores, -1e30).scatter_reduce(1, end.expand_as(scores), scores, "amax")
    out = torch.empty_like(scores)
    for lo, hi in warps:
        out[:, lo:hi] = torch.cummax(top[:, lo:hi], dim=1).values[:, end[lo:hi] - lo]
    return out


def dequant_rows(v_cache, blocks, slots, heads, fmt, num_kv_heads, head_dim, block_size,
                 v_data_section_bytes, codebook, fp8):
    """float32 [P, head_dim]: V of kv head heads[i] at (blocks[i], slots[i]); reads only those
    heads' code and scale bytes."""
    n = num_kv_heads * head_dim
    b = fmt.bits
    row_bytes = n * b // 8
    e = heads[:, None] * head_dim + torch.arange(head_dim, device=v_cache.device)[None, :]
    bit = e * b
    code_base = (blocks * v_cache.shape[1] + slots * row_bytes)[:, None]
    flat = v_cache.reshape(-1).long()
    lo = flat[code_base + bit // 8]
    straddle = (bit % 8) + b > 8
    hi = torch.where(straddle, flat[code_base + torch.where(straddle, bit // 8 + 1, bit // 8)], 0)
    codes = ((lo | (hi << 8)) >> (bit % 8)) & ((1 << b) - 1)
    scale_at = (blocks * v_cache.shape[1] + v_data_section_bytes + slots * (n // 16))[:, None] + e // 16
    return codebook[codes] * fp8[flat[scale_at]]


def paged_decode_attn_bf16k_turbo(q, k_cache, v_cache, output, block_tables, seq_lens,
                                  max_blocks_per_seq, num_q_heads, num_kv_heads, head_dim,
                                  block_size, inv_sqrt_d, q_stride, v_block_stride_bytes,
                                  v_data_section_bytes, sliding_window, *, format,
                                  threshold=tqref.SPARSE_V_THRESHOLD):
    """The kernel ABI of paged_decode_attn_bf16k_turbo{2,3,4}v; output written in place."""
    fmt = tqref.get_format(format)
    dev = q.device
    codebook = torch.tensor(fmt.codebook, device=dev).half().float()  # the decoder's fp16(CB)
    fp8 = fp8_e4m3_table(dev)
    group = num_q_heads // num_kv_heads
    kv_of = torch.arange(num_q_heads, device=dev) // group
    lens = seq_lens.tolist()
    for s, L in enumerate(lens):
        if L == 0:
            continue
        start = L - sliding_window if 0 < sliding_window < L else 0
        pos = torch.arange(start, L, device=dev)
        blocks = block_tables[s].long()[pos // block_size]
        slots = pos % block_size
        K = k_cache[blocks, slots].float()                          # [A, H, D]
        qs = q[s, :num_q_heads * head_dim].float().view(num_q_heads, head_dim)
        scores = torch.einsum("hd,ahd->ha", qs, K[:, kv_of]) * inv_sqrt_d   # [QH, A]
        use = torch.exp(scores - running_max(scores, start, L, block_size)) > threshold
        weights = torch.softmax(scores, dim=1) * use                # skipped V contributes 0
        # V only where some q head of the kv head uses the position
        need = torch.zeros(L - start, num_kv_heads, dtype=torch.bool, device=dev)
        need.index_put_((torch.arange(L - start, device=dev)[None, :].expand_as(use)[use],
                         kv_of[:, None].expand_as(use)[use]), torch.tensor(True, device=dev))
        p_idx, h_idx = need.nonzero(as_tuple=True)
        V = torch.zeros(L - start, num_kv_heads, head_dim, device=dev)
        if p_idx.numel():
            V[p_idx, h_idx] = dequant_rows(v_cache, blocks[p_idx], slots[p_idx], h_idx, fmt,
                                           num_kv_heads, head_dim, block_size,
                                           v_data_section_bytes, codebook, fp8)
        out = torch.einsum("ha,ahd->hd", weights, V[:, kv_of])
        output[s] = out.to(torch.bfloat16)


if __name__ == "__main__":  # python3 examples/torch_turbo_decode.py [suite] [device]
    import sys
    import tqref.testing
    suite = sys.argv[1] if len(sys.argv) > 1 else "smoke"
    device = sys.argv[2] if len(sys.argv) > 2 else "cpu"
    ok = True
    for level in ("T", "I"):
        r = tqref.testing.check_kernel(paged_decode_attn_bf16k_turbo, suite=suite, level=level,
                                       kind="decode", device=device)
        print(r.summary())
        ok &= r.passed
    sys.exit(0 if ok else 1)
