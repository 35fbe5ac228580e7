"""Formats and number conversions through Python, against independent oracles: the traits table
against docs/spec.md section 2's literals, the conversions against numpy's own IEEE arithmetic
and exhaustive sweeps where the domain is small (STYLE 7), hex printed on mismatch."""
from fractions import Fraction

import numpy as np
import pytest

import tqref

SPEC_CB = {
    "turbo2v": [-1.5104, -0.4528, 0.4528, 1.5104],
    "turbo3v": [-2.1520, -1.3440, -0.7560, -0.2451, 0.2451, 0.7560, 1.3440, 2.1520],
    "turbo4v": [-2.7326, -2.0690, -1.6180, -1.2562, -0.9423, -0.6568, -0.3880, -0.1284, 0.1284,
                0.3880, 0.6568, 0.9423, 1.2562, 1.6180, 2.0690, 2.7326],
}


def _nearest_f32(decimal):
    """The binary32 nearest to a decimal literal, by exact rational arithmetic (the value a C
    compiler gives `1e-3f`), as a Python float."""
    x = Fraction(decimal)
    f = np.float32(float(x))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - x), int(np.float32(c).view(np.uint32)) & 1))
    return float(best)


def test_traits_are_the_spec_table():
    # Every row of the library's table, in code order (FORMATS reads rows up to the first code the
    # C ABI refuses: a table cut short or read past its end fails here, not by an empty loop).
    assert [(f.index, f.name) for f in tqref.FORMATS] == list(enumerate(SPEC_CB))
    for f in tqref.FORMATS:
        assert f.levels == 2 ** f.bits == len(SPEC_CB[f.name]) and f.group_code_bytes == 2 * f.bits
        assert [float(c) for c in f.codebook] == [_nearest_f32(str(v)) for v in SPEC_CB[f.name]]
        assert f.max == float(f.codebook[-1])
        assert np.array_equal(f.codebook_fp16, f.codebook.astype(np.float16).view(np.uint16))


def test_constants_are_the_c_literals():
    # The default THRESH and the writer's constants that examples pass to Triton as fp32
    # arguments: numpy's float32 of the double equals the correctly rounded decimal (no double
    # rounding), so they are the C++ literals 1e-3f, 1e-12f, 1e-10f.
    assert tqref.SPARSE_V_THRESHOLD == _nearest_f32("1e-3")
    for lit in ("1e-12", "1e-10", "1e-3"):
        assert float(np.float32(float(lit))) == _nearest_f32(lit), lit


def test_bf16_exhaustive():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    f = tqref.bf16_to_f32(bits)
    assert np.array_equal(f.view(np.uint32), bits.astype(np.uint32) << 16)


def test_f32_to_bf16_against_numpy_rounding():
    rng = np.random.default_rng(1)
    b = np.concatenate([rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32),
                        np.array([0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x00008000, 0x3F808000,
                                  0x3F818000, 0x7FC00001], np.uint32)])
    x = b.view(np.float32)
    got = tqref.f32_to_bf16(x)
    # round to nearest even by exact float64 arithmetic on the two neighbours
    lo = (b >> 16).astype(np.uint32)
    hi = lo + 1
    def val(v): return (v.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    d_lo, d_hi = np.abs(x.astype(np.float64) - val(lo)), np.abs(val(hi & 0xFFFF) - x.astype(np.float64))
    want = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (lo & 1 == 1)), hi, lo).astype(np.uint16)
    nan = np.isnan(x)
    want[nan] = 0x7FFF
    finite = np.isfinite(x) & np.isfinite(val(hi & 0xFFFF)) | nan
    bad = np.flatnonzero((got != want) & finite)
    assert bad.size == 0, [hex(int(b[i])) for i in bad[:8]]


def test_fp8_all_256_codes():
    codes = np.arange(256, dtype=np.uint16).astype(np.uint8)
    v = tqref.fp8_to_f32(codes)
    for c in range(256):
        s, e, m = c >> 7, (c >> 3) & 15, c & 7
        want = np.nan if (c & 0x7F) == 0x7F else (-1) ** s * (m * 2.0 ** -9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))
        assert (np.isnan(v[c]) and np.isnan(want)) or v[c] == want, hex(c)
    # encoding every finite code's value gives the code back; saturation and NaN as specified
    finite = codes[(codes & 0x7F) != 0x7F]
    assert np.array_equal(tqref.f32_to_fp8(tqref.fp8_to_f32(finite)), finite)
    assert list(tqref.f32_to_fp8(np.array([1e9, -np.inf, np.nan, 2.0 ** -11], np.float32))) == [0x7E, 0xFE, 0x7F, 0x00]


def test_fp16_against_numpy():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(1 << 16).astype(np.float32) * np.float32(2.0) ** rng.integers(-30, 20, 1 << 16).astype(np.float32)
    assert np.array_equal(tqref.f32_to_f16(x), x.astype(np.float16).view(np.uint16))
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    ok = ~np.isnan(h.view(np.float16))
    assert np.array_equal(tqref.f16_to_f32(h)[ok].view(np.uint32), h.view(np.float16)[ok].astype(np.float32).view(np.uint32))


def test_ulp_distance():
    a = np.array([0x3F80, 0x3F80, 0x0000, 0x8000, 0x0001, 0x7FC0], np.uint16)
    b = np.array([0x3F80, 0x3F82, 0x8000, 0x8001, 0x8001, 0x3F80], np.uint16)
    assert list(tqref.bf16_ulp_distance(a, b)) == [0, 2, 0, 1, 2, -1]
