"""The bit-exact model (model/): one group at a time, the writer on a pool, the decoder in the
kernel's operation order with an EX2 profile, the fp64 reference and the EX2 unit.

Parameters keep the kernel ABI's names and order (docs/spec.md sections 4-5); the format is the
keyword-only `format` (or call the functions named after the six kernels, below). bf16 is uint16
bits, codes/scales/pools uint8 (docs/python.md). Buffers the kernel writes (k_cache, v_cache,
output) are updated in place, exactly as on the GPU; everything else is only read. The model
runs in C++ with OpenMP while the GIL is released.
"""
import ctypes
import functools
from dataclasses import dataclass

import numpy as np

from . import _arrays, _lib
from ._arrays import as_array, f32, ptr, u32, u64
from .errors import BadArgument
from .formats import FORMATS, GROUP_SIZE, SPARSE_V_THRESHOLD, get_format


# ---- One group at a time ----------------------------------------------------------------------
@dataclass
class QuantizedGroups:
    codes: np.ndarray        # [G, 16] uint8 code indices before packing
    packed: np.ndarray       # [G, group_code_bytes] uint8, as stored in the V pool
    scale_bytes: np.ndarray  # [G] uint8 fp8 E4M3 scales
    nsq: np.ndarray          # [G] float32: the writer's steps 1-6 (docs/spec.md section 4)
    amax: np.ndarray
    inv: np.ndarray
    rsq: np.ndarray
    rn: np.ndarray
    scale: np.ndarray        # s after the clamp to 448, before the fp8 encode


def quantize_groups(x, *, format):
    """Quantises consecutive groups of 16 bf16 values (x.size a multiple of 16) exactly as the
    writer does; group g is x.flat[16g:16g+16]."""
    fmt = get_format(format)
    a = as_array(x, "x", "bf16")
    if a.size % GROUP_SIZE:
        raise BadArgument(f"x: {a.size} elements; allowed: a multiple of {GROUP_SIZE} (whole groups)")
    G = a.size // GROUP_SIZE
    codes = np.empty((G, GROUP_SIZE), np.uint8)
    packed = np.empty((G, fmt.group_code_bytes), np.uint8)
    scales = np.empty(G, np.uint8)
    steps = np.empty((G, 6), np.float32)
    _lib.check(_lib.lib.tqref_quantize_groups(fmt.index, ptr(a), G, ptr(codes), ptr(packed),
                                              ptr(scales), ptr(steps)))
    return QuantizedGroups(codes, packed, scales, *(steps[:, i].copy() for i in range(6)))


def quantize_group(x, *, format):
    """One group of 16 bf16 values: (codes [16], packed [2b] bytes, scale byte)."""
    a = as_array(x, "x", "bf16")
    if a.size != GROUP_SIZE:
        raise BadArgument(f"x: {a.size} elements; allowed: exactly {GROUP_SIZE}")
    q = quantize_groups(a, format=format)
    return q.codes[0], q.packed[0], int(q.scale_bytes[0])


def dequantize_groups(packed, scale_bytes, *, format):
    """The decoder's dequant: [G, 16] float32, v = f32(f32(fp16(CB[code])) * fp8(scale))."""
    fmt = get_format(format)
    p = as_array(packed, "packed", "u8")
    s = as_array(scale_bytes, "scale_bytes", "u8")
    if p.size != s.size * fmt.group_code_bytes:
        raise BadArgument(f"packed: {p.size} bytes; allowed: scale_bytes.size * "
                          f"{fmt.group_code_bytes} = {s.size * fmt.group_code_bytes} ({fmt.name})")
    out = np.empty((s.size, GROUP_SIZE), np.float32)
    _lib.check(_lib.lib.tqref_dequantize_groups(fmt.index, ptr(p), ptr(s), s.size, ptr(out)))
    return out


# ---- The writer -------------------------------------------------------------------------------
def writer_params(num_kv_heads, head_dim, block_size, key_stride, value_stride,
                  k_block_stride_bytes, v_block_stride_bytes, v_data_section_bytes):
    """The C struct of the writer's scalars, each range-checked as the ABI's u32/u64."""
    return _lib.WriterParams(u32(num_kv_heads, "num_kv_heads"), u32(head_dim, "head_dim"),
                             u32(block_size, "block_size"), u32(key_stride, "key_stride"),
                             u32(value_stride, "value_stride"),
                             u64(k_block_stride_bytes, "k_block_stride_bytes"),
                             u64(v_block_stride_bytes, "v_block_stride_bytes"),
                             u64(v_data_section_bytes, "v_data_section_bytes"))


