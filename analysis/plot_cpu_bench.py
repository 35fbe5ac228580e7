#!/usr/bin/env python3
"""Plot and tabulate the CPU-model benchmarks (bench_decode, bench_writer, bench_ex2, bench_machine JSON).

Reads DIR/bench_decode.json, DIR/bench_writer.json and DIR/bench_ex2.json (Google Benchmark
--benchmark_out, written by scripts/bench-cpu-models.sh), takes for every benchmark the fastest
repetition's wall-clock time (on a shared machine the least disturbed one), and draws three panels:
decode pairs/s and writer V elements/s, scalar against SIMD on 1 and 2 threads with the speed-up
over the scalar model of the same run above each SIMD bar, and the time per EX2/EXPF call. Prints
markdown tables (rates, ratios, the 2-thread scaling) and the context (machine, load, commit).
DIR/bench_machine.json (optional; runs of scripts/bench-cpu-models.sh before it existed lack it)
adds the machine's own 2-thread speed-up for a clock-bound and a vector-port-bound loop, the
ceiling against which the models' 2-thread speed-ups are read. DIR/bench_decode_simd_rep*.json
(optional) adds the SIMD decode path's 2-thread speed-up over their repetitions pooled. Runs recorded
before the CPU model's SIMD path was renamed from "fast" (argument fast:, context fast_isa*, files
bench_decode_fast_rep*.json) read the same.
Usage: /usr/bin/python3 analysis/plot_cpu_bench.py DIR --out FIG.png
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path) as f:
        return json.load(f)


def fastest(doc):
    """{benchmark name without the /repeats suffix: (min real time in s, items per run, label)}"""
    best = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = re.sub(r"/repeats:\d+$", "", b["run_name"])
        scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
        t = b["real_time"] * scale
        items = b["items_per_second"] * t  # items of one iteration
        if name not in best or t < best[name][0]:
            best[name] = (t, items, b.get("label", ""))
    return best


def repetitions(*docs):
    """{benchmark name without the /repeats suffix: [items per second of every repetition]},
    pooled over the given documents."""
    reps = {}
    for doc in docs:
        for b in doc["benchmarks"]:
            if b.get("run_type") == "iteration":
                reps.setdefault(re.sub(r"/repeats:\d+$", "", b["run_name"]), []).append(b["items_per_second"])
    return reps


def median_rates(doc):
    """{benchmark name: median of the repetitions' items per second}: with the repetitions of all
    benchmarks interleaved in random order (bench-cpu-models.sh), a slow phase of a shared host
    falls on every benchmark alike, so ratios of medians compare like with like."""
    return {n: statistics.median(v) for n, v in repetitions(doc).items()}


def args_of(name):
    return dict(kv.split(":") for kv in name.split("/")[1:] if ":" in kv)


def simd_arg(a):
    """The benchmark's path argument: 1 SIMD, 0 scalar (named "fast" in runs recorded before the
    rename)."""
    return int(a["simd"] if "simd" in a else a["fast"])


def context_isas(ctx):
    """(default, built) instruction sets of the SIMD path from a run's context, either spelling."""
    return (ctx.get("simd_isa_default", ctx.get("fast_isa_default", "?")),
            ctx.get("simd_isas", ctx.get("fast_isas", "?")))


def format_names(*docs):
    """{format code: name} from the benchmarks' labels, "<path> <format> ..." (bench_decode.cpp,
    bench_writer.cpp): the formats are those the run measured, not a list kept here."""
    names = {}
    for doc in docs:
        for b in doc["benchmarks"]:
            a = args_of(b["run_name"])
            if "format" in a and b.get("label"):
                names[int(a["format"])] = b["label"].split()[1]
    return names


def decode_rates(best, names):
    """{(simd, format, hdim, threads, gqa, table): M pairs/s}"""
    r = {}
    for name, (t, items, _) in best.items():
        a = args_of(name)
        key = (simd_arg(a), names[int(a["format"])], int(a["hdim"]), int(a["threads"]),
               int(a["gqa"]), int(a["ex2_table"]))
        r[key] = items / t / 1e6
    return r


def writer_rates(best, names):
    r = {}
    for name, (t, items, _) in best.items():
        a = args_of(name)
        r[(simd_arg(a), names[int(a["format"])], int(a["threads"]))] = items / t / 1e6
    return r


def ex2_costs(best):
    """{(table, batch, expf): ns per call}"""
    r = {}
    for name, (t, items, _) in best.items():
        a = args_of(name)
        r[(int(a["table"]), int(a["batch"]), int(a["expf"]))] = t / items * 1e9
    return r


def machine_rates(best):
    """{(loop, threads): G items/s} from bench_machine (BM_dep_chain, BM_vec_mul)."""
    r = {}
    for name, (t, items, _) in best.items():
        r[(name.split("/")[0].removeprefix("BM_"), int(args_of(name)["threads"]))] = items / t / 1e9
    return r


