"""The number formats of docs/spec.md section 1, element-wise over numpy arrays, computed by the
model's own conversions (model/tqref/numeric.h), so Python and C++ cannot disagree."""
import numpy as np

from . import _arrays, _lib

_F32_TO_BF16, _BF16_TO_F32, _F32_TO_FP8, _FP8_TO_F32, _F32_TO_F16, _F16_TO_F32 = range(6)


def _convert(code, x, name, kind_in, dtype_out):
    a = _arrays.as_array(x, name, kind_in)
    out = np.empty(a.shape, dtype=dtype_out)
    _lib.check(_lib.lib.tqref_convert(code, a.ctypes.data, a.size, out.ctypes.data))
    return out


def _floats(x, name):
    a = np.asarray(x, dtype=np.float32) if not _arrays.is_torch(x) else x
    return np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a


def f32_to_bf16(x):
    """float32 -> bf16 bits (uint16): nearest-even, every NaN 0x7FFF (__float2bfloat16_rn)."""
    return _convert(_F32_TO_BF16, _floats(x, "x"), "x", "f32", np.uint16)


def bf16_to_f32(bits):
    """bf16 bits (uint16 / bfloat16 tensor) -> float32, exact."""
    return _convert(_BF16_TO_F32, bits, "bits", "bf16", np.float32)


def f32_to_fp8(x):
    """float32 -> fp8 E4M3 bits: the writer's cvt.rn.satfinite.e4m3x2.f32."""
    return _convert(_F32_TO_FP8, _floats(x, "x"), "x", "f32", np.uint8)


def fp8_to_f32(bits):
    """fp8 E4M3 bits -> float32, exact (0x7F/0xFF are NaN)."""
    return _convert(_FP8_TO_F32, bits, "bits", "u8", np.float32)


def f32_to_f16(x):
    """float32 -> IEEE binary16 bits, nearest-even (__float2half)."""
    return _convert(_F32_TO_F16, _floats(x, "x"), "x", "f32", np.uint16)


def f16_to_f32(bits):
    """binary16 bits -> float32, exact."""
    return _convert(_F16_TO_F32, bits, "bits", "u16", np.float32)


def bf16_ulp_distance(a, b):
    """|ordinal(a) - ordinal(b)| of two bf16 bit-pattern arrays, where ordinal orders the finite
    values and infinities on one integer line (+0 and -0 both 0). NaNs give -1."""
    def ordinal(x):
        x = x.astype(np.int64)
        mag = x & 0x7FFF
        return np.where(x & 0x8000, -mag, mag)
    a = _arrays.as_array(a, "a", "bf16")
    b = _arrays.as_array(b, "b", "bf16")
    nan = ((a & 0x7FFF) > 0x7F80) | ((b & 0x7FFF) > 0x7F80)
    d = np.abs(ordinal(a) - ordinal(b))
    return np.where(nan, -1, d)
