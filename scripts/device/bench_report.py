#!/usr/bin/env python3
"""The report of a benchmark plan (floor or gpuspeed, scripts/device/plans.tsv), as Markdown.

usage: bench_report.py floor|gpuspeed OUTDIR > OUTDIR/report.md

Reads the plan's JSON in OUTDIR and the runner's summary.tsv ($SUMMARY, default OUTDIR/summary.tsv)
for the verdict line: a step that exited 1 is a mismatch (tqref bench and check exit 1 when a
launch's bits differ), any other step that did not give its expected exit failed. Exit 0.
floor: the checks' case counts, the decode table (x ref-order, x torch SDPA, skip rate, bits), the
goal time (16k GQA 4 turbo3v HDIM 128 at its best HT, <= 0.48 ms) and goal instructions (<= 25
per (q head, position) pair), per_launch.md. gpuspeed: the writer table with the 70 % of copy goal
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


def floor(out, mismatch, failed):
    print("# floor plan report\n")
    print(f"verdict: {'MISMATCH' if mismatch else 'every checked launch equal'}; "
          f"failed or skipped steps: {', '.join(failed) if failed else 'none'}\n")
    for name in ("smoke-floor.json", "smoke-gqa.json", "standard-floor.json"):
        r = load(out, name)
        if r:
            print(f"- {name}: backend {r['backend']}: {r['cases']} cases, {r['failed']} failed")
    print()
    torch = {}
    t = load(out, "torch_sdpa.json")
    if t:
        for r in t["results"]:
            torch[(r["num_q_heads"], r["num_kv_heads"], r["hdim"], r["seq_len"])] = r["median_ms"]
    f = load(out, "floor.json")
    goal = None
    if f:
        print("| decode shape | kernel | HT | median ms | x ref-order | x torch SDPA | skip % | bits |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        ref = {}
        for r in f["decode"]:
            lab = f"{r['format']} hdim{r['hdim']} {r['num_seqs']}x{r['num_q_heads']}/{r['num_kv_heads']} L{r['seq_len']}"
            ms = r["timing"]["median_ms"]
            if not r["heads_per_cta"]:
                ref[lab] = ms
            tq = torch.get((r["num_q_heads"], r["num_kv_heads"], r["hdim"], r["seq_len"]))
            print(f"| {lab} | {r.get('variant', 'gqa' if r['heads_per_cta'] else 'ref-order')} | "
                  f"{r['heads_per_cta'] or '-'} | {ms:.4f} | {ref.get(lab, 0) / ms if ms else 0:.2f} | "
                  f"{tq / ms if (tq and ms) else float('nan'):.2f} | {100 * r['skip_rate']:.2f} | "
                  f"{'equal' if r['conformant'] else 'MISMATCH'} |")
            if (r.get("variant") == "floor" and r["format"] == "turbo3v" and r["hdim"] == 128
                    and r["seq_len"] == 16384 and r["num_q_heads"] == 32 and r["num_kv_heads"] == 8):
                goal = min(goal or ms, ms)
        print()
    if t:
        print("torch SDPA (bf16): " + ", ".join(f"{k[0]}/{k[1]} d{k[2]} L{k[3]} {v:.4f} ms"
                                               for k, v in torch.items()) + "\n")
    ipp = None
    pl = load(out, "per_launch.json")
    if pl:
        rows = pl if isinstance(pl, list) else pl.get("rows", [])
        fl = [r for r in rows if r["kernel"].endswith("_floor")]
        if fl:
            ipp = min(r["inst_per_unit"] for r in fl)
    if goal is not None:
        print(f"goal time (16k GQA 4 turbo3v HDIM 128, best HT): {goal:.4f} ms, "
              f"{'met' if goal <= 0.48 else 'NOT met'} (<= 0.48 ms)")
    if ipp is not None:
        print(f"goal instructions: {ipp:.2f} warp instructions per (q head, position) pair, "
              f"{'met' if ipp <= 25 else 'NOT met'} (<= 25)")
    print()
    p = os.path.join(out, "per_launch.md")
    if os.path.exists(p):
        print("## Per launch (ncu, 32 x 32/8 x 128 x 16k turbo3v)\n\n" + open(p).read())


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
            print(f"| {lab} | {r.get('variant', 'gqa' if r['heads_per_cta'] else 'ref-order')} | "
                  f"{r['heads_per_cta'] or '-'} | {r['timing']['median_ms']:.4f} | {x:.2f} | "
                  f"{100 * r['skip_rate']:.2f} | {'equal' if r['conformant'] else 'MISMATCH'} |")
        print()
    for name, title in (("per_launch.md", "Per launch (ncu)"), ("gb10_projection.md", "GB10 projection")):
        p = os.path.join(out, name)
        if os.path.exists(p):
            print(f"## {title}\n\n" + open(p).read())


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("floor", "gpuspeed"):
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    out = sys.argv[2]
    mismatch, failed = verdict(os.environ.get("SUMMARY", os.path.join(out, "summary.tsv")))
    (floor if sys.argv[1] == "floor" else gpuspeed)(out, mismatch, failed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
