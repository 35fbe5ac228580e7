#!/usr/bin/env python3
"""The report of the gpuspeed plan (scripts/device/plans.tsv), as Markdown.

usage: bench_report.py gpuspeed OUTDIR > OUTDIR/report.md

Reads the plan's JSON in OUTDIR and the runner's summary.tsv ($SUMMARY, default OUTDIR/summary.tsv)
for the verdict line: a step that exited 1 is a mismatch (tqref bench and check exit 1 when a
launch's bits differ), any other step that did not give its expected exit failed. Exit 0.
The report: the writer table with the 70 % of copy goal
per format, the decode table of real models' shapes, per_launch.md and gb10_projection.md.
"""
import csv
import json
import os
import sys


def load(out, name):
    p = os.path.join(out, name)
    try:
        return json.load(open(p)) if os.path.exists(p) and os.path.getsize(p) else None
    except ValueError:
        return None


def verdict(summary):
    mismatch, failed = False, []
    if os.path.exists(summary):
        for row in csv.DictReader(open(summary), delimiter="\t"):
            if row["verdict"] == "ok" or row["verdict"].startswith("skipped"):
                continue
            if row["got"] == "1":
                mismatch = True
            else:
                failed.append(f"{row['step']} ({row['verdict']})")
    return mismatch, failed


def gpuspeed(out, mismatch, failed):
    print("# gpuspeed plan report\n")
    print(f"verdict: {'MISMATCH' if mismatch else 'every benchmarked launch equal'}; "
          f"failed steps: {', '.join(failed) if failed else 'none'}\n")
    w = load(out, "writers.json")
    if w:
        print(f"device {w['device']['name']}; 1 GiB copy {w['copy']['gbps_read_write']:.0f} GB/s\n")
        print("| writer shape | kernel | median ms | GB/s | copy of the same bytes ms | % of copy | bits |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in w["writer"]:
            print(f"| {r['format']} hdim{r['hdim']} H{r['num_kv_heads']} tokens{r['tokens']} | "
                  f"{'fast' if r['fast'] else 'ref-order'} | {r['timing']['median_ms']:.4f} | {r['gbps']:.0f} | "
                  f"{r['copy_same_bytes']['median_ms']:.4f} | {100 * r['fraction_of_copy']:.1f} | "
                  f"{'equal' if r['conformant'] else 'MISMATCH'} |")
        goal = [r for r in w["writer"]
                if r["fast"] and r["tokens"] == 65536 and r["num_kv_heads"] == 8 and r["hdim"] == 128]
        for r in goal:
            met = r["fraction_of_copy"] >= 0.70 and r["conformant"]
            print(f"\ngoal {r['format']} 65536 x 8 x 128: {100 * r['fraction_of_copy']:.1f} % of copy "
                  f"({'met' if met else 'NOT met'}: >= 70 % and equal bits)", end="")
        print("\n")
    m = load(out, "models.json")
    if m:
        print("| decode shape | kernel | HT | median ms | x ref-order | skip % | bits |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        ref = {}
        for r in m["decode"]:
            lab = (f"{r['model']} {r['format']} hdim{r['hdim']} "
                   f"{r['num_seqs']}x{r['num_q_heads']}/{r['num_kv_heads']} L{r['seq_len']}")
            if not r["heads_per_cta"]:
                ref[lab] = r["timing"]["median_ms"]
            x = ref.get(lab, 0) / r["timing"]["median_ms"] if r["timing"]["median_ms"] else 0
            print(f"| {lab} | {'gqa' if r['heads_per_cta'] else 'ref-order'} | "
                  f"{r['heads_per_cta'] or '-'} | {r['timing']['median_ms']:.4f} | {x:.2f} | "
                  f"{100 * r['skip_rate']:.2f} | {'equal' if r['conformant'] else 'MISMATCH'} |")
        print()
    for name, title in (("per_launch.md", "Per launch (ncu)"), ("gb10_projection.md", "GB10 projection")):
        p = os.path.join(out, name)
        if os.path.exists(p):
            print(f"## {title}\n\n" + open(p).read())


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "gpuspeed":
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    out = sys.argv[2]
    mismatch, failed = verdict(os.environ.get("SUMMARY", os.path.join(out, "summary.tsv")))
    gpuspeed(out, mismatch, failed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
