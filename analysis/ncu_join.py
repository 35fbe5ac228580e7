#!/usr/bin/env python3
"""Joins Nsight Compute's per-launch metrics with the results of the `tqref bench` run it profiled.

`tqref bench --json B.json` run under `ncu --csv --page raw --print-units base --metrics M` prints
one CSV row per profiled launch, in launch order. Every bench result records its kernel, grid and
how many launches of that kernel it made (`launches`: conformance runs, warm-up, timed runs), and
results of one kernel never interleave, so the k-th result of kernel K owns the next `launches` rows
of K. The join checks that every row's grid is the result's grid and that every row is used (a
different launch order fails loudly instead of attributing numbers to the wrong shape); it keeps the
last row of each result (a timed-path launch; all launches of a result do the same work).

Per result it reports warp instructions (smsp__inst_executed.sum), DRAM bytes read and written,
the ncu duration, and per unit of work: instructions and bytes per (q head, position) pair for the
decoders, per 16-value group for the writers, and the share of the SMs' issue slots used
(warp instructions / (4 x SMs x elapsed SM cycles)). With --timed T.json (the same shapes run normally,
checked and timed), each row also gets that run's median time.

usage: ncu_join.py --bench B.json --ncu N.csv [--ncu ...] [--timed T.json ...] --json OUT.json --md OUT.md
Exit status 0, or 2 with a message naming the file and the row or result that does not fit.
"""
import argparse
import csv
import json
import sys

METRICS = ("smsp__inst_executed.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
           "sm__cycles_elapsed.avg")
# Unit names ncu prints with --print-units base (and the scaled ones, should they appear).
SCALE = {"inst": 1, "cycle": 1, "block": 1, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9,
         "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0, "ns": 1e-9, "us": 1e-6,
         "ms": 1e-3, "s": 1.0, "": 1}


class JoinError(Exception):
    pass


def _number(text, unit, where, metric):
    if unit not in SCALE:
        raise JoinError(f"{where}: unit {unit!r} of {metric} not understood")
    return float(text.replace(",", "")) * SCALE[unit]


def _grid(d, metrics):
    """(x, y, z) from the 'Grid Size' column, or (total, 1, 1) from launch__grid_size."""
    if d.get("Grid Size"):
        return tuple(int(v) for v in d["Grid Size"].strip("()").split(","))
    return (int(metrics["launch__grid_size"]), 1, 1)


def read_ncu(path):
    """Launches of an ncu CSV as dicts: kernel, grid (x, y, z) and METRICS in base units. Reads the
    wide form (--page raw: one row per launch, a units row) and the long form (--page details: one
    row per metric, 'Metric Name' / 'Metric Unit' / 'Metric Value')."""
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's own "==PROF==" lines are not CSV
    rows = list(csv.reader(lines))
    if not rows:
        raise JoinError(f"{path}: no CSV rows (did ncu profile any launch?)")
    hdr = rows[0]
    if "Kernel Name" not in hdr or "ID" not in hdr:
        raise JoinError(f"{path}: not an ncu CSV (no 'ID' / 'Kernel Name' columns)")
    launches = {}  # ID -> (first row dict, {metric: value})
    if "Metric Name" in hdr:
        for i, r in enumerate(rows[1:]):
            d = dict(zip(hdr, r))
            m = d["Metric Name"]
            if m in METRICS or m == "launch__grid_size":
                launches.setdefault(d["ID"], (d, {}))[1][m] = _number(d["Metric Value"], d["Metric Unit"],
                                                                       f"{path} row {i + 2}", m)
    else:
        body = rows[1:]
        units = {}
        if body and body[0][hdr.index("ID")] == "":  # the units row
            units = dict(zip(hdr, body[0]))
            body = body[1:]
        for i, r in enumerate(body):
            d = dict(zip(hdr, r))
            launches[d["ID"]] = (d, {m: _number(d[m], units.get(m, ""), f"{path} row {i + 3}", m)
                                     for m in METRICS + ("launch__grid_size",) if m in d})
    out = []
    for lid, (d, metrics) in sorted(launches.items(), key=lambda kv: int(kv[0])):
        missing = [m for m in METRICS if m not in metrics]
        if missing:
            raise JoinError(f"{path}: launch {lid}: metrics {missing} missing (ncu --metrics {','.join(METRICS)})")
        out.append({"kernel": d["Kernel Name"].split("(")[0].strip(), "grid": _grid(d, metrics),
                    "where": f"{path} launch {lid}", **metrics})
    return out


def results_of(bench):
    """(kind, result) in the order tqref bench ran them: decoders first, then writers."""
    return [("decode", r) for r in bench["decode"]] + [("writer", r) for r in bench["writer"]]


def grid_of(kind, r):
    return (r["grid_x"], r["num_seqs"], 1) if kind == "decode" else (r["grid_x"], 1, 1)


def label(kind, r):
    if kind == "decode":
        m = (r.get("model") or "") + " " if r.get("model") else ""
        return (f"{m}{r['format']} hdim{r['hdim']} {r['num_seqs']}x{r['num_q_heads']}/{r['num_kv_heads']} "
                f"L{r['seq_len']}")
    return f"{r['format']} hdim{r['hdim']} H{r['num_kv_heads']} tokens{r['tokens']}"


