"""Loads libtqref_c.so (python/capi) with ctypes and declares its functions.

Where the library is looked for, in order (the first that exists is loaded):
  1. $TQREF_LIBRARY, the path of the .so itself (a carried copy, or another build's);
  2. tqref/_native/libtqref_c.so inside this package: an installed copy's (pip install, which
     puts it there from a CMake build tree: python/setup.py);
  3. when the package runs from a checkout (python/tqref, not installed): that checkout's build
     trees build/default, build/cpu-only, build/debug (python/libtqref_c.so in each), the CMake
     presets' folders.
ctypes releases the GIL for the duration of every foreign call, so the model's OpenMP threads
run while other Python threads go on.
"""
import ctypes
import json
import os
from pathlib import Path

from .errors import BadArgument, BadFile, TqrefError

ABI_VERSION = 1

_here = Path(__file__).resolve().parent
# The checkout this package runs from (python/tqref -> the checkout), None for an installed copy.
_checkout = _here.parent.parent if (_here.parent / "capi" / "tqref_c.h").is_file() else None
_PRESETS = ("default", "cpu-only", "debug")


def _candidates():
    env = os.environ.get("TQREF_LIBRARY")
    if env:
        return [Path(env)]
    found = [_here / "_native" / "libtqref_c.so"]
    if _checkout:
        found += [_checkout / "build" / p / "python" / "libtqref_c.so" for p in _PRESETS]
    return found


def _load():
    tried = _candidates()
    for path in tried:
        if path.is_file():
            try:
                return ctypes.CDLL(str(path)), path
            except OSError as e:
                raise ImportError(f"tqref: cannot load {path}: {e} (its libraries: ldd {path})") from e
    fix = ("Build it (cmake --preset cpu-only && cmake --build --preset cpu-only --target tqref_c)"
           if _checkout else "Reinstall the package from a checkout (docs/python.md, Install)")
    raise ImportError("tqref: libtqref_c.so not found; looked in: " +
                      ", ".join(str(p) for p in tried) + f". {fix} or set TQREF_LIBRARY to its path.")


lib, path = _load()

c_u8p = ctypes.POINTER(ctypes.c_uint8)
c_u16p = ctypes.POINTER(ctypes.c_uint16)
c_u32p = ctypes.POINTER(ctypes.c_uint32)
c_u64p = ctypes.POINTER(ctypes.c_uint64)
c_i32p = ctypes.POINTER(ctypes.c_int32)
c_i64p = ctypes.POINTER(ctypes.c_int64)
c_f32p = ctypes.POINTER(ctypes.c_float)
c_f64p = ctypes.POINTER(ctypes.c_double)
c_voidp = ctypes.c_void_p
c_str = ctypes.c_char_p
c_u64 = ctypes.c_uint64
c_int = ctypes.c_int


class FormatTraits(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 8), ("bits", ctypes.c_uint32), ("levels", ctypes.c_uint32),
                ("group_code_bytes", ctypes.c_uint32), ("max", ctypes.c_float),
                ("codebook", ctypes.c_float * 16), ("bounds", ctypes.c_float * 15),
                ("codebook_fp16", ctypes.c_uint16 * 16)]


class WriterParams(ctypes.Structure):
    """The writer's scalar parameters in the kernel's declaration order (docs/spec.md section 4)."""
    _fields_ = [("num_kv_heads", ctypes.c_uint32), ("head_dim", ctypes.c_uint32),
                ("block_size", ctypes.c_uint32), ("key_stride", ctypes.c_uint32),
                ("value_stride", ctypes.c_uint32), ("k_block_stride_bytes", ctypes.c_uint64),
                ("v_block_stride_bytes", ctypes.c_uint64), ("v_data_section_bytes", ctypes.c_uint64)]


class DecodeParams(ctypes.Structure):
    """The decoder's scalar parameters in declaration order (docs/spec.md section 5), then
    num_seqs (grid.y) and the build's HDIM and THRESH."""
    _fields_ = [("max_blocks_per_seq", ctypes.c_uint32), ("num_q_heads", ctypes.c_uint32),
                ("num_kv_heads", ctypes.c_uint32), ("head_dim", ctypes.c_uint32),
                ("block_size", ctypes.c_uint32), ("inv_sqrt_d", ctypes.c_float),
                ("q_stride", ctypes.c_uint32), ("v_block_stride_bytes", ctypes.c_uint64),
                ("v_data_section_bytes", ctypes.c_uint64), ("sliding_window", ctypes.c_uint32),
                ("num_seqs", ctypes.c_uint32), ("hdim", ctypes.c_uint32), ("threshold", ctypes.c_float)]


