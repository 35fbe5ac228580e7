#!/usr/bin/python3
"""analysis/ncu_join.py on synthetic `tqref bench` JSON and ncu CSV (no GPU, no ncu needed).

Catches: a result given another result's launches (wrong per-kernel order or launch count), a
grid check that lets a shifted launch order through, launches left over, a units row read as a
launch, scaled units (Mbyte, msecond) taken as base units, the long (--page details) form parsed
differently from the wide (--page raw) one, per-pair / per-group divisions by the wrong count.
"""
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
JOIN = ROOT / "analysis" / "ncu_join.py"
METRICS = ["smsp__inst_executed.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
           "sm__cycles_elapsed.avg"]

BENCH = {
    "schema": "tqref.bench/1",
    "device": {"name": "G", "sm_count": 10},
    "decode": [
        {"kernel": "dec", "heads_per_cta": 0, "format": "turbo3v", "hdim": 128, "num_seqs": 2, "num_q_heads": 8,
         "num_kv_heads": 2, "seq_len": 100, "q_sigma": 1, "model": "", "pairs": 1600, "grid_x": 8, "launches": 2,
         "timing": {"median_ms": 0.5}, "conformant": True, "k_bytes": 1, "v_bytes_full": 1, "qo_bytes": 1},
        {"kernel": "dec_gqa", "heads_per_cta": 4, "format": "turbo3v", "hdim": 128, "num_seqs": 2,
         "num_q_heads": 8, "num_kv_heads": 2, "seq_len": 100, "q_sigma": 1, "model": "", "pairs": 1600,
         "grid_x": 2, "launches": 2, "timing": {"median_ms": 0.25}, "conformant": True,
         "k_bytes": 1, "v_bytes_full": 1, "qo_bytes": 1},
        {"kernel": "dec", "heads_per_cta": 0, "format": "turbo3v", "hdim": 128, "num_seqs": 2, "num_q_heads": 8,
         "num_kv_heads": 2, "seq_len": 400, "q_sigma": 1, "model": "M", "pairs": 6400, "grid_x": 8, "launches": 2,
         "timing": {"median_ms": 2.0}, "conformant": True, "k_bytes": 1, "v_bytes_full": 1, "qo_bytes": 1},
    ],
    "writer": [
        {"kernel": "wr_fast", "fast": True, "format": "turbo2v", "hdim": 128, "num_kv_heads": 8, "tokens": 64,
         "grid_x": 16, "launches": 3, "timing": {"median_ms": 0.01}, "conformant": True, "bytes": 5},
    ],
}

# Launch order as the bench makes it: shape 1 (dec x2, stats, gqa x2), shape 2 (dec x2), writer x3.
LAUNCHES = [("dec", (8, 2, 1), 1000), ("dec", (8, 2, 1), 1000), ("dec_gqa_stats", (2, 2, 1), 7),
            ("dec_gqa", (2, 2, 1), 400), ("dec_gqa", (2, 2, 1), 400), ("dec", (8, 2, 1), 4000),
            ("dec", (8, 2, 1), 4000), ("wr_fast", (16, 1, 1), 90), ("wr_fast", (16, 1, 1), 90),
            ("wr_fast", (16, 1, 1), 96)]


def wide_csv(launches):
    hdr = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
           "Grid Size", "Device", "CC"] + METRICS
    units = ["", "", "", "", "", "", "", "", "", "", "", "inst", "Mbyte", "byte", "msecond", "cycle"]
    rows = ["==PROF== Connected to process 1", ",".join(f'"{h}"' for h in hdr), ",".join(f'"{u}"' for u in units)]
    for i, (k, g, inst) in enumerate(launches):
        vals = [str(i), "1", "tqref", "h", f"{k}(int*)", "1", "7", "(256, 1, 1)", f"({g[0]}, {g[1]}, {g[2]})",
                "0", "9.0", f"{inst:,}", "2.5", "1,000", "0.125", "50"]
        rows.append(",".join(f'"{v}"' for v in vals))
    return "\n".join(rows) + "\n"


def long_csv(launches):
    hdr = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
           "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]
    rows = [",".join(f'"{h}"' for h in hdr)]
    for i, (k, g, inst) in enumerate(launches):
        for m, u, v in zip(METRICS, ["inst", "Mbyte", "byte", "msecond", "cycle"],
                           [f"{inst:,}", "2.5", "1,000", "0.125", "50"]):
            vals = [str(i), "1", "tqref", "h", k, "1", "7", "(256, 1, 1)", f"({g[0]}, {g[1]}, {g[2]})", "0",
                    "9.0", "Command line profiler metrics", m, u, v]
            rows.append(",".join(f'"{x}"' for x in vals))
    return "\n".join(rows) + "\n"


def run(tmp, csv_text, bench=BENCH):
    (tmp / "b.json").write_text(json.dumps(bench))
    (tmp / "n.csv").write_text(csv_text)
    p = subprocess.run([sys.executable, str(JOIN), "--bench", str(tmp / "b.json"), "--ncu", str(tmp / "n.csv"),
                        "--timed", str(tmp / "b.json"), "--json", str(tmp / "o.json"), "--md", str(tmp / "o.md")],
                       capture_output=True, text=True)
    return p.returncode, p.stderr, (json.loads((tmp / "o.json").read_text()) if p.returncode == 0 else None)


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}")
        sys.exit(1)


def main():
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        for name, text in (("wide", wide_csv(LAUNCHES)), ("long", long_csv(LAUNCHES))):
            rc, err, out = run(tmp, text)
            check(rc == 0, f"{name}: exit {rc}: {err}")
            rows = out["rows"]
            check([r["kernel"] for r in rows] == ["dec", "dec_gqa", "dec", "wr_fast"], f"{name}: result order")
            check([r["warp_inst"] for r in rows] == [1000, 400, 4000, 96], f"{name}: last launch of each result")
            check(abs(rows[2]["inst_per_unit"] - 4000 / 6400) < 1e-12, f"{name}: instructions per pair")
            check(abs(rows[3]["inst_per_unit"] - 96 / (64 * 8 * 128 / 16)) < 1e-12, f"{name}: per group")
            check(rows[0]["dram_read"] == 2.5e6 and rows[0]["dram_write"] == 1000, f"{name}: byte units")
            check(abs(rows[0]["ncu_ms"] - 0.125) < 1e-12, f"{name}: msecond unit")
            check(abs(rows[0]["issue_utilisation"] - 1000 / (4 * 10 * 50)) < 1e-12, f"{name}: issue share")
            check(rows[1]["median_ms"] == 0.25 and rows[1]["conformant"] is True, f"{name}: timed join")
        shifted = LAUNCHES[:3] + LAUNCHES[5:7] + LAUNCHES[3:5] + LAUNCHES[7:]
        shifted = [(k, (2, 2, 1) if k == "dec" and i >= 3 else g, n) for i, (k, g, n) in enumerate(shifted)]
        rc, err, _ = run(tmp, wide_csv(shifted))
        check(rc == 2 and "grid" in err, f"a launch with another grid must fail the join: {rc} {err}")
        rc, err, _ = run(tmp, wide_csv(LAUNCHES + [("dec", (8, 2, 1), 5)]))
        check(rc == 2 and "belong to no result" in err, f"a left-over launch must fail: {rc} {err}")
        rc, err, _ = run(tmp, wide_csv(LAUNCHES[:-1]))
        check(rc == 2 and "launches expected" in err, f"a missing launch must fail: {rc} {err}")
    print("test_ncu_join: all checks passed")


if __name__ == "__main__":
    main()
