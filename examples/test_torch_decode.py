"""CI check of the pure-torch decoder example (examples/torch_turbo_decode.py): level T and
level I on the committed golden files on the CPU, and the decoder's own mutants fail level T (so
the pass is evidence). Skipped, with the reason, where torch is not installed."""
import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the torch example is not checked")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# tqref is the interpreter's (the installed package; PYTHONPATH=<checkout>/python without one).
sys.path.insert(0, os.path.join(ROOT, "examples"))

import tqref.testing as tt  # noqa: E402
import torch_turbo_decode as td  # noqa: E402

SUITES = [os.path.join(ROOT, "data", "golden", s) for s in ("smoke.h5", "real.h5")]


@pytest.mark.parametrize("suite", SUITES, ids=["smoke", "real"])
@pytest.mark.parametrize("level", ["T", "I"])
def test_torch_decoder_passes(suite, level):
    r = tt.check_kernel(td.paged_decode_attn_bf16k_turbo, suite, level, device="cpu", kind="decode")
    assert r.passed, r.summary()
    assert len(r.judged) >= 6


def test_torch_decoder_mutants_fail_level_t(monkeypatch):
    # A running maximum over the whole sequence (no warp split) skips V the contract reads; no
    # skip at all reads V the contract forbids (poisoned in the golden files). Both must fail.
    monkeypatch.setattr(td, "running_max", lambda sc, start, L, B: torch.cummax(sc, 1).values)
    assert not tt.check_kernel(td.paged_decode_attn_bf16k_turbo, SUITES[0], "T", device="cpu").passed
    monkeypatch.setattr(td, "running_max", lambda sc, start, L, B: torch.full_like(sc, -1e30))
    assert not tt.check_kernel(td.paged_decode_attn_bf16k_turbo, SUITES[0], "T", device="cpu").passed
