#!/usr/bin/env python3
"""What the faults plan asserts about one `tqref check` run with a faulty decoder module
(kernels/testing/faulty/faulty_decode.cu; docs/reliability.md, "GPU faults"), from the files
scripts/device/stamp-stderr.sh left in OUTDIR: NAME.out, NAME.err.ts, NAME.wall, NAME.json,
NAME.junit.xml. The run's exit code is the plan's own expectation (6 for a fault, 0 after).

usage: faults_checks.py fault|runaway|after OUTDIR [NAME]

fault NAME (trap, illegal): the faulting case named on stderr, and on stdout with its kernel and
  CUDA error; in the report, in order, every turbo2v/turbo4v case passes and every turbo3v decode
  case is an error naming a CUDA error, with at least two of them (a context reset in between),
  unless the reset failed (a sticky error): then tqref stops cleanly and every later case is
  "not launched";
runaway: the run ends within 15 s (--launch-timeout 2), the watchdog message on stdout, "exiting
  without CUDA teardown" on stderr (the time from it to the reaped process is printed); the cases
  before the hung turbo3v pass, it is an error naming the watchdog, every later one is "not
  launched";
after: the normal run on the built-in kernels (its case counts printed).
Always: JSON and JUnit reports written, no *.partial-* file left, no tqref process on the GPU.
Exit 0 when every assertion holds, 1 otherwise.
"""
import json
import os
import re
import shutil
import subprocess
import sys

failures = 0


def check(what, ok):
    global failures
    print(f"  {'ok  ' if ok else 'FAIL'}  {what}")
    failures += not ok


def read(path):
    try:
        return open(path, errors="replace").read()
    except OSError:
        return ""


def results(out, name):
    """[(case name, verdict)] in run order: "pass", "error: <error lines>" or "absent"."""
    try:
        rows = json.load(open(os.path.join(out, name + ".json")))["results"]
    except (OSError, ValueError, KeyError):
        return []
    first = {}
    for r in rows:
        first.setdefault(r["name"], r)
    listed = []
    for r in rows:
        f = first[r["name"]]
        v = "pass" if f["pass"] else "error: " + " | ".join(f.get("error", "").splitlines())
        print(f"    report {r['name']}: {v[:300]}")
        listed.append((r["name"], v))
    return listed


def common_checks(out, name):
    for what, ext in (("JSON", ".json"), ("JUnit", ".junit.xml")):
        p = os.path.join(out, name + ext)
        check(f"{name}: {what} report written", os.path.exists(p) and os.path.getsize(p) > 0)
    check(f"{name}: no partial output left", not any("partial-" in f for f in os.listdir(out)))
    if shutil.which("nvidia-smi"):
        apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout
        left = sum("tqref" in line for line in apps.splitlines())
        check(f"{name}: no tqref process left on the GPU ({left})", left == 0)


def fault(out, name):
    err, std = read(os.path.join(out, name + ".err.ts")), read(os.path.join(out, name + ".out"))
    check(f"{name}: stderr names the faulting case", "faulted the GPU: 0006_decode_turbo3v" in err)
    check(f"{name}: stdout names case, kernel and CUDA error",
          re.search(r"case 0006_decode_turbo3v.*kernel paged_decode_attn_bf16k_turbo3v.*CUDA_ERROR_", std) is not None)
    # The CUDA driver keeps a sticky error (trap, illegal address) for the whole process (measured
    # on the H200, driver 580.159.04: after cuDevicePrimaryCtxReset, cuDevicePrimaryCtxRetain
    # returns the same error), so after the first fault either the reset worked (turbo3v faults,
    # every other case passes) or tqref stops cleanly.
    n3, stopped = 0, False
    for case, v in results(out, name):
        if stopped:
            check(f"{name}: {case} not launched after the clean stop", v.startswith("error: not launched"))
        elif "decode_turbo3v" in case and not case.endswith("__writer"):  # the faulty decoder
            n3 += 1
            check(f"{name}: {case} is a fault naming a CUDA error", re.match(r"error:.*CUDA_ERROR_", v) is not None)
            stopped = "context reset failed" in v
        else:
            check(f"{name}: {case} passes", v == "pass")
    if stopped:
        print(f"  note  {name}: the context reset failed (sticky error); tqref stopped cleanly after the fault")
    else:
        check(f"{name}: at least two turbo3v faults (a reset in between) ({n3})", n3 >= 2)
    common_checks(out, name)


def runaway(out, name="runaway"):
    err, std = read(os.path.join(out, name + ".err.ts")), read(os.path.join(out, name + ".out"))
    wall = read(os.path.join(out, name + ".wall")).split()
    t0, t_end = (float(wall[0]), float(wall[1])) if len(wall) == 3 else (0.0, float("inf"))
    check(f"{name}: exit within 15 s (wall {t_end - t0:.2f} s)", t_end - t0 < 15)
    check(f"{name}: watchdog message", "did not finish within 2.0 s (launch watchdog" in std)
    msg = [line for line in err.splitlines() if "exiting without CUDA teardown" in line]
    check(f"{name}: exit without CUDA teardown announced", bool(msg))
    if msg:
        print(f"    time from the exit message to the reaped process: {t_end - float(msg[0].split()[0]):.3f} s")
    phase = "before"
    for case, v in results(out, name):
        if phase == "before" and "turbo3v" in case:
            check(f"{name}: {case} (hung) is an error naming the watchdog", "did not finish within" in v)
            phase = "after"
        elif phase == "before":
            check(f"{name}: {case} (before the hang) passes", v == "pass")
        else:
            check(f"{name}: {case} not launched", v.startswith("error: not launched"))
    check(f"{name}: a hung case was found in the report", phase == "after")
    common_checks(out, name)


def after(out, name="after"):
    for line in read(os.path.join(out, name + ".out")).splitlines():
        if re.match(r"[0-9]+ cases", line):
            print("    " + line)
    common_checks(out, name)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("fault", "runaway", "after") or (sys.argv[1] == "fault") != (len(sys.argv) == 4):
        print("usage: faults_checks.py fault OUTDIR NAME | runaway OUTDIR | after OUTDIR", file=sys.stderr)
        return 2
    {"fault": fault, "runaway": runaway, "after": after}[sys.argv[1]](*sys.argv[2:])
    print(f"faults_checks {' '.join(sys.argv[1:2] + sys.argv[3:])}: {failures} failed check(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
