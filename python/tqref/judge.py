"""The judge: a launch's buffers against a golden case, through the same C++ code as
`tqref check` (harness/judge: judge_case.h, level_i.h), so the categories, the decoded mismatch
lines, the level T distributions and the level I checks are the CLI's.

Levels (docs/spec.md section 6): "W" (writer, exact) and "D" (decoder, exact) are "exact";
"T" judges a decoder within the documented tolerance against the kernel-order model and the fp64
references; "I" (invariance) compares a kernel with itself on variants of the launch."""
import ctypes
import unittest
from dataclasses import dataclass, field

import numpy as np

from . import _lib
from ._arrays import as_array
from .errors import BadArgument

GUARD_BYTES = int(_lib.lib.tqref_guard_bytes())


def guard_band(n=GUARD_BYTES):
    """The guard pattern: byte i of a band (docs/golden-schema.md)."""
    b = np.empty(n, np.uint8)
    _lib.lib.tqref_guard_fill(b.ctypes.data_as(_lib.c_u8p), n)
    return b


def with_guards(data):
    """[guard][data bytes][guard] as one uint8 array."""
    d = as_array(data, "data", "raw")
    g = guard_band()
    return np.concatenate([g, d, g])


@dataclass
class Verdict:
    """One case judged. `passed` is the verdict; `categories` counts differing elements per
    category (guard, untouched-modified, row-not-written, k-value, v-code, v-scale,
    skipped-v-read, output-value, input-modified); `mismatches` are the first decoded ones
    (buffer, offset, category, where, expected/got/initial bits); `text` is what the CLI prints;
    `level_t` holds the distributions when judged at level T; `invariance` the comparisons of
    level I."""
    name: str
    kernel: str
    kind: str
    level: str
    passed: bool
    error: str = ""
    categories: dict = field(default_factory=dict)
    mismatches: list = field(default_factory=list)
    bytes_compared: int = 0
    bytes_differing: int = 0
    text: str = ""
    level_t: dict = None
    invariance: list = None   # level I: the checks ({property, variant, pass, detail, ...})
    sentence: str = ""        # level I: what changes the bits, in one sentence
    skipped: str = ""

    def __bool__(self):
        return self.passed

    def assert_pass(self):
        """Raises AssertionError with the CLI's lines when the case failed, unittest.SkipTest
        (a skip to pytest) when it was skipped."""
        if self.skipped:
            raise unittest.SkipTest(f"{self.name}: {self.skipped}")
        if not self.passed:
            raise AssertionError(f"{self.name} ({self.kernel}) level {self.level}:\n{self.text}")
        return self


def judge(case, buffers, *, level="exact", kernel_ex2=None, margin=0.0, tol_ulps=0.0, tol_row=0.0):
    """Judges the buffers a kernel left for `case`. buffers: {launch-buffer name: array}; each
    array holds the buffer's bytes, either alone (fresh guard bands are then added, so guard
    writes cannot be seen) or between its two guard bands of GUARD_BYTES bytes (as
    tqref.testing allocates them). Every output buffer must be present; input buffers are
    optional and, when given, must come back unchanged. level: "exact" (also "W", "D") or "T".
    kernel_ex2: the profile of the EX2 unit the decoder ran on (default: the case's own)."""
    if level not in ("exact", "W", "D", "T"):
        raise BadArgument(f"level = {level!r}; allowed: 'exact' ('W', 'D'), 'T' "
                          f"(level I: tqref.testing.check_kernel(level='I'))")
    sizes = {n: len(b) for n, b, _ in case.launch_buffers()}
    names, arrays = [], []
    for name, buf in buffers.items():
        if name not in sizes:
            raise BadArgument(f"buffers: {name!r}; allowed: {', '.join(sizes)}")
        a = as_array(buf, name, "raw")
        if a.nbytes == sizes[name]:
            a = with_guards(a)
        names.append(name)
        arrays.append(np.ascontiguousarray(a))
    c_names = (ctypes.c_char_p * len(names))(*[n.encode() for n in names])
    c_data = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    c_sizes = (ctypes.c_uint64 * len(arrays))(*[a.nbytes for a in arrays])
    out = ctypes.c_void_p()
    _lib.check(_lib.lib.tqref_judge(case._h, int(level == "T"), len(names), c_names, c_data,
                                    c_sizes, case.ex2._h if case.ex2 else None,
                                    kernel_ex2._h if kernel_ex2 else None, margin, tol_ulps,
                                    tol_row, ctypes.byref(out)))
    r = _lib.take_json(out)
    v = r["verdict"]
    lvl = "T" if level == "T" and case.kind == "decode" else ("W" if case.kind == "writer" else "D")
    lt = r["level_t"]["cases"][0] if r["level_t"] else None
    return Verdict(v["name"], v["kernel"], v["kind"], lvl, bool(v["pass"]), v["error"],
                   v["categories"], v["mismatches"], v["bytes_compared"], v["bytes_differing"],
                   r["text"], lt)


def judge_level_i(case, run_variant):
    """Level I of `case`: the judge derives the variants (judge/level_i.h) and calls
    run_variant(variant) for each, a Case whose launch the caller runs; it returns {buffer name:
    guarded bytes} of every buffer (tqref.launch.run's result). An exception from run_variant
    fails that variant with its message; tqref.testing.Skip is re-raised after the judge ends."""
    skipped = []

    def launch(_user, variant_h, result):
        try:
            from .golden import Case
            for name, g in run_variant(Case(variant_h, owned=False)).items():
                g = np.ascontiguousarray(g)
                _lib.check(_lib.lib.tqref_result_put(result, name.encode(), g.ctypes.data, g.nbytes))
            return 0
        except BaseException as e:  # nothing may cross back into C++
            if type(e).__name__ == "Skip":
                skipped.append(e)
            _lib.lib.tqref_result_fail(result, f"kernel raised {type(e).__name__}: {e}".encode())
            return 1

    fn = _lib.LAUNCH_FN(launch)
    out = ctypes.c_void_p()
    _lib.check(_lib.lib.tqref_judge_level_i(case._h, fn, None, ctypes.byref(out)))
    r = _lib.take_json(out)
    if skipped:
        raise skipped[0]
    v, li = r["verdict"], r["level_i"]
    return Verdict(v["name"], v["kernel"], v["kind"], "I", bool(v["pass"]), v["error"],
                   v["categories"], v["mismatches"], v["bytes_compared"], v["bytes_differing"],
                   r["text"], invariance=li["checks"], sentence=li["sentence"])
