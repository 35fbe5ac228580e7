#!/usr/bin/python3
"""scripts/device/variants_verdicts.py (the variants plan's verdict table) on synthetic conform.json
reports, no GPU needed.

Catches: a module pin credited to the own variant when it names another hypothesis, a tie or a
missing pin read as a pin, the own variants of mutants 23/25/26 chosen without the approximate-unit
tables (or kept without them), failing cases counted as pinned when the anatomy only tied, and a
failing control (own, mutant 27) or a mutant that fails nothing not reported as a problem (exit 1).
"""
import csv
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "device" / "variants_verdicts.py"
PIN = "pinned across the module: {} reproduces all 2 failing cases and changes none of its passing cases"


def result(ok, diagnosis=""):
    return {"pass": ok, "anatomy": {"diagnosis": diagnosis} if diagnosis else None}


def module(path, results, pin=""):
    return {"path": path, "pin": pin, "suites": [{"check": {"results": results}}]}


def write_run(scratch, run, modules):
    d = scratch / f"conform-{run}"
    d.mkdir()
    (d / "conform.json").write_text(json.dumps({"modules": modules}))


def run_script(cwd, scratch):
    tsv = scratch / "variants.tsv"
    p = subprocess.run([sys.executable, str(SCRIPT), str(scratch), str(tsv)], cwd=cwd,
                       capture_output=True, text=True)
    rows = list(csv.DictReader(open(tsv), delimiter="\t")) if tsv.exists() else []
    return p.returncode, p.stdout, {(r["run"], r["module"]): r for r in rows}


def expect(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        scratch = tmp / "scratch"
        scratch.mkdir()
        write_run(scratch, "own", [module("writers.fatbin", [result(True)] * 3)])
        write_run(scratch, "m25_plain_prec_div", [
            module("m25.writers.fatbin", [result(True), result(False, "hypothesis:variant:prec-div"),
                                          result(False, "tie:variant:prec-div|variant:fast-math")],
                   PIN.format("variant:prec-div"))])
        write_run(scratch, "m14_expf_no_split", [
            module("m14.decode_hdim128.fatbin", [result(False, "tie:expf-no-split|variant:ftz")] * 2,
                   PIN.format("variant:ftz"))])
        write_run(scratch, "m3_no_batch", [
            module("m3.decode_hdim128.fatbin", [result(False, "tie:a|b")] * 2,
                   "not pinned across the module: 2 hypotheses reproduce every failing case")])

        # Without data/hw/sm_90/approx.h5 under the working directory: mutant 25 has no own variant.
        rc, out, rows = run_script(tmp, scratch)
        expect(rc == 0, f"expectations hold, exit 0 (got {rc}: {out})")
        r = rows[("m25_plain_prec_div", "m25.writers.fatbin")]
        expect(r["own variant"] == "-", "no own variant for mutant 25 without the tables")
        expect(r["module pin"] == "variant:prec-div", "the pin is named, not credited as own, without the tables")

        # With the tables: mutant 25's own variant is prec-div, its pin and one case are credited.
        (tmp / "data" / "hw" / "sm_90").mkdir(parents=True)
        (tmp / "data" / "hw" / "sm_90" / "approx.h5").write_bytes(b"")
        rc, out, rows = run_script(tmp, scratch)
        r = rows[("m25_plain_prec_div", "m25.writers.fatbin")]
        expect(r["own variant"] == "variant:prec-div", "own variant of mutant 25 with the tables")
        expect((r["failed"], r["pinned by own"], r["tie incl. own"]) == ("2", "1", "1"),
               f"one case pinned, one tie (got {r})")
        expect(r["module pin"] == "own", "the module pin naming the own variant is marked own")
        r = rows[("m14_expf_no_split", "m14.decode_hdim128.fatbin")]
        expect(r["module pin"] == "variant:ftz", "a pin naming another hypothesis is not credited as own")
        expect(r["pinned by own"] == "0" and r["tie incl. own"] == "2", "ties are not pins")
        expect(rows[("m3_no_batch", "m3.decode_hdim128.fatbin")]["module pin"] == "-",
               "an unpinned module shows no pin")

        # A failing control and a mutant that fails nothing are problems (exit 1).
        write_run(scratch, "m27_plain_ieee", [module("m27.writers.fatbin", [result(False, "x")])])
        write_run(scratch, "m4_merge_sequential", [module("m4.decode_hdim256.fatbin", [result(True)])])
        rc, out, _ = run_script(tmp, scratch)
        expect(rc == 1 and "m27_plain_ieee" in out and "m4_merge_sequential" in out,
               f"both problems reported, exit 1 (got {rc}: {out})")
    print("ok")


if __name__ == "__main__":
    main()
