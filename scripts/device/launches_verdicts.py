#!/usr/bin/env python3
"""What the launches plan's conform reports say (docs/models.md, docs/mutants.md "Build-flag
mutants" and "Pools"), per run, module and kernel, and the expectations on them:
  own (our writers, decode_hdim128, decode_hdim256 over models, pools, flags and smoke): no case
    fails; decode_hdim128 has launches outside the contract (models suite, published dispatch),
    all within level T, none of their elements differing from docs/spec.md section 5.1; every
    module has pools cases and they pass;
  m21_offset32 (32-bit pool offsets): pools cases fail, in each of its modules;
  m22..m26 (the build-flag mutants): some case fails;
  m27_plain_ieee (the control): no case fails.

usage: launches_verdicts.py SCRATCH LAUNCHES.tsv
Reads SCRATCH/conform-*/conform.json (scripts/device/conform-modules.sh), writes LAUNCHES.tsv (run,
module, kernel, suite: cases, passed, failed, outside the contract, differing from 5.1), prints the
notes and every PROBLEM. Exit 0 when every expectation holds, 1 otherwise.
"""
import glob, json, os, sys
tmp, tsv = sys.argv[1], sys.argv[2]
rows, problems, notes = [], [], []
def load(run):
    p = os.path.join(tmp, "conform-" + run, "conform.json")
    try:
        return json.load(open(p))
    except Exception as e:
        problems.append(f"{run}: no readable conform.json ({e})")
        return None
def cases(mod):
    """(suite, case result, level-T record or None) of every case judged for a module."""
    for su in mod.get("suites", []):
        tol = {c.get("name"): c for c in (su.get("tolerance") or {}).get("cases", [])}
        for r in su["check"]["results"]:
            yield os.path.basename(su["suite"]).removesuffix(".h5"), r, tol.get(r["name"])
runs = sorted(os.path.basename(d)[len("conform-"):] for d in glob.glob(os.path.join(tmp, "conform-*")))
for run in runs:
    j = load(run)
    if j is None:
        continue
    for mod in j["modules"]:
        m = os.path.basename(mod["path"])
        per = {}
        for suite, r, t in cases(mod):
            k = per.setdefault((r["kernel"], suite), {"cases": 0, "passed": 0, "failed": 0, "ooc": 0, "differ": 0})
            k["cases"] += 1
            k["passed" if r["pass"] else "failed"] += 1
            ooc = "outside the contract" in (r.get("note") or "")
            k["ooc"] += ooc
            if t is not None:
                k["differ"] += int(t.get("differing_from_model", 0))
            if run == "own" and not r["pass"]:
                problems.append(f"own {m}: {suite} case {r['name']} failed ({'outside the contract' if ooc else 'exact'})")
        for (kernel, suite), k in sorted(per.items()):
            rows.append([run, m, kernel, suite, k["cases"], k["passed"], k["failed"], k["ooc"], k["differ"]])
        if run == "own":
            ooc = sum(k["ooc"] for k in per.values())
            differ = sum(k["differ"] for k in per.values())
            if m.startswith("decode_hdim128") and ooc == 0:
                problems.append(f"own {m}: no launch outside the contract was judged (models suite, published dispatch)")
            if differ:
                problems.append(f"own {m}: {differ} elements of launches outside the contract differ from docs/spec.md section 5.1")
            if ooc:
                own = mod.get("builtin") or "not recognised as the embedded build"
                notes.append(f"own {m} ({own}): {ooc} launches outside the contract, all within level T, "
                             f"{differ} elements differ from section 5.1")
            pools = [k for (kern, s), k in per.items() if s == "pools"]
            if not pools or any(k["failed"] for k in pools):
                problems.append(f"own {m}: pools cases missing or failing")
        if run.startswith("m21_"):
            pools = sum(k["failed"] for (kern, s), k in per.items() if s == "pools")
            notes.append(f"offset32 {m}: {pools} pools cases fail")
            if pools == 0:
                problems.append(f"offset32 {m}: no pools case fails")
    fails = sum(r[6] for r in rows if r[0] == run)
    if run.startswith(("m22_", "m23_", "m24_", "m25_", "m26_")):
        which = sorted({f"{r[2]} ({r[3]})" for r in rows if r[0] == run and r[6]})
        notes.append(f"{run}: {fails} failing cases: {', '.join(which) if which else 'none'}")
        if fails == 0:
            problems.append(f"{run}: the build-flag mutant passes every case")
    if run.startswith("m27_") and fails:
        problems.append(f"{run}: the control fails {fails} cases")
with open(tsv, "w") as f:
    f.write("run\tmodule\tkernel\tsuite\tcases\tpassed\tfailed\toutside_contract\tdiffer_from_5.1\n")
    for r in rows:
        f.write("\t".join(map(str, r)) + "\n")
for n in notes:
    print("  " + n)
for p in problems:
    print("  PROBLEM: " + p)
sys.exit(1 if problems else 0)
