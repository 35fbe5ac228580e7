"""Reads a golden file with h5py exactly as docs/golden-schema.md describes, independently of the
C++ reader, and checks layout facts the schema promises. Run by ctest (test_golden); exits non-zero
with a message on the first violated fact.

Would catch: a schema change not reflected in the doc, a wrong encoding attribute, K rows not
at the documented slot offsets, shapes that disagree with the parameters stored as attributes.
"""
import sys

import h5py
import numpy as np


def bf16_to_f32(u16):
    return (u16.astype(np.uint32) << 16).view(np.float32)


def check(path):
    f = h5py.File(path, "r")
    assert f.attrs["schema_version"] == 1, "schema_version"
    for key in ("tqref_version", "git_commit", "seed", "rng", "threshold", "ex2_profile_id",
                "command_line"):
        assert key in f.attrs, "missing provenance attribute " + key
    n_writer = n_decode = 0
    for name, c in f["cases"].items():
        a = c.attrs
        kind = a["kind"].decode() if isinstance(a["kind"], bytes) else a["kind"]
        fmt = a["format"].decode() if isinstance(a["format"], bytes) else a["format"]
        assert a["kernel"].decode().endswith(fmt) if isinstance(a["kernel"], bytes) else a["kernel"].endswith(fmt)
        H, D, B, NB = (int(a[k]) for k in ("num_kv_heads", "head_dim", "block_size", "num_blocks"))
        k_init = c["initial/k_cache"]
        assert k_init.shape == (NB, B, H, D), name + ": K pool shape"
        assert k_init.attrs["encoding"] in (b"bf16", "bf16"), name + ": K encoding"
        venc = c["initial/v_cache"].attrs["encoding"]
        venc = venc.decode() if isinstance(venc, bytes) else venc
        assert venc == fmt + "_packed_pool", name + ": V encoding " + venc
        if kind == "writer":
            n_writer += 1
            T = int(a["num_tokens"])
            key = c["inputs/key"][...]
            slots = c["inputs/slot_mapping"][...]
            assert key.shape == (T, int(a["key_stride"])) and slots.shape == (T,)
            assert list(a["grid"]) == [T, 1, 1] and list(a["block"]) == [256, 1, 1]
            k = c["expected/k_cache"][...].reshape(NB * B, H * D)
            for t in range(T):  # K is a bit copy of the token's first H*D key elements
                s = int(slots[t])
                if s >= 0:
                    assert np.array_equal(k[s], key[t, : H * D]), f"{name}: K row of token {t}"
        else:
            n_decode += 1
            S, QH = int(a["num_seqs"]), int(a["num_q_heads"])
            out = c["expected/output"][...]
            init = c["initial/output"][...]
            lens = c["inputs/seq_lens"][...]
            assert out.shape == (S, QH, D) and list(a["grid"]) == [QH, S, 1]
            for s in range(S):  # rows of empty sequences keep the poison; others are written
                same = np.array_equal(out[s], init[s])
                assert same == (lens[s] == 0), f"{name}: output row of seq {s} (L {lens[s]})"
            ref = c["diagnostics/reference_unquantised_v"][...]
            got = bf16_to_f32(out)
            live = lens > 0
            assert np.all(np.isfinite(got[live])), name + ": non-finite output"
            assert np.all(np.isfinite(ref[live])), name + ": non-finite reference"
            offs = c["diagnostics/skip_offsets"][...]
            cnt = c["diagnostics/skip_count"][...].reshape(-1)
            mask = c["diagnostics/skip_mask"][...]
            for r in range(S * QH):
                assert mask[offs[r]: offs[r + 1]].sum() == cnt[r], f"{name}: skip count row {r}"
    assert n_writer > 0 and n_decode > 0, "expected writer and decode cases"
    print(f"{path}: {n_writer} writer and {n_decode} decode cases read as documented")


if __name__ == "__main__":
    check(sys.argv[1])
