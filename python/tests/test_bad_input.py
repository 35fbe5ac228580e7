"""Bad input never crashes: a wrong dtype, size, layout or parameter value raises BadArgument
(a ValueError) naming the parameter and the allowed range; a broken file raises BadFile naming
the file and object. Each call below would read or write out of bounds if it reached the model
unchecked."""
import shutil

import h5py
import numpy as np
import pytest

import tqref
from tqref import abi
from conftest import SMOKE


@pytest.fixture(scope="module")
def dec(smoke_cases_module):
    return next(c for c in smoke_cases_module if c.kind == "decode")


@pytest.fixture(scope="module")
def smoke_cases_module():
    return tqref.read_golden(SMOKE)


def decode_args(c, **over):
    s = abi.scalar_args(c)
    a = {"q": c.arrays["inputs/q"], "k_cache": c.arrays["initial/k_cache"],
         "v_cache": c.arrays["initial/v_cache"], "output": c.arrays["initial/output"].copy(),
         "block_tables": c.arrays["inputs/block_tables"], "seq_lens": c.arrays["inputs/seq_lens"]}
    a.update(s)
    a.update(over)
    return [a[n] for n in abi.DECODE_ABI]


def run_decode(c, ex2, fmt=None, hdim=None, **over):
    return tqref.paged_decode_model(*decode_args(c, **over), format=fmt or c.format, ex2=ex2,
                                    hdim=hdim or c.attrs["hdim"])


@pytest.mark.parametrize("over,match", [
    ({"q": "a string"}, r"q: a str; allowed: a numpy array or torch tensor"),
    ({"head_dim": 100}, r"head_dim = 100; allowed"),
    ({"num_kv_heads": -1}, r"num_kv_heads = -1; allowed: 0 \.\. 4294967295"),
    ({"num_q_heads": 7}, r"num_q_heads = 7; allowed: a positive multiple of num_kv_heads"),
    ({"q_stride": 3}, r"q_stride = 3; allowed: >= num_q_heads\*head_dim"),
    ({"max_blocks_per_seq": 10**6}, r"block_tables holds .*; allowed"),
    ({"v_data_section_bytes": 1}, r"v_data_section_bytes = 1; allowed: >= "),
    ({"sliding_window": 2**32}, r"sliding_window = 4294967296; allowed: 0 \.\. 4294967295"),
    ({"inv_sqrt_d": "x"}, r"inv_sqrt_d = 'x'; allowed: a float"),
])
def test_decode_parameters(dec, ex2, over, match):
    with pytest.raises(tqref.BadArgument, match=match):
        run_decode(dec, ex2, **over)


def test_decode_arrays(dec, ex2):
    q = dec.arrays["inputs/q"]
    with pytest.raises(tqref.BadArgument, match=r"q: dtype numpy float32; allowed: numpy uint16/int16"):
        run_decode(dec, ex2, q=q.astype(np.float32))
    with pytest.raises(tqref.BadArgument, match=r"q: a non-contiguous array"):
        run_decode(dec, ex2, q=np.repeat(q, 2, axis=1)[:, ::2])
    with pytest.raises(tqref.BadArgument, match=r"q holds \d+ elements; allowed"):
        run_decode(dec, ex2, q=q[:1].copy())
    ro = dec.arrays["initial/output"].copy()
    ro.setflags(write=False)
    with pytest.raises(tqref.BadArgument, match="output: a read-only array"):
        run_decode(dec, ex2, output=ro)
    with pytest.raises(tqref.BadArgument, match=r"seq_lens: dtype numpy int64; allowed: numpy int32"):
        run_decode(dec, ex2, seq_lens=dec.arrays["inputs/seq_lens"].astype(np.int64))
    bt = dec.arrays["inputs/block_tables"].copy()
    bt[np.flatnonzero(dec.arrays["inputs/seq_lens"] > 0)[0], 0] = 10**6
    with pytest.raises(tqref.BadArgument, match=r"block_tables\[\d+\]\[0\] = 1000000 .*allowed: 0 \.\. num_blocks-1"):
        run_decode(dec, ex2, block_tables=bt)
    with pytest.raises(tqref.BadArgument, match=r"hdim = 64; allowed: 128, 256"):
        run_decode(dec, ex2, hdim=64)
    with pytest.raises(tqref.BadArgument, match=r"format = 'turbo5v'; allowed: turbo2v, turbo3v, turbo4v"):
        run_decode(dec, ex2, fmt="turbo5v")
    with pytest.raises(tqref.BadArgument, match=r"ex2 = None; allowed: an Ex2Profile"):
        tqref.paged_decode_model(*decode_args(dec), format=dec.format, ex2=None)


