#!/usr/bin/env python3
"""What the levelI plan asserts beyond exit codes (docs/invariance-and-anatomy.md).

usage: levelI_checks.py property REPORT.json PROPERTY
       levelI_checks.py anatomy SCRATCH OUTDIR

property: the level I report of an invariance mutant (18 dense_large_batch, 19 block_parity_lsb,
  20 writer_contiguous) names exactly its property: the failing level I cases' diagnoses are
  "invariance:PROPERTY" and nothing else.
anatomy: over SCRATCH/conform-mutants and SCRATCH/conform-own (conform.json, and the mutant run's
  terminal output SCRATCH/conform-mutants.out): every failing case of the mutant run carries an
  anatomy sentence and a hypothesis verdict (at level I, its sentence), also on the terminal; every
  decoder module of both runs has its HDIM decided, by its writes or as stated. Writes
  OUTDIR/anatomy.tsv (module, suite, case, diagnosis, sentence, verdict, the mutant's own
  hypothesis), OUTDIR/hdim.tsv (run, module, HDIM, evidence, why) and the reports
  OUTDIR/conform-{own,mutants}.md, trimmed to 400 kB.
Exit 0 when it holds, 1 otherwise.
"""
import json
import os
import sys

# What each classic mutant's own hypothesis is (docs/mutants.md); a verdict naming it is expected
# for the cases that fail at the exact level (reported, not required: GPU timing can make
# mutant 11-style races differ).
OWN_HYPOTHESIS = {
    "mutant_1_": "hypothesis:slot-plus1", "mutant_2_": "hypothesis:bound-strict",
    "mutant_9_": "hypothesis:scale-fp8-rz", "mutant_17_": "hypothesis:writer-tight-data-section",
    "mutant_6_": "hypothesis:neighbour-scale", "mutant_15_": "hypothesis:skip-disabled",
    "mutant_14_": "hypothesis:expf-no-split", "mutant_8_": "hypothesis:tight-block-stride",
    "mutant_12_": "hypothesis:window-plus1", "mutant_19_": "pattern:lowest-bit"}


def names_property(report, prop):
    try:
        j = json.load(open(report))
        diags = ",".join(sorted({c["diagnosis"] for c in j["invariance"]["cases"] if not c["pass"]}))
    except (OSError, ValueError, KeyError) as e:
        diags = f"(unreadable report: {e})"
    want = "invariance:" + prop
    print(f"diagnoses of the failing level I cases: '{diags}' (expected '{want}')")
    return 0 if diags == want else 1


def anatomy(scratch, out):
    for r in ("own", "mutants"):
        md = os.path.join(scratch, f"conform-{r}", "conform.md")
        if os.path.exists(md):
            text = open(md, "rb").read(400000)
            open(os.path.join(out, f"conform-{r}.md"), "wb").write(text)
            lines = text.decode(errors="replace").splitlines()
            print(f"--- conform {r}: {lines[2] if len(lines) > 2 else ''}")
    mut_json = os.path.join(scratch, "conform-mutants", "conform.json")
    own_json = os.path.join(scratch, "conform-own", "conform.json")
    terminal = os.path.join(scratch, "conform-mutants.out")
    problems, rows, hd = [], [], []
    term = open(terminal, errors="replace").read() if os.path.exists(terminal) else ""
    for path, label in ((mut_json, "mutants"), (own_json, "own")):
        if not os.path.exists(path):
            problems.append(f"{label}: no conform.json")
            continue
        j = json.load(open(path))
        for m in j["modules"]:
            tag = m["tag"]
            if m["hdim"]:
                hd.append((label, tag, m["hdim"], m.get("hdim_evidence", ""), m["hdim_why"]))
                if m.get("hdim_evidence") not in ("writes", "stated"):
                    problems.append(f"{tag}: HDIM evidence {m.get('hdim_evidence')!r}")
            want = next((v for k, v in OWN_HYPOTHESIS.items() if k in tag), None)
            for s in m["suites"]:
                for c in s["check"]["results"]:
                    if c["pass"]:
                        continue
                    a = c.get("anatomy", {})
                    rows.append((tag, s["suite"], c["name"], a.get("diagnosis", ""), a.get("sentence", ""),
                                 a.get("verdict", ""), want or ""))
                    if not a.get("sentence") or not a.get("verdict"):
                        problems.append(f"{tag}/{c['name']}: no anatomy sentence or verdict")
                    elif a["sentence"][:60] not in term:
                        problems.append(f"{tag}/{c['name']}: anatomy not on the terminal")
                for c in s.get("invariance", {}).get("cases", []):
                    if not c["pass"]:
                        rows.append((tag, s["suite"], c["name"] + " [level I]", c["diagnosis"], c["sentence"], "", ""))
                        if not c["sentence"]:
                            problems.append(f"{tag}/{c['name']}: level I failure without a sentence")
    with open(os.path.join(out, "anatomy.tsv"), "w") as f:
        f.write("module\tsuite\tcase\tdiagnosis\tsentence\tverdict\tmutant's own hypothesis\n")
        for r in rows:
            f.write("\t".join(str(x).replace("\t", " ") for x in r) + "\n")
    with open(os.path.join(out, "hdim.tsv"), "w") as f:
        f.write("run\tmodule\thdim\tevidence\twhy\n")
        for r in hd:
            f.write("\t".join(str(x) for x in r) + "\n")
    named = sum(1 for r in rows if r[6] and r[3] == r[6])
    expected = sum(1 for r in rows if r[6])
    print(f"failing cases: {len(rows)}; with the mutant's own diagnosis: {named} of {expected}")
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "property":
        return names_property(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 4 and sys.argv[1] == "anatomy":
        return anatomy(sys.argv[2], sys.argv[3])
    print("usage: levelI_checks.py property REPORT.json PROPERTY | anatomy SCRATCH OUTDIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
