#!/usr/bin/env python3
"""Writes data/hw/<arch>/ex2_readings.h5: a few thousand EX2 (and EXPF) input/output pairs of the
hardware, for tests/test_ex2.cpp.

The outputs come from the raw fraction table measured on the GPU (harness/gpu/ex2_explore.cu)
and the structure rules that the same run verified against every one of the 2^31 non-positive
inputs and all NaNs with zero mismatches, so each pair equals what the unit returned. The rules are
implemented here independently of model/ex2.cpp (float arithmetic with ceil/ldexp as in
ex2_explore.cu, not bit manipulation), so the test compares two implementations.

usage: make_ex2_readings.py RAW_TABLE.u32 OUT.h5 [--seed N] [--source TEXT]
(--source names the GPU, driver and run the table came from; the default is the H200 run.)
"""
import argparse
import sys

import h5py
import numpy as np

LOG2E = np.uint32(0x3FB8AA3B).view(np.float32)


def f32(bits):
    return np.uint32(bits).view(np.float32)


def bits(x):
    return int(np.float32(x).view(np.uint32))


class Unit:
    """EX2 as measured: the structure rules over the fraction table T[0 .. 2^23]."""

    def __init__(self, table):
        self.t = table

    def ex2_bits(self, b):
        x = f32(b)
        e = (b >> 23) & 0xFF
        if np.isnan(x):
            return 0x7FFFFFFF
        if x > 0 and e != 0:
            raise ValueError("positive input")
        if e == 0:  # +-0 and subnormals read as zero (ftz)
            return 0x3F800000
        if np.isinf(x) or x < np.float32(-126.0):
            return 0
        if x >= np.float32(-1.0):
            return int(self.t[int(np.trunc(-np.float64(x) * 2.0**23))])
        c = np.ceil(x)
        r = np.float32(x - c)  # exact: both have the same binade or r = 0
        tr = 0x3F800000 if r == 0 else int(self.t[int(np.trunc(-np.float64(r) * 2.0**23))])
        return bits(np.ldexp(f32(tr), int(c)).astype(np.float32))

    def expf_bits(self, b):
        with np.errstate(all="ignore"):
            y = np.float32(f32(b) * LOG2E)
            if y >= np.float32(-126.0) or np.isnan(y):
                return self.ex2_bits(bits(y))
            r = f32(self.ex2_bits(bits(np.float32(y * np.float32(0.5)))))
            return bits(np.float32(r * r))


def ulps_around(b, n):
    return [b + d for d in range(-n, n + 1) if 0x80000000 <= b + d <= 0xFFFFFFFF]


def ex2_inputs(rng):
    cases = {}

    def add(cat, bs):
        cases.setdefault(cat, [])
        cases[cat] += [int(b) for b in bs]

    add("special", [0x80000000, 0x00000000, 0xFF800000])
    add("nan", [0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7FA5A5A5, 0xFFC00000, 0xFF800001,
                0xFFFFFFFF, 0xFFB12345, 0xFFC00001, 0x7FBFFFFF])
    add("subnormal", [0x80000001, 0x80000002, 0x80400000, 0x807FFFFF, 0x80123456])
    add("tiny", [bits(-1e-30), bits(-2.0**-23), bits(-2.0**-24), 0x80800000, bits(-2.0**-22),
                 bits(-3 * 2.0**-24), bits(-1e-7), bits(-1e-8)]
        + ulps_around(bits(-2.0**-23), 3) + ulps_around(bits(-2.0**-22), 3))
    add("integer", [bits(-float(n)) for n in range(1, 127)])
    add("integer_ulp", [b for n in range(1, 127) for b in (bits(-float(n)) - 1, bits(-float(n)) + 1)])
    add("near_-126", ulps_around(bits(-126.0), 8) + [bits(-125.99999), bits(-125.5), bits(-126.00001),
                                                     bits(-127.0), bits(-128.0), bits(-1000.0),
                                                     0xFF7FFFFF, bits(-125.0000001)])
    # results just above the smallest normal: x in (-126, -125]
    add("near_subnormal_result", rng.integers(bits(-125.0), bits(-126.0), 200, dtype=np.uint64))
    add("near_-1", ulps_around(bits(-1.0), 8))
    add("fraction_edges", [bits(-np.float32(k) * np.float32(2.0**-23)) for k in
                           (1, 2, 3, 4, 5, 7, 2**22 - 1, 2**22, 2**22 + 1, 2**23 - 3, 2**23 - 2, 2**23 - 1)]
        + [bits(-(k + 0.5) * 2.0**-23) for k in (1, 2, 3, 1000, 2**20 + 1)])
    add("random_bits", rng.integers(0x80000000, 0x100000000, 500, dtype=np.uint64))
    add("random_unit", [bits(-np.float32(v)) for v in rng.random(1000)])
    add("random_scaled", [bits(-np.float32(v)) for v in rng.uniform(1.0, 126.0, 1000)])
    add("random_binade", rng.integers(bits(-2.0**-23), bits(-126.0) + 1, 800, dtype=np.uint64))
    return cases


