"""The model through Python against the CLI's results: every committed golden case (written by
`tqref generate`) replayed by tqref.reshape_and_cache_model / paged_decode_model must give the
file's expected bytes, diagnostics and fp64 references; quantize_group must print what
`tqref quantize` prints; EX2/EXPF must equal the H200's measured readings."""
import re

import h5py
import numpy as np
import pytest

import tqref
from tqref import abi
from conftest import COMMITTED, ROOT, run_cli


def _writer_args(c):
    s = abi.scalar_args(c)
    k = c.arrays["initial/k_cache"].copy()
    v = c.arrays["initial/v_cache"].copy()
    return k, v, [c.arrays["inputs/key"], c.arrays["inputs/value"], k, v,
                  c.arrays["inputs/slot_mapping"]] + [s[n] for n in abi.WRITER_ABI[5:]]


def _decode_args(c):
    s = abi.scalar_args(c)
    out = c.arrays["initial/output"].copy()
    return out, [c.arrays["inputs/q"], c.arrays["initial/k_cache"], c.arrays["initial/v_cache"],
                 out, c.arrays["inputs/block_tables"], c.arrays["inputs/seq_lens"]] + \
        [s[n] for n in abi.DECODE_ABI[6:]]


def test_writer_replays_every_committed_case(committed_cases):
    # Catches a Python layer that passes parameters in the wrong order, reinterprets pools or
    # writes through a copy: the pools after the call must be the CLI generator's, bit for bit.
    writers = [c for c in committed_cases if c.kind == "writer"]
    assert len(writers) >= 20
    for c in writers:
        k, v, args = _writer_args(c)
        tqref.reshape_and_cache_model(*args, format=c.format)
        assert np.array_equal(k, c.arrays["expected/k_cache"]), c.name
        assert np.array_equal(v, c.arrays["expected/v_cache"]), c.name


def test_decode_replays_every_committed_case(committed_cases, ex2):
    # The acceptance criterion "a Python decode of every committed golden case equals the CLI's
    # bytes": output bits, and the diagnostics (skip masks, m, l, pre-rounding f32) the file holds.
    decodes = [c for c in committed_cases if c.kind == "decode"]
    assert len(decodes) >= 15
    for c in decodes:
        out, args = _decode_args(c)
        d = tqref.paged_decode_model(*args, format=c.format, ex2=ex2, hdim=c.attrs["hdim"],
                                     threshold=c.attrs["threshold"], diagnostics=True)
        assert np.array_equal(out, c.arrays["expected/output"]), c.name
        for name in ("skip_offsets", "skip_mask", "m", "l"):
            got = getattr(d, name).reshape(-1)
            want = c.arrays["diagnostics/" + name].reshape(-1)
            assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (c.name, name)
        assert np.array_equal(d.skip_count, c.arrays["diagnostics/skip_count"].reshape(-1)), c.name
        f32 = c.arrays["diagnostics/output_f32"].reshape(d.output_f32.shape)
        assert np.array_equal(d.output_f32.view(np.uint32), f32.view(np.uint32)), c.name


def test_reference_matches_the_files_fp64(committed_cases):
    # Catches a wrong V source or layout in reference_attention: both fp64 references stored in
    # every decode case are recomputed from the linked writer case (the pools before the decode
    # case's poisoning, and the writer's bf16 V rows laid out like K) and must match bit for bit.
    by_name = {c.name: c for c in committed_cases}
    decodes = [c for c in committed_cases if c.kind == "decode"]
    for c in decodes:
        w = by_name[c.attrs["linked_case"]]
        s = abi.scalar_args(c)
        a = w.attrs
        n = a["num_kv_heads"] * a["head_dim"]
        v_values = np.zeros(w.arrays["expected/k_cache"].shape, np.uint16).reshape(-1, n)
        for t, slot in enumerate(w.arrays["inputs/slot_mapping"]):
            if slot >= 0:
                v_values[slot] = w.arrays["inputs/value"][t, :n]
        args = [c.arrays["inputs/q"], w.arrays["expected/k_cache"], w.arrays["expected/v_cache"],
                c.arrays["inputs/block_tables"], c.arrays["inputs/seq_lens"]] + \
            [s[n] for n in abi.DECODE_ABI[6:]]
        deq = tqref.reference_attention(*args, format=c.format)
        unq = tqref.reference_attention(*args, format=c.format, v_values=v_values)
        assert np.array_equal(deq, c.arrays["diagnostics/reference_dequantised_v"]), c.name
        assert np.array_equal(unq, c.arrays["diagnostics/reference_unquantised_v"]), c.name


