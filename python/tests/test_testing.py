"""tqref.testing: check_kernel and check_case with the model as the kernel (must pass every level
on every committed case) and with deliberately broken kernels (each must fail, with the category
or invariance check that names its fault); the assertions' messages."""
import ctypes

import numpy as np
import pytest

import tqref
import tqref.model as M
import tqref.testing as tt
from conftest import REAL, SMOKE

_EX2 = tqref.Ex2Profile.load("sm_90")


def model_writer(key, value, k_cache, v_cache, slot_mapping, *scalars, format):
    M.reshape_and_cache_model(key, value, k_cache, v_cache, slot_mapping, *scalars, format=format)


def model_decode(q, k_cache, v_cache, output, block_tables, seq_lens, *scalars, format):
    M.paged_decode_model(q, k_cache, v_cache, output, block_tables, seq_lens, *scalars,
                         format=format, ex2=_EX2, hdim=k_cache.shape[-1])


@pytest.mark.parametrize("suite", [SMOKE, REAL], ids=["smoke", "real"])
@pytest.mark.parametrize("level,fn,kind", [("W", model_writer, "writer"), ("D", model_decode, "decode"),
                                           ("T", model_decode, "decode"), ("I", model_writer, "writer"),
                                           ("I", model_decode, "decode")])
def test_the_model_passes_every_level(suite, level, fn, kind):
    # The harness itself: launching, guard bands, ABI order and the judge agree with the model on
    # every committed case (numpy buffers: no torch needed).
    r = tt.check_kernel(fn, suite, level, device="numpy", kind=kind)
    assert r.passed, r.summary()
    assert len(r.judged) >= 6


def test_torch_cpu_tensors_are_launched():
    # The same through torch CPU tensors (bf16 views of guarded uint8 buffers).
    torch = pytest.importorskip("torch")
    seen = {}
    def decode(q, k_cache, v_cache, output, *rest, format):
        seen["dtypes"] = (q.dtype, k_cache.dtype, v_cache.dtype, output.dtype)
        model_decode(q, k_cache, v_cache, output, *rest, format=format)
    r = tt.check_kernel(decode, SMOKE, "D", device="cpu")
    assert r.passed, r.summary()
    assert seen["dtypes"] == (torch.bfloat16, torch.bfloat16, torch.uint8, torch.bfloat16)


def _first_decode_name(kind="decode"):
    with tqref.GoldenFile(SMOKE) as f:
        return [i["name"] for i in f.cases_info if i["kind"] == kind]


def test_broken_writers_are_caught_with_their_category():
    def flip_code(*a, format):
        model_writer(*a, format=format)
        a[3].reshape(-1)[0] ^= 0x01                          # a code byte of block 0
    def skip_scales(key, value, k_cache, v_cache, slot_mapping, *s, format):
        saved = v_cache.copy()
        model_writer(key, value, k_cache, v_cache, slot_mapping, *s, format=format)
        ds = s[-1]                                           # v_data_section_bytes
        v_cache[:, ds:] = saved[:, ds:]                      # scales never written
    def writes_past_the_end(key, value, k_cache, v_cache, *rest, format):
        model_writer(key, value, k_cache, v_cache, *rest, format=format)
        ctypes.memset(v_cache.ctypes.data + v_cache.nbytes, 0, 1)   # one byte into the guard
    for fn, cat in ((flip_code, {"v-code", "untouched-modified"}), (skip_scales, {"row-not-written"}),
                    (writes_past_the_end, {"guard"})):
        r = tt.check_kernel(fn, SMOKE, "W", device="numpy")
        assert not r.passed
        assert all(set(v.categories) <= cat and v.categories for v in r.failed), (fn.__name__, [v.categories for v in r.failed])


