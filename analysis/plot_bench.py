#!/usr/bin/env python3
"""Plot `tqref bench --json` results (and optionally analysis/bench_torch_sdpa.py's) as a PNG.

One group of bars per decode shape: median time of the reference-order kernel, the GQA kernel for
each heads-per-CTA, torch SDPA on the same shape (bf16 dense K/V) where measured, and a marker for
the memory floor (all K + all V + q + out at the device-to-device copy bandwidth of the run).
Non-conformant kernels are hatched and labelled.
With --table, also prints one compact line per shape: reference-order, best GQA (its HT), torch,
speed-up over torch and over the reference-order kernel, share of the memory floor, and the
conformance verdict.
Usage: python3 analysis/plot_bench.py BENCH.json [--torch SDPA.json] --out bench.png [--table]
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def shape_key(d):
    return (d["format"], d["hdim"], d["num_seqs"], d["num_q_heads"], d["num_kv_heads"], d["seq_len"],
            d.get("q_sigma", 1.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench")
    ap.add_argument("--torch", help="bench_torch_sdpa.py JSON")
    ap.add_argument("--out", required=True)
    ap.add_argument("--table", action="store_true", help="print the compact comparison table")
    a = ap.parse_args()
    b = json.load(open(a.bench))
    if b.get("schema") != "tqref.bench/1":
        print(f"plot_bench: {a.bench}: schema {b.get('schema')!r}, expected 'tqref.bench/1'", file=sys.stderr)
        return 3
    torch = {}
    if a.torch:
        t = json.load(open(a.torch))
        for r in t["results"]:
            torch[(r["hdim"], r["num_seqs"], r["num_q_heads"], r["num_kv_heads"], r["seq_len"])] = r["median_ms"]
    groups = {}
    for d in b["decode"]:
        groups.setdefault(shape_key(d), []).append(d)
    if not groups:
        print("plot_bench: no decode results", file=sys.stderr)
        return 3
    # one bar per GQA heads-per-CTA present (1 to 8), widest first, darker for wider
    hts = sorted({d["heads_per_cta"] for d in b["decode"] if d["heads_per_cta"]}, reverse=True)
    series = ["reference-order"] + [f"gqa HT{h}" for h in hts] + ["torch sdpa"]
    blues = plt.get_cmap("Blues")
    colors = {"reference-order": "#888888", "torch sdpa": "#d62728"}
    for i, h in enumerate(hts):
        colors[f"gqa HT{h}"] = blues(0.9 - 0.6 * i / max(1, len(hts) - 1))
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(groups)), 5))
    width = 0.8 / len(series)
    labels = []
    for gi, (key, rows) in enumerate(groups.items()):
        fmt, hdim, S, hq, hkv, L, qs = key
        labels.append(f"{fmt}\nD{hdim} {S}x{hq}/{hkv}\nL{L} qs{qs:g}")
        vals = {}
        for d in rows:
            name = "reference-order" if d["heads_per_cta"] == 0 else f"gqa HT{d['heads_per_cta']}"
            vals[name] = (d["timing"]["median_ms"], d["conformant"])
        tk = (hdim, S, hq, hkv, L)
        if tk in torch:
            vals["torch sdpa"] = (torch[tk], True)
        for si, name in enumerate(series):
            if name not in vals:
                continue
            ms, ok = vals[name]
            x = gi + (si - len(series) / 2 + 0.5) * width
            ax.bar(x, ms, width, color=colors[name], hatch=None if ok else "xx",
                   label=name if gi == 0 or name not in [h.get_label() for h in ax.patches] else None)
            if not ok:
                ax.text(x, ms, "MISMATCH", rotation=90, fontsize=7, ha="center", va="bottom")
        floor = rows[0]["floor_full_ms"]
        ax.plot([gi - 0.45, gi + 0.45], [floor, floor], color="black", lw=1.5, ls="--",
                label="memory floor (copy BW)" if gi == 0 else None)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("median time per decode step [ms]")
    ax.set_title(f"{b['device']['name']} ({b['device']['arch']}): copy {b['copy']['gbps_read_write']:.0f} GB/s")
    handles, names = ax.get_legend_handles_labels()
    seen = {}
    for h, n in zip(handles, names):
        if n and n not in seen:
            seen[n] = h
    ax.legend(seen.values(), seen.keys(), fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    if a.table:
        print_table(groups, torch)
    return 0


def print_table(groups, torch):
    print(f"{'shape':34} {'ref_order_ms':>12} {'gqa_ms':>8} {'HT':>2} {'torch_ms':>8} {'x_torch':>7} "
          f"{'x_ref_order':>11} {'floor%':>6} {'skip%':>5} bits")
    for key, rows in groups.items():
        fmt, hdim, S, hq, hkv, L, qs = key
        ref = next((d for d in rows if d["heads_per_cta"] == 0), None)  # heads_per_cta 0: reference-order
        fast = [d for d in rows if d["heads_per_cta"] > 0]
        best = min(fast, key=lambda d: d["timing"]["median_ms"]) if fast else None
        t = torch.get((hdim, S, hq, hkv, L))
        g = best["timing"]["median_ms"] if best else float("nan")
        s = ref["timing"]["median_ms"] if ref else float("nan")
        floor = rows[0]["floor_full_ms"]
        ok = all(d["conformant"] for d in rows)
        print(f"{fmt} D{hdim} {S}x{hq}/{hkv} L{L} qs{qs:g}".ljust(34) +
              f" {s:12.4f} {g:8.4f} {best['heads_per_cta'] if best else 0:>2} "
              f"{t if t else float('nan'):8.4f} {(t / g) if t else float('nan'):7.2f} {s / g:11.2f} "
              f"{100 * floor / g:6.1f} {100 * rows[0]['skip_rate']:5.1f} {'equal' if ok else 'MISMATCH'}")


if __name__ == "__main__":
    sys.exit(main())