_pp = ctypes.POINTER(c_voidp)
# int launch(void* user, const tqref_case* variant, tqref_result* result): level I's callback.
LAUNCH_FN = ctypes.CFUNCTYPE(c_int, c_voidp, c_voidp, c_voidp)
_SIGNATURES = {
    "tqref_abi_version": (c_int, []),
    "tqref_build_info": (c_str, []),
    "tqref_last_error": (c_str, []),
    "tqref_string_free": (None, [c_voidp]),
    "tqref_format_traits_get": (c_int, [c_int, ctypes.POINTER(FormatTraits)]),
    "tqref_convert": (c_int, [c_int, c_voidp, c_u64, c_voidp]),
    "tqref_quantize_groups": (c_int, [c_int, c_u16p, c_u64, c_u8p, c_u8p, c_u8p, c_f32p]),
    "tqref_dequantize_groups": (c_int, [c_int, c_u8p, c_u8p, c_u64, c_f32p]),
    "tqref_reshape_and_cache": (c_int, [c_int, c_u16p, c_u64, c_u16p, c_u64, c_u8p, c_u64, c_u8p,
                                        c_u64, c_i64p, c_u64, ctypes.POINTER(WriterParams)]),
    "tqref_paged_decode": (c_int, [c_int, c_u16p, c_u64, c_u8p, c_u64, c_u8p, c_u64, c_u16p, c_u64,
                                   c_i32p, c_u64, c_i32p, c_u64, ctypes.POINTER(DecodeParams),
                                   c_voidp, _pp]),
    "tqref_decode_diag_rows": (c_u64, [c_voidp]),
    "tqref_decode_diag_mask_len": (c_u64, [c_voidp]),
    "tqref_decode_diag_copy": (c_int, [c_voidp, c_f32p, c_f32p, c_u32p, c_f32p, c_u64p, c_u8p]),
    "tqref_decode_diag_free": (None, [c_voidp]),
    "tqref_reference_attention": (c_int, [c_int, c_u16p, c_u64, c_u8p, c_u64, c_u8p, c_u64, c_u16p,
                                          c_u64, c_i32p, c_u64, c_i32p, c_u64,
                                          ctypes.POINTER(DecodeParams), c_int, c_f64p, c_u64]),
    "tqref_ex2_load_arch": (c_int, [c_str, _pp]),
    "tqref_ex2_load_file": (c_int, [c_str, _pp]),
    "tqref_ex2_for_golden": (c_int, [c_voidp, _pp]),
    "tqref_ex2_id": (c_str, [c_voidp]),
    "tqref_ex2_arch": (c_str, [c_voidp]),
    "tqref_ex2_eval": (c_int, [c_voidp, c_int, c_f32p, c_u64, c_f32p]),
    "tqref_ex2_free": (None, [c_voidp]),
    "tqref_find_suite": (c_int, [c_str, _pp]),
    "tqref_golden_open": (c_int, [c_str, _pp]),
    "tqref_golden_info": (c_int, [c_voidp, _pp]),
    "tqref_golden_close": (None, [c_voidp]),
    "tqref_case_read": (c_int, [c_voidp, c_str, c_int, _pp]),
    "tqref_case_free": (None, [c_voidp]),
    "tqref_case_attrs": (c_int, [c_voidp, _pp]),
    "tqref_case_array_count": (c_int, [c_voidp]),
    "tqref_case_array": (c_int, [c_voidp, c_int, ctypes.POINTER(c_str), ctypes.POINTER(c_int),
                                 ctypes.POINTER(c_int), c_u64p, _pp, ctypes.POINTER(c_str)]),
    "tqref_case_launch_count": (c_int, [c_voidp]),
    "tqref_case_launch_buffer": (c_int, [c_voidp, c_int, ctypes.POINTER(c_str), _pp, c_u64p,
                                         ctypes.POINTER(c_int)]),
    "tqref_guard_bytes": (c_u64, []),
    "tqref_guard_fill": (None, [c_u8p, c_u64]),
    "tqref_case_make_writer": (c_int, [c_int, c_str, c_u16p, c_u64, c_u16p, c_u64, c_u8p, c_u64,
                                       c_u8p, c_u64, c_i64p, c_u64, ctypes.POINTER(WriterParams),
                                       _pp]),
    "tqref_case_make_decode": (c_int, [c_int, c_str, c_u16p, c_u64, c_u8p, c_u64, c_u8p, c_u64,
                                       c_u16p, c_u64, c_i32p, c_u64, c_i32p, c_u64, c_u16p, c_u64,
                                       ctypes.POINTER(DecodeParams), c_voidp, _pp]),
    "tqref_golden_write": (c_int, [c_str, ctypes.POINTER(c_voidp), c_int, c_voidp, c_str]),
    "tqref_result_put": (c_int, [c_voidp, c_str, c_voidp, c_u64]),
    "tqref_result_fail": (c_int, [c_voidp, c_str]),
    "tqref_judge_level_i": (c_int, [c_voidp, LAUNCH_FN, c_voidp, _pp]),
    "tqref_judge": (c_int, [c_voidp, c_int, c_int, ctypes.POINTER(c_str), ctypes.POINTER(c_voidp),
                            c_u64p, c_voidp, c_voidp, ctypes.c_double, ctypes.c_double,
                            ctypes.c_double, _pp]),
}

for _name, (_res, _args) in _SIGNATURES.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

if lib.tqref_abi_version() != ABI_VERSION:
    raise ImportError(f"tqref: {path} has C ABI version {lib.tqref_abi_version()}; this package "
                      f"needs {ABI_VERSION} (rebuild the library from this checkout)")

# enum tqref_status (capi/tqref_c.h): 0 ok, then the failures.
BAD_ARGUMENT, BAD_FILE = 1, 2
_STATUS = {BAD_ARGUMENT: BadArgument, BAD_FILE: BadFile}


def check(status):
    """Raises the exception of a failed call, with the library's message."""
    if status != 0:
        msg = (lib.tqref_last_error() or b"").decode("utf-8", "replace")
        raise _STATUS.get(status, TqrefError)(msg)


def take_json(ptr):
    """A JSON string returned through char**: parsed, then released."""
    try:
        return json.loads(ctypes.string_at(ptr.value).decode("utf-8"))
    finally:
        lib.tqref_string_free(ptr)


def build_info():
    return json.loads(lib.tqref_build_info().decode())
