#!/usr/bin/env python3
"""Plot and tabulate the conform timings of the device plan `conformtime` (conformtime.tsv of
scripts/device/conform-time.sh: one row per run of `tqref conform` over smoke, real, standard,
models, pools and flags, level I included). One bar per run, grouped by binary (LABEL=TSV
arguments, in the order given): its wall time split into the GPU's share (the modules' launch
times summed: buffers to the device, kernels, buffers back) and the rest, with issue 29's goals
(30 s for our three reference-order modules, 40 s for the same kernels as seven modules).
Prints a markdown table.
Usage: /usr/bin/python3 analysis/plot_conformtime.py LABEL=conformtime.tsv... --out FIG.png
"""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

GOALS = {"three": 30.0, "seven": 40.0}
GPU_COLUMNS = ("upload_s", "kernel_s", "download_s")


def read_runs(label, path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for r in rows:
        r["label"] = label
        r["wall"] = float(r["wall_s"])
        r["gpu"] = sum(float(r[c]) for c in GPU_COLUMNS)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", help="LABEL=conformtime.tsv")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows = []
    for arg in a.runs:
        label, sep, path = arg.partition("=")
        if not sep:
            ap.error(f"{arg}: expected LABEL=conformtime.tsv")
        rows += read_runs(label, path)
    print("| binary | modules | exit | wall s | GPU s (up + kernels + back) | rest s | goal s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['label']} | {r['name']} ({r['modules']}) | {r['exit']} | {r['wall']:.1f} | "
              f"{r['gpu']:.1f} | {r['wall'] - r['gpu']:.1f} | {GOALS.get(r['name'], float('nan')):.0f} |")
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(rows) + 2), 4.5))
    xs = range(len(rows))
    gpu = [r["gpu"] for r in rows]
    rest = [r["wall"] - r["gpu"] for r in rows]
    ax.bar(xs, gpu, color="tab:green", label="GPU: buffers to the device, kernels, buffers back")
    ax.bar(xs, rest, bottom=gpu, color="tab:gray", label="the rest (reading, judging, level I, reports)")
    for x, r in zip(xs, rows):
        goal = GOALS.get(r["name"])
        if goal is not None:
            ax.hlines(goal, x - 0.4, x + 0.4, colors="tab:red", linestyles="dashed")
    ax.plot([], [], color="tab:red", linestyle="dashed", label="goal (issue 29)")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{r['label']}\n{r['name']}" for r in rows], fontsize=8)
    ax.set_ylabel("seconds (wall)")
    ax.set_ylim(0, 1.45 * max(r["wall"] for r in rows))  # room for the legend above the bars
    ax.set_title("tqref conform over six suites, level I included (H200)")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)


if __name__ == "__main__":
    main()
