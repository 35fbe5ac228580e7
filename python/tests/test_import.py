"""`import tqref` needs numpy only (torch, triton and h5py stay optional), in a fresh interpreter,
and the library it loads is this checkout's."""
import os
import subprocess
import sys

import tqref
from conftest import ROOT


def test_import_needs_numpy_only():
    # Catches a module that imports torch, triton or h5py at import time: the package must load
    # on a machine that has numpy alone.
    code = ("import sys, tqref, tqref.testing, tqref.judge, tqref.golden, tqref.model, tqref.launch, "
            "tqref.pytest_plugin; bad = [m for m in ('torch', 'triton', 'h5py') if m in sys.modules]; "
            "print(tqref.__version__); sys.exit(1 if bad else 0)")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_build_info_names_the_loaded_library():
    info = tqref.build_info()
    assert info["abi"] == 1 and info["version"] == tqref.__version__
    assert os.path.isfile(tqref.library_path)
    if os.environ.get("TQREF_LIBRARY"):
        assert os.path.samefile(tqref.library_path, os.environ["TQREF_LIBRARY"])


def test_missing_library_is_a_clear_import_error(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), TQREF_LIBRARY=str(tmp_path / "no.so"))
    r = subprocess.run([sys.executable, "-c", "import tqref"], capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "libtqref_c.so not found" in r.stderr and "TQREF_LIBRARY" in r.stderr
