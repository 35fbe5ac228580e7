"""Shared fixtures of the Python API tests (run by CTest as `python_api`, docs/python.md).

The package is the interpreter's own: CTest runs these tests with the python of a virtual
environment that pip installed it into (python/CMakeLists.txt), so they test the installed copy
and the library it carries, and says so with TQREF_TEST_INSTALLED=1; from a checkout without an
install, PYTHONPATH=<checkout>/python runs them on the source tree (its library from
$TQREF_LIBRARY or the build trees). Subprocesses inherit the environment, so they import the
same package. The CLI comes from $TQREF_CLI (CTest sets it) for the tests that compare with
`tqref check` / `tqref quantize`."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import tqref

ROOT = Path(__file__).resolve().parents[2]

SMOKE = ROOT / "data" / "golden" / "smoke.h5"
REAL = ROOT / "data" / "golden" / "real.h5"
COMMITTED = [SMOKE, REAL]


def _cli():
    env = os.environ.get("TQREF_CLI")
    if env:
        return env
    for preset in ("default", "cpu-only", "debug"):
        p = ROOT / "build" / preset / "harness" / "cli" / "tqref"
        if p.is_file():
            return str(p)
    return shutil.which("tqref")


@pytest.fixture(scope="session")
def cli():
    path = _cli()
    if not path:
        pytest.skip("the tqref CLI is not built (set TQREF_CLI): the CLI comparisons are skipped")
    return path


def run_cli(cli, *args):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="session")
def ex2():
    return tqref.Ex2Profile.load("sm_90")


@pytest.fixture(scope="session")
def smoke_cases():
    return tqref.read_golden(SMOKE)


@pytest.fixture(scope="session")
def committed_cases():
    return [c for path in COMMITTED for c in tqref.read_golden(path)]
