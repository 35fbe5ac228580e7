#!/usr/bin/python3
"""A stand-in for the tqref binary on a machine without a GPU, for tests/device_launches_host.sh:
`generate` and `version` run the real CPU build (REAL_TQREF); `conform --modules DIR --suites
A.h5,B.h5 ... --out OUT` judges every suite with `tqref check --backend model` (the same
dispatch and level T notes) and writes OUT/conform.json in the layout of harness/conform/
report.cpp, each module taking the cases of its kernels. A module named mutant_2[1-6]_* (the
offset and build-flag mutants) fails every case it gets, as they must on the GPU; any other
module gets the model's verdicts; FAKE_BREAK=control makes the control (mutant_27_*) fail too,
so that the host test sees the script refuse it. Exit codes as tqref conform: 0 all passed, 1 a case failed."""
import json, os, subprocess, sys

real = os.environ["REAL_TQREF"]
args = sys.argv[1:]
if not args or args[0] in ("generate", "version"):
    sys.exit(subprocess.call([real] + args))
if args[0] != "conform":
    sys.exit(2)
opt = {args[i]: args[i + 1] for i in range(1, len(args) - 1) if args[i].startswith("--") and not args[i + 1].startswith("--")}
out, mods = opt["--out"], sorted(os.listdir(opt["--modules"]))
os.makedirs(out, exist_ok=True)
suites = []
cache = os.environ.get("FAKE_CACHE", out)  # one model run per suite file (they repeat across runs)
for path in opt["--suites"].split(","):
    rep = os.path.join(cache, path.strip("/").replace("/", "_") + ".json")
    if not os.path.exists(rep):
        subprocess.run([real, "check", path, "--report", rep], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    suites.append((path, json.load(open(rep))["results"]))
def takes(module, kernel):
    if module.endswith(".writers.fatbin") or module.startswith("writers."):
        return kernel.startswith("reshape_and_cache")
    return kernel.startswith("paged_decode_attn")
modules, failed = [], 0
for m in mods:
    broken = ("mutant_21_", "mutant_22_", "mutant_23_", "mutant_24_", "mutant_25_", "mutant_26_")
    bad = m.startswith(broken + (("mutant_27_",) if os.environ.get("FAKE_BREAK") == "control" else ()))
    runs = []
    for path, results in suites:
        mine = [dict(r, **({"pass": False} if bad else {})) for r in results if takes(m, r["kernel"])]
        failed += sum(not r["pass"] for r in mine)
        runs.append({"suite": path, "check": {"results": mine}, "tolerance": {"cases": [
            {"name": r["name"], "differing_from_model": 0} for r in mine if "outside the contract" in r["note"]]}})
    modules.append({"path": os.path.join(opt["--modules"], m), "suites": runs})
json.dump({"tool": "fake tqref conform", "modules": modules}, open(os.path.join(out, "conform.json"), "w"))
open(os.path.join(out, "conform.md"), "w").write("# fake conform report\n")
sys.exit(1 if failed else 0)