def reshape_and_cache_model(key, value, k_cache, v_cache, slot_mapping, num_kv_heads, head_dim,
                            block_size, key_stride, value_stride, k_block_stride_bytes,
                            v_block_stride_bytes, v_data_section_bytes, *, format):
    """reshape_and_cache_flash_bf16k_turbo{2,3,4}v on host pools, in place (docs/spec.md
    section 4). key/value: [num_tokens, *_stride] bf16; k_cache: the whole K pool (bf16, any
    shape); v_cache: the whole V pool (uint8); slot_mapping: [num_tokens] int64, < 0 = padding."""
    fmt = get_format(format)
    k_ = as_array(key, "key", "bf16")
    v_ = as_array(value, "value", "bf16")
    kc = as_array(k_cache, "k_cache", "kpool", writable=True)
    vc = as_array(v_cache, "v_cache", "u8", writable=True)
    sm = as_array(slot_mapping, "slot_mapping", "i64")
    p = writer_params(num_kv_heads, head_dim, block_size, key_stride, value_stride,
                      k_block_stride_bytes, v_block_stride_bytes, v_data_section_bytes)
    _lib.check(_lib.lib.tqref_reshape_and_cache(
        fmt.index, ptr(k_), k_.size, ptr(v_), v_.size, ptr(kc), kc.nbytes,
        ptr(vc), vc.nbytes, ptr(sm), sm.size, ctypes.byref(p)))


# ---- The decoder ------------------------------------------------------------------------------
@dataclass
class DecodeDiagnostics:
    """Per row r = s*num_q_heads + qh (docs/decode-model.md)."""
    m: np.ndarray             # [rows] float32: warp 0's running max after the merge
    l: np.ndarray             # [rows] float32: its softmax denominator
    skip_count: np.ndarray    # [rows] uint32
    output_f32: np.ndarray    # [rows, head_dim] float32: o*inv before the bf16 rounding
    skip_offsets: np.ndarray  # [rows+1] uint64: row r's positions start..L-1 at mask[off[r]:off[r+1]]
    skip_mask: np.ndarray     # [total] uint8: 1 = the V load was skipped

    def skipped(self, row):
        """The skip mask of one row (positions window_start .. L-1)."""
        return self.skip_mask[int(self.skip_offsets[row]):int(self.skip_offsets[row + 1])]


def decode_params(max_blocks_per_seq, num_q_heads, num_kv_heads, head_dim, block_size,
                  inv_sqrt_d, q_stride, v_block_stride_bytes, v_data_section_bytes,
                  sliding_window, num_seqs, hdim=None, threshold=SPARSE_V_THRESHOLD):
    """The C struct of the decoder's scalars; hdim defaults to head_dim."""
    return _lib.DecodeParams(
        u32(max_blocks_per_seq, "max_blocks_per_seq"), u32(num_q_heads, "num_q_heads"),
        u32(num_kv_heads, "num_kv_heads"), u32(head_dim, "head_dim"), u32(block_size, "block_size"),
        f32(inv_sqrt_d, "inv_sqrt_d"), u32(q_stride, "q_stride"),
        u64(v_block_stride_bytes, "v_block_stride_bytes"),
        u64(v_data_section_bytes, "v_data_section_bytes"), u32(sliding_window, "sliding_window"),
        u32(num_seqs, "num_seqs"), u32(head_dim if hdim is None else hdim, "hdim"),
        f32(threshold, "threshold"))


def paged_decode_model(q, k_cache, v_cache, output, block_tables, seq_lens, max_blocks_per_seq,
                       num_q_heads, num_kv_heads, head_dim, block_size, inv_sqrt_d, q_stride,
                       v_block_stride_bytes, v_data_section_bytes, sliding_window, *, format, ex2,
                       hdim=None, threshold=SPARSE_V_THRESHOLD, diagnostics=False):
    """paged_decode_attn_bf16k_turbo{2,3,4}v in the kernel's operation order (docs/spec.md
    section 5) with EX2 profile `ex2` (an Ex2Profile). output: [num_seqs, num_q_heads, head_dim]
    bf16, updated in place (rows of L == 0 sequences untouched). num_seqs = len(seq_lens); hdim
    and threshold are the build's HDIM (default head_dim) and TQ_PLUS_SPARSE_V_THRESHOLD.
    Returns DecodeDiagnostics when diagnostics=True, else None."""
    fmt = get_format(format)
    if not isinstance(ex2, Ex2Profile):
        raise BadArgument(f"ex2 = {ex2!r}; allowed: an Ex2Profile (tqref.Ex2Profile.load('sm_90'))")
    q_ = as_array(q, "q", "bf16")
    kc = as_array(k_cache, "k_cache", "kpool")
    vc = as_array(v_cache, "v_cache", "u8")
    out = as_array(output, "output", "bf16", writable=True)
    bt = as_array(block_tables, "block_tables", "i32")
    sl = as_array(seq_lens, "seq_lens", "i32")
    p = decode_params(max_blocks_per_seq, num_q_heads, num_kv_heads, head_dim, block_size,
                      inv_sqrt_d, q_stride, v_block_stride_bytes, v_data_section_bytes,
                      sliding_window, sl.size, hdim, threshold)
    h = ctypes.c_void_p()
    _lib.check(_lib.lib.tqref_paged_decode(
        fmt.index, ptr(q_), q_.size, ptr(kc), kc.nbytes, ptr(vc), vc.nbytes,
        ptr(out), out.size, ptr(bt), bt.size, ptr(sl), sl.size, ctypes.byref(p), ex2._h,
        ctypes.byref(h) if diagnostics else None))
    if not diagnostics:
        return None
    try:
        return _diagnostics(h, p.head_dim)
    finally:
        _lib.lib.tqref_decode_diag_free(h)


