"""Testing helpers for kernel developers: assertions with decoded mismatches, and check_kernel,
which feeds every golden case of a suite to a Python kernel laid out exactly as the kernel ABI
(tqref.launch) and judges each launch at level W, D, T or I.

    import tqref.testing
    report = tqref.testing.check_kernel(my_decode, suite="smoke", level="T", device="cuda")
    assert report.passed, report.summary()
"""
import collections.abc
import traceback
from dataclasses import dataclass, field

import numpy as np

from . import golden, launch
from ._arrays import as_array
from .errors import BadArgument
from .formats import FORMATS, get_format
from .judge import Verdict, judge, judge_level_i
from .numeric import bf16_ulp_distance

LEVELS = ("W", "D", "T", "I", "exact")


class Skip(Exception):
    """Raised by a kernel for a case it does not support (another HDIM, a missing feature): the
    case is reported as skipped, with the message."""


# ---- assertions -------------------------------------------------------------------------------
_ULP_BINS = ((0, 0, "0"), (1, 1, "1"), (2, 2, "2"), (3, 4, "3-4"), (5, 8, "5-8"), (9, 16, "9-16"),
             (17, 1 << 20, ">16"))


def ulp_histogram(expected, actual):
    """{bucket: count} of bf16 ulp distances between two bit-pattern arrays ("nan" counts
    elements where exactly one side, or both with different bits, is NaN)."""
    d = bf16_ulp_distance(expected, actual).reshape(-1)
    e = as_array(expected, "expected", "bf16").reshape(-1)
    a = as_array(actual, "actual", "bf16").reshape(-1)
    h = {label: int(((d >= lo) & (d <= hi)).sum()) for lo, hi, label in _ULP_BINS}
    h["nan"] = int(((d < 0) & (e != a)).sum())
    h["nan equal"] = int(((d < 0) & (e == a)).sum())
    return h


def _histogram_text(h):
    return "ulp histogram: " + ", ".join(f"{k}: {v}" for k, v in h.items() if v)


def _bitwise_lines(expected, actual, limit=16):
    e, a = np.asarray(expected), np.asarray(actual)
    idx = np.argwhere(e != a)
    lines = [f"    {list(map(int, i))}: expected 0x{int(e[tuple(i)]):04x} got 0x{int(a[tuple(i)]):04x}"
             for i in idx[:limit]]
    return len(idx), lines


def assert_output_equal(output, expected, limit=16):
    """Asserts a decoder's output equals `expected` bit for bit. expected: a decode Case (the
    judge decodes each mismatch into sequence, q head and dim with the CLI's categories) or a
    bf16 array of the same shape. The message ends with the ulp histogram."""
    if isinstance(expected, golden.Case):
        out = as_array(output, "output", "bf16")
        v = judge(expected, {"output": out}, level="exact")
        if not v.passed:
            exp = expected.arrays["expected/output"]
            raise AssertionError(v.text + _histogram_text(ulp_histogram(exp, out.reshape(exp.shape))))
        return v
    e = as_array(expected, "expected", "bf16")
    a = as_array(output, "output", "bf16")
    if e.shape != a.shape:
        raise AssertionError(f"shape {a.shape}; expected {e.shape}")
    n, lines = _bitwise_lines(e, a, limit)
    if n:
        raise AssertionError(f"{n} of {e.size} bf16 elements differ:\n" + "\n".join(lines) + "\n" +
                             _histogram_text(ulp_histogram(e, a)))


def assert_cache_equal(k_cache, v_cache, expected, limit=16):
    """Asserts a writer's pools equal the expectation bit for bit. expected: a writer Case (each
    mismatch decoded into block, slot, head, group and field: k-value, v-code, v-scale,
    untouched-modified, row-not-written) or a pair (k_expected, v_expected) of arrays."""
    if isinstance(expected, golden.Case):
        v = judge(expected, {"k_cache": k_cache, "v_cache": v_cache}, level="exact")
        if not v.passed:
            raise AssertionError(v.text)
        return v
    ke, ve = expected
    msgs = []
    for name, e, a, kind in (("k_cache", ke, k_cache, "bf16"), ("v_cache", ve, v_cache, "u8")):
        e, a = as_array(e, name + " expected", kind), as_array(a, name, kind)
        if e.shape != a.shape:
            msgs.append(f"{name}: shape {a.shape}; expected {e.shape}")
            continue
        n, lines = _bitwise_lines(e, a, limit)
        if n:
            msgs.append(f"{name}: {n} of {e.size} elements differ:\n" + "\n".join(lines))
    if msgs:
        raise AssertionError("\n".join(msgs))


# ---- running kernels on golden cases ----------------------------------------------------------
def _kernel_for(fn, case):
    if isinstance(fn, collections.abc.Mapping):
        for key in (case.format, case.kernel):
            if key in fn:
                return fn[key]
        return None
    return fn


def _level_of(level, kind):
    if level not in LEVELS:
        raise BadArgument(f"level = {level!r}; allowed: {', '.join(LEVELS)}")
    if level == "I":
        return "I"
    if level == "T" and kind == "decode":
        return "T"
    return "W" if kind == "writer" else "D"


