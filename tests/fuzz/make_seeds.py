#!/usr/bin/env python3
"""Seed inputs for the fuzz targets (scripts/fuzz.sh): a tiny valid trace (docs/trace-schema.md)
written with h5py, i.e. by an HDF5 writer other than tqref's own, and YAML sweeps. Golden seeds are
made by `tqref generate` from the YAML seeds (fuzz.sh), so they follow the schema of the build.
Usage: make_seeds.py OUT_DIR   (writes OUT_DIR/trace/*.h5 and OUT_DIR/sweep/*.yaml)
       make_seeds.py --chunks GOLDEN.h5 OUT_DIR   (fuzz_chunk_decoder inputs: stored chunks of the
       file's datasets, each behind the 8-byte header tests/fuzz/fuzz_chunk_decoder.cpp describes)"""
import os
import sys

import h5py
import numpy as np


def chunk_seeds(golden, out_dir, most=64):
    """Up to `most` stored chunks of `golden`, with their pipeline, mask, element size and size."""
    codes = {1: 1, 2: 2, 3: 3}  # deflate, shuffle, fletcher32 as the target's 2-bit codes
    made = []

    def visit(name, obj):
        if len(made) >= most or not isinstance(obj, h5py.Dataset) or obj.chunks is None or obj.size == 0:
            return
        plist = obj.id.get_create_plist()
        pipe = 0
        for k in range(plist.get_nfilters()):
            pipe |= codes[plist.get_filter(k)[0]] << (2 * k)
        mask, data = obj.id.read_direct_chunk((0,) * len(obj.shape))
        size = int(np.prod(obj.chunks)) * obj.dtype.itemsize
        header = bytes([pipe, mask & 0x0F, obj.dtype.itemsize, size & 255, size >> 8 & 255, size >> 16 & 255, 0, 0])
        made.append(name)
        with open(os.path.join(out_dir, f"chunk_{len(made):03d}"), "wb") as f:
            f.write(header + data)

    with h5py.File(golden, "r") as f:
        f.visititems(visit)


if sys.argv[1] == "--chunks":
    chunk_seeds(sys.argv[2], sys.argv[3])
    sys.exit(0)

out = sys.argv[1]
os.makedirs(f"{out}/trace", exist_ok=True)
os.makedirs(f"{out}/sweep", exist_ok=True)

# Two layers, GQA 2 (2 q heads, 1 kv head), head_dim 16, sequences of 3 and 1 tokens. Values are
# fixed non-zero bf16 patterns (1.0 = 0x3F80 scaled by small integers): no NaN/Inf, nothing all-zero.
rng = np.random.default_rng(7)
with h5py.File(f"{out}/trace/tiny.h5", "w") as f:
    for k, v in {"schema": "tqref.trace", "model_name": "seed", "producer": "make_seeds.py",
                 "encoding": "bf16"}.items():
        f.attrs[k] = v
    for k, v in {"schema_version": 1, "num_layers": 2, "num_q_heads": 2, "num_kv_heads": 1,
                 "head_dim": 16}.items():
        f.attrs[k] = np.int64(v)
    f.attrs["attn_scale"] = np.float64(0.25)
    seqs = f.create_group("sequences")
    for name, T in (("a", 3), ("b", 1)):
        g = seqs.create_group(name)
        g.attrs["num_tokens"] = np.int64(T)
        g.create_dataset("token_ids", data=np.arange(T, dtype=np.int32))
        for layer in range(2):
            lg = g.create_group(f"layer_{layer}")
            for ds, heads in (("q", 2), ("k", 1), ("v", 1)):
                bits = (0x3F80 + rng.integers(1, 64, size=(T, heads, 16))).astype(np.uint16)
                d = lg.create_dataset(ds, data=bits)
                d.attrs["encoding"] = "bf16"

sweeps = {
    "writer_small.yaml": "kind: writer\nformat: [turbo2v, turbo4v]\nhead_dim: 16\nnum_kv_heads: 1\n"
                         "block_size: [1, 3]\nnum_tokens: 2\npadding_tokens: 1\nkey_pad: 4\n",
    "decode_small.yaml": "kind: decode\nformat: turbo3v\nhead_dim: 128\nnum_kv_heads: 1\nq_per_kv: 1\n"
                         "block_size: 2\nseq_lens: [[0, 1, 3]]\nsliding_window: [0, 2]\nlayout: shuffled\n",
    "all_keys.yaml": "kind: [writer, decode]\nformat: turbo3v\nhead_dim: 128\nnum_kv_heads: 2\n"
                     "q_per_kv: [1, 4]\nblock_size: 16\nseq_lens: [[5, 17]]\nnum_tokens: 9\n"
                     "padding_tokens: 2\nsliding_window: 4\nlayout: [sequential, shared]\n"
                     "dist: [gaussian, ties]\nkey_pad: 8\nvalue_pad: 3\nq_pad: 8\nv_data_pad: 16\n"
                     "v_block_pad: 8\nspare_blocks: 2\nspare_table_entries: 1\n",
}
for name, text in sweeps.items():
    with open(f"{out}/sweep/{name}", "w") as f:
        f.write(text)
