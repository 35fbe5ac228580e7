#!/usr/bin/env bash
# Makes `import tqref` work in an interpreter (default /usr/bin/python3, Debian's) by writing a
# tqref.pth that adds this checkout's python/ folder to its path: into the interpreter's
# site-packages when writable (root), else into the user's site-packages. The package then loads
# libtqref_c.so from this checkout's build tree (build/default, build/cpu-only: tqref/_lib.py).
# Usage: bash scripts/install-python.sh [PYTHON]      (scripts/main.sh and test.sh run it)
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-/usr/bin/python3}
src=$PWD/python
dir=$("$py" - <<'PY'
import os, site, sys
for d in site.getsitepackages():
    if os.path.isdir(d) and os.access(d, os.W_OK):
        print(d); sys.exit()
d = site.getusersitepackages()
os.makedirs(d, exist_ok=True)
print(d)
PY
)
echo "$src" > "$dir/tqref.pth"
echo "install-python: $dir/tqref.pth -> $src"
