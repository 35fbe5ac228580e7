#!/usr/bin/env bash
# Runs COMMAND with the Python API set up from the carry (the python plan; docs/python.md):
# tqref imported from python/ with the carried libtqref_c.so, the CLI the carried binary.
#   scripts/device/python-env.sh COMMAND...
# Only carried libraries this system lacks go on the loader path, through links in
# $SCRATCH/python-libs: Python's own libssl, libz, ... stay the system's (a carried copy of one
# would replace it for every module in the process), so CARRY/lib, which the runner puts first,
# is taken off again. Exit: COMMAND's.
set -u
private=$SCRATCH/python-libs
if [[ ! -d $private ]]; then
  mkdir -p "$private"
  for f in "$CARRY"/lib/*.so*; do
    name=$(basename "$f")
    if [[ $name == libtqref_c.so ]] || ! ldconfig -p | grep -q "^[[:space:]]*$name "; then
      ln -sf "$f" "$private/$name"
    fi
  done
  echo "libraries from the carry: $(ls "$private" | tr '\n' ' ')" >&2
fi
host=${LD_LIBRARY_PATH#"$CARRY/lib"}
host=${host#:}
export LD_LIBRARY_PATH=$private${host:+:$host}
export TQREF_LIBRARY=$private/libtqref_c.so TQREF_CLI=$TQ TQREF_DATA_DIR=$ROOT/data
export PYTHONPATH=$ROOT/python:$ROOT/examples${PYTHONPATH:+:$PYTHONPATH}
exec "$@"
