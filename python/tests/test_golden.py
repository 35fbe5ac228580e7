"""Golden files through Python: the reader against h5py (an independent reader of the same
files), user-made cases against the CLI (`tqref check` replays them), and suite lookup."""
import h5py
import numpy as np
import pytest

import tqref
from tqref import abi
from conftest import COMMITTED, SMOKE, run_cli


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_every_dataset_and_attribute_matches_h5py(path):
    # Catches a dataset under a wrong name, shape or dtype, or an attribute with a wrong value
    # (the C reader and this layer against h5py on the same file).
    cases = tqref.read_golden(path)
    with h5py.File(path, "r") as f:
        assert [c.name for c in cases] == list(f["cases"])
        for c in cases:
            g = f["cases"][c.name]
            names = []
            g.visit(lambda n: names.append(n) if isinstance(g[n], h5py.Dataset) else None)
            assert sorted(names) == sorted(c.arrays), c.name
            for n in names:
                want = g[n][...]
                assert c.arrays[n].dtype == want.dtype and c.arrays[n].shape == want.shape, (c.name, n)
                assert np.array_equal(c.arrays[n].view(np.uint8), want.view(np.uint8)), (c.name, n)
                enc = g[n].attrs.get("encoding", b"")
                assert c.encodings[n] == (enc.decode() if isinstance(enc, bytes) else enc), (c.name, n)
            for k, v in g.attrs.items():
                v = v.decode() if isinstance(v, bytes) else v
                got = c.attrs[k]
                assert (list(v) == got) if isinstance(v, np.ndarray) else (v == got), (c.name, k)


def test_file_h5py_added_attributes_to_is_read(tmp_path, cli):
    # Catches a valid file refused as "corrupt file ... signal 11": libhdf5 1.10's H5Ocopy (the
    # validated copy) crashes on an object with more than 8 attributes (dense storage) when one is
    # a variable-length string, which is how h5py writes a str attribute.
    path = tmp_path / "annotated.h5"
    path.write_bytes(SMOKE.read_bytes())
    with h5py.File(path, "r+") as f:
        name = list(f["cases"])[0]
        f.attrs["annotation"] = "checked by hand"
        f["cases"][name].attrs["note"] = "a vlen str, as h5py writes str"
    with tqref.GoldenFile(path) as f:
        assert f.provenance["suite"] == "smoke"
    case = next(c for c in tqref.read_golden(path) if c.name == name)
    assert case.attrs["note"] == "a vlen str, as h5py writes str"
    r = run_cli(cli, "check", path, "--backend", "model", "--no-explain")
    assert r.returncode == 0, r.stdout + r.stderr


def test_provenance_and_profile(smoke_cases):
    # The file's EX2 profile is found by its id, and provenance reads as written.
    with tqref.GoldenFile(SMOKE) as f:
        assert f.provenance["schema_version"] == 1 and f.provenance["suite"] == "smoke"
        assert f.ex2.id == f.provenance["ex2_profile_id"]
        assert len(f) == len(f.names) == len(smoke_cases)


def _writer_abi(c):
    s = abi.scalar_args(c)
    return [c.arrays["inputs/key"], c.arrays["inputs/value"], c.arrays["initial/k_cache"],
            c.arrays["initial/v_cache"], c.arrays["inputs/slot_mapping"]] + \
        [s[n] for n in abi.WRITER_ABI[5:]]


def _decode_abi(c):
    s = abi.scalar_args(c)
    return [c.arrays["inputs/q"], c.arrays["initial/k_cache"], c.arrays["initial/v_cache"],
            c.arrays["inputs/block_tables"], c.arrays["inputs/seq_lens"]] + \
        [s[n] for n in abi.DECODE_ABI[6:]]


def test_user_cases_are_replayed_by_the_cli(tmp_path, smoke_cases, ex2, cli):
    # A user turns captured tensors into a case; its expectation (computed by the model) equals
    # the generator's, and `tqref check` replays the file: exit 0 as written, exit 1 once the
    # expectation is damaged (so the replay really compares).
    w = next(c for c in smoke_cases if c.kind == "writer")
    d = next(c for c in smoke_cases if c.kind == "decode")
    uw = tqref.make_writer_case("captured_writer", *_writer_abi(w), format=w.format)
    ud = tqref.make_decode_case("captured_decode", *_decode_abi(d), format=d.format, ex2=ex2,
                                output=d.arrays["initial/output"], hdim=d.attrs["hdim"])
    for u, c in ((uw, w), (ud, d)):
        for n in c.arrays:
            if n.startswith("expected/"):
                assert np.array_equal(u.arrays[n], c.arrays[n]), (c.name, n)
    assert np.isnan(ud.arrays["diagnostics/reference_unquantised_v"]).all()  # V rows not given
    path = tqref.write_golden(tmp_path / "captured.h5", [uw, ud], command_line="pytest")
    r = run_cli(cli, "check", path, "--backend", "model")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "captured_writer" in r.stdout + r.stderr or "2 " in r.stdout
    with h5py.File(path, "r+") as f:
        f["cases/captured_writer/expected/v_cache"][0, 0] ^= 1
    r = run_cli(cli, "check", path, "--backend", "model")
    assert r.returncode == 1, r.stdout + r.stderr


def test_written_file_reads_back(tmp_path, smoke_cases):
    w = next(c for c in smoke_cases if c.kind == "writer")
    u = tqref.make_writer_case("again", *_writer_abi(w), format=w.format)
    back = tqref.read_golden(tqref.write_golden(tmp_path / "a.h5", u))
    assert [c.name for c in back] == ["again"]
    assert all(np.array_equal(back[0].arrays[n], u.arrays[n]) for n in u.arrays)


def test_write_is_whole_or_nothing(tmp_path, smoke_cases):
    # Two cases with one name: refused before anything is written, no file, no temporary left.
    w = next(c for c in smoke_cases if c.kind == "writer")
    u = tqref.make_writer_case("dup", *_writer_abi(w), format=w.format)
    with pytest.raises(tqref.BadArgument, match="repeats"):
        tqref.write_golden(tmp_path / "d.h5", [u, u])
    assert list(tmp_path.iterdir()) == []


def test_suites_resolve_by_the_data_dir_policy(tmp_path, monkeypatch):
    # smoke is found in the source tree's data/; $TQREF_DATA_DIR comes first; an absent suite
    # names every place it looked (and how to make it).
    assert tqref.find_suite("smoke").endswith("golden/smoke.h5")
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "smoke.h5").write_bytes(SMOKE.read_bytes())
    monkeypatch.setenv("TQREF_DATA_DIR", str(tmp_path))
    assert tqref.find_suite("smoke") == str(tmp_path / "golden" / "smoke.h5")
    with pytest.raises(FileNotFoundError, match="looked in") as e:
        tqref.find_suite("models")
    assert str(tmp_path) in str(e.value) and "tqref generate --suite models" in str(e.value)
