#!/usr/bin/env bash
# scripts/golden-diff.sh, which the main job uses to compare a regenerated smoke suite with the
# committed one. Catches: a comparison that reports differences in provenance only (a fresh clone
# would say "differs"), one that misses a changed data byte or a changed content attribute, and a
# wrong exit code for an unreadable file. Needs Debian's /usr/bin/python3 with h5py.
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
smoke=$src/data/golden/smoke.h5
diffsh=$src/scripts/golden-diff.sh
edit() {  # edit FILE PYTHON-STATEMENT (f is the open h5py.File)
  /usr/bin/python3 -c "import h5py, numpy as np, sys
with h5py.File(sys.argv[1], 'r+') as f: $2" "$1"
}
expect() {  # expect RC WHAT FILE
  local rc=0
  bash "$diffsh" "$smoke" "$3" >"$tmp/out" 2>&1 || rc=$?
  if [[ $rc != "$1" ]]; then
    echo "FAIL: $2: exit $rc, expected $1"; cat "$tmp/out"; exit 1
  fi
  echo "ok: $2 (exit $rc)"
}
cp "$smoke" "$tmp/same.h5"
expect 0 "identical file" "$tmp/same.h5"
cp "$smoke" "$tmp/prov.h5"
edit "$tmp/prov.h5" "f.attrs['git_commit'] = 'feedfacecafe-dirty'; f.attrs['tqref_version'] = '9.9.9'"
expect 0 "provenance only differs" "$tmp/prov.h5"
cp "$smoke" "$tmp/data.h5"
edit "$tmp/data.h5" "
    ds = f['cases'][next(iter(f['cases']))]['expected/v_cache']
    a = ds[...]; a.reshape(-1)[0] ^= 1; ds[...] = a"
expect 1 "one data element differs" "$tmp/data.h5"
cp "$smoke" "$tmp/seed.h5"
edit "$tmp/seed.h5" "f.attrs['seed'] = np.int64(f.attrs['seed'] + 1)"
expect 1 "a content root attribute differs" "$tmp/seed.h5"
printf 'not hdf5' >"$tmp/bad.h5"
expect 2 "unreadable file" "$tmp/bad.h5"
echo "5 passed, 0 failed"
