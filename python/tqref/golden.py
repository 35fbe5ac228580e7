"""Golden files (docs/golden-schema.md): reading cases as dicts of arrays plus attributes, and
writing a case made from a user's own arrays, replayable by `tqref check`.

Every read goes through the C++ reader (harness/), which checks each attribute against the
contract's ranges and each dataset's dtype and shape before anything uses it: a broken or hostile
file raises BadFile naming the file, object, value and range."""
import ctypes
import os

import numpy as np

from . import _lib
from ._arrays import as_array, ptr
from .errors import BadArgument, BadFile
from .formats import SPARSE_V_THRESHOLD, get_format
from .model import Ex2Profile, decode_params, writer_params

NAMED_SUITES = ("smoke", "standard", "real", "models")
_DTYPES = {1: np.uint8, 2: np.uint16, 3: np.uint32, 4: np.uint64, 5: np.int32, 6: np.int64,
           7: np.float32, 8: np.float64}


def find_suite(item):
    """The golden file of a suite name (smoke, standard, real, models, ...) or a path, by the
    data-directory policy ($TQREF_DATA_DIR/golden/<name>.h5, then the source tree's data/golden).
    Raises FileNotFoundError listing where it looked."""
    out = ctypes.c_void_p()
    _lib.check(_lib.lib.tqref_find_suite(str(item).encode(), ctypes.byref(out)))
    r = _lib.take_json(out)
    if not r["path"]:
        hint = ""
        if item in NAMED_SUITES:
            hint = (f"; generate it with `tqref generate --suite {item} --out "
                    f"<data dir>/golden/{item}.h5` or set TQREF_DATA_DIR")
        raise FileNotFoundError(f"golden suite {item!r} not found; looked in: "
                                f"{', '.join(r['looked_in'])}{hint}")
    return r["path"]


class Case:
    """One golden case: `attrs` (every attribute, names as in the file), `arrays` (every dataset
    by its path in the case, e.g. "inputs/key", "expected/v_cache"; numpy arrays of the stored
    dtype, bf16 as uint16), `encodings` (the schema's encoding of each dataset), and what the
    judge needs (the case itself, and the EX2 profile its expectation was made with)."""

    def __init__(self, handle, ex2=None, owned=True):
        self._h = handle
        self._owned = owned  # False: a variant the judge lends for one launch (level I)
        self.ex2 = ex2
        out = ctypes.c_void_p()
        _lib.check(_lib.lib.tqref_case_attrs(handle, ctypes.byref(out)))
        self.attrs = _lib.take_json(out)
        self.name = self.attrs.pop("name")
        self.arrays, self.encodings = {}, {}
        for i in range(_lib.lib.tqref_case_array_count(handle)):
            name, enc, a = _array(handle, i)
            self.arrays[name], self.encodings[name] = a, enc

    @property
    def kind(self):
        return self.attrs["kind"]

    @property
    def format(self):
        return self.attrs["format"]

    @property
    def kernel(self):
        return self.attrs["kernel"]

    @property
    def has_diagnostics(self):
        return "diagnostics/reference_dequantised_v" in self.arrays

    def launch_buffers(self):
        """[(name, initial bytes as uint8, is_output)] in the kernel ABI's parameter order."""
        bufs = []
        for i in range(_lib.lib.tqref_case_launch_count(self._h)):
            name, data = ctypes.c_char_p(), ctypes.c_void_p()
            n, out = ctypes.c_uint64(), ctypes.c_int()
            _lib.check(_lib.lib.tqref_case_launch_buffer(self._h, i, ctypes.byref(name),
                                                         ctypes.byref(data), ctypes.byref(n),
                                                         ctypes.byref(out)))
            b = np.ctypeslib.as_array((ctypes.c_uint8 * n.value).from_address(data.value)).copy() \
                if n.value else np.zeros(0, np.uint8)
            bufs.append((name.value.decode(), b, bool(out.value)))
        return bufs

    def __repr__(self):
        return f"Case({self.name!r}, {self.kernel})"

    def __del__(self):
        if getattr(self, "_h", None) and self._owned:
            _lib.lib.tqref_case_free(self._h)
        self._h = None