def check_case(case, fn, level="exact", device="cpu", kernel_ex2=None, **tolerance):
    """Runs fn on one golden case and judges it. level: "W"/"D"/"exact" (bit for bit), "T"
    (decoders within tolerance; writers stay exact), "I" (invariance). device: a torch device
    ("cpu", "cuda", "cuda:1") or "numpy" (numpy arrays, no torch). tolerance: margin, tol_ulps,
    tol_row of level T. Returns a Verdict (skipped cases: verdict.skipped holds why)."""
    lvl = _level_of(level, case.kind)
    kernel = _kernel_for(fn, case)
    if kernel is None:
        return _skipped(case, lvl, f"no kernel given for {case.format}")
    spec = launch.spec_of(case)
    # allocation errors (no such device, no torch) are the caller's, raised; the kernel's are
    # its verdict
    buffers = launch.allocate(spec, device)
    try:
        if lvl == "I":
            return _level_i(case, spec, kernel, device, buffers)
        results = launch.run(spec, kernel, device, buffers)
    except Skip as e:
        return _skipped(case, lvl, str(e) or "skipped by the kernel")
    except Exception as e:  # the kernel failed: that is the verdict, not a crash of the check
        return Verdict(case.name, case.kernel, case.kind, lvl, False,
                       error=f"kernel raised {type(e).__name__}: {e}",
                       text=f"FAIL {case.name}: kernel raised\n" + traceback.format_exc(limit=6))
    return judge(case, results, level="T" if lvl == "T" else "exact", kernel_ex2=kernel_ex2,
                 **tolerance)


def _skipped(case, lvl, why):
    return Verdict(case.name, case.kernel, case.kind, lvl, False, skipped=why,
                   text=f"SKIP {case.name}: {why}")


_OUT_BACKGROUND = 0xFFFF  # the generators' output background: a NaN no kernel writes


def _not_written(spec, results):
    """What the baseline launch left unwritten, as text ("" when it wrote): rows of L > 0 that
    still hold the 0xFFFF background, or writer pools with no byte changed although a token has
    a slot. Level I compares a kernel with itself, so a kernel that writes nothing would pass."""
    from .judge import GUARD_BYTES
    def interior(name):
        b = spec.buffer(name)
        return results[name][GUARD_BYTES:GUARD_BYTES + b.initial.nbytes], b
    if spec.kind == "writer":
        slots = spec.buffer("slot_mapping").initial.view(np.int64)
        def changed(name):
            g, b = interior(name)
            return not np.array_equal(g, b.initial)
        if (slots >= 0).any() and not (changed("k_cache") or changed("v_cache")):
            return "no pool byte changed"
        return ""
    g, b = interior("output")
    out = g.view(np.uint16).reshape(b.shape)
    init = b.initial.view(np.uint16).reshape(b.shape)
    lens = spec.buffer("seq_lens").initial.view(np.int32)
    rows = [s for s in range(lens.size) if lens[s] > 0 and
            ((out[s] == _OUT_BACKGROUND) & (init[s] == _OUT_BACKGROUND)).any()]
    return f"rows of sequences {rows[:8]} (L > 0) still hold the 0xFFFF background" if rows else ""


def _level_i(case, spec, kernel, device, buffers):
    """The judge's level I (judge/level_i.h) on this kernel, after one baseline launch that must
    have written its outputs (the only check added to the CLI's level I)."""
    unwritten = _not_written(spec, launch.run(spec, kernel, device, buffers))
    v = judge_level_i(case, lambda variant: launch.run(launch.spec_of(variant), kernel, device))
    if unwritten:
        v.passed = False
        v.categories["not-written"] = 1
        v.text = f"FAIL {case.name}: level I baseline: {unwritten}\n" + v.text
    return v


@dataclass
class Report:
    """Verdicts of check_kernel, in file order."""
    suite: str
    level: str
    verdicts: list = field(default_factory=list)

    @property
    def judged(self):
        return [v for v in self.verdicts if not v.skipped]

    @property
    def failed(self):
        return [v for v in self.judged if not v.passed]

    @property
    def passed(self):
        """All judged cases pass, and at least one was judged (nothing judged is no evidence)."""
        return bool(self.judged) and not self.failed

    def summary(self):
        n, f = len(self.judged), len(self.failed)
        head = (f"{self.suite} level {self.level}: {n - f} of {n} judged cases pass, "
                f"{len(self.verdicts) - n} skipped")
        if not self.judged:
            head += " (no case judged: not a pass)"
        return "\n".join([head] + [v.text.rstrip() for v in self.failed])


def _selected(info, kind, formats, hdim, names):
    if info["kind"] != kind:
        return False
    if formats is not None and info["format"] not in formats:
        return False
    if hdim is not None and kind == "decode" and info["hdim"] != hdim:
        return False
    return names is None or any(n in info["name"] for n in names)


def check_kernel(fn, suite="smoke", level="T", device="cpu", kind=None, formats=None, hdim=None,
                 names=None, kernel_ex2=None, **tolerance):
    """Feeds every selected case of a suite (smoke, standard, real, models or a path) to fn and
    judges each. fn: a kernel callable (tqref.launch), or a mapping {format or kernel name:
    callable}. kind: "writer" or "decode" (default: writer for level W, decode for D and T).
    formats, hdim, names: restrict the cases (format names; the decoder build's HDIM; substrings
    of case names). Returns a Report; report.passed needs at least one judged case."""
    kind = kind or {"W": "writer", "D": "decode", "T": "decode"}.get(level)
    if kind not in ("writer", "decode"):
        raise BadArgument(f"kind = {kind!r}; allowed: 'writer', 'decode' (needed for level {level})")
    if isinstance(fn, collections.abc.Mapping):
        formats = [get_format(k).name for k in fn] if formats is None else formats
    formats = None if formats is None else [get_format(f).name for f in formats]
    report = Report(str(suite), level)
    with golden.GoldenFile(suite) as f:
        for info in f.cases_info:
            if _selected(info, kind, formats, hdim, names):
                case = f.case(info["name"], diagnostics=(level == "T"))
                report.verdicts.append(check_case(case, fn, level, device, kernel_ex2, **tolerance))
    return report


__all__ = ["Skip", "assert_output_equal", "assert_cache_equal", "ulp_histogram", "check_case",
           "check_kernel", "Report", "FORMATS"]
