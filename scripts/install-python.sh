#!/usr/bin/env bash
# Installs the tqref Python package (python/, docs/python.md) as pip installs any package: into a
# virtual environment made from PYTHON (default /usr/bin/python3, Debian's) with
# --system-site-packages, so that Debian's numpy, pytest and torch are seen from it, by
# `pip install --no-build-isolation --no-index ./python` (offline: Debian's setuptools and wheel
# build it). The package carries a copy of this checkout's libtqref_c.so (python/setup.py takes it
# from $TQREF_BUILD_DIR, else build/default, else build/cpu-only, and builds the tqref_c target
# there when it is missing) and registers its pytest plugin (entry point pytest11). pip reinstalls
# the package on every run, so the environment holds this checkout's code and library as they are.
# Usage: [TQREF_BUILD_DIR=TREE] bash scripts/install-python.sh [PYTHON [VENV]]
#        (VENV default: .venv in the checkout). scripts/main.sh and scripts/test.sh run it for .venv
#        with the tree they built; CTest for its own environment in each build tree
#        (python/CMakeLists.txt, test python_install).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${1:-/usr/bin/python3}
venv=$(realpath -m "${2:-$root/.venv}")
if [[ -n ${TQREF_BUILD_DIR:-} ]]; then  # pip builds in python/: the tree's path must be absolute
  TQREF_BUILD_DIR=$(realpath -m "$TQREF_BUILD_DIR"); export TQREF_BUILD_DIR
fi
cd "$root"

if [[ ! -x $venv/bin/python ]]; then
  "$py" -m venv --system-site-packages "$venv"
fi
"$venv/bin/python" -m pip install -q --no-build-isolation --no-index ./python
# Import it from outside the checkout: the installed copy, with the library it carries.
(cd / && "$venv/bin/python" -c "import sys, tqref
print('install-python: tqref', tqref.__version__, 'in', sys.prefix, 'loads', tqref.library_path)")
