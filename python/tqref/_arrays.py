"""Arrays in and out of the C library: numpy arrays and torch tensors as exact bit patterns.

The kinds of buffer the kernel ABI uses and what each accepts (docs/python.md, bit conventions):
  bf16  uint16 bit patterns: numpy uint16/int16; torch bfloat16/int16/uint16
  u8    packed codes, scale bytes, fp8 E4M3, V pools: numpy uint8/int8; torch uint8/int8/float8_e4m3fn
  kpool the K pool: bf16 as above, or its bytes as uint8
  i32   block_tables, seq_lens: int32 only       i64  slot_mapping: int64 only
  f32   float32 only
Nothing is converted: a bfloat16 tensor is read through its int16 view, so NaN payloads and
signed zeros arrive as they are. Arrays must be C-contiguous (a strided view would hand the
kernel ABI other bytes than the user sees); buffers the model writes must also be writable and,
for torch, on the CPU. torch is never imported here: tensors are recognised by their type.
"""
import ctypes

import numpy as np

from .errors import BadArgument

_KINDS = {
    "bf16": (np.uint16, ("uint16", "int16"), ("bfloat16", "int16", "uint16")),
    "u16": (np.uint16, ("uint16", "int16"), ("int16", "uint16")),
    "u8": (np.uint8, ("uint8", "int8"), ("uint8", "int8", "float8_e4m3fn")),
    # a K pool: bf16 elements, or the same bytes as uint8 (read as raw little-endian bytes)
    # any buffer as its bytes (the judge compares bytes): every numeric dtype
    "raw": (np.uint8, ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
                       "float32", "float64"),
            ("uint8", "int8", "bfloat16", "float16", "int16", "uint16", "int32", "int64", "float32",
             "float64", "float8_e4m3fn")),
    "kpool": (np.uint8, ("uint16", "int16", "uint8", "int8"), ("bfloat16", "int16", "uint16", "uint8", "int8")),
    "i32": (np.int32, ("int32",), ("int32",)),
    "i64": (np.int64, ("int64",), ("int64",)),
    "f32": (np.float32, ("float32",), ("float32",)),
}
# torch dtype -> the same-width integer dtype its bits are read through
_TORCH_BITS_VIEW = {"bfloat16": "int16", "float16": "int16", "float8_e4m3fn": "uint8"}

_CTYPES = {np.uint8: ctypes.c_uint8, np.uint16: ctypes.c_uint16, np.uint32: ctypes.c_uint32,
           np.uint64: ctypes.c_uint64, np.int32: ctypes.c_int32, np.int64: ctypes.c_int64,
           np.float32: ctypes.c_float, np.float64: ctypes.c_double}


def is_torch(x):
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "dtype")


def _allowed(kind):
    _, np_names, torch_names = _KINDS[kind]
    return f"numpy {'/'.join(np_names)} or torch {'/'.join(torch_names)}"


def _from_torch(x, name, kind, writable):
    _, _, torch_names = _KINDS[kind]
    dt = str(x.dtype).replace("torch.", "")
    if dt not in torch_names:
        raise BadArgument(f"{name}: dtype torch.{dt}; allowed: {_allowed(kind)}")
    if not x.is_contiguous():
        raise BadArgument(f"{name}: a non-contiguous tensor (strides {tuple(x.stride())}); allowed: "
                          f"contiguous (call .contiguous() first)")
    if x.device.type != "cpu":
        if writable:
            raise BadArgument(f"{name}: a tensor on {x.device}; the model writes it in place on the "
                              f"CPU: pass a CPU tensor (x.cpu()) and copy the result back")
        x = x.detach().cpu()
    x = x.detach()
    if dt in _TORCH_BITS_VIEW:
        import torch  # present: x is a tensor
        x = x.view(getattr(torch, _TORCH_BITS_VIEW[dt]))
    return x.numpy()


def as_array(x, name, kind, writable=False):
    """x as a C-contiguous numpy array of the kind's dtype, sharing memory where it can
    (always for buffers the model writes). Raises BadArgument naming `name` otherwise."""
    want = _KINDS[kind][0]
    if is_torch(x):
        a = _from_torch(x, name, kind, writable)
    elif isinstance(x, np.ndarray):
        if x.dtype.name not in _KINDS[kind][1]:
            raise BadArgument(f"{name}: dtype numpy {x.dtype.name}; allowed: {_allowed(kind)}")
        if not x.flags.c_contiguous:
            raise BadArgument(f"{name}: a non-contiguous array (strides {x.strides}); allowed: "
                              f"C-contiguous (np.ascontiguousarray first)")
        a = x
    else:
        raise BadArgument(f"{name}: a {type(x).__name__}; allowed: a numpy array or torch tensor "
                          f"({_allowed(kind)})")
    if writable and not a.flags.writeable:
        raise BadArgument(f"{name}: a read-only array; the model writes it: pass a writable one")
    if kind in ("kpool", "raw"):
        return a.reshape(-1).view(np.uint8)
    return a.view(want) if a.dtype != want else a


def ptr(a):
    """ctypes pointer to the first element of a numpy array (None for None)."""
    if a is None:
        return None
    return a.ctypes.data_as(ctypes.POINTER(_CTYPES[a.dtype.type]))


def u32(value, name):
    """A Python integer parameter that must fit the ABI's u32."""
    return _int(value, name, 0, 2**32 - 1, "u32")


def u64(value, name):
    return _int(value, name, 0, 2**64 - 1, "u64")


def _int(value, name, lo, hi, what):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise BadArgument(f"{name} = {value!r}; allowed: an integer in {lo} .. {hi} ({what})")
    v = int(value)
    if not lo <= v <= hi:
        raise BadArgument(f"{name} = {v}; allowed: {lo} .. {hi} ({what})")
    return v


def f32(value, name):
    """A Python float parameter, rounded to binary32 as the kernel ABI passes it."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise BadArgument(f"{name} = {value!r}; allowed: a float (binary32)")
    return float(np.float32(value))
