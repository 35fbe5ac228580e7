#!/usr/bin/env python3
"""A projection (not a measurement) of kernel times on NVIDIA GB10 from Nsight Compute figures
measured on another GPU (docs/gpu-performance.md, "GB10 projection").

Input: the rows of analysis/ncu_join.py (per launch: warp instructions, DRAM bytes read + written,
the SMs' elapsed cycles, the device's SM count), or a file of the same form written by hand from
older ncu reports. Per row:

  issue time   T_i = warp instructions / (48 SMs x 4 issue slots x 2.52 GHz) / u, where u is the
               share of issue slots the kernel used where it was measured (warp instructions /
               (4 x SMs x elapsed cycles)): the same instruction count (same PTX; sm_121 SASS
               assumed equal to sm_90's) issued with the same efficiency;
  memory time  T_m = DRAM bytes / 273 GB/s: every byte the kernel moved where it was measured, at
               GB10's full published bandwidth (optimistic: no kernel reaches the peak, and the
               24 MB L2 of GB10 catches less reuse than H200's 50 MB);
  projection   max(T_i, T_m), with the bound that decides it;
  bf16 SDPA    decode rows only: the bytes of dense bf16 K and V of the same shape (plus q and the
               output) at 273 GB/s, the floor of any bf16 attention kernel on GB10.

GB10 figures (public, see docs/gpu-performance.md for the sources): 6144 CUDA cores = 48 SMs of 128;
31 TFLOPS FP32 -> 31e12 / (6144 x 2 FLOP) = 2.52 GHz; LPDDR5X, 273 GB/s (NVIDIA's DGX Spark
figure; 256-bit LPDDR5X-9400 is 301 GB/s raw).

usage: gb10_projection.py ROWS.json [--md OUT.md]
"""
import argparse
import json
import sys

GB10_SMS = 48
GB10_CLOCK_HZ = 31e12 / (6144 * 2)  # 2.52 GHz, from the FP32 figure
GB10_BW = 273e9                      # bytes/s
ISSUE_PER_SM = 4                     # warp instructions per cycle per SM (4 schedulers)


def sdpa_bytes(shape):
    """Dense bf16 K and V of every position and kv head, plus bf16 q and output."""
    s = shape
    kv = s["num_seqs"] * s["seq_len"] * s["num_kv_heads"] * s["hdim"] * 2 * 2
    return kv + 2 * s["num_seqs"] * s["num_q_heads"] * s["hdim"] * 2


def project(row):
    u = row["issue_utilisation"]
    t_i = row["warp_inst"] / (GB10_SMS * ISSUE_PER_SM * GB10_CLOCK_HZ) / u
    t_m = (row["dram_read"] + row["dram_write"]) / GB10_BW
    out = {"label": row["label"], "kernel": row["kernel"], "measured_ms": row.get("median_ms") or row["ncu_ms"],
           "measured_on": row["device"], "issue_ms": t_i * 1e3, "memory_ms": t_m * 1e3,
           "projected_ms": max(t_i, t_m) * 1e3, "bound": "issue" if t_i > t_m else "memory", "u": u}
    if row["kind"] == "decode":
        out["sdpa_bf16_floor_ms"] = sdpa_bytes(row["shape"]) / GB10_BW * 1e3
    return out


def kernel_kind(row):
    if row["kind"] == "writer":
        return "fast writer" if row.get("fast") else "ref-order writer"
    return f"GQA HT {row['heads_per_cta']}" if row.get("heads_per_cta") else "ref-order decoder"


def markdown(rows, projected):
    lines = ["| shape | kernel | measured ms (where) | issue share u | GB10 issue ms | GB10 memory ms | "
             "GB10 projection ms (bound) | bf16 SDPA floor ms |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r, p in zip(rows, projected):
        sdpa = f"{p['sdpa_bf16_floor_ms']:.3f}" if "sdpa_bf16_floor_ms" in p else "-"
        lines.append(f"| {p['label']} | {kernel_kind(r)} | {p['measured_ms']:.4f} ({p['measured_on']}) | "
                     f"{p['u']:.2f} | {p['issue_ms']:.3f} | {p['memory_ms']:.3f} | "
                     f"{p['projected_ms']:.3f} ({p['bound']}) | {sdpa} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows", help="analysis/ncu_join.py --json output (or the same form by hand)")
    ap.add_argument("--md", help="write the table here too")
    a = ap.parse_args()
    try:
        with open(a.rows) as f:
            rows = json.load(f)["rows"]
        projected = [project(r) for r in rows]
    except (OSError, ValueError, KeyError, ZeroDivisionError) as e:
        print(f"gb10_projection: {a.rows}: {e!r}", file=sys.stderr)
        return 2
    text = markdown(rows, projected)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