def test_torch_tensors(dec, ex2):
    torch = pytest.importorskip("torch")
    q = torch.from_numpy(dec.arrays["inputs/q"].astype(np.int16)).view(torch.bfloat16)
    out = torch.from_numpy(dec.arrays["initial/output"].astype(np.int16)).view(torch.bfloat16)
    run_decode(dec, ex2, q=q, output=out)
    assert np.array_equal(out.view(torch.int16).numpy().view(np.uint16), dec.arrays["expected/output"])
    with pytest.raises(tqref.BadArgument, match=r"q: dtype torch.float32; allowed: .*torch bfloat16"):
        run_decode(dec, ex2, q=q.float())
    with pytest.raises(tqref.BadArgument, match=r"q: a non-contiguous tensor"):
        run_decode(dec, ex2, q=q.t())


def test_writer_and_group_functions(smoke_cases_module):
    w = next(c for c in smoke_cases_module if c.kind == "writer")
    s = abi.scalar_args(w)
    def args(**over):
        a = {"key": w.arrays["inputs/key"], "value": w.arrays["inputs/value"],
             "k_cache": w.arrays["initial/k_cache"].copy(), "v_cache": w.arrays["initial/v_cache"].copy(),
             "slot_mapping": w.arrays["inputs/slot_mapping"], **s, **over}
        return [a[n] for n in abi.WRITER_ABI]
    sm = w.arrays["inputs/slot_mapping"].copy()
    sm[0] = 10**9
    with pytest.raises(tqref.BadArgument, match=r"slot_mapping\[0\] = 1000000000; allowed: "):
        tqref.reshape_and_cache_model(*args(slot_mapping=sm), format=w.format)
    with pytest.raises(tqref.BadArgument, match=r"key_stride = 6; allowed: "):
        tqref.reshape_and_cache_model(*args(key_stride=6), format=w.format)
    with pytest.raises(tqref.BadArgument, match=r"slot_mapping: dtype numpy int32; allowed: numpy int64"):
        tqref.reshape_and_cache_model(*args(slot_mapping=sm.astype(np.int32)), format=w.format)
    with pytest.raises(tqref.BadArgument, match=r"x: 15 elements; allowed: exactly 16"):
        tqref.quantize_group(np.zeros(15, np.uint16), format="turbo3v")
    with pytest.raises(tqref.BadArgument, match=r"packed: 5 bytes; allowed: scale_bytes.size \* 6"):
        tqref.dequantize_groups(np.zeros(5, np.uint8), np.zeros(1, np.uint8), format="turbo3v")


def test_ex2_inputs(ex2):
    with pytest.raises(tqref.BadArgument, match=r"x\[1\] = 0.5; allowed: <= 0 or NaN"):
        ex2.ex2(np.array([-1.0, 0.5], np.float32))
    with pytest.raises(tqref.BadFile, match=r"sm_999"):
        tqref.Ex2Profile.load("sm_999")


def test_broken_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        tqref.GoldenFile(tmp_path / "missing.h5")
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 8)
    with pytest.raises(tqref.BadFile, match="junk.h5"):
        tqref.GoldenFile(junk)
    bad = tmp_path / "bad.h5"
    shutil.copy(SMOKE, bad)
    with h5py.File(bad, "r+") as f:
        name = next(iter(f["cases"]))
        f["cases"][name].attrs["head_dim"] = 17
    g = tqref.GoldenFile(bad)
    with pytest.raises(tqref.BadFile, match=r"bad.h5.*head_dim = 17; allowed"):
        g.case(name)
