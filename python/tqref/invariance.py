"""Level I (docs/spec.md section 6): a kernel compared with itself, so no model and no EX2
profile is needed. A decoder's output bits for a sequence must not depend on the rest of the
batch, its place in it, the physical block numbering, stride padding or repetition; a writer's
pool bytes must not depend on token order or padding tokens.

Each check builds a variant of the case's launch (tqref.launch.LaunchSpec), runs the kernel on it
and compares the bits with the baseline run. Every run's guard bands must come back intact, and
the baseline must have written something (a kernel that writes nothing is not invariant, it is
absent): rows of sequences with L > 0 hold no element still equal to the 0xFFFF background, rows
of L == 0 sequences are untouched."""
import copy
from dataclasses import dataclass

import numpy as np

from . import launch
from .judge import GUARD_BYTES, guard_band

_OUT_POISON = 0xFFFF     # the generator's output background: a NaN no kernel writes
_Q_PAD = 8               # bf16 elements added to q rows (keeps 16-byte alignment)
_V_DATA_PAD = 16         # bytes added after the V index section
_V_TAIL_PAD = 32         # bytes added at the end of each V block
_BF16_PAD = 0x7FC1       # a NaN the padding holds: a kernel that reads it shows it


@dataclass
class Check:
    name: str
    passed: bool
    detail: str = ""


def _interior(g, b):
    return g[GUARD_BYTES:GUARD_BYTES + b.initial.nbytes]


def _guards_ok(results, spec):
    band = guard_band()
    bad = [b.name for b in spec.buffers
           if not (np.array_equal(results[b.name][:GUARD_BYTES], band) and
                   np.array_equal(results[b.name][-GUARD_BYTES:], band))]
    return bad


def _typed(results, spec, name):
    b = spec.buffer(name)
    return _interior(results[name], b).view(b.dtype).reshape(b.shape)


def _with(spec, **changes):
    """A deep copy of spec with buffers replaced: name=(array, shape) and scalars updated."""
    s = copy.deepcopy(spec)
    for name, value in changes.items():
        if name in s.scalars:
            s.scalars[name] = value
            continue
        b = s.buffer(name)
        arr = np.ascontiguousarray(value)
        b.initial = arr.reshape(-1).view(np.uint8).copy()
        b.shape = arr.shape
    return s


def _first_diff(a, b, label):
    idx = np.argwhere(a != b)
    if idx.size == 0:
        return ""
    i = tuple(int(v) for v in idx[0])
    return (f"{len(idx)} elements differ; first {label}{list(i)}: baseline 0x{int(a[i]):04x}, "
            f"variant 0x{int(b[i]):04x}")


# ---- decoders ---------------------------------------------------------------------------------
def _decode_variants(spec, rng):
    """(name, variant spec, rows: list of (baseline seq, variant seq) to compare)."""
    q = spec.buffer("q").initial.view(np.uint16).reshape(spec.buffer("q").shape)
    bt = spec.buffer("block_tables").initial.view(np.int32).reshape(spec.buffer("block_tables").shape)
    sl = spec.buffer("seq_lens").initial.view(np.int32).copy()
    out = spec.buffer("output").initial.view(np.uint16).reshape(spec.buffer("output").shape)
    S = sl.size
    live = [s for s in range(S) if sl[s] > 0]
    v = []
    v.append(("repeat (determinism)", spec, [(s, s) for s in range(S)]))
    order = list(range(S))[::-1]
    v.append(("batch reversed", _with(spec, q=q[order], block_tables=bt[order], seq_lens=sl[order],
                                      output=out[order]), list(zip(order, range(S)))))
    twice = list(range(S)) * 2
    v.append(("batch doubled", _with(spec, q=q[twice], block_tables=bt[twice], seq_lens=sl[twice],
                                     output=out[twice]), list(zip(twice, range(2 * S)))))
    for s in live[:3]:
        v.append((f"seq {s} alone", _with(spec, q=q[[s]], block_tables=bt[[s]], seq_lens=sl[[s]],
                                          output=out[[s]]), [(s, 0)]))
    v.append(("blocks permuted",) + _permuted_blocks(spec, bt, rng) + ([(s, s) for s in range(S)],))
    v.append(("strides padded", _padded(spec, q), [(s, s) for s in range(S)]))
    if len(live) > 1:
        j = max(live, key=lambda s: sl[s])
        sl2 = sl.copy()
        # shorter within the window rule: with a sliding window a shorter sequence would attend
        # to earlier blocks, whose table entries may hold out-of-range values: empty it instead
        sl2[j] = sl[j] // 2 if spec.scalars["sliding_window"] == 0 else 0
        v.append((f"seq {j} shortened to {sl2[j]}", _with(spec, seq_lens=sl2),
                  [(s, s) for s in range(S) if s != j]))
    return v


def _permuted_blocks(spec, bt, rng):
    k = spec.buffer("k_cache")
    vb = spec.buffer("v_cache")
    kp = k.initial.reshape(k.shape[0], -1)
    vp = vb.initial.reshape(vb.shape[0], -1)
    nb = kp.shape[0]
    perm = rng.permutation(nb)           # block i moves to perm[i]
    k2, v2 = np.empty_like(kp), np.empty_like(vp)
    k2[perm], v2[perm] = kp, vp
    bt2 = bt.copy()
    in_pool = (bt >= 0) & (bt < nb)      # other entries are never read: left as they are
    bt2[in_pool] = perm[bt[in_pool]]
    s = _with(spec, block_tables=bt2)
    s.buffer("k_cache").initial = k2.reshape(-1).copy()
    s.buffer("v_cache").initial = v2.reshape(-1).copy()
    return (s,)


