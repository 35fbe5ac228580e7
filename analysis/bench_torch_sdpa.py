#!/usr/bin/env python3
"""torch scaled_dot_product_attention reference timings for `tqref bench` (docs/performance.md).

Decode with one query token: q [S, Hq, 1, D], dense bf16 K/V [S, Hkv, L, D], enable_gqa=True;
CUDA-event timing of each run after warm-up, median of many runs, inputs rotated over several
copies so that K/V are not served from the 50 MB L2. Writes JSON (schema tqref.torch_sdpa/1).
Usage: python3 analysis/bench_torch_sdpa.py --json OUT.json [--quick | --shapes-from BENCH.json] [--runs 30]
(--shapes-from: the decode shapes of a `tqref bench --json` file, e.g. of `--set models`.)
"""
import argparse
import json
import statistics
import sys


def bench_shapes(path):
    """(seqs, q heads, kv heads, head_dim, length) of each decode shape of a tqref bench JSON, once."""
    keys = [(d["num_seqs"], d["num_q_heads"], d["num_kv_heads"], d["hdim"], d["seq_len"])
            for d in json.load(open(path))["decode"]]
    return list(dict.fromkeys(keys))


def shapes(quick, bench_json=None):
    if bench_json:
        return bench_shapes(bench_json)
    main = [(32, 32, 8, 128, 4096), (32, 32, 8, 128, 16384), (8, 32, 8, 128, 32768)]
    if quick:
        return main
    extra = [(32, 32, 8, 128, 1024), (32, 32, 8, 256, 4096), (32, 32, 8, 256, 16384),
             (32, 32, 32, 128, 16384), (32, 32, 4, 128, 16384), (32, 32, 1, 128, 16384)]
    return main + extra


def bench_one(torch, F, S, Hq, Hkv, D, L, runs, warmup, rotate_bytes):
    dev = "cuda"
    kv_bytes = 2 * S * Hkv * L * D * 2
    copies = max(2, min(8, -(-rotate_bytes // kv_bytes)))
    gen = torch.Generator(device=dev).manual_seed(1)
    sets = []
    for _ in range(copies):
        q = torch.randn(S, Hq, 1, D, device=dev, dtype=torch.bfloat16, generator=gen)
        k = torch.randn(S, Hkv, L, D, device=dev, dtype=torch.bfloat16, generator=gen)
        v = torch.randn(S, Hkv, L, D, device=dev, dtype=torch.bfloat16, generator=gen)
        sets.append((q, k, v))
    for i in range(warmup):
        q, k, v = sets[i % copies]
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for i in range(runs):
        q, k, v = sets[i % copies]
        starts[i].record()
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        stops[i].record()
    torch.cuda.synchronize()
    ms = sorted(s.elapsed_time(e) for s, e in zip(starts, stops))
    bytes_moved = kv_bytes + 2 * S * Hq * D * 2
    med = statistics.median(ms)
    return {"num_seqs": S, "num_q_heads": Hq, "num_kv_heads": Hkv, "hdim": D, "seq_len": L,
            "median_ms": med, "min_ms": ms[0], "p10_ms": ms[int(0.1 * (runs - 1) + 0.5)],
            "p90_ms": ms[int(0.9 * (runs - 1) + 0.5)], "runs": runs, "bytes": bytes_moved,
            "gbps": bytes_moved / (med * 1e6), "copies": copies}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True, help="output file")
    ap.add_argument("--quick", action="store_true", help="main shapes only")
    ap.add_argument("--shapes-from", metavar="BENCH.json", help="the decode shapes of a tqref bench JSON")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rotate-mib", type=int, default=256)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"bench_torch_sdpa: torch not importable ({e}); nothing measured", file=sys.stderr)
        return 4
    if not torch.cuda.is_available():
        print("bench_torch_sdpa: no CUDA device; nothing measured", file=sys.stderr)
        return 4
    res = []
    for (S, Hq, Hkv, D, L) in shapes(a.quick, a.shapes_from):
        r = bench_one(torch, F, S, Hq, Hkv, D, L, a.runs, a.warmup, a.rotate_mib << 20)
        print(f"sdpa {S}x{Hq}/{Hkv} D{D} L{L}: {r['median_ms']:.4f} ms, {r['gbps']:.0f} GB/s", flush=True)
        res.append(r)
        torch.cuda.empty_cache()
    out = {"schema": "tqref.torch_sdpa/1", "torch": torch.__version__,
           "device": torch.cuda.get_device_name(0), "backend_note": "F.scaled_dot_product_attention, "
           "bf16, enable_gqa=True, one query token, default backend selection", "results": res}
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