def key(kind, r):
    return (kind, label(kind, r), r["kernel"], r.get("heads_per_cta", 0), r.get("q_sigma", 0))


def join(bench, rows, bench_path):
    by_kernel = {}
    for row in rows:
        by_kernel.setdefault(row["kernel"], []).append(row)
    taken = {k: 0 for k in by_kernel}
    out = []
    for kind, r in results_of(bench):
        k = r["kernel"]
        if k not in by_kernel:
            continue  # not profiled (filtered out by the ncu --kernel-name regex)
        n = r["launches"]
        mine = by_kernel[k][taken[k]:taken[k] + n]
        taken[k] += n
        if len(mine) != n:
            raise JoinError(f"{bench_path}: {label(kind, r)} {k}: {n} launches expected, ncu has {len(mine)} left")
        want = grid_of(kind, r)
        for row in mine:
            if row["grid"] != want and row["grid"] != (want[0] * want[1] * want[2], 1, 1):
                raise JoinError(f"{row['where']}: grid {row['grid']} for {label(kind, r)} {k}, "
                                f"expected {want}: launch order differs from the bench's")
        last = mine[-1]
        units = r["pairs"] if kind == "decode" else r["tokens"] * r["num_kv_heads"] * r["hdim"] // 16
        dram = last["dram__bytes_read.sum"] + last["dram__bytes_write.sum"]
        sm = bench["device"]["sm_count"]
        shape = {f: r[f] for f in ("format", "hdim", "num_kv_heads", "num_seqs", "num_q_heads", "seq_len", "tokens")
                 if f in r}
        out.append({"kind": kind, "label": label(kind, r), "kernel": k, "key": list(key(kind, r)), "shape": shape,
                    "device": bench["device"]["name"], "sm_count": sm, "sm_cycles": last["sm__cycles_elapsed.avg"],
                    "issue_utilisation": last["smsp__inst_executed.sum"] / (4 * sm * last["sm__cycles_elapsed.avg"]),
                    "heads_per_cta": r.get("heads_per_cta", 0), "fast": r.get("fast", False),
                    "warp_inst": last["smsp__inst_executed.sum"], "dram_read": last["dram__bytes_read.sum"],
                    "dram_write": last["dram__bytes_write.sum"], "ncu_ms": last["gpu__time_duration.sum"] * 1e3,
                    "units": units, "unit": "pair" if kind == "decode" else "group",
                    "inst_per_unit": last["smsp__inst_executed.sum"] / units, "bytes_per_unit": dram / units,
                    "bytes_model": r.get("bytes", r.get("k_bytes", 0) + r.get("v_bytes_full", 0) + r.get("qo_bytes", 0))})
    bench_kernels = {r["kernel"] for _, r in results_of(bench)}
    for k, rs in by_kernel.items():
        if k in bench_kernels and taken[k] != len(rs):
            raise JoinError(f"{bench_path}: {len(rs) - taken[k]} ncu launches of {k} belong to no result")
    return out


def add_timed(rows, timed_paths):
    timed = {}
    for p in timed_paths:
        with open(p) as f:
            t = json.load(f)
        for kind, r in results_of(t):
            timed[key(kind, r)] = (r["timing"]["median_ms"], r["conformant"])
    for row in rows:
        ms, ok = timed.get(tuple(row["key"]), (None, None))
        row["median_ms"], row["conformant"] = ms, ok


def markdown(rows):
    lines = ["| shape | kernel | HT | median ms | ncu ms | warp inst / unit | DRAM bytes / unit | DRAM GB | bits |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        kern = ("fast" if r["fast"] else "ref-order") if r["kind"] == "writer" else (
            "gqa" if r["heads_per_cta"] else "ref-order")
        ms = f"{r['median_ms']:.4f}" if r.get("median_ms") is not None else "-"
        bits = {True: "equal", False: "MISMATCH", None: "-"}[r.get("conformant")]
        lines.append(f"| {r['label']} | {kern} | {r['heads_per_cta'] or '-'} | {ms} | {r['ncu_ms']:.4f} | "
                     f"{r['inst_per_unit']:.2f} / {r['unit']} | {r['bytes_per_unit']:.1f} | "
                     f"{(r['dram_read'] + r['dram_write']) / 1e9:.3f} | {bits} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", action="append", required=True, help="JSON of the bench run ncu profiled")
    ap.add_argument("--ncu", action="append", required=True, help="ncu CSV of that run (same order as --bench)")
    ap.add_argument("--timed", action="append", default=[], help="JSON of a normal run of the same shapes")
    ap.add_argument("--json", required=True)
    ap.add_argument("--md", required=True)
    a = ap.parse_args()
    if len(a.bench) != len(a.ncu):
        print("ncu_join: give one --ncu per --bench", file=sys.stderr)
        return 2
    try:
        rows = []
        for b, n in zip(a.bench, a.ncu):
            with open(b) as f:
                bench = json.load(f)
            rows += join(bench, read_ncu(n), b)
        add_timed(rows, a.timed)
    except (OSError, ValueError, KeyError, JoinError) as e:
        print(f"ncu_join: {e}", file=sys.stderr)
        return 2
    with open(a.json, "w") as f:
        json.dump({"schema": "tqref.ncu_join/1", "rows": rows}, f, indent=1)
    with open(a.md, "w") as f:
        f.write(markdown(rows))
    print(markdown(rows), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