def _parse_quantize(text):
    codes = [int(m.group(1)) for m in re.finditer(r"^\s+\d+\s+\S+\s+0x[0-9A-F]{4}\s+(\d+)", text, re.M)]
    packed = bytes.fromhex(re.search(r"packed codes \(\d+ bytes\): ([0-9A-F ]+)", text).group(1).replace(" ", ""))
    scale = int(re.search(r"scale byte 0x([0-9A-F]{2})", text).group(1), 16)
    return codes, packed, scale


GROUPS = [
    "0.1,-0.2,0.3,1.5,nan,0,-0,2,3,4,5,6,7,8,9,10",
    ",".join(["0"] * 16),
    "1e-30," + ",".join(["-1e-30"] * 15),
    "3e38,-3e38," + ",".join(["1"] * 14),
    "inf,-inf," + ",".join(["0.5"] * 14),
    ",".join(str(0.37 * (k - 7.5)) for k in range(16)),
]


@pytest.mark.parametrize("fmt", [f.name for f in tqref.FORMATS])
@pytest.mark.parametrize("values", GROUPS, ids=["mixed_nan", "zeros", "tiny", "huge", "inf", "ramp"])
def test_quantize_group_matches_cli(cli, fmt, values):
    # Catches a Python quantize that differs from the writer the CLI runs (codes, packing of the
    # format, scale byte) on awkward groups: NaN, all zero, amax <= 1e-12, huge, infinite.
    r = run_cli(cli, "quantize", "--format", fmt, "--values", values)
    assert r.returncode == 0, r.stderr
    codes, packed, scale = _parse_quantize(r.stdout)
    x = tqref.f32_to_bf16(np.array([float(v) for v in values.split(",")], np.float32))
    c, p, s = tqref.quantize_group(x, format=fmt)
    assert list(c) == codes and bytes(p) == packed and s == scale


def test_quantize_groups_are_what_the_writer_stores(smoke_cases):
    # Ties quantize_groups to the pools: the codes and scales it gives for a token's V row are
    # the bytes the CLI-generated expectation holds at that token's slot.
    c = next(c for c in smoke_cases if c.kind == "writer")
    a = c.attrs
    n = a["num_kv_heads"] * a["head_dim"]
    fmt = tqref.get_format(c.format)
    slots = c.arrays["inputs/slot_mapping"]
    t = int(np.argmax(slots >= 0))
    q = tqref.quantize_groups(c.arrays["inputs/value"][t, :n], format=fmt)
    B, VS, DS = a["block_size"], a["v_block_stride_bytes"], a["v_data_section_bytes"]
    blk, sib = divmod(int(slots[t]), B)
    pool = c.arrays["expected/v_cache"][blk]
    row = n * fmt.bits // 8
    assert bytes(q.packed.reshape(-1)) == bytes(pool[sib * row:(sib + 1) * row])
    assert bytes(q.scale_bytes) == bytes(pool[DS + sib * (n // 16):DS + (sib + 1) * (n // 16)])
    deq = tqref.dequantize_groups(q.packed, q.scale_bytes, format=fmt)
    # the decoder's dequant by its definition, with numpy's own fp16 and fp8 arithmetic
    cb16 = fmt.codebook.astype(np.float16).astype(np.float32)
    gs = tqref.fp8_to_f32(q.scale_bytes)
    assert np.array_equal(deq.view(np.uint32), (cb16[q.codes] * gs[:, None]).view(np.uint32))


def test_ex2_and_expf_equal_the_h200_readings(ex2):
    # Independent oracle: MUFU.EX2 and __expf measured on an H200 (data/hw/sm_90); catches a
    # Python layer that evaluates another profile or passes the wrong bits.
    with h5py.File(ROOT / "data" / "hw" / "sm_90" / "ex2_readings.h5") as f:
        xi, xo = f["ex2_input_bits"][...], f["ex2_output_bits"][...]
        ei, eo = f["expf_input_bits"][...], f["expf_output_bits"][...]
    x = xi.view(np.float32)
    keep = ~(x > 0)  # the model covers x <= 0 and NaN
    assert keep.sum() > 1000
    assert np.array_equal(ex2.ex2(x[keep]).view(np.uint32), xo[keep])
    y = ei.view(np.float32)
    keep = ~(y > 0)
    assert keep.sum() > 500
    assert np.array_equal(ex2.expf(y[keep]).view(np.uint32), eo[keep])


def test_paged_decode_model_named_after_the_kernels():
    # The six kernel names exist and bind their format (STYLE 3: entry points keep kernel names).
    import tqref.model as m
    for f in tqref.FORMATS:
        assert getattr(m, f.decode_kernel).keywords["format"] == f.name
        assert getattr(m, f.writer_kernel).keywords["format"] == f.name
