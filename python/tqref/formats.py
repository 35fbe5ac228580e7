"""The format traits table (model/tqref/format.h, docs/spec.md section 2), read from the library:
one row per Turbo-V format, so tests and tools loop over formats instead of repeating them."""
import ctypes
from dataclasses import dataclass

import numpy as np

from . import _lib
from .errors import BadArgument

GROUP_SIZE = 16            # values per quantisation group, one fp8 scale each
# The default TQ_PLUS_SPARSE_V_THRESHOLD, the model's binary32 1e-3f, as an exact Python float.
SPARSE_V_THRESHOLD = float(np.uint32(_lib.build_info()["sparse_v_threshold_bits"]).view(np.float32))
HDIMS = (128, 256)         # the decoder builds' compile-time HDIM


@dataclass(frozen=True)
class Format:
    name: str                  # "turbo3v": also the kernel-name suffix
    index: int                 # the C ABI's format code
    bits: int                  # b: bits per code
    levels: int                # 2^b codebook entries
    group_code_bytes: int      # 16*b/8 packed code bytes per group
    max: float                 # MAX, the largest codebook magnitude (binary32)
    codebook: np.ndarray       # [levels] float32, as the writer uses it
    bounds: np.ndarray         # [levels-1] float32 decision bounds
    codebook_fp16: np.ndarray  # [levels] uint16 fp16 bits of CB, as the decoder uses it

    @property
    def writer_kernel(self):
        return "reshape_and_cache_flash_bf16k_" + self.name

    @property
    def decode_kernel(self):
        return "paged_decode_attn_bf16k_" + self.name

    def __str__(self):
        return self.name


def _read(index):
    """The row of format code `index`; None for the first code past the end of the table."""
    t = _lib.FormatTraits()
    status = _lib.lib.tqref_format_traits_get(index, ctypes.byref(t))
    if status == _lib.BAD_ARGUMENT and index > 0:
        return None
    _lib.check(status)
    L = t.levels
    def arr(c, n, dt):
        a = np.array(c[:n], dtype=dt)
        a.setflags(write=False)
        return a
    return Format(t.name.decode(), index, t.bits, L, t.group_code_bytes, float(np.float32(t.max)),
                  arr(t.codebook, L, np.float32), arr(t.bounds, L - 1, np.float32),
                  arr(t.codebook_fp16, L, np.uint16))


def _read_all():
    # kFormats (model/tqref/format.h) is the one list of formats. The C ABI gives its rows by
    # code 0, 1, ... and refuses the first code past its end as a bad argument, so reading up to
    # that refusal yields the table without its length restated here.
    rows = []
    while (f := _read(len(rows))) is not None:
        rows.append(f)
    return tuple(rows)


FORMATS = _read_all()
_BY_NAME = {f.name: f for f in FORMATS}


def get_format(fmt):
    """A Format from a Format, its name ("turbo3v") or a kernel name ending in it."""
    if isinstance(fmt, Format):
        return fmt
    if isinstance(fmt, str):
        for f in FORMATS:
            if fmt in (f.name, f.writer_kernel, f.decode_kernel):
                return f
    raise BadArgument(f"format = {fmt!r}; allowed: {', '.join(_BY_NAME)} (or a kernel name)")
