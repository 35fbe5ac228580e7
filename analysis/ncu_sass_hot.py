#!/usr/bin/env python3
"""Hot SASS instructions of one kernel from `ncu --import R --page source --csv --print-source sass`.

Usage: ncu_sass_hot.py SOURCE.csv OUT.csv.gz [N]
Writes the whole per-instruction table gzipped to OUT.csv.gz and prints the N (default 80)
instructions with the most warp-stall samples: address, samples, share, SASS text.
"""
import csv
import gzip
import sys


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    rows = list(csv.reader(open(sys.argv[1])))
    hi = next(i for i, r in enumerate(rows) if "Source" in r)
    hdr, body = rows[hi], [r for r in rows[hi + 1:] if len(r) == len(rows[hi])]
    with gzip.open(sys.argv[2], "wt") as f:
        w = csv.writer(f)
        w.writerow(hdr)
        w.writerows(body)
    pick = lambda *names: next((hdr.index(h) for n in names for h in hdr if h.startswith(n)), None)
    src, addr = pick("Source"), pick("Address")
    samp = pick("Warp Stall Sampling (All Samples)", "Sampling Data (All)")
    if samp is None:
        print("no stall-sampling column; columns:", hdr)
        return
    total = sum(num(r[samp]) for r in body) or 1.0
    print(f"total stall samples {total:.0f}")
    for r in sorted(body, key=lambda r: -num(r[samp]))[: int(sys.argv[3]) if len(sys.argv) > 3 else 80]:
        print(f"{r[addr] if addr is not None else '':>8} {num(r[samp]):8.0f} {100 * num(r[samp]) / total:5.1f}%  {r[src]}")


main()
