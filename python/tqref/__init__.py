"""tqref: the bit-exact model and judge of the BF16-K / Turbo-V KV cache (docs/spec.md), for
Python. Needs numpy only; torch tensors are accepted where arrays are (docs/python.md).

    import tqref
    ex2 = tqref.Ex2Profile.load("sm_90")
    case = tqref.read_golden("smoke")[0]
"""
from . import _lib
from .errors import BadArgument, BadFile, TqrefError
from .formats import FORMATS, GROUP_SIZE, HDIMS, SPARSE_V_THRESHOLD, Format, get_format
from .golden import (Case, GoldenFile, find_suite, make_decode_case, make_writer_case,
                     read_golden, write_golden)
from .judge import GUARD_BYTES, Verdict, judge
from .model import (DecodeDiagnostics, Ex2Profile, QuantizedGroups, dequantize_groups,
                    paged_decode_model, quantize_group, quantize_groups, reference_attention,
                    reshape_and_cache_model)
from .numeric import (bf16_to_f32, bf16_ulp_distance, f16_to_f32, f32_to_bf16, f32_to_f16,
                      f32_to_fp8, fp8_to_f32)

__version__ = _lib.build_info()["version"]
library_path = str(_lib.path)


def build_info():
    """{"abi", "version", "git_commit", "openmp_threads"} of the loaded libtqref_c.so."""
    return _lib.build_info()
