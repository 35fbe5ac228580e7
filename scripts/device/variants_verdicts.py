#!/usr/bin/env python3
"""What the variants plan's conform reports say (docs/variants.md, "Pinning on the H200"): per run
and module, the failing cases and how the failure anatomy named them: pinned by the module's own
variant (`hypothesis:<own>`), a tie that includes it (`tie:...`), or something else; and the
module pin (conform.json's `pin`: the one hypothesis that reproduces every failing case of the
module and changes none of its passing ones), marked `own` when it names the own variant.

usage: variants_verdicts.py SCRATCH VARIANTS.tsv
Reads SCRATCH/conform-*/conform.json (scripts/device/conform-modules.sh); run from the repository
root (the plan does), where data/hw/sm_90/approx.h5 decides the own variants of mutants 23, 25, 26. Expectations: `own` and
`m27_plain_ieee` fail no case; every other run fails some case in each of its modules. The own
variant of a run (OWN below) is reported beside the counts; its absence is a finding, not a
failure of this script. Exit 0 when the expectations on pass/fail hold, 1 otherwise.
"""
import collections, glob, json, os, sys

# run -> (own hypothesis for writer modules, own hypothesis for decoder modules); None: no exact model
OWN = {
    "m22_plain_nvcc_default": ("writer-fma", "variant:nvcc-fmad"),
    "m23_plain_fast_math": (None, "variant:nvcc-fmad+ftz"),
    "m24_plain_ftz": ("variant:ftz", "variant:ftz"),
    "m25_plain_prec_div": (None, None),
    "m26_plain_prec_sqrt": (None, None),
    "m3_no_batch": (None, "variant:no-batch"),
    "m4_merge_sequential": (None, "variant:merge-sequential"),
    "m10_butterfly_ascending": (None, "variant:butterfly-ascending"),
    "m13_fmad": ("writer-fma", "variant:fmad-mutant13"),
    "m14_expf_no_split": (None, "expf-no-split"),
    "m16_fp32_codebook": (None, "variant:fp32-codebook"),
}
# With the measured approximate units (data/hw/sm_90/approx.h5, written by the plan `approx` in the
# same call; docs/approx-units.md) the builds without -prec-div / -prec-sqrt have exact variants.
if os.path.exists(os.path.join("data", "hw", "sm_90", "approx.h5")):
    OWN["m23_plain_fast_math"] = ("variant:fast-math", "variant:fast-math")
    OWN["m25_plain_prec_div"] = ("variant:prec-div", "variant:prec-div")
    OWN["m26_plain_prec_sqrt"] = ("variant:prec-sqrt", None)
MUST_PASS = {"own", "m27_plain_ieee"}


def module_pin(verdict, own):
    """'own', the hypothesis the module pin names, or '-' (no pin: a tie, nothing, no failure)."""
    prefix = "pinned across the module: "
    if not verdict.startswith(prefix):
        return "-"
    named = verdict[len(prefix):].split(" ", 1)[0]
    return "own" if own and named == own else named


scratch, tsv = sys.argv[1], sys.argv[2]
rows, problems = [], []
for d in sorted(glob.glob(os.path.join(scratch, "conform-*"))):
    run = os.path.basename(d)[len("conform-"):]
    try:
        j = json.load(open(os.path.join(d, "conform.json")))
    except Exception as e:
        problems.append(f"{run}: no readable conform.json ({e})")
        continue
    for mod in j["modules"]:
        m = os.path.basename(mod["path"])
        own = OWN.get(run, (None, None))[0 if "writers" in m else 1]
        n = failed = pinned = tied = 0
        other = collections.Counter()
        for su in mod.get("suites", []):
            for r in su["check"]["results"]:
                n += 1
                if r["pass"]:
                    continue
                failed += 1
                diag = (r.get("anatomy") or {}).get("diagnosis", "")
                if own and diag == "hypothesis:" + own:
                    pinned += 1
                elif own and diag.startswith("tie:") and own in diag[4:].split("|"):
                    tied += 1
                else:
                    other[diag or "(none)"] += 1
        rows.append([run, m, own or "-", n, failed, pinned, tied, module_pin(mod.get("pin", ""), own),
                     "; ".join(f"{k} x{v}" for k, v in other.most_common(6))])
        if run in MUST_PASS and failed:
            problems.append(f"{run} {m}: {failed} cases fail")
        if run not in MUST_PASS and not failed:
            problems.append(f"{run} {m}: no case fails")
with open(tsv, "w") as f:
    f.write("run\tmodule\town variant\tcases\tfailed\tpinned by own\ttie incl. own\tmodule pin\tother diagnoses\n")
    for r in rows:
        f.write("\t".join(map(str, r)) + "\n")
for r in rows:
    print("\t".join(map(str, r)))
for p in problems:
    print("PROBLEM:", p)
sys.exit(1 if problems else 0)
