"""The GPU evidence for the Python API (`scripts/device-run.sh python` runs it on the H200): the
Triton writer judged at level W (bit for bit) and I, its naive variant at W (expected to fail: it
shows the check has teeth), the Triton decoder at levels T and I, and the pure-torch decoder at T on
the GPU, all through tqref.testing. Writes OUT/python-gpu.json and OUT/python-gpu.md and exits
0 only when every step that must pass passed and the naive writer failed.

    python3 examples/check_gpu.py OUT [--suites smoke,real]
"""
import argparse
import json
import os
import sys
import time
import traceback

import tqref
import tqref.testing as tt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def step(results, name, must, fn):
    """Runs fn() -> Report; records verdict counts, failures and any exception (a Triton compile
    error shows here with its traceback)."""
    t0 = time.time()
    r = {"step": name, "must": must, "seconds": 0.0}
    try:
        rep = fn()
        r.update(passed=rep.passed, judged=len(rep.judged), failed=len(rep.failed),
                 skipped=len(rep.verdicts) - len(rep.judged), summary=rep.summary()[:6000])
        if rep.verdicts and rep.verdicts[0].level_t:
            worst = max((v.level_t["ulp_vs_model"]["max"] for v in rep.judged if v.level_t), default=0)
            r["max_ulp_vs_model"] = worst
    except Exception:
        r.update(passed=False, error=traceback.format_exc()[-6000:])
    r["seconds"] = round(time.time() - t0, 2)
    ok = r["passed"] if must == "pass" else (not r["passed"] and "error" not in r)
    r["ok"] = bool(ok)
    results.append(r)
    msg = (r.get("summary") or "").splitlines()[:1] or (r.get("error") or "").strip().splitlines()[-1:]
    print(f"[{'ok' if ok else 'FAIL'}] {name} ({r['seconds']} s): {' '.join(msg)}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--suites", default="smoke,real")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import torch
    info = {"python": sys.version.split()[0], "torch": torch.__version__, "tqref": tqref.build_info(),
            "library": tqref.library_path, "cuda": torch.cuda.is_available()}
    try:
        import triton
        info["triton"] = triton.__version__
        info["device"] = torch.cuda.get_device_name(0)
    except Exception as e:
        info["triton"] = f"unavailable: {e}"
    results = []
    suites = a.suites.split(",")
    try:
        import triton_turbo as tk
    except Exception:
        results.append({"step": "import examples/triton_turbo.py", "must": "pass", "ok": False,
                        "passed": False, "error": traceback.format_exc()[-4000:]})
        tk = None
    import torch_turbo_decode as td

    def writer(variant):
        def f(*args, format):
            tk.reshape_and_cache_flash_bf16k_turbo(*args, format=format, variant=variant)
        return f

    # smoke: every level; the other suites: the levels that judge values (W, T). Level I of the
    # torch decoder runs in CI on the CPU (examples/test_torch_decode.py).
    for suite in suites:
        first = suite == suites[0]
        if tk:
            step(results, f"triton writer W {suite}", "pass",
                 lambda: tt.check_kernel(writer("careful"), suite, "W", "cuda"))
            step(results, f"triton decoder T {suite}", "pass",
                 lambda: tt.check_kernel(tk.paged_decode_attn_bf16k_turbo, suite, "T", "cuda"))
        if tk and first:
            step(results, f"triton writer I {suite}", "pass",
                 lambda: tt.check_kernel(writer("careful"), suite, "I", "cuda", kind="writer"))
            step(results, f"triton decoder I {suite}", "pass",
                 lambda: tt.check_kernel(tk.paged_decode_attn_bf16k_turbo, suite, "I", "cuda", kind="decode"))
        if first:
            step(results, f"torch decoder T {suite} (cuda)", "pass",
                 lambda: tt.check_kernel(td.paged_decode_attn_bf16k_turbo, suite, "T", "cuda"))
    if tk:  # the negative control: `/`, tl.sqrt and FMA contraction must not pass level W
        step(results, "triton writer, naive variant, W smoke (must FAIL)", "fail",
             lambda: tt.check_kernel(writer("naive"), "smoke", "W", "cuda"))
    ok = all(r["ok"] for r in results)
    with open(os.path.join(a.out, "python-gpu.json"), "w") as f:
        json.dump({"info": info, "ok": ok, "steps": results}, f, indent=1)
    with open(os.path.join(a.out, "python-gpu.md"), "w") as f:
        f.write("# Python API on the GPU (examples/check_gpu.py)\n\n")
        f.write("".join(f"- {k}: {v}\n" for k, v in info.items()) + "\n")
        f.write("| step | must | result | judged | failed | skipped | s |\n|---|---|---|---|---|---|---|\n")
        for r in results:
            f.write(f"| {r['step']} | {r['must']} | {'ok' if r['ok'] else 'FAIL'} | {r.get('judged', '-')} "
                    f"| {r.get('failed', '-')} | {r.get('skipped', '-')} | {r.get('seconds', '-')} |\n")
        for r in results:
            if not r["ok"] or r["must"] == "fail":
                f.write(f"\n## {r['step']}\n\n```\n{r.get('error') or r.get('summary', '')}\n```\n")
    print("python GPU checks:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
