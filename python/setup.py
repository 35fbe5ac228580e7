"""The part of the tqref package build that pyproject.toml cannot state: where libtqref_c.so comes
from. It is the CMake target tqref_c (python/capi), which the main build makes as
<build tree>/python/libtqref_c.so; this file picks the build tree, builds that one target there
when the library is missing, and puts the library into the package as tqref/_native/libtqref_c.so,
where tqref/_lib.py loads it from in an installed copy.

The build tree is $TQREF_BUILD_DIR when set; else the first of the checkout's build/default and
build/cpu-only (the presets scripts/main.sh and scripts/test.sh build) that holds the library;
else the first of them that is configured. The package's version is that tree's CMake project
version (CMakeLists.txt), so the metadata names the library it ships. setuptools' own work files
go into the build tree too (python/setuptools/), not into the checkout.

The library is loaded through ctypes, not imported as a CPython extension, so one wheel serves
every Python 3: it is tagged py3-none-<platform>, not pure (it holds machine code) and not tied to
one interpreter version."""
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

try:  # setuptools >= 70.1 has its own bdist_wheel; before, it is the wheel package's (Debian 12)
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

CHECKOUT = Path(__file__).resolve().parent.parent  # python/setup.py -> the checkout
PRESETS = ("default", "cpu-only")
LIBRARY = Path("python", "libtqref_c.so")  # in a build tree (LIBRARY_OUTPUT_DIRECTORY of tqref_c)
HOW = ("build it first (cmake --preset cpu-only && cmake --build --preset cpu-only --target "
       "tqref_c, or the default preset), or set TQREF_BUILD_DIR to a configured CMake build tree "
       "of this checkout")


def find_build_tree():
    env = os.environ.get("TQREF_BUILD_DIR")
    if env:
        if not Path(env).is_absolute():  # pip runs this file in python/, not where it was called
            raise SystemExit(f"tqref: TQREF_BUILD_DIR={env} must be an absolute path")
        tree = Path(env)
        if not (tree / "CMakeCache.txt").is_file():
            raise SystemExit(f"tqref: TQREF_BUILD_DIR={env} is not a configured CMake build tree "
                             f"(no CMakeCache.txt there); {HOW}")
        return tree
    trees = [CHECKOUT / "build" / p for p in PRESETS]
    for tree in trees:
        if (tree / LIBRARY).is_file():
            return tree
    for tree in trees:
        if (tree / "CMakeCache.txt").is_file():
            return tree
    raise SystemExit("tqref: libtqref_c.so not found and no configured build tree to build it in "
                     f"(looked for {', '.join(str(t / LIBRARY) for t in trees)}); {HOW}")


def project_version(tree):
    for line in (tree / "CMakeCache.txt").read_text().splitlines():
        if line.startswith("CMAKE_PROJECT_VERSION:"):
            return line.split("=", 1)[1]
    raise SystemExit(f"tqref: {tree / 'CMakeCache.txt'} has no CMAKE_PROJECT_VERSION; "
                     f"reconfigure the tree (cmake {tree})")


TREE = find_build_tree()


def library():
    """The tree's libtqref_c.so, built (target tqref_c only) when it is missing."""
    lib = TREE / LIBRARY
    if lib.is_file():
        return lib
    cmd = ["cmake", "--build", str(TREE), "--target", "tqref_c"]
    print(f"tqref: {lib} is missing; building it: {' '.join(cmd)}", flush=True)
    try:
        rc = subprocess.run(cmd).returncode
    except FileNotFoundError:
        raise SystemExit(f"tqref: {lib} is missing and cmake is not installed; {HOW}") from None
    if rc != 0 or not lib.is_file():
        raise SystemExit(f"tqref: `{' '.join(cmd)}` failed (exit {rc}) and {lib} is missing; {HOW}")
    return lib


class BuildPyWithLibrary(build_py):
    """build_py, then the library into the package's _native/ folder. An editable install
    (pip install -e) leaves it out: the package then runs from the checkout, whose build trees
    tqref/_lib.py searches."""

    def run(self):
        super().run()
        if self.editable_mode:
            return
        native = Path(self.build_lib, "tqref", "_native")
        native.mkdir(parents=True, exist_ok=True)
        shutil.copy(library(), native / "libtqref_c.so")


class BdistWheelPlatform(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return "py3", "none", super().get_tag()[2]


work = TREE / "python" / "setuptools"
work.mkdir(parents=True, exist_ok=True)  # egg_info requires its folder to exist
setup(version=project_version(TREE),
      cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": BdistWheelPlatform},
      options={"build": {"build_base": str(work / "build")},
               "egg_info": {"egg_base": str(work)}})