def _array(handle, i):
    name, enc = ctypes.c_char_p(), ctypes.c_char_p()
    dtype, ndim = ctypes.c_int(), ctypes.c_int()
    shape = (ctypes.c_uint64 * 4)()
    data = ctypes.c_void_p()
    _lib.check(_lib.lib.tqref_case_array(handle, i, ctypes.byref(name), ctypes.byref(dtype),
                                         ctypes.byref(ndim), shape, ctypes.byref(data),
                                         ctypes.byref(enc)))
    dt = np.dtype(_DTYPES[dtype.value])
    shp = tuple(int(shape[k]) for k in range(ndim.value))
    count = int(np.prod(shp, dtype=np.int64))
    a = np.empty(shp, dt)
    if count:
        ctypes.memmove(a.ctypes.data, data.value, count * dt.itemsize)
    return name.value.decode(), enc.value.decode(), a


class GoldenFile:
    """An open golden file: `provenance`, `cases_info` ([{name, kind, format, kernel, hdim}]),
    `names`, `ex2` (the profile its decode cases were made with, or None), and its cases by
    name or in file order. Use as a context manager or call close()."""

    def __init__(self, path_or_suite):
        path = path_or_suite if os.path.sep in str(path_or_suite) or str(path_or_suite).endswith(".h5") \
            else find_suite(path_or_suite)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"golden file {path!r} does not exist")
        self.path = str(path)
        self._h = ctypes.c_void_p()
        _lib.check(_lib.lib.tqref_golden_open(self.path.encode(), ctypes.byref(self._h)))
        out = ctypes.c_void_p()
        _lib.check(_lib.lib.tqref_golden_info(self._h, ctypes.byref(out)))
        info = _lib.take_json(out)
        self.provenance = info["provenance"]
        self.cases_info = info["cases"]
        self.names = [c["name"] for c in self.cases_info]
        self._ex2 = None

    @property
    def ex2(self):
        if self._ex2 is None and self.provenance["ex2_profile_id"]:
            h = ctypes.c_void_p()
            _lib.check(_lib.lib.tqref_ex2_for_golden(self._h, ctypes.byref(h)))
            self._ex2 = Ex2Profile(h)
        return self._ex2

    def case(self, name, diagnostics=True):
        """One case; diagnostics=False skips the fp64 references (level T needs them)."""
        if name not in self.names:
            raise KeyError(f"{self.path}: no case {name!r}")
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.tqref_case_read(self._h, name.encode(), int(bool(diagnostics)),
                                            ctypes.byref(h)))
        c = Case(h, self.ex2 if any(i["kind"] == "decode" for i in self.cases_info) else None)
        c.source = self.path
        return c

    def __iter__(self):
        for n in self.names:
            yield self.case(n)

    def __len__(self):
        return len(self.names)

    def close(self):
        if getattr(self, "_h", None):
            _lib.lib.tqref_golden_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


def read_golden(path_or_suite, diagnostics=True):
    """Every case of a golden file (or named suite) as a list of Case."""
    with GoldenFile(path_or_suite) as f:
        return [f.case(n, diagnostics) for n in f.names]


# ---- New cases from a user's arrays -----------------------------------------------------------
def make_writer_case(name, key, value, k_cache, v_cache, slot_mapping, num_kv_heads, head_dim,
                     block_size, key_stride, value_stride, k_block_stride_bytes,
                     v_block_stride_bytes, v_data_section_bytes, *, format):
    """A writer case from one launch's inputs and the pools before it (whole pools: num_blocks
    = their size in blocks); the expected pools are computed by the model."""
    fmt = get_format(format)
    k_ = as_array(key, "key", "bf16")
    v_ = as_array(value, "value", "bf16")
    kc = as_array(k_cache, "k_cache", "kpool")
    vc = as_array(v_cache, "v_cache", "u8")
    sm = as_array(slot_mapping, "slot_mapping", "i64")
    p = writer_params(num_kv_heads, head_dim, block_size, key_stride, value_stride,
                      k_block_stride_bytes, v_block_stride_bytes, v_data_section_bytes)
    h = ctypes.c_void_p()
    _lib.check(_lib.lib.tqref_case_make_writer(
        fmt.index, _name(name), ptr(k_), k_.size, ptr(v_), v_.size, ptr(kc), kc.nbytes, ptr(vc),
        vc.nbytes, ptr(sm), sm.size, ctypes.byref(p), ctypes.byref(h)))
    return Case(h)