def print_pooled_scaling(paths, names):
    """The SIMD decode path's 2-thread speed-up from extra runs (bench_decode_simd_rep*.json, SIMD
    path only, repetitions interleaved), their repetitions pooled: on a host whose speed varies from
    second to second, more repetitions make the fastest one (and the median) steadier."""
    reps = {n: [r / 1e6 for r in v] for n, v in repetitions(*(load(p) for p in paths)).items()}
    med = statistics.median
    n = min((len(v) for v in reps.values()), default=0)
    print(f"\nSIMD decode path, 2 threads against 1, {len(paths)} more runs pooled ({n} interleaved "
          "repetitions per benchmark; M pairs/s):\n")
    print("| format | HDIM | 1 thr fastest | 2 thr fastest | ratio | 1 thr median | 2 thr median | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, v1 in sorted(reps.items()):
        a = args_of(name)
        if a.get("threads") != "1":
            continue
        v2 = reps.get(name.replace("threads:1", "threads:2"))
        if v2:
            print(f"| {names[int(a['format'])]} | {a['hdim']} | {max(v1):.2f} | {max(v2):.2f} | "
                  f"{max(v2) / max(v1):.2f}x | {med(v1):.2f} | {med(v2):.2f} | {med(v2) / med(v1):.2f}x |")


def print_machine(mach):
    print("\nThe machine's own 2-thread speed-up (bench_machine, registers only, G items/s):\n")
    print("| loop | 1 thread | 2 threads | 2 thr / 1 thr |")
    print("| --- | --- | --- | --- |")
    for loop, what in (("dep_chain", "dependent int64 adds (clock)"),
                       ("vec_mul", "independent vector multiplies (ports)")):
        one, two = mach.get((loop, 1), 0), mach.get((loop, 2), 0)
        print(f"| {what} | {one:.3f} | {two:.3f} | {two / one if one else float('nan'):.2f}x |")


def bars(ax, groups, series, ylabel, title, ratio_of=None):
    """groups: x labels; series: [(label, [values], color)]; ratio_of: {series index: base index}."""
    n = len(series)
    w = 0.8 / n
    for i, (label, vals, color) in enumerate(series):
        xs = [g + (i - (n - 1) / 2) * w for g in range(len(groups))]
        ax.bar(xs, vals, w, label=label, color=color)
        if ratio_of and i in ratio_of:
            base = series[ratio_of[i]][1]
            for x, v, b in zip(xs, vals, base):
                if b:
                    ax.text(x, v, f"{v / b:.1f}x", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    docs = {}
    for b in ("decode", "writer", "ex2"):
        path = os.path.join(a.dir, f"bench_{b}.json")
        if not os.path.exists(path):
            print(f"plot_cpu_bench: {path} missing (run scripts/bench-cpu-models.sh)", file=sys.stderr)
            return 3
        docs[b] = load(path)
    names = format_names(docs["decode"], docs["writer"])
    formats = [names[c] for c in sorted(names)]
    dec, wri, ex2 = (decode_rates(fastest(docs["decode"]), names),
                     writer_rates(fastest(docs["writer"]), names), ex2_costs(fastest(docs["ex2"])))
    dec_med = decode_rates({n: (1.0, r, "") for n, r in median_rates(docs["decode"]).items()}, names)

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), gridspec_kw={"width_ratios": [3, 2, 2]})
    groups = [f"{f}\nD{h}" for h in (128, 256) for f in formats]
    keys = [(f, h) for h in (128, 256) for f in formats]
    series = [(f"{p} {t} thr", [dec.get((int(p == "simd"), f, h, t, 4, 0), 0) for f, h in keys], c)
              for p, t, c in (("scalar", 1, "#bbbbbb"), ("scalar", 2, "#777777"),
                              ("simd", 1, "#6aa5e8"), ("simd", 2, "#1f5fa8"))]
    bars(axes[0], groups, series, "M (q head x position) pairs / s",
         "decode model, GQA 4, 4 x 4096 positions x 8 q heads", {2: 0, 3: 1})
    wseries = [(f"{p} {t} thr", [wri.get((int(p == "simd"), f, t), 0) for f in formats], c)
               for p, t, c in (("scalar", 1, "#bbbbbb"), ("scalar", 2, "#777777"),
                               ("simd", 1, "#6aa5e8"), ("simd", 2, "#1f5fa8"))]
    bars(axes[1], formats, wseries, "M V elements / s", "writer model, 8 x 128, 4096 tokens",
         {2: 0, 3: 1})
    egroups = ["EX2", "EXPF"]
    eseries = [("table, one call", [ex2.get((1, 0, e), 0) for e in (0, 1)], "#bbbbbb"),
               ("datapath, one call", [ex2.get((0, 0, e), 0) for e in (0, 1)], "#6aa5e8"),
               ("datapath, SIMD batch", [ex2.get((0, 1, e), 0) for e in (0, 1)], "#1f5fa8")]
    bars(axes[2], egroups, eseries, "ns per call (random arguments)", "EX2 unit model", None)
    ctx = docs["decode"]["context"]
    isa_default, isas_built = context_isas(ctx)
    load_text = ", ".join(f"{x:.2f}" for x in ctx.get("load_avg", []))
    fig.suptitle(f"CPU models: {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs, "
                 f"load average {load_text} at start, commit {ctx.get('git_commit', '?')}, "
                 f"SIMD path {isa_default}", fontsize=9)
    fig.tight_layout()
    fig.savefig(a.out, dpi=130)

    print(f"Context: {ctx.get('date')}, host {ctx.get('host_name')}, {ctx.get('num_cpus')} CPUs at "
          f"{ctx.get('mhz_per_cpu')} MHz, load average at start of bench_decode "
          f"{load_text}, commit {ctx.get('git_commit')}, SIMD path "
          f"{isa_default} (built: {isas_built}).\n")
    print("Rates from each benchmark's fastest repetition; the last column is the same ratio from the "
          "medians of the repetitions.\n")
    print("| format | HDIM | scalar 1 thr | SIMD 1 thr | SIMD/scalar | scalar 2 thr | SIMD 2 thr | "
          "SIMD/scalar | SIMD 2 thr / 1 thr | same, medians |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for f, h in keys:
        s1, f1 = dec.get((0, f, h, 1, 4, 0), 0), dec.get((1, f, h, 1, 4, 0), 0)
        s2, f2 = dec.get((0, f, h, 2, 4, 0), 0), dec.get((1, f, h, 2, 4, 0), 0)
        m1, m2 = dec_med.get((1, f, h, 1, 4, 0), 0), dec_med.get((1, f, h, 2, 4, 0), 0)
        print(f"| {f} | {h} | {s1:.2f} | {f1:.2f} | {f1 / s1:.1f}x | {s2:.2f} | {f2:.2f} | "
              f"{f2 / s2:.1f}x | {f2 / f1:.2f}x | {m2 / m1 if m1 else float('nan'):.2f}x |")
    print("\nDecode, other shapes (M pairs/s, 1 thread):\n")
    print("| shape | scalar | SIMD | SIMD/scalar |")
    print("| --- | --- | --- | --- |")
    # The formats bench_decode measures at these shapes: those in the run.
    for fm in formats:
        for h in (128, 256):
            if (0, fm, h, 1, 1, 0) in dec:
                s, f = dec[(0, fm, h, 1, 1, 0)], dec.get((1, fm, h, 1, 1, 0), 0)
                print(f"| {fm} D{h} MHA (GQA 1) | {s:.2f} | {f:.2f} | {f / s:.1f}x |")
    for fm in formats:
        if (0, fm, 128, 1, 4, 1) in dec:
            s, f = dec[(0, fm, 128, 1, 4, 1)], dec.get((1, fm, 128, 1, 4, 1), 0)
            print(f"| {fm} D128 GQA 4, EX2 from the measured table | {s:.2f} | {f:.2f} | {f / s:.1f}x |")
    print("\nWriter (M V elements/s):\n")
    print("| format | scalar 1 thr | SIMD 1 thr | SIMD/scalar | scalar 2 thr | SIMD 2 thr | SIMD/scalar |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for f in formats:
        s1, f1, s2, f2 = (wri.get((0, f, 1), 0), wri.get((1, f, 1), 0), wri.get((0, f, 2), 0),
                          wri.get((1, f, 2), 0))
        print(f"| {f} | {s1:.0f} | {f1:.0f} | {f1 / s1:.1f}x | {s2:.0f} | {f2:.0f} | {f2 / s2:.1f}x |")
    print("\nEX2 (ns per call, random arguments):\n")
    print("| function | table, one call | datapath, one call | datapath, SIMD batch |")
    print("| --- | --- | --- | --- |")
    for e, name in ((0, "EX2 on [-126, 0]"), (1, "EXPF on [-87, 0]")):
        print(f"| {name} | {ex2.get((1, 0, e), 0):.2f} | {ex2.get((0, 0, e), 0):.2f} | "
              f"{ex2.get((0, 1, e), 0):.2f} |")
    path = os.path.join(a.dir, "bench_machine.json")
    if os.path.exists(path):
        print_machine(machine_rates(fastest(load(path))))
    pooled = sorted(glob.glob(os.path.join(a.dir, "bench_decode_simd_rep*.json")) or
                    glob.glob(os.path.join(a.dir, "bench_decode_fast_rep*.json")))
    if pooled:
        print_pooled_scaling(pooled, names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
