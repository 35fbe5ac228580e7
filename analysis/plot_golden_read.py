#!/usr/bin/env python3
"""Plot and tabulate the golden-read timings of bench/golden_read/run.sh (JSON lines: what,
seconds, peak_kb, load). Two panels: wall time (median of the runs, the range as an error bar)
and peak resident memory (the largest of the runs), one bar per measured command, with the goal
lines of issue 29 (check within 1.5x of h5py's full read; inspect under 1 s; peak memory at most
twice the largest case plus 100 MB, when --largest-case-mb is given). Prints a markdown table.
Usage: /usr/bin/python3 analysis/plot_golden_read.py RUN.jsonl --out FIG.png [--largest-case-mb MB]
"""
import argparse
import collections
import json
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["h5py", "before-inspect", "inspect", "before-check", "before-check-passive", "check", "check-passive"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--out", required=True)
    ap.add_argument("--largest-case-mb", type=float)
    a = ap.parse_args()
    secs, kb, load = collections.defaultdict(list), collections.defaultdict(list), []
    with open(a.runs) as f:
        for line in f:
            r = json.loads(line)
            secs[r["what"]].append(r["seconds"])
            kb[r["what"]].append(r["peak_kb"])
            load.append(r["load"])
    names = [n for n in ORDER if n in secs]
    med = {n: statistics.median(secs[n]) for n in names}
    peak = {n: max(kb[n]) / 1024 for n in names}
    print("| command | wall s (median; min-max) | x h5py | peak MB |")
    print("| --- | --- | --- | --- |")
    for n in names:
        print(f"| {n} | {med[n]:.2f} ({min(secs[n]):.2f}-{max(secs[n]):.2f}) | {med[n] / med['h5py']:.2f} | {peak[n]:.0f} |")
    print(f"\nruns per command: {len(secs['h5py'])}; load average 1 min: {min(load):.2f} .. {max(load):.2f}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = ["#888888" if n == "h5py" else "#d08050" if n.startswith("before") else "#4070b0" for n in names]
    left.bar(names, [med[n] for n in names], color=colors,
             yerr=[[med[n] - min(secs[n]) for n in names], [max(secs[n]) - med[n] for n in names]], capsize=3)
    left.axhline(1.5 * med["h5py"], color="k", ls="--", lw=1, label="1.5x h5py (check goal)")
    left.axhline(1.0, color="g", ls=":", lw=1, label="1 s (inspect goal)")
    left.set_ylabel("wall time, s (median of runs)")
    left.set_yscale("log")
    left.legend(fontsize=8)
    right.bar(names, [peak[n] for n in names], color=colors)
    if a.largest_case_mb:
        right.axhline(2 * a.largest_case_mb + 100, color="k", ls="--", lw=1, label="2 x largest case + 100 MB")
        right.legend(fontsize=8)
    right.set_ylabel("peak resident memory, MB")
    for ax in (left, right):
        ax.tick_params(axis="x", rotation=35, labelsize=8)
    fig.suptitle("Reading the standard golden suite (427 MB file, 685 MB of data); blue: this design, "
                 "orange: before, grey: h5py", fontsize=9)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