def _diagnostics(h, head_dim):
    rows = _lib.lib.tqref_decode_diag_rows(h)
    d = DecodeDiagnostics(np.empty(rows, np.float32), np.empty(rows, np.float32),
                          np.empty(rows, np.uint32), np.empty((rows, head_dim), np.float32),
                          np.empty(rows + 1, np.uint64),
                          np.empty(_lib.lib.tqref_decode_diag_mask_len(h), np.uint8))
    _lib.check(_lib.lib.tqref_decode_diag_copy(h, ptr(d.m), ptr(d.l), ptr(d.skip_count),
                                               ptr(d.output_f32), ptr(d.skip_offsets),
                                               ptr(d.skip_mask)))
    return d


def reference_attention(q, k_cache, v_cache, block_tables, seq_lens, max_blocks_per_seq,
                        num_q_heads, num_kv_heads, head_dim, block_size, inv_sqrt_d, q_stride,
                        v_block_stride_bytes, v_data_section_bytes, sliding_window, *, format,
                        v_values=None):
    """fp64 attention over the positions the kernel attends to: exact softmax, no skip, no
    operation order. V from the Turbo pool (dequantised), or, when v_values (the bf16 V rows
    the writer consumed, laid out like the K pool) is given, from those. Returns float64
    [num_seqs, num_q_heads, head_dim]; zeros for L == 0."""
    fmt = get_format(format)
    q_ = as_array(q, "q", "bf16")
    kc = as_array(k_cache, "k_cache", "kpool")
    vc = as_array(v_cache, "v_cache", "u8")
    vv = None if v_values is None else as_array(v_values, "v_values", "bf16")
    bt = as_array(block_tables, "block_tables", "i32")
    sl = as_array(seq_lens, "seq_lens", "i32")
    p = decode_params(max_blocks_per_seq, num_q_heads, num_kv_heads, head_dim, block_size,
                      inv_sqrt_d, q_stride, v_block_stride_bytes, v_data_section_bytes,
                      sliding_window, sl.size)
    out = np.empty((sl.size, p.num_q_heads, p.head_dim), np.float64)
    _lib.check(_lib.lib.tqref_reference_attention(
        fmt.index, ptr(q_), q_.size, ptr(kc), kc.nbytes, ptr(vc), vc.nbytes,
        ptr(vv), 0 if vv is None else vv.size, ptr(bt), bt.size, ptr(sl), sl.size,
        ctypes.byref(p), 1 if vv is None else 0, ptr(out), out.size))
    return out


# ---- EX2 ----------------------------------------------------------------------------------------
class Ex2Profile:
    """An EX2 hardware profile (docs/ex2.md): the exact model of the GPU's MUFU.EX2 on x <= 0 and
    NaN, and the kernels' EXPF on top of it."""

    def __init__(self, handle):
        self._h = handle
        self.id = _lib.lib.tqref_ex2_id(handle).decode()
        self.arch = _lib.lib.tqref_ex2_arch(handle).decode()

    @classmethod
    def load(cls, arch="sm_90"):
        """The committed profile of an architecture ($TQREF_DATA_DIR/hw/<arch>/ex2.h5, then the
        source tree's data/)."""
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.tqref_ex2_load_arch(str(arch).encode(), ctypes.byref(h)))
        return cls(h)

    @classmethod
    def from_file(cls, path):
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.tqref_ex2_load_file(str(path).encode(), ctypes.byref(h)))
        return cls(h)

    def _eval(self, x, expf):
        a = np.ascontiguousarray(x, dtype=np.float32) if not _arrays.is_torch(x) else x
        a = as_array(a, "x", "f32")
        out = np.empty(a.shape, np.float32)
        _lib.check(_lib.lib.tqref_ex2_eval(self._h, expf, ptr(a), a.size, ptr(out)))
        return out

    def ex2(self, x):
        """EX2(x) element-wise (float32); every x must be <= 0 or NaN."""
        return self._eval(x, 0)

    def expf(self, x):
        """EXPF(x) of docs/spec.md section 5 element-wise; x <= 0 or NaN."""
        return self._eval(x, 1)

    def __repr__(self):
        return f"Ex2Profile({self.id!r})"

    def __del__(self):
        if getattr(self, "_h", None):
            _lib.lib.tqref_ex2_free(self._h)
            self._h = None


# ---- The six kernels by name --------------------------------------------------------------------
def _named(fn, fmt, kernel):
    f = functools.partial(fn, format=fmt.name)
    functools.update_wrapper(f, fn)
    f.__name__ = f.__qualname__ = kernel
    return f


for _f in FORMATS:
    globals()[_f.writer_kernel] = _named(reshape_and_cache_model, _f, _f.writer_kernel)
    globals()[_f.decode_kernel] = _named(paged_decode_model, _f, _f.decode_kernel)
