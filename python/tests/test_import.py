"""`import tqref` needs numpy only (torch, triton and h5py stay optional), in a fresh interpreter;
the library it loads is the one it was given, and an installed copy loads the one it carries."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tqref
from conftest import ROOT


def test_import_needs_numpy_only():
    # Catches a module that imports torch, triton or h5py at import time: the package must load
    # on a machine that has numpy alone.
    code = ("import sys, tqref, tqref.testing, tqref.judge, tqref.golden, tqref.model, tqref.launch, "
            "tqref.pytest_plugin; bad = [m for m in ('torch', 'triton', 'h5py') if m in sys.modules]; "
            "print(tqref.__version__); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_build_info_names_the_loaded_library():
    info = tqref.build_info()
    assert info["abi"] == 1 and info["version"] == tqref.__version__
    assert os.path.isfile(tqref.library_path)
    if os.environ.get("TQREF_LIBRARY"):
        assert os.path.samefile(tqref.library_path, os.environ["TQREF_LIBRARY"])


def test_missing_library_is_a_clear_import_error(tmp_path):
    env = dict(os.environ, TQREF_LIBRARY=str(tmp_path / "no.so"))
    r = subprocess.run([sys.executable, "-c", "import tqref"], capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "libtqref_c.so not found" in r.stderr and "TQREF_LIBRARY" in r.stderr


def test_an_installed_copy_loads_the_library_it_carries():
    # pip install (python/setup.py) puts libtqref_c.so into the package as _native/. CTest runs
    # these tests in such an install with TQREF_TEST_INSTALLED=1, so a run that imported the
    # source tree, or was handed a build tree's library, fails here instead of passing for the
    # wrong copy.
    package = Path(tqref.__file__).resolve().parent
    installed = ROOT / "python" not in package.parents
    if os.environ.get("TQREF_TEST_INSTALLED"):
        assert installed, f"tqref was imported from the checkout ({package}), not the install"
        assert "TQREF_LIBRARY" not in os.environ, "TQREF_LIBRARY overrides the installed library"
    if not installed:
        pytest.skip(f"tqref runs from the checkout ({package}): there is no installed copy here")
    carried = package / "_native" / "libtqref_c.so"
    assert os.path.samefile(tqref.library_path, os.environ.get("TQREF_LIBRARY") or carried)