def test_invariance_catches_batch_dependence_and_nondeterminism():
    calls = {"n": 0}
    def batch_dependent(q, k, v, out, bt, seq_lens, *s, format):
        model_decode(q, k, v, out, bt, seq_lens, *s, format=format)
        if seq_lens.shape[0] > 2:                            # a split-KV-like batch effect
            out[0, 0, 0] ^= 1
    def nondeterministic(q, k, v, out, *rest, format):
        model_decode(q, k, v, out, *rest, format=format)
        calls["n"] += 1
        if calls["n"] % 2 == 0:
            out.reshape(-1)[-1] ^= 1
    # (the judge's level I, judge/level_i.h: the property each check belongs to is named)
    r = tt.check_kernel(batch_dependent, SMOKE, "I", device="numpy", kind="decode")
    assert not r.passed
    broken = {c["property"] for v in r.failed for c in v.invariance if not c["pass"]}
    assert "placement" in broken, broken
    assert all(v.sentence for v in r.failed)
    r = tt.check_kernel(nondeterministic, SMOKE, "I", device="numpy", kind="decode")
    assert not r.passed
    assert any(not c["pass"] and c["property"] == "repeat" for v in r.failed for c in v.invariance)


def test_invariance_is_not_fooled_by_a_kernel_that_writes_nothing():
    # A kernel that writes nothing is invariant; the baseline check fails it (STYLE 8).
    for kind in ("decode", "writer"):
        r = tt.check_kernel(lambda *a: None, SMOKE, "I", device="numpy", kind=kind)
        assert not r.passed and all(v.categories.get("not-written") for v in r.failed), kind
        assert len(r.failed) == len(r.judged)


def test_raising_and_skipping_kernels():
    # A kernel that raises fails its case with the message; Skip marks a case skipped; a mapping
    # selects formats; nothing judged is not a pass.
    def raises(*a):
        raise RuntimeError("illegal memory access")
    r = tt.check_kernel(raises, SMOKE, "D", device="numpy")
    assert not r.passed and "illegal memory access" in r.failed[0].error
    def skip_256(q, k_cache, *rest, format):
        if k_cache.shape[-1] == 256:
            raise tt.Skip("HDIM 256 not built")
        model_decode(q, k_cache, *rest, format=format)
    r = tt.check_kernel({"turbo3v": skip_256}, SMOKE, "D", device="numpy")
    assert r.passed and {v.skipped for v in r.verdicts if v.skipped} == {"HDIM 256 not built"}
    assert r.verdicts and all(v.kernel.endswith("turbo3v") for v in r.verdicts)
    none = tt.check_kernel(model_decode, SMOKE, "D", device="numpy", names=["no such case"])
    assert not none.passed and "no case judged" in none.summary()


def test_assertion_messages_decode_mismatches_and_show_ulps(smoke_cases):
    c = next(c for c in smoke_cases if c.kind == "decode")
    out = c.arrays["expected/output"].copy()
    tt.assert_output_equal(out, c)
    live = np.flatnonzero(c.arrays["inputs/seq_lens"] > 0)[0]
    out[live, 0, :3] += np.array([1, 2, 7], np.uint16)
    with pytest.raises(AssertionError) as e:
        tt.assert_output_equal(out, c)
    msg = str(e.value)
    assert f"seq {live} qhead 0 dim 0" in msg and "output-value" in msg
    assert "ulp histogram: 0: " in msg and "1: 1" in msg and "2: 1" in msg and "5-8: 1" in msg
    with pytest.raises(AssertionError, match=r"\[%d, 0, 2\]: expected" % live):
        tt.assert_output_equal(out, c.arrays["expected/output"])
    w = next(c for c in smoke_cases if c.kind == "writer")
    k, v = w.arrays["expected/k_cache"].copy(), w.arrays["expected/v_cache"].copy()
    tt.assert_cache_equal(k, v, w)
    k.reshape(-1)[7] ^= 0x8000
    with pytest.raises(AssertionError, match="k_cache byte 14"):
        tt.assert_cache_equal(k, v, w)
