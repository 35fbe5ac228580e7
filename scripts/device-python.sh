#!/usr/bin/env bash
# The Python API on the GPU machine (docs/python.md): loads tqref with that machine's Python (3.12,
# numpy 2, torch, triton) from the carried libtqref_c.so, runs the package's CPU test suite there,
# then examples/check_gpu.py: the Triton writer at level W (bit for bit) and I, its naive variant
# at W (must fail), the Triton decoder at T and I, the pure-torch decoder at T and I on the GPU.
#
# Usage (repository root on the GPU machine, after `bash scripts/device-carry.sh build/default`
# here with the tqref_c target built):
#   bash scripts/device-python.sh OUT_DIR
# Writes OUT_DIR/python-summary.txt, python-gpu.json, python-gpu.md, python-pytest.txt (tail).
# Exit 0 only when tqref imports, the pytest suite passes and every GPU step gave its expected
# verdict. Budget: about 3 minutes (Triton compiles each kernel variant once, a few seconds each).
set -u
out=${1:-}
[[ -n $out ]] || { echo "usage: scripts/device-python.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$out"
root=$PWD
carry=$root/.device-carry
lib=$carry/lib/libtqref_c.so
py=${PYTHON:-python3}
summary=$out/python-summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

if [[ ! -f $lib ]]; then
  say "FAIL: $lib missing: build the tqref_c target and run scripts/device-carry.sh BUILD here"
  exit 2
fi
# Only carried libraries this system lacks go on the loader path: Python's own libssl, libz, ...
# stay the system's (a carried copy of one would replace it for every module in the process).
private=$(mktemp -d /tmp/tqref-python-libs.XXXXXX)
for f in "$carry"/lib/*.so*; do
  name=$(basename "$f")
  if [[ $name == libtqref_c.so ]] || ! ldconfig -p | grep -q "^[[:space:]]*$name "; then
    ln -sf "$f" "$private/$name"
  fi
done
export LD_LIBRARY_PATH=$private${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TQREF_LIBRARY=$private/libtqref_c.so
export TQREF_DATA_DIR=$root/data
export TQREF_CLI=$carry/bin/tqref
export PYTHONPATH=$root/python:$root/examples${PYTHONPATH:+:$PYTHONPATH}
say "libraries from the carry: $(ls "$private" | tr '\n' ' ')"

rc=0
if ! timeout 60 "$py" -c "import sys, tqref; print('python', sys.version.split()[0], 'tqref', tqref.build_info())" \
    2>&1 | tee -a "$summary"; then
  say "FAIL: import tqref"
  exit 1
fi

# The package's own tests (CPU: model, golden files, judge, plugin) under this interpreter.
timeout 100 "$py" -m pytest -q -p no:cacheprovider -rs -W ignore::UserWarning \
  "$root/python/tests" "$root/examples/test_torch_decode.py" > "$out/python-pytest.full" 2>&1
prc=$?
tail -n 40 "$out/python-pytest.full" > "$out/python-pytest.txt"
rm -f "$out/python-pytest.full"
say "pytest (python/tests, examples/test_torch_decode.py): rc $prc: $(tail -n 1 "$out/python-pytest.txt")"
(( prc == 0 )) || rc=1

# The GPU checks through tqref.testing.
timeout 150 "$py" "$root/examples/check_gpu.py" "$out" 2>&1 | tee -a "$summary"
grc=${PIPESTATUS[0]}
say "examples/check_gpu.py: rc $grc"
(( grc == 0 )) || rc=1
say "device-python: $([[ $rc == 0 ]] && echo PASS || echo FAIL)"
exit $rc
