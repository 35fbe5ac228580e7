"""The judge through Python against the CLI: the same categories and decoded mismatch lines as
`tqref check`, level T distributions equal to the CLI's, guard bands seen."""
import json
import re
import shutil

import h5py
import numpy as np
import pytest

import tqref
from tqref.judge import GUARD_BYTES, guard_band, with_guards
from conftest import SMOKE, run_cli


def _case(cases, kind, i=0):
    return [c for c in cases if c.kind == kind][i]


def test_expected_bytes_pass_and_one_flipped_code_bit_fails(smoke_cases):
    # The judge passes the expectation itself and names a flipped bit: v-code with its place.
    c = _case(smoke_cases, "writer")
    k, v = c.arrays["expected/k_cache"], c.arrays["expected/v_cache"].copy()
    assert tqref.judge(c, {"k_cache": k, "v_cache": v}).passed
    slot = int(c.arrays["inputs/slot_mapping"][np.argmax(c.arrays["inputs/slot_mapping"] >= 0)])
    blk, sib = divmod(slot, c.attrs["block_size"])
    row = c.attrs["num_kv_heads"] * c.attrs["head_dim"] * tqref.get_format(c.format).bits // 8
    v[blk, sib * row] ^= 0x01
    r = tqref.judge(c, {"k_cache": k, "v_cache": v})
    assert not r.passed and r.categories == {"v-code": 1}
    assert f"V block {blk} codes slot {sib} head 0 group 0" in r.mismatches[0]["where"]
    assert r.text.startswith("FAIL " + c.name)


def test_mismatch_lines_equal_the_clis(tmp_path, smoke_cases, cli):
    # The same damage judged by Python and by `tqref check`: the CLI compares the model (right)
    # with a file whose expectation we damaged, Python compares damaged bytes with the file's
    # expectation, so expected and got are swapped and everything else must be equal.
    c = _case(smoke_cases, "writer")
    damaged = tmp_path / "damaged.h5"
    shutil.copy(SMOKE, damaged)
    with h5py.File(damaged, "r+") as f:
        f[f"cases/{c.name}/expected/v_cache"][0, 5] ^= 0x10
        f[f"cases/{c.name}/expected/k_cache"][0, 1, 0, 3] ^= 0x0001
    r = run_cli(cli, "check", damaged, "--case", c.name, "--show", "64")
    assert r.returncode == 1
    mismatch = re.compile(r"^[a-z-]+: \w+ byte -?\d+ \(")  # the decoded lines, not the summaries
    cli_lines = [ln.strip() for ln in r.stdout.splitlines() if mismatch.match(ln.strip())]
    v = c.arrays["expected/v_cache"].copy()
    k = c.arrays["expected/k_cache"].copy()
    v[0, 5] ^= 0x10
    k[0, 1, 0, 3] ^= 0x0001
    py = tqref.judge(c, {"k_cache": k, "v_cache": v})
    py_lines = [ln.strip() for ln in py.text.splitlines() if mismatch.match(ln.strip())]
    def swap(line):
        head, rest = line.split("): expected ")
        e, rest = rest.split(" got ")
        g, init = rest.split(" initial ")
        return f"{head}): expected {g} got {e} initial {init}"
    assert len(py_lines) == len(cli_lines) == 2
    assert sorted(py_lines) == sorted(swap(ln) for ln in cli_lines)


def test_level_t_distributions_equal_the_clis(tmp_path, smoke_cases, cli, ex2):
    # Python's level T on the model's own output reports exactly the CLI's JSON for that case.
    c = _case(smoke_cases, "decode")
    out = c.arrays["expected/output"]
    py = tqref.judge(c, {"output": out}, level="T")
    assert py.passed and py.level == "T"
    rep = tmp_path / "t.json"
    r = run_cli(cli, "check", SMOKE, "--case", c.name, "--level", "T", "--report", rep)
    assert r.returncode == 0, r.stdout + r.stderr
    t = json.loads(rep.read_text())
    cli_case = t["tolerance"]["cases"][0]
    for key in ("elements", "over_tolerance", "flip_candidates", "ulp_vs_model",
                "row_rel_vs_ref_dequantised", "row_rel_vs_ref_unquantised"):
        assert py.level_t[key] == cli_case[key], key


def test_level_t_tolerates_rounding_and_not_errors(smoke_cases):
    # One bf16 ulp on a few elements passes T but fails D; a wrong value fails both.
    c = _case(smoke_cases, "decode")
    out = c.arrays["expected/output"].copy()
    live = np.flatnonzero(c.arrays["inputs/seq_lens"] > 0)
    row = out[live[-1]]
    row[0, :4] += 1
    assert tqref.judge(c, {"output": out}, level="T").passed
    d = tqref.judge(c, {"output": out})
    assert not d.passed and d.categories == {"output-value": 4}
    row[0, 4] ^= 0x4000
    t = tqref.judge(c, {"output": out}, level="T")
    assert not t.passed and t.level_t["over_tolerance"] >= 1


def test_guard_bands_are_checked(smoke_cases):
    # A guarded buffer whose band after the data was touched: category guard.
    c = _case(smoke_cases, "decode")
    g = with_guards(c.arrays["expected/output"])
    assert np.array_equal(g[:GUARD_BYTES], guard_band())
    g[-1] ^= 0xFF
    r = tqref.judge(c, {"output": g})
    assert not r.passed and r.categories == {"guard": 1}


def test_input_buffers_must_come_back_unchanged(smoke_cases):
    c = _case(smoke_cases, "decode")
    q = c.arrays["inputs/q"].copy()
    q[0, 0] ^= 1
    r = tqref.judge(c, {"output": c.arrays["expected/output"], "q": q})
    assert not r.passed and r.categories == {"input-modified": 1}