def _padded(spec, q):
    """q rows _Q_PAD elements longer, V index section and V blocks padded (docs/spec.md section 3
    lets both be larger than the engine's)."""
    S, qs = q.shape
    q2 = np.full((S, qs + _Q_PAD), _BF16_PAD, np.uint16)
    q2[:, :qs] = q
    vb = spec.buffer("v_cache")
    ds, stride = spec.scalars["v_data_section_bytes"], spec.scalars["v_block_stride_bytes"]
    old = vb.initial.reshape(vb.shape[0], stride)
    new_stride = stride + _V_DATA_PAD + _V_TAIL_PAD
    v2 = np.full((old.shape[0], new_stride), 0xFF, np.uint8)  # fp8 NaN in every padding byte
    v2[:, :ds] = old[:, :ds]
    v2[:, ds + _V_DATA_PAD:stride + _V_DATA_PAD] = old[:, ds:]
    return _with(spec, q=q2, q_stride=qs + _Q_PAD, v_cache=v2,
                 v_data_section_bytes=ds + _V_DATA_PAD, v_block_stride_bytes=new_stride)


def _decode_written(spec, base):
    out = _typed(base, spec, "output")
    init = spec.buffer("output").initial.view(np.uint16).reshape(out.shape)
    sl = spec.buffer("seq_lens").initial.view(np.int32)
    problems = []
    for s in range(sl.size):
        if sl[s] > 0:
            n = int(((out[s] == _OUT_POISON) & (init[s] == _OUT_POISON)).sum())
            if n:
                problems.append(f"seq {s} (L {sl[s]}): {n} elements not written")
        elif not np.array_equal(out[s], init[s]):
            problems.append(f"seq {s} (L 0): row modified")
    return problems


def _decode_checks(spec, fn, device, base, rng):
    checks = []
    written = _decode_written(spec, base)
    checks.append(Check("baseline wrote its rows", not written, "; ".join(written[:4])))
    out0 = _typed(base, spec, "output")
    for name, vspec, rows in _decode_variants(spec, rng):
        res = launch.run(vspec, fn, device)
        bad = _guards_ok(res, vspec)
        out = _typed(res, vspec, "output")
        diffs = [d for a, b in rows if (d := _first_diff(out0[a], out[b], f"seq {a} [qhead, dim] "))]
        detail = ("guard bands changed: " + ", ".join(bad) + "; " if bad else "") + "; ".join(diffs[:3])
        checks.append(Check(name, not bad and not diffs, detail))
    return checks


# ---- writers ----------------------------------------------------------------------------------
def _writer_variants(spec, rng):
    key = spec.buffer("key").initial.view(np.uint16).reshape(spec.buffer("key").shape)
    val = spec.buffer("value").initial.view(np.uint16).reshape(spec.buffer("value").shape)
    sm = spec.buffer("slot_mapping").initial.view(np.int64).copy()
    T = sm.size
    v = [("repeat (determinism)", spec)]
    order = rng.permutation(T)
    v.append(("tokens shuffled", _with(spec, key=key[order], value=val[order], slot_mapping=sm[order])))
    # a padding token (slot -1, NaN rows) after every token
    k2 = np.full((2 * T,) + key.shape[1:], _BF16_PAD, np.uint16)
    v2 = np.full((2 * T,) + val.shape[1:], _BF16_PAD, np.uint16)
    s2 = np.full(2 * T, -1, np.int64)
    k2[::2], v2[::2], s2[::2] = key, val, sm
    v.append(("padding tokens interleaved", _with(spec, key=k2, value=v2, slot_mapping=s2)))
    return v


def _writer_checks(spec, fn, device, base, rng):
    kc, vc = _typed(base, spec, "k_cache"), _typed(base, spec, "v_cache")
    changed = not (np.array_equal(kc.reshape(-1).view(np.uint8), spec.buffer("k_cache").initial) and
                   np.array_equal(vc.reshape(-1), spec.buffer("v_cache").initial))
    any_slot = bool((spec.buffer("slot_mapping").initial.view(np.int64) >= 0).any())
    checks = [Check("baseline wrote the pools", changed or not any_slot,
                    "" if changed or not any_slot else "no pool byte changed")]
    for name, vspec in _writer_variants(spec, rng):
        res = launch.run(vspec, fn, device)
        bad = _guards_ok(res, vspec)
        diffs = [d for n in ("k_cache", "v_cache")
                 if (d := _first_diff(_typed(base, spec, n).reshape(-1), _typed(res, vspec, n).reshape(-1),
                                      f"{n} element "))]
        detail = ("guard bands changed: " + ", ".join(bad) + "; " if bad else "") + "; ".join(diffs)
        checks.append(Check(name, not bad and not diffs, detail))
    return checks


def check_invariance(spec, fn, device, seed=0):
    """Runs the baseline and every variant; returns the list of Check."""
    rng = np.random.default_rng(seed)
    base = launch.run(spec, fn, device)
    bad = _guards_ok(base, spec)
    checks = [Check("guard bands (baseline)", not bad, ", ".join(bad))]
    if spec.kind == "decode":
        return checks + _decode_checks(spec, fn, device, base, rng)
    return checks + _writer_checks(spec, fn, device, base, rng)
