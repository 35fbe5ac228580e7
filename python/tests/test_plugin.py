"""The pytest plugin on a small suite, run as a user runs it: a separate pytest process with
`-p tqref.pytest_plugin` on a five-line test file (the one docs/python.md shows), and, where tqref
is pip-installed, the same file with no `-p`: the plugin's pytest11 entry point loads it."""
import importlib.metadata
import os
import subprocess
import sys
import textwrap

import pytest

ENGINE_TEST = textwrap.dedent('''
    import tqref, tqref.testing
    ex2 = tqref.Ex2Profile.load("sm_90")
    def my_decode(*abi, format):                      # the engine's kernel would go here
        tqref.paged_decode_model(*abi, format=format, ex2=ex2, hdim=abi[1].shape[-1]) {BREAK}
    def test_decoder(tqref_decode_case, tqref_device):
        tqref.testing.check_case(tqref_decode_case, my_decode, "D", tqref_device).assert_pass()
''')


def run_pytest(tmp_path, body, *args, load=("-p", "tqref.pytest_plugin")):
    # The child inherits this environment, so it imports the same tqref as this process.
    (tmp_path / "test_engine.py").write_text(body)
    return subprocess.run([sys.executable, "-m", "pytest", *load, "-p", "no:cacheprovider", "-q",
                           str(tmp_path / "test_engine.py"), *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)


def test_every_decode_case_becomes_a_test(tmp_path):
    # smoke has 10 decode cases: 10 tests pass, with the case names in their ids.
    r = run_pytest(tmp_path, ENGINE_TEST.format(BREAK=""), "--tqref-suite", "smoke",
                   "--tqref-device", "numpy", "-rA")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "10 passed" in r.stdout
    assert "test_decoder[smoke:0002_decode_turbo2v_d128_kv2_gqa4_bs16_" in r.stdout
    assert ":hdim128]" in r.stdout and ":hdim256]" in r.stdout


def test_a_broken_kernel_fails_with_decoded_lines(tmp_path):
    r = run_pytest(tmp_path, ENGINE_TEST.format(BREAK="; abi[3].reshape(-1)[-1] ^= 1"),
                   "--tqref-suite", "smoke", "--tqref-device", "numpy", "--tqref-format", "turbo3v")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "output-value" in r.stdout and "qhead" in r.stdout
    last = r.stdout.strip().splitlines()[-1]
    assert "failed" in last and "passed" not in last  # every turbo3v case fails, none passes


def test_filters_and_missing_suites_are_errors_not_silence(tmp_path):
    # A filter matching nothing, or a suite that is not there, stops collection with the reason
    # (a test run that collects nothing must not look like a pass).
    r = run_pytest(tmp_path, ENGINE_TEST.format(BREAK=""), "--tqref-case", "no_such_case")
    assert r.returncode != 0 and "matches the --tqref-* filters" in r.stdout + r.stderr
    r = run_pytest(tmp_path, ENGINE_TEST.format(BREAK=""), "--tqref-suite", str(tmp_path / "none.h5"))
    assert r.returncode != 0 and "not found" in r.stdout + r.stderr


def test_an_installed_plugin_needs_no_p(tmp_path):
    # pip install registers the plugin under the pytest11 entry point "tqref.pytest_plugin" (its
    # module's name, so the `-p` runs above find it registered instead of loading it twice).
    # CTest runs the installed package (TQREF_TEST_INSTALLED=1): there the entry point must exist.
    points = [e for e in importlib.metadata.entry_points(group="pytest11") if e.value.startswith("tqref")]
    if not os.environ.get("TQREF_TEST_INSTALLED") and not points:
        pytest.skip("tqref is not pip-installed in this interpreter: no pytest11 entry point")
    assert [(e.name, e.value) for e in points] == [("tqref.pytest_plugin", "tqref.pytest_plugin")]
    r = run_pytest(tmp_path, ENGINE_TEST.format(BREAK=""), "--tqref-suite", "smoke",
                   "--tqref-device", "numpy", load=())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "10 passed" in r.stdout