def expf_inputs(rng):
    # y = f32(x * log2e) crosses -126 near x = -87.3365; below it the kernel squares EX2(y/2), so
    # results run through the subnormals down to zero near x = -103.97.
    xs = [0x80000000, 0x00000000, 0x7FC00000, 0xFFC00000, 0xFF800000, bits(-1e-30), bits(-1.0),
          bits(-0.5), bits(-10.0), bits(-87.0), bits(-100.0), bits(-104.0), bits(-110.0),
          bits(-1000.0)]
    lo = bits(-87.33654)
    xs += ulps_around(lo, 40)
    xs += [int(b) for b in rng.integers(bits(-87.0), bits(-105.0), 1500, dtype=np.uint64)]
    xs += [bits(-np.float32(v)) for v in rng.uniform(0.0, 90.0, 500)]
    return xs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--source", default=(
        "fraction table and structure rules measured on NVIDIA H200 (sm_90, driver 580.159.04, "
        "CUDA 13.0, 2026-11-30) by harness/gpu/ex2_explore.cu; rules verified on all 2^31 "
        "non-positive inputs and all NaNs with 0 mismatches"))
    a = ap.parse_args()
    t = np.fromfile(a.raw, dtype="<u4")
    if t.size == 2**23:  # ex2_explore.cu's table stops before F[2^23] = EX2(-1) = 0.5 (its log)
        t = np.append(t, np.uint32(0x3F000000))
    if t.size != 2**23 + 1:
        sys.exit(f"{a.raw}: {t.size} entries; expected 2^23 (ex2_explore) or 2^23 + 1 (tqref calibrate ex2 --raw-out)")
    unit = Unit(t)
    rng = np.random.default_rng(a.seed)
    cases = ex2_inputs(rng)
    names = list(cases)
    xin, xout, cat = [], [], []
    for ci, name in enumerate(names):
        for b in cases[name]:
            xin.append(b)
            xout.append(unit.ex2_bits(b))
            cat.append(ci)
    ein = expf_inputs(rng)
    eout = [unit.expf_bits(b) for b in ein]
    with h5py.File(a.out, "w", track_order=True) as f:
        # Fixed-length byte strings: what harness/io/hdf5_util.h reads.
        f.attrs["source"] = np.bytes_(a.source)
        f.attrs["generator"] = np.bytes_("harness/gpu/make_ex2_readings.py " + " ".join(sys.argv[1:]))
        f.attrs["seed"] = a.seed
        f.attrs["categories"] = np.bytes_(",".join(names))
        f.create_dataset("ex2_input_bits", data=np.array(xin, dtype="<u4"))
        f.create_dataset("ex2_output_bits", data=np.array(xout, dtype="<u4"))
        f.create_dataset("ex2_category", data=np.array(cat, dtype="u1"))
        f.create_dataset("expf_input_bits", data=np.array(ein, dtype="<u4"))
        f.create_dataset("expf_output_bits", data=np.array(eout, dtype="<u4"))
    print(f"{a.out}: {len(xin)} EX2 readings in {len(names)} categories, {len(ein)} EXPF readings")


if __name__ == "__main__":
    main()