def make_decode_case(name, q, k_cache, v_cache, block_tables, seq_lens, max_blocks_per_seq,
                     num_q_heads, num_kv_heads, head_dim, block_size, inv_sqrt_d, q_stride,
                     v_block_stride_bytes, v_data_section_bytes, sliding_window, *, format, ex2,
                     output=None, v_values=None, hdim=None, threshold=SPARSE_V_THRESHOLD):
    """A decode case from one launch's inputs (the pools as the decoder reads them); the expected
    output, diagnostics and fp64 references are computed by the model with profile `ex2`.
    output: the buffer before the launch (default: the 0xFFFF background). v_values: the bf16 V
    rows the writer consumed, laid out like K, for the unquantised reference (else stored NaN).
    The pools are stored as given: nothing is poisoned (docs/python.md)."""
    fmt = get_format(format)
    if not isinstance(ex2, Ex2Profile):
        raise BadArgument(f"ex2 = {ex2!r}; allowed: an Ex2Profile")
    q_ = as_array(q, "q", "bf16")
    kc = as_array(k_cache, "k_cache", "kpool")
    vc = as_array(v_cache, "v_cache", "u8")
    bt = as_array(block_tables, "block_tables", "i32")
    sl = as_array(seq_lens, "seq_lens", "i32")
    out = None if output is None else as_array(output, "output", "bf16")
    vv = None if v_values is None else as_array(v_values, "v_values", "bf16")
    p = decode_params(max_blocks_per_seq, num_q_heads, num_kv_heads, head_dim, block_size,
                      inv_sqrt_d, q_stride, v_block_stride_bytes, v_data_section_bytes,
                      sliding_window, sl.size, hdim, threshold)
    h = ctypes.c_void_p()
    _lib.check(_lib.lib.tqref_case_make_decode(
        fmt.index, _name(name), ptr(q_), q_.size, ptr(kc), kc.nbytes, ptr(vc), vc.nbytes, ptr(out),
        0 if out is None else out.size, ptr(bt), bt.size, ptr(sl), sl.size, ptr(vv),
        0 if vv is None else vv.size, ctypes.byref(p), ex2._h, ctypes.byref(h)))
    return Case(h, ex2)


def _name(name):
    if not isinstance(name, str):
        raise BadArgument(f"name = {name!r}; allowed: a string")
    return name.encode()


def write_golden(path, cases, command_line=""):
    """Writes cases (a Case or a list of them) to a new golden file at `path`, whole or not at
    all; `tqref check PATH` replays it. Decode cases must carry their EX2 profile (made by
    make_decode_case or read from a file) and be read with diagnostics."""
    cases = [cases] if isinstance(cases, Case) else list(cases)
    if not cases or not all(isinstance(c, Case) for c in cases):
        raise BadArgument("cases: allowed: one Case or a non-empty list of Case")
    ex2s = {c.ex2.id: c.ex2 for c in cases if c.kind == "decode" and c.ex2 is not None}
    if len(ex2s) > 1:
        raise BadArgument(f"cases: decode cases made with {len(ex2s)} EX2 profiles "
                          f"({', '.join(ex2s)}); allowed: one profile per file")
    ex2 = next(iter(ex2s.values()), None)
    arr = (ctypes.c_void_p * len(cases))(*[c._h for c in cases])
    _lib.check(_lib.lib.tqref_golden_write(str(path).encode(), arr, len(cases),
                                           ex2._h if ex2 else None, command_line.encode()))
    return str(path)
